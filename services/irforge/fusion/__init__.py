"""Run fusion over any number of runs: reciprocal-rank fusion, CombSUM/CombMNZ/CombMAX/CombMIN/
CombANZ, weighted sums (wsum, wmnz) of normalised scores (min-max, zmuv, sum, max), named as ranx
names them (catalogue.py); weights chosen by a grid search on a development split (optimise.py)."""

from irforge.fusion.catalogue import METHODS, NORMALISATIONS
from irforge.fusion.fuse import Fusion, weights_for
from irforge.fusion.linear import normalized_linear_fusion
from irforge.fusion.rrf import reciprocal_rank_fusion

FUSION_METHODS = tuple(METHODS)

__all__ = ["FUSION_METHODS", "METHODS", "NORMALISATIONS", "Fusion", "normalized_linear_fusion", "reciprocal_rank_fusion",
           "weights_for"]
