#!/bin/sh
# Build the Python runtime (MicroPython in a wasm32-wasip1 module) into
# wload-py-runtime.wasm, and write wload-py-runtime.sources, the hash of
# the sources it was built from, beside it. Both are committed: the wload
# binary embeds them (crates/wload/src/cli/build_py.rs), so `cargo
# install` users need no C toolchain, and a unit test fails when the
# sources changed without a rebuild.
#
# Installs what it needs: the wasm32-wasip1 Rust target (rustup), zig from
# PyPI (into target/: it compiles MicroPython's C with its wasi-libc),
# Debian's binaryen (wasm-opt: Asyncify, which setjmp/longjmp is made of,
# c/sjlj.c), and MicroPython 1.26.1's source, Debian's tarball, checked
# against its sha256.
set -eu
cd "$(dirname "$0")"
here=$(pwd)
tool="$here/target/toolchain"
mpy_url=http://deb.debian.org/debian/pool/main/m/micropython/micropython_1.26.1+ds.orig.tar.xz
mpy_sha256=f5ad2ec89d3e921f753d448955af98b6005655f84ba26087dde6ba0e8d062f34
mpy="$here/target/micropython-1.26.1"

rustup target add wasm32-wasip1 >/dev/null
if [ ! -x "$tool/py/ziglang/zig" ]; then
  python3 -m pip install --quiet --target "$tool/py" ziglang==0.17.0
fi
if ! command -v wasm-opt >/dev/null || ! command -v make >/dev/null || ! command -v gcc >/dev/null; then
  apt-get update -q && apt-get install -y -q binaryen make gcc
fi
zig="$tool/py/ziglang/zig"

if [ ! -f "$mpy/py/vm.c" ]; then
  tarball="$here/target/micropython_1.26.1+ds.orig.tar.xz"
  if [ ! -f "$tarball" ] || ! echo "$mpy_sha256  $tarball" | sha256sum -c --quiet; then
    curl -fsSL -o "$tarball.part" "$mpy_url"
    echo "$mpy_sha256  $tarball.part" | sha256sum -c --quiet ||
      { echo "build.sh: $mpy_url does not have the expected sha256" >&2; exit 1; }
    mv "$tarball.part" "$tarball"
  fi
  tar -C "$here/target" -xf "$tarball"
fi

# MicroPython's generated headers (qstrs, the module table, root
# pointers) for c/mpconfigport.h and the runtime's C modules, made by the
# embed port's makefile (the host's gcc preprocesses).
gen="$here/target/gen"
rm -rf "$gen" && mkdir -p "$gen"
for f in mpconfigport.h mphalport.h setjmp.h; do ln -s "$here/c/$f" "$gen/$f"; done
# The version header names no git commit of the repository the tarball
# sits in and a fixed date, so that the build is reproducible.
GIT_CEILING_DIRECTORIES="$here/target" SOURCE_DATE_EPOCH=1757548800 \
  make -s -C "$gen" -f "$mpy/ports/embed/embed.mk" MICROPYTHON_TOP="$mpy" USER_C_MODULES="$here/c/mod" \
  build-embed/genhdr/qstrdefs.generated.h build-embed/genhdr/moduledefs.h \
  build-embed/genhdr/root_pointers.h build-embed/genhdr/mpversion.h >/dev/null

# The core, the extmod modules c/mpconfigport.h turns on, and the port.
obj="$here/target/c/obj"
rm -rf "$here/target/c" && mkdir -p "$obj"
ls "$mpy"/py/*.c "$mpy"/extmod/modjson.c "$mpy"/extmod/modrandom.c "$mpy"/extmod/modbinascii.c \
  "$mpy"/extmod/modheapq.c "$here"/c/*.c "$here"/c/mod/wload/*.c |
  xargs -P "$(nproc)" -I{} sh -c 'f={}; d=$(dirname "$f"); exec "$0" cc -target wasm32-wasi -O2 -std=gnu99 \
    -DNDEBUG -Wall -Wno-unused -Werror -I"$1/c" -I"$2" -I"$3/build-embed" -c "$f" \
    -o "$4/$(basename "$d")_$(basename "$f" .c).o"' "$zig" "$here" "$mpy" "$gen" "$obj"
"$zig" ar rcs "$here/target/c/libmicropython.a" "$obj"/*.o

cargo build --release --locked
# setjmp/longjmp: Asyncify instruments every function that may reach one
# (calls through pointers included); the driver, wl_sjlj_run, is the top.
wasm-opt target/wasm32-wasip1/release/wload_py_runtime.wasm --asyncify \
  --pass-arg=asyncify-ignore-imports --pass-arg=asyncify-removelist@wl_sjlj_run \
  -O2 -o wload-py-runtime.wasm

# The same hash as build_py.rs's test: relative path, NUL, content, NUL.
python3 - <<'EOS' > wload-py-runtime.sources
import hashlib, os
root = os.path.abspath('..')
files = ['runtime/Cargo.toml', 'runtime/Cargo.lock', 'runtime/.cargo/config.toml', 'runtime/build.sh',
         'runtime/build.rs']
for d in ['runtime/src', 'runtime/c', 'runtime/c/mod/wload', 'runtime/py', 'runtime/py/wload']:
    files += sorted(os.path.join(d, f) for f in os.listdir(os.path.join(root, d)) if os.path.isfile(os.path.join(root, d, f)))
h = hashlib.sha256()
for f in files:
    h.update(f.encode() + b'\0')
    h.update(open(os.path.join(root, f), 'rb').read() + b'\0')
print(h.hexdigest())
EOS
echo "built $(wc -c < wload-py-runtime.wasm) bytes: $here/wload-py-runtime.wasm"
