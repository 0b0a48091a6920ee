"""Run fusion, one method per module: reciprocal-rank fusion and normalised linear combination."""

from irforge.fusion.linear import normalized_linear_fusion
from irforge.fusion.rrf import reciprocal_rank_fusion

FUSION_METHODS = ("rrf", "linear")

__all__ = ["FUSION_METHODS", "normalized_linear_fusion", "reciprocal_rank_fusion"]
