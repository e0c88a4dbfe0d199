"""`wload-py build test.py -o test.wasm` (or `python wload_build.py build ...`).

Generates a small app module that exports the test through the world
`wload:test/test@0.2.0` (wit/test-0.2) (or, with `--plugin`, a scenario
plugin through the world `wload:scenario/plugin@0.2.0` of the same folder,
which imports the same interfaces, see `wload.plugin`) and runs componentize-py on
it; componentize-py imports the module at build time and snapshots the
initialised interpreter.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_SDK = Path(__file__).resolve().parent / "wload"

# (WIT directory, world) of a test and of a plugin.
_TEST_WORLD = (_SDK / "wit" / "test-0.2", "wload:test/test@0.2.0")
_PLUGIN_WORLD = (_SDK / "wit" / "test-0.2", "wload:scenario/plugin@0.2.0")


def _componentize_py() -> str:
    # Next to this interpreter first (a venv), then on PATH.
    local = Path(sys.executable).parent / "componentize-py"
    if local.exists():
        return str(local)
    found = shutil.which("componentize-py")
    if found is None:
        sys.exit("wload-py: componentize-py not found: pip install componentize-py==0.25.1")
    return found


def build(test: Path, out: Path, plugin: bool = False) -> None:
    if not test.is_file():
        sys.exit(f"wload-py: cannot read {test}")
    module = test.stem
    if not module.isidentifier() or module in {"wload", "wit_world", "wload_app"}:
        sys.exit(f"wload-py: {test.name} must be named like a Python module (not wload, wit_world or wload_app)")
    with tempfile.TemporaryDirectory(prefix="wload-py-") as work:
        app = Path(work) / "wload_app.py"
        exporter = "wload._plugin_export" if plugin else "wload._export"
        app.write_text(
            f"import {module} as _test\nfrom {exporter} import make\n\nWitWorld = make(_test)\n"
        )
        wit, world = _PLUGIN_WORLD if plugin else _TEST_WORLD
        cmd = [
            _componentize_py(),
            "-d", str(wit),
            "-w", world,
            "componentize",
            "-p", work,
            "-p", str(test.resolve().parent),
            "-p", str(_SDK.parent),
            "-o", str(out),
            "wload_app",
        ]
        result = subprocess.run(cmd)
        if result.returncode != 0:
            sys.exit(f"wload-py: componentize-py failed building {test}")
    print(f"wload-py: wrote {out} ({out.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(prog="wload-py", description="Build a wload test written in Python.")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build a test module into a component")
    b.add_argument("test", type=Path, help="the test module, e.g. test.py")
    b.add_argument("-o", "--output", type=Path, help="the component to write (default: <test>.wasm)")
    b.add_argument("--plugin", action="store_true", help="the module is a scenario plugin (see wload.plugin)")
    args = parser.parse_args()
    build(args.test, args.output or args.test.with_suffix(".wasm"), args.plugin)


if __name__ == "__main__":
    main()
