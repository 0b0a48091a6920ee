"""The errors of calling an LLM endpoint (irforge.llm.chat), owned here so llm/ depends on no room
that uses it. A room raises its own types through `ChatErrors`: the judge passes subclasses of
these (irforge.judge.errors.CHAT_ERRORS), so `except JudgeError` still catches what the chat raised."""

from __future__ import annotations

from dataclasses import dataclass


class LLMError(RuntimeError):
    """Base class for problems calling an LLM endpoint a user can act on."""


class LLMSpecError(LLMError, ValueError):
    """The spec of an LLM endpoint is unusable (e.g. its TLS files): names the spec and the key."""


class LLMTokenBudgetExhausted(LLMError):
    """The endpoint spent its `token_budget` (prompt + completion tokens): further requests are not sent."""


@dataclass(frozen=True)
class ChatErrors:
    """The types a ChatEndpoint raises; a room passes subclasses of its own."""

    spec_error: type[LLMSpecError] = LLMSpecError
    token_budget: type[LLMTokenBudgetExhausted] = LLMTokenBudgetExhausted
