# The runtime's C, scanned for qstrs and modules by MicroPython's build
# (build.sh runs ports/embed/embed.mk with USER_C_MODULES=c/mod).
WLOAD_C := $(USERMOD_DIR)/../..
SRC_USERMOD_C += $(USERMOD_DIR)/modwload.c $(WLOAD_C)/port.c
SRC_USERMOD_C += $(TOP)/extmod/modjson.c $(TOP)/extmod/modrandom.c $(TOP)/extmod/modbinascii.c $(TOP)/extmod/modheapq.c
