"""Do two label sets (or two collections) rank the same systems the same way? Kendall's tau,
tau_AP and Spearman's rho between the systems' scores under A and under B, the way AIR-Bench
validated its generated collection against the human-labelled one.

Kendall's tau (tau-b, ties handled) and Spearman's rho with their p-values are scipy's.
tau_AP (Yilmaz, Aslam & Robertson, SIGIR 2008) weighs swaps near the top more: for the ranking
under B, each system at position i > 1 scores the share of the systems B puts above it that A
puts above it too; tau_AP = 2/(n-1) * sum of those shares - 1. It is not symmetric: A is the
reference (the human labels, the original collection). Its p-value is a randomization test:
the share of random orders of B at least as far from 0 as the observed value (seeded).
"""

from __future__ import annotations

from dataclasses import dataclass

from irforge.common.extras import lazy_module

# numpy loads at first use: `irforge --help` reads this module's names (flags' choices, defaults).
np = lazy_module("numpy")


class AgreementError(ValueError):
    """The two score lists cannot be set against each other (the message says why)."""


@dataclass(frozen=True)
class AgreementSettings:
    permutations: int = 10_000
    seed: int = 0


def agreement(systems: list[str], reference: list[float], candidate: list[float],
              settings: AgreementSettings = AgreementSettings(), lower_is_better: bool = False) -> dict:
    """Scores of the same systems under A (reference) and B (candidate); higher is better, or
    lower (ranks, 1 = best) with lower_is_better. The result reports the values as given."""
    if not (len(systems) == len(reference) == len(candidate)):
        raise AgreementError(f"{len(systems)} systems but {len(reference)} and {len(candidate)} scores")
    if len(systems) < 3:
        raise AgreementError(f"rank agreement needs at least 3 systems, got {len(systems)}")
    if len(set(systems)) != len(systems):
        raise AgreementError("a system is named twice")
    given_a, given_b = np.asarray(reference, dtype=float), np.asarray(candidate, dtype=float)
    if not (np.isfinite(given_a).all() and np.isfinite(given_b).all()):
        raise AgreementError("a score is not a finite number")
    a, b = (-given_a, -given_b) if lower_is_better else (given_a, given_b)
    from scipy import stats   # lazy: scipy.stats takes ~1 s to import, and the CLI's --help loaded it

    kendall = stats.kendalltau(a, b)
    spearman = stats.spearmanr(a, b)
    tau_ap = tau_ap_score(systems, a, b)
    return {
        "systems": len(systems),
        "kendall_tau": {"value": float(kendall.statistic), "p": float(kendall.pvalue), "variant": "tau-b (scipy)"},
        "spearman_rho": {"value": float(spearman.statistic), "p": float(spearman.pvalue)},
        "tau_ap": {"value": tau_ap, "p": _tau_ap_p(systems, a, b, tau_ap, settings), "reference": "A",
                   "permutations": settings.permutations, "seed": settings.seed},
        "ranks": {name: {"A": int(ra), "B": int(rb), "score_A": float(sa), "score_B": float(sb)}
                  for name, ra, rb, sa, sb in zip(systems, _ranks(systems, a), _ranks(systems, b), given_a, given_b)},
    }


def tau_ap_score(systems: list[str], reference: np.ndarray, candidate: np.ndarray) -> float:
    """tau_AP of the candidate ranking against the reference. Ties in a ranking are broken by
    system name (descending, as irforge breaks document ties), so the value is defined."""
    ref_position = {name: i for i, name in enumerate(_order(systems, reference))}
    positions = np.array([ref_position[name] for name in _order(systems, candidate)])
    return _tau_ap_of_positions(positions)


def _tau_ap_of_positions(positions: np.ndarray) -> float:
    """positions[i]: where the reference ranks the candidate's i-th system. For each i > 0, the
    share of the candidate's first i systems that the reference also ranks above it."""
    n = len(positions)
    above = np.tril(positions[None, :] < positions[:, None], k=-1).sum(axis=1)[1:]
    return float(2.0 * (above / np.arange(1, n)).sum() / (n - 1) - 1.0)


def _tau_ap_p(systems, reference, candidate, observed: float, settings: AgreementSettings) -> float:
    """Randomization p-value: random orders of the candidate ranking, two-sided, (hits + 1) / (permutations + 1)."""
    rng = np.random.default_rng(settings.seed)
    n = len(systems)
    hits = sum(abs(_tau_ap_of_positions(rng.permutation(n))) >= abs(observed) - 1e-12 for _ in range(settings.permutations))
    return (hits + 1) / (settings.permutations + 1)


def _order(systems: list[str], scores: np.ndarray) -> list[str]:
    """Systems best first: score descending, then name descending (the tie rule)."""
    return [name for _, name in sorted(zip(scores.tolist(), systems), reverse=True)]


def _ranks(systems: list[str], scores: np.ndarray) -> list[int]:
    position = {name: i + 1 for i, name in enumerate(_order(systems, scores))}
    return [position[name] for name in systems]
