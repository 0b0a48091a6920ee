"""Generate the Python gRPC stubs in services/irforge/v1 from protos/irforge/v1/*.proto.

    python tools/gen_protos.py           # regenerate (run after editing a .proto)
    python tools/gen_protos.py --check   # exit 1 if the committed stubs are stale

protos/ is the single source of truth; services/irforge/v1 holds generated code only.
The output depends on the grpcio-tools version, which pyproject.toml pins.
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.resources
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"
PACKAGE = Path("irforge") / "v1"
OUTPUT_ROOT = ROOT / "services"
INIT_TEXT = '"""Generated from protos/irforge/v1 by tools/gen_protos.py. Do not edit."""\n'
# The client SDK carries its own copy of the stubs under its own package name, so a team
# installs it without the server (no torch, no ray). Same files, imports rewritten.
CLIENT_PACKAGE_DIR = ROOT / "clients" / "python" / "irforge_client" / "v1"


def generate_into(out_root: Path) -> Path:
    """Run protoc for every proto into out_root; return the generated package folder."""
    from grpc_tools import protoc

    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / PACKAGE).glob("*.proto"))
    if not protos:
        raise SystemExit(f"no .proto files under {PROTO_ROOT / PACKAGE}")
    out_root.mkdir(parents=True, exist_ok=True)
    well_known = importlib.resources.files("grpc_tools") / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--python_out={out_root}",
        f"--pyi_out={out_root}",
        f"--grpc_python_out={out_root}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    package_dir = out_root / PACKAGE
    (package_dir / "__init__.py").write_text(INIT_TEXT)
    return package_dir


def client_copy(fresh: Path, out_dir: Path) -> Path:
    """The stubs with `irforge.v1` imports pointing at `irforge_client.v1`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(fresh.iterdir()):
        if path.is_file():
            text = path.read_text().replace("from irforge.v1 import", "from irforge_client.v1 import")
            (out_dir / path.name).write_text(text)
    return out_dir


def stale_files(fresh: Path, committed: Path) -> list[str]:
    """Names of generated files that differ, are missing, or should not be there."""
    fresh_names = {p.name for p in fresh.iterdir() if p.is_file()}
    committed_names = {p.name for p in committed.iterdir() if p.is_file()} if committed.exists() else set()
    stale = sorted(fresh_names ^ committed_names)
    for name in sorted(fresh_names & committed_names):
        if not filecmp.cmp(fresh / name, committed / name, shallow=False):
            stale.append(name)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when stale")
    args = parser.parse_args(argv)
    targets = {OUTPUT_ROOT / PACKAGE: None, CLIENT_PACKAGE_DIR: client_copy}
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate_into(Path(tmp) / "services")
        versions = {target: (make(fresh, Path(tmp) / "client") if make else fresh) for target, make in targets.items()}
        if args.check:
            stale = [f"{target.relative_to(ROOT)}/{name}" for target, version in versions.items()
                     for name in stale_files(version, target)]
            if stale:
                print("generated stubs are stale: " + ", ".join(stale), file=sys.stderr)
                print("run: python tools/gen_protos.py", file=sys.stderr)
                return 1
            print("generated stubs are up to date")
            return 0
        for target, version in versions.items():
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(version, target)
            print(f"wrote {target.relative_to(ROOT)} ({len(list(target.iterdir()))} files)")
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
