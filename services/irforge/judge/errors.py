"""Judge errors: each names what was wrong and where (the spec file and key, the pair, the record).

A pair the judge could not label is never an error: it is a Judgement whose verdict says
UNPARSED or FAILED. These types are for input that cannot be judged at all.
"""

from __future__ import annotations

from irforge.common.error_status import register_status
from irforge.llm.errors import ChatErrors, LLMSpecError, LLMTokenBudgetExhausted


class JudgeError(RuntimeError):
    """Base class for judge problems a user can act on."""


class JudgeSpecError(JudgeError, LLMSpecError):
    """A judge spec or prompt template is malformed (names the file and the key)."""


class JudgeRequestError(JudgeError, ValueError):
    """A judge request is malformed (names the pair by position and ids)."""


class JudgeStoreError(JudgeError):
    """The judgement store cannot be opened or is not an irforge judgement store."""


class TokenBudgetExhausted(JudgeError, LLMTokenBudgetExhausted):
    """The judge spent its `token_budget` (prompt + completion tokens): further pairs are not sent."""


# What irforge.llm.chat raises for the judge and for generation (both call it with a JudgeSpec).
CHAT_ERRORS = ChatErrors(spec_error=JudgeSpecError, token_budget=TokenBudgetExhausted)

# How each travels over gRPC (irforge.common.grpc_errors): a malformed spec or request, a spent
# token budget, an unusable store.
register_status(JudgeSpecError, "INVALID_ARGUMENT")
register_status(JudgeRequestError, "INVALID_ARGUMENT")
register_status(TokenBudgetExhausted, "RESOURCE_EXHAUSTED")
register_status(JudgeStoreError, "FAILED_PRECONDITION")
register_status(JudgeError, "FAILED_PRECONDITION")
