/* MicroPython's configuration for wload's Python runtime (sdk/python/
 * runtime): the interpreter of a wload test, one instance per VU, so
 * what is on is what a load test uses (the compiler, f-strings, classes,
 * properties, json, random, binascii) and what is off is what a VU
 * has no use for (files, sockets, the REPL, native code emitters). */

#include <stdint.h>
#include <alloca.h>
#include <stdlib.h>

typedef intptr_t mp_int_t;
typedef uintptr_t mp_uint_t;
typedef long mp_off_t;

#define MICROPY_MPHALPORT_H "mphalport.h"
#define MICROPY_CONFIG_ROM_LEVEL (MICROPY_CONFIG_ROM_LEVEL_EXTRA_FEATURES)

#define MICROPY_ENABLE_COMPILER (1)
#define MICROPY_ENABLE_GC (1)
/* The heap grows by new areas (malloc) when full: a collection runs only
 * where no C frame holds an object (port.c, wl_gc_safe_point), because
 * wasm keeps locals where the collector cannot scan them. */
#define MICROPY_GC_SPLIT_HEAP (1)
#define MICROPY_GC_SPLIT_HEAP_AUTO (1)
#define MICROPY_GC_ALLOC_THRESHOLD (1)
/* setjmp/longjmp over Asyncify (sjlj.c): Python calls Python without a
 * C frame each, so fewer setjmps. */
#define MICROPY_NLR_SETJMP (1)
#define MICROPY_STACKLESS (1)
#define MICROPY_STACKLESS_STRICT (0)
#define MICROPY_STACK_CHECK (1)

#define MICROPY_FLOAT_IMPL (MICROPY_FLOAT_IMPL_DOUBLE)
#define MICROPY_LONGINT_IMPL (MICROPY_LONGINT_IMPL_MPZ)
#define MICROPY_ERROR_REPORTING (MICROPY_ERROR_REPORTING_DETAILED)
#define MICROPY_ENABLE_SOURCE_LINE (1)
#define MICROPY_PY_SYS_PATH (1)
#define MICROPY_PY_SYS_ARGV (0)
#define MICROPY_PY_SYS_STDFILES (0)
#define MICROPY_PY_SYS_EXIT (0)
#define MICROPY_PY_SYS_ATEXIT (0)
#define MICROPY_PY_SYS_SETTRACE (0)
#define MICROPY_PY_SYS_STDIO_BUFFER (0)
#define MICROPY_PY_SYS_PS1_PS2 (0)
#define MICROPY_PY_SYS_EXC_INFO (1)
#define MICROPY_PY_FUNCTION_ATTRS (1)
#define MICROPY_PY_ALL_SPECIAL_METHODS (1)
#define MICROPY_PY_DESCRIPTORS (1)
#define MICROPY_PY_BUILTINS_COMPILE (0)
#define MICROPY_PY_BUILTINS_EXECFILE (0)
#define MICROPY_PY_BUILTINS_INPUT (0)
#define MICROPY_PY_BUILTINS_HELP (0)
#define MICROPY_PY_IO (1)
#define MICROPY_PY_IO_IOBASE (0)
#define MICROPY_PY_MICROPYTHON_MEM_INFO (0)
#define MICROPY_HELPER_REPL (0)
#define MICROPY_REPL_EVENT_DRIVEN (0)
#define MICROPY_KBD_EXCEPTION (0)
#define MICROPY_PERSISTENT_CODE_LOAD (0)
#define MICROPY_ENABLE_SCHEDULER (0)
#define MICROPY_PY_THREAD (0)

/* extmod: built (build.sh) */
#define MICROPY_PY_JSON (1)
#define MICROPY_PY_RE (0) /* lib/re1.5 is not in the Debian tarball */
#define MICROPY_PY_RANDOM (1)
#define MICROPY_PY_RANDOM_EXTRA_FUNCS (1)
#define MICROPY_PY_RANDOM_SEED_INIT_FUNC (wl_random_seed())
#define MICROPY_PY_BINASCII (1)
#define MICROPY_PY_HEAPQ (1)
/* extmod: not built */
#define MICROPY_PY_OS (0)
#define MICROPY_PY_TIME (0)
#define MICROPY_PY_SELECT (0)
#define MICROPY_PY_ASYNCIO (0)
#define MICROPY_PY_UCTYPES (0)
#define MICROPY_PY_DEFLATE (0)
#define MICROPY_PY_HASHLIB (0)
#define MICROPY_PY_CRYPTOLIB (0)
#define MICROPY_PY_MACHINE (0)
#define MICROPY_PY_NETWORK (0)
#define MICROPY_PY_SOCKET (0)
#define MICROPY_PY_WEBSOCKET (0)
#define MICROPY_PY_WEBREPL (0)
#define MICROPY_PY_FRAMEBUF (0)
#define MICROPY_PY_BTREE (0)
#define MICROPY_PY_ONEWIRE (0)
#define MICROPY_PY_PLATFORM (0)
#define MICROPY_PY_VFS (0)
#define MICROPY_VFS (0)
#define MICROPY_PY_MARSHAL (0)
#define MICROPY_PY_LWIP (0)
#define MICROPY_PY_SSL (0)
#define MICROPY_PY_BLUETOOTH (0)
#define MICROPY_PY_OPENAMP (0)
#define MICROPY_PY_TIME_TIME_TIME_NS (0)

#define MICROPY_ALLOC_PATH_MAX (256)
#define MP_STATE_PORT MP_STATE_VM
#define MICROPY_HW_BOARD_NAME "wload"
#define MICROPY_HW_MCU_NAME "wasm32"

uint32_t wl_random_seed(void);
