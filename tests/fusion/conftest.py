"""ranx, the fusion tests' independent reference, is compiled by numba without LLVM's optimisation
passes (NUMBA_OPT=0), set here before the test modules import ranx.

Why: numba compiles each ranx function the first time a test calls it, and CI pays for it on every
run: ranx asks numba to cache what it compiles, and the session's cache ($NUMBA_CACHE_DIR, under
its own folder: tests/conftest.py) starts empty. What ranx_warmup.py, started with the session in
the background, has compiled (optimised) by then is loaded from that cache instead; the rest is
compiled here, unoptimised. LLVM's optimiser is about a quarter of that compile time (CPU seconds of the first four
fuses, measured: 58 -> 42; all of tests/fusion with the Comb arithmetic beside it: 175 -> 109), and it buys
nothing for 40 queries a test fuses in milliseconds. Unoptimised, numba also declines to cache
ranx's typed-dict functions ("Cannot cache compiled function ... dynamic globals"): no loss here,
and the warning is silenced below. What is computed is the same: ranx's
code as numba compiles it, with numba's own quicksort (whose tie order RRF and the weight search's
scores depend on), only not optimised. Optimised and unoptimised ranx were compared on these runs (every
method and normalisation on all 300 queries, optimize_fusion's reports, evaluate): bit for bit the
same, order included, but for zmuv's scores, which moved by at most 9e-16 (its mean and standard
deviation; the tests allow 1e-9) with the same order.

Not NUMBA_DISABLE_JIT: interpreted, ranx sorts with numpy's argsort, which orders tied scores
otherwise than numba's quicksort, and RRF and the weight search's scores then move (measured).
"""

from __future__ import annotations

import os
import warnings

import pytest

# numba rereads its configuration from the environment before each compilation and sets up its
# code generator at the first one: this holds as long as nothing was compiled before (nothing but
# ranx uses numba here). Subprocesses inherit it; none of them uses numba.
os.environ.setdefault("NUMBA_OPT", "0")


@pytest.fixture(autouse=True)
def _uncached_compilation_is_expected():
    warnings.filterwarnings("ignore", message="Cannot cache compiled function")
