"""protos/ is the single source of truth: the committed stubs must be what it generates today."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_generated_stubs_match_protos():
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_protos.py"), "--check"], capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr


def test_check_detects_a_stale_stub(tmp_path, monkeypatch):
    """The freshness check itself must be able to fail."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gen_protos
    finally:
        sys.path.pop(0)
    fresh = gen_protos.generate_into(tmp_path / "fresh")
    committed = tmp_path / "committed"
    committed.mkdir()
    for path in fresh.iterdir():
        (committed / path.name).write_bytes(path.read_bytes())
    assert gen_protos.stale_files(fresh, committed) == []
    (committed / "corpus_pb2.py").write_text("# edited by hand\n")
    (committed / "extra_pb2.py").write_text("")
    assert gen_protos.stale_files(fresh, committed) == ["extra_pb2.py", "corpus_pb2.py"]
