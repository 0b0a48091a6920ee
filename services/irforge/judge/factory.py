"""Open a judge from what a command line says: `--judge embedded` (the default) or `--judge FILE`.

    with open_judge(args.judge, args.store, thresholds_path=args.thresholds) as core:
        outcome = core.judge(pairs)

"embedded" (or None): the local encoder judge (backends/embedded.py), no external service.
Anything else is a path to a judge spec YAML (spec.py), today always `kind: openai-chat`.
The store is the one persistent judgement store (store.py): `store_path`, else
$IRFORGE_JUDGE_STORE, else the user data dir.
"""

from __future__ import annotations

from pathlib import Path

from irforge.judge.core import JudgeCore
from irforge.judge.errors import JudgeSpecError
from irforge.judge.store import JudgementStore

EMBEDDED = "embedded"


def open_backend(judge: str | Path | None = EMBEDDED, *, thresholds_path: Path | None = None,
                 cache_path: Path | None = None):
    """The backend alone (no store): the embedded judge or an LLM judge from a spec file.
    `cache_path`: the embedding cache the embedded judge reads and fills (default: irforge's)."""
    if judge is None or str(judge) == EMBEDDED:
        from irforge.judge.backends.embedded import EmbeddedJudge

        return EmbeddedJudge.load(thresholds_path, cache_path=cache_path)
    path = Path(judge)
    if not path.exists():   # a FIFO or a folder is named as such by the spec's reader
        raise JudgeSpecError(f"--judge {judge}: neither 'embedded' nor an existing judge spec file")
    if thresholds_path is not None:
        raise JudgeSpecError(f"--thresholds applies to the embedded judge only, not to the judge spec {path}")
    from irforge.judge.backends.llm import OpenAIChatJudge
    from irforge.judge.spec import JudgeSpec

    return OpenAIChatJudge(JudgeSpec.from_file(path))


def open_judge(judge: str | Path | None = EMBEDDED, store_path: Path | None = None, *,
               thresholds_path: Path | None = None, cache_path: Path | None = None) -> JudgeCore:
    """A JudgeCore over the chosen backend and the judgement store (close it, or use `with`)."""
    backend = open_backend(judge, thresholds_path=thresholds_path, cache_path=cache_path)
    try:
        return JudgeCore(backend, JudgementStore(store_path))
    except BaseException:
        backend.close()
        raise
