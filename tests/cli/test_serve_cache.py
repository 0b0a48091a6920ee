"""Issue 29: one embedding cache for a user. `irforge serve --state-dir` gave its services a cache
of their own (STATE/cache), so the first dense job re-encoded what `irforge eval` had just encoded."""

from __future__ import annotations

from irforge.cli.main import build_parser
from irforge.cli.serve_cmd import _environment
from irforge.models.cache import default_cache_path


def serve_environment(argv, monkeypatch, cache_dir=None):
    if cache_dir is None:
        monkeypatch.delenv("IRFORGE_CACHE_DIR", raising=False)
    else:
        monkeypatch.setenv("IRFORGE_CACHE_DIR", str(cache_dir))
    args = build_parser().parse_args(["serve", *argv])
    return _environment(args.state_dir, args.cache_dir)


def test_the_platform_uses_evals_cache_whatever_its_state_dir(tmp_path, monkeypatch):
    eval_cache = tmp_path / "eval-cache"
    env = serve_environment(["--state-dir", str(tmp_path / "state")], monkeypatch, cache_dir=eval_cache)
    monkeypatch.setenv("IRFORGE_CACHE_DIR", env["IRFORGE_CACHE_DIR"])
    assert default_cache_path() == eval_cache / "embeddings.sqlite3"     # what the services will open
    assert env["IRFORGE_INDEX_DIR"] == str(tmp_path / "state" / "indexes")   # the rest of the state still moves

    env = serve_environment(["--state-dir", str(tmp_path / "state")], monkeypatch)
    assert "IRFORGE_CACHE_DIR" not in env      # the user's default cache dir, as `irforge eval` uses


def test_cache_dir_gives_the_platform_a_cache_of_its_own(tmp_path, monkeypatch):
    env = serve_environment(["--state-dir", str(tmp_path / "state"), "--cache-dir", str(tmp_path / "own")], monkeypatch,
                            cache_dir=tmp_path / "eval-cache")
    assert env["IRFORGE_CACHE_DIR"] == str(tmp_path / "own")
