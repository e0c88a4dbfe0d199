#!/bin/sh
# Build the JavaScript runtime (QuickJS in a wasm32-wasip1 module) into
# wload-js-runtime.wasm, and write wload-js-runtime.sources, the hash of
# the sources it was built from, beside it. Both are committed: the wload
# binary embeds them (crates/wload/src/cli/build_js.rs), so `cargo install`
# users need no C toolchain, and a unit test fails when the sources
# changed without a rebuild.
#
# Installs what it needs: the wasm32-wasip1 Rust target (rustup), zig from
# PyPI (into target/, it compiles QuickJS's C with its wasi-libc), and
# Debian's libclang 19 and wasi-libc headers (bindgen reads quickjs.h;
# rquickjs's bundled bindings for wasm32 are wrong in 0.10).
set -eu
cd "$(dirname "$0")"
here=$(pwd)
tool="$here/target/toolchain"

rustup target add wasm32-wasip1 >/dev/null
if [ ! -x "$tool/py/ziglang/zig" ]; then
  python3 -m pip install --quiet --target "$tool/py" ziglang==0.17.0
fi
if [ ! -e /usr/lib/llvm-19/lib/libclang.so ] || [ ! -e /usr/include/wasm32-wasi/stdlib.h ]; then
  apt-get update -q && apt-get install -y -q libclang-19-dev wasi-libc
fi

# rquickjs-sys's build script runs `$WASI_SDK/bin/clang` and `bin/ar`
# with `$WASI_SDK/share/wasi-sysroot`: zig stands in for both, Debian's
# headers for the sysroot's.
sdk="$tool/wasi-sdk"
mkdir -p "$sdk/bin" "$sdk/share/wasi-sysroot"
ln -sfn /usr/include/wasm32-wasi "$sdk/share/wasi-sysroot/include"
cat > "$sdk/bin/clang" <<EOS
#!/bin/sh
# zig cc in place of wasi-sdk's clang: the target and sysroot flags are zig's own.
for a in "\$@"; do
  shift
  case "\$a" in --target=*|--sysroot=*) ;; *) set -- "\$@" "\$a" ;; esac
done
exec "$tool/py/ziglang/zig" cc -target wasm32-wasi "\$@"
EOS
printf '#!/bin/sh\nexec "%s" ar "$@"\n' "$tool/py/ziglang/zig" > "$sdk/bin/ar"
chmod +x "$sdk/bin/clang" "$sdk/bin/ar"

WASI_SDK="$sdk" LIBCLANG_PATH=/usr/lib/llvm-19/lib \
  BINDGEN_EXTRA_CLANG_ARGS="-isystem /usr/lib/llvm-19/lib/clang/19/include" \
  cargo build --release --locked
cp target/wasm32-wasip1/release/wload_js_runtime.wasm wload-js-runtime.wasm

# The same hash as build_js.rs's test: relative path, NUL, content, NUL.
python3 - <<'EOS' > wload-js-runtime.sources
import hashlib, os
root = os.path.abspath('..')
files = ['runtime/Cargo.toml', 'runtime/Cargo.lock', 'runtime/.cargo/config.toml', 'runtime/build.sh']
# The WIT it is bound to (wit_bindgen::generate! in src/lib.rs).
files += ['../../wit/test-0.2/test.wit', '../../wit/js/plugins.wit']
for d in ['runtime/src', 'runtime/js']:
    files += sorted(os.path.join(d, f) for f in os.listdir(os.path.join(root, d)) if os.path.isfile(os.path.join(root, d, f)))
h = hashlib.sha256()
for f in files:
    h.update(f.encode() + b'\0')
    h.update(open(os.path.join(root, f), 'rb').read() + b'\0')
print(h.hexdigest())
EOS
echo "built $(wc -c < wload-js-runtime.wasm) bytes: $here/wload-js-runtime.wasm"
