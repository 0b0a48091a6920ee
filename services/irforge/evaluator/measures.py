"""Measure names, declared once and apart from the engines that compute them.

Two naming schemes are accepted:
- ir_measures-style: ``nDCG@10``, ``R@100``, ``AP@100``, ``RR@10``, ``P(rel=2)@10``, ``Judged@10``;
- trec_eval's own: ``ndcg_cut.10``, ``P.5,10``, ``map``, measure sets ``all_trec`` / ``official``.

Parsing only says *what* to compute and with which engine; no arithmetic lives here.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from irforge.common.error_status import register_status
from irforge.common.extras import lazy_module

# Loaded at first use: every command's flags read DEFAULT_MEASURES, and pytrec_eval imports numpy.
pytrec_eval = lazy_module("pytrec_eval")

DEFAULT_MEASURES = ("nDCG@10", "R@100", "AP@100", "RR@10", "P@10", "Judged@10")

# trec_eval's measure set when no -m is given (trec_eval's "official" measures).
TREC_EVAL_DEFAULT = ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec",
                     "bpref", "recip_rank", "iprec_at_recall", "P")
TREC_EVAL_SETS = {"official": TREC_EVAL_DEFAULT, "all_trec": ("all_trec",)}

# trec_eval measures whose values are counts (printed as integers) and ones not printed per query.
COUNT_MEASURES = frozenset({"num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"})
AGGREGATE_ONLY = frozenset({"runid", "num_q", "gm_map", "gm_bpref"})
# pytrec_eval reports these as placeholders (0.0): they are strings in trec_eval.
NON_NUMERIC = frozenset({"runid", "relstring"})


# trec_eval measures whose parameters pytrec_eval mishandles: a gain map for ndcg aborts the
# process, and parameterised utility or 11pt_avg silently give 0 or fail. Refused up front.
PARAMETERS_REFUSED = frozenset({"ndcg", "ndcg_rel", "Rndcg", "utility", "11pt_avg"})
# trec_eval measures whose parameters are cutoffs: pytrec_eval accepts 0 or 0.5 there, then aborts
# the whole process with a C assertion when it evaluates.
CUTOFF_PARAMETERS = frozenset({"P", "recall", "ndcg_cut", "map_cut", "success", "relative_P"})


class MeasureError(ValueError):
    """A measure name that cannot be parsed or is not supported."""


register_status(MeasureError, "INVALID_ARGUMENT")  # how it travels over gRPC (irforge.common.grpc_errors)


@dataclass(frozen=True)
class IrMeasure:
    """How an ir_measures-style family maps onto trec_eval."""

    trec_name: str                 # trec_eval measure computed by pytrec_eval
    cutoff: str = "param"          # "param": cutoff is a trec_eval parameter; "truncate": cut the run; "none"
    cutoff_required: bool = False
    accepts_rel: bool = True
    description: str = ""


IR_MEASURES: dict[str, IrMeasure] = {
    "nDCG": IrMeasure("ndcg_cut", accepts_rel=False, description="graded nDCG; without @k: ndcg over the whole run"),
    "P": IrMeasure("P", cutoff_required=True, description="precision at k"),
    "R": IrMeasure("recall", cutoff_required=True, description="recall at k"),
    "AP": IrMeasure("map_cut", description="average precision (trec_eval map_cut at k)"),
    "RR": IrMeasure("recip_rank", cutoff="truncate", description="reciprocal rank of the first relevant document in the top k"),
    "Success": IrMeasure("success", cutoff_required=True, description="1 if a relevant document is in the top k"),
    "Rprec": IrMeasure("Rprec", cutoff="none", description="precision at R, the number of relevant documents"),
    "Bpref": IrMeasure("bpref", cutoff="none", description="binary preference"),
    "infAP": IrMeasure("infAP", cutoff="none", description="inferred AP"),
    "NumRet": IrMeasure("num_ret", cutoff="none", description="documents retrieved (NumRet(rel=1): relevant retrieved)"),
    "NumRel": IrMeasure("num_rel", cutoff="none", description="relevant documents in the qrels"),
    "NumQ": IrMeasure("num_q", cutoff="none", accepts_rel=False, description="queries evaluated"),
    "SetP": IrMeasure("set_P", cutoff="none", description="precision of the whole retrieved set"),
    "SetR": IrMeasure("set_recall", cutoff="none", description="recall of the whole retrieved set"),
    "SetF": IrMeasure("set_F", cutoff="none", description="F1 of the whole retrieved set"),
    "IPrec": IrMeasure("iprec_at_recall", cutoff_required=True, description="interpolated precision at recall level @r"),
}
WITHOUT_CUTOFF = {"nDCG": "ndcg", "AP": "map"}
JUDGED = "Judged"
# ir_measures families are matched whatever their case (`ndcg@10` is nDCG@10: nobody means
# anything else by it) and reported under their own spelling, so results.json, tables and
# comparisons name one measure one way. trec_eval's names stay case-sensitive, as trec_eval has them.
_FAMILY_BY_LOWER = {family.lower(): family for family in [*IR_MEASURES, JUDGED]}

_IR_NAME = re.compile(r"^(?P<family>[A-Za-z]+)(?:\((?P<params>[^)]*)\))?(?:@(?P<cutoff>[0-9.]+))?$")


@dataclass(frozen=True)
class MeasureRequest:
    """One requested measure, resolved to an engine.

    engine "pytrec_eval": compute `trec_spec` with pytrec_eval at `relevance_level`, on the run cut
    to `truncate_to` documents (0 = whole run), and read key `trec_key` (None = every key it returns).
    engine "judged": Judged@`cutoff`, computed by irforge (trec_eval 9 has no such measure).

    `depth`: how many of the best-ranked documents (tie rule) the value reads at most; 0 = the
    whole ranking (unknown, or it counts every retrieved document). The evaluator hands the
    engines only the top `depth` of each query when no request needs more: the same values for
    a fraction of the work. Declared only where trec_eval's code reads ranks [0, k) and nothing
    else of the run (the cutoff measures); every trec_eval-named request reads the whole ranking.
    """

    output_name: str
    engine: str
    trec_spec: str = ""
    trec_key: str | None = None
    relevance_level: int | None = None
    truncate_to: int = 0
    cutoff: int = 0
    depth: int = 0


def _parse_int(value: str, what: str, name: str) -> int:
    if not re.fullmatch(r"[0-9]+", value) or int(value) <= 0:
        raise MeasureError(f"measure {name!r}: {what} must be a positive integer, got {value!r}")
    return int(value)


def _parse_ir_measure(name: str) -> MeasureRequest | None:
    match = _IR_NAME.match(name)
    family = _FAMILY_BY_LOWER.get(match["family"].lower()) if match else None
    if family is None:
        return None
    params, cutoff = match["params"], match["cutoff"]
    name = family + name[len(family):]      # the family's own spelling: ndcg@10 -> nDCG@10
    if family == JUDGED:
        if cutoff is None or params:
            raise MeasureError(f"measure {name!r}: write Judged@k, e.g. Judged@10")
        k = _parse_int(cutoff, "the cutoff", name)
        return MeasureRequest(output_name=name, engine="judged", cutoff=k, depth=k)
    spec = IR_MEASURES[family]
    relevance_level = None
    if params:
        key, _, value = params.partition("=")
        if key.strip() != "rel" or not spec.accepts_rel:
            raise MeasureError(f"measure {name!r}: only rel=N is supported, and not for {family}")
        relevance_level = _parse_int(value.strip(), "rel", name)
    if cutoff is None:
        if spec.cutoff_required:
            raise MeasureError(f"measure {name!r}: {family} needs a cutoff, e.g. {family}@10")
        trec_name = WITHOUT_CUTOFF.get(family, spec.trec_name)
        return MeasureRequest(name, "pytrec_eval", trec_name, trec_name, relevance_level)
    if spec.cutoff == "none":
        raise MeasureError(f"measure {name!r}: {family} takes no @cutoff")
    if family == "IPrec":
        try:
            level = float(cutoff)
        except ValueError:
            raise MeasureError(f"measure {name!r}: the recall level must be a number within 0..1") from None
        if not 0.0 <= level <= 1.0:
            raise MeasureError(f"measure {name!r}: the recall level must be within 0..1")
        return MeasureRequest(name, "pytrec_eval", f"iprec_at_recall.{level:.2f}", f"iprec_at_recall_{level:.2f}", relevance_level)
    k = _parse_int(cutoff, "the cutoff", name)
    if spec.cutoff == "truncate":
        return MeasureRequest(name, "pytrec_eval", spec.trec_name, spec.trec_name, relevance_level, truncate_to=k, depth=k)
    return MeasureRequest(name, "pytrec_eval", f"{spec.trec_name}.{k}", f"{spec.trec_name}_{k}", relevance_level, depth=k)


def _parse_trec_measure(name: str) -> list[MeasureRequest]:
    if name in TREC_EVAL_SETS:
        return [MeasureRequest(spec, "pytrec_eval", spec) for spec in TREC_EVAL_SETS[name]]
    base, _, parameters = name.partition(".")
    if base not in pytrec_eval.supported_measures:
        return []
    if parameters and base in PARAMETERS_REFUSED:
        raise MeasureError(f"measure {name!r}: parameters for {base} are not supported (pytrec_eval mishandles them); use {base} without parameters")
    if parameters and base in CUTOFF_PARAMETERS:
        for cutoff in parameters.split(","):  # trec_eval truncates 23.4 to 23, and 0.5 to the 0 that aborts
            if not re.fullmatch(r"[0-9]+(\.[0-9]*)?", cutoff) or float(cutoff) < 1:
                raise MeasureError(f"measure {name!r}: cutoffs must be numbers of at least 1, got {cutoff!r}")
    try:  # let trec_eval's own parser validate the parameters
        pytrec_eval.RelevanceEvaluator({"q": {"d": 1}}, {name})
    except ValueError as error:
        raise MeasureError(f"measure {name!r}: {error}") from None
    return [MeasureRequest(name, "pytrec_eval", name)]


def parse_measures(names: list[str] | tuple[str, ...]) -> list[MeasureRequest]:
    """Resolve measure names; raise MeasureError naming the first unknown one."""
    if not names:
        raise MeasureError("no measures requested")
    requests: list[MeasureRequest] = []
    for raw in names:
        name = raw.strip()
        # A bare name trec_eval knows ("P", "map", "ndcg_cut.10") is trec_eval's; "P@10" is ir_measures'.
        found = [] if ("@" in name or "(" in name) else _parse_trec_measure(name)
        if not found:
            parsed = _parse_ir_measure(name)
            found = [parsed] if parsed else []
        if not found:
            known = ", ".join(sorted(IR_MEASURES) + [JUDGED])
            raise MeasureError(
                f"unknown measure {name!r}{_did_you_mean(name)}; use ir_measures names ({known}, with @k) "
                f"or trec_eval names ({', '.join(sorted(pytrec_eval.supported_measures))})"
            )
        requests.extend(found)
    return requests


def canonical_name(name: str) -> str:
    """The name a measure's value is reported under: an ir_measures family in its own spelling
    (ndcg@10 -> nDCG@10); anything else as given. Where a requested name is later looked up in
    the results (bench's first measure, a report's main measure), look it up by this."""
    found = None if "@" not in name and "(" not in name and _parse_trec_measure_name(name) else _IR_NAME.match(name.strip())
    family = _FAMILY_BY_LOWER.get(found["family"].lower()) if found else None
    name = name.strip()
    return family + name[len(family):] if family else name


def _parse_trec_measure_name(name: str) -> bool:
    return name.strip() in TREC_EVAL_SETS or name.strip().partition(".")[0] in pytrec_eval.supported_measures


def _did_you_mean(name: str) -> str:
    """' (did you mean nDCG@10?)' for the nearest known name; '' when nothing is near. With an @ or
    a ( the user wrote an ir_measures name: trec_eval's spelling of a family counts as that family
    (recal@100 -> R@100, ndcg_cut@10 -> nDCG@10), and a cutoff that is not a number becomes @10."""
    match = re.match(r"^([A-Za-z_]+)(.*)$", name)
    if not match:
        return ""
    head, tail = match.groups()
    ir_style = tail.startswith(("@", "("))
    candidates = {family.lower(): family for family in [*IR_MEASURES, JUDGED]}
    if ir_style:
        candidates.update({spec.trec_name.lower(): family for family, spec in IR_MEASURES.items()})
    else:
        candidates.update({measure.lower(): measure for measure in pytrec_eval.supported_measures})
    near = difflib.get_close_matches(head.lower(), list(candidates), n=1, cutoff=0.6)
    if not near:
        return ""
    best = candidates[near[0]]
    if best in IR_MEASURES or best == JUDGED:
        takes_cutoff = best == JUDGED or IR_MEASURES[best].cutoff != "none"
        cutoff = re.search(r"@[0-9.]+$", tail)
        suggestion = best + ((cutoff.group(0) if cutoff else "@10") if takes_cutoff else "")
    else:
        suggestion = best + tail
    return f" (did you mean {suggestion}?)" if suggestion != name else ""


def reading_depth(requests: list[MeasureRequest]) -> int:
    """How many top-ranked documents per query all `requests` read together; 0 = the whole ranking."""
    depths = [request.depth for request in requests]
    return 0 if not depths or 0 in depths else max(depths)


def supported_names() -> tuple[list[str], list[str]]:
    """(ir_measures-style families, trec_eval measure names) this evaluator understands."""
    return sorted(IR_MEASURES) + [JUDGED], sorted(pytrec_eval.supported_measures) + sorted(TREC_EVAL_SETS)
