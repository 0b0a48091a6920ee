"""The fusion methods and score normalisations irforge offers, named as ranx and the literature name
them: each entry says what `irforge --fusion NAME` computes, ranx's name for the same computation
(ranx.fuse(method=..., norm=...), the independent implementation the tests compare against) and
where it was published. The configuration keeps a copy of the names (config imports no room);
tests/fusion checks the two agree."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Method:
    name: str           # irforge's --fusion choice
    ranx: str | None    # ranx.fuse's method name for the same computation (None: irforge's own)
    literature: str
    weighted: bool      # takes one weight per run (--fusion-weights, and so weight optimisation)
    normalised: bool    # scores are normalised first (--fusion-norm); rank-based methods are not


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("rrf", "rrf", "reciprocal rank fusion, sum_i w_i / (k + rank_i(d)) (Cormack, Clarke & Buettcher, SIGIR 2009); "
           "with weights as in Bruch et al. (TOIS 2023)", weighted=True, normalised=False),
    Method("wsum", "wsum", "weighted sum (convex/linear combination) of normalised scores, a run lacking d adding 0 "
           "(Bartell et al. 1994; Bruch et al., TOIS 2023)", weighted=True, normalised=True),
    Method("wmnz", "wmnz", "weighted CombMNZ as ranx computes it: the sum of d's normalised scores times the sum of the "
           "weights of the runs that retrieved d (Wu, CIKM 2012)", weighted=True, normalised=True),
    Method("combsum", "sum", "CombSUM: the sum of d's normalised scores (Fox & Shaw, TREC-2 1993)",
           weighted=False, normalised=True),
    Method("combmnz", "mnz", "CombMNZ: CombSUM times the number of runs that retrieved d (Fox & Shaw, TREC-2 1993)",
           weighted=False, normalised=True),
    Method("combmax", "max", "CombMAX: d's largest normalised score among the runs that retrieved it (Fox & Shaw, TREC-2 1993)",
           weighted=False, normalised=True),
    Method("combmin", "min", "CombMIN: d's smallest normalised score among the runs that retrieved it (Fox & Shaw, TREC-2 1993)",
           weighted=False, normalised=True),
    Method("combanz", "anz", "CombANZ: CombSUM divided by the number of runs that retrieved d (Fox & Shaw, TREC-2 1993)",
           weighted=False, normalised=True),
    Method("linear", None, "irforge's hybrid linear combination (since its first release): wsum of min-max normalised "
           "runs, except that a run whose scores all tie gives each of its documents 1 (ranx's min-max gives 0)",
           weighted=True, normalised=False),
)}


@dataclass(frozen=True)
class Normalisation:
    name: str           # irforge's --fusion-norm choice, ranx's norm name
    literature: str


# Per query and per run, over the documents that run retrieved (its top --fusion-depth). The 1e-9
# floors on a denominator are ranx's: a run whose scores all tie normalises to 0 (min-max, sum).
NORMALISATIONS: dict[str, Normalisation] = {n.name: n for n in (
    Normalisation("min-max", "min-max: (s - min) / max(max - min, 1e-9) (Lee, SIGIR 1997)"),
    Normalisation("zmuv", "z-score, zero mean unit variance: (s - mean) / max(std, 1e-9), population std "
                  "(Montague & Aslam, CIKM 2001)"),
    Normalisation("sum", "sum: (s - min) / max(sum(s - min), 1e-9) (Montague & Aslam, CIKM 2001)"),
    Normalisation("max", "max: s / max(max(s), 1e-9) (Lee, SIGIR 1997's 'standard' normalisation without the minimum)"),
    Normalisation("none", "none: the runs' own scores, as given"),
)}
