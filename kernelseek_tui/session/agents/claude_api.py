"""Calling the Messages API: one streamed call, the retry rule, and what to send back.

Only the model call is ever retried: the tool results it follows are already in the
conversation, so a retry sends the same request again and no tool runs twice. Retried are rate
limits (429), server errors (5xx, 529 overloaded), connection failures and timeouts, and an
``error`` event inside a 200 stream whose type says the same (``overloaded_error``,
``api_error``); the wait doubles from ``base_s`` up to ``max_s`` (or follows ``retry-after``).
A connection that cannot be made at all (``connect``: no route, no DNS) is retried only once
the API has answered in this run: before that it is a bad network or setting, and waiting
minutes would only hide it.

Nothing here imports ``anthropic`` at module level: the offline agents never load it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Final

from kernelseek_tui.errors import one_line

RETRYABLE_STATUS: Final = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
RETRYABLE_TYPES: Final = frozenset(
    {"overloaded_error", "rate_limit_error", "api_error", "timeout_error"}
)

# Which models think, and how they are asked to. Newer ones decide for themselves
# ("adaptive"); older 4.x and 3.7 models take a token budget; the rest do not think.
ADAPTIVE_PREFIXES: Final = (
    "claude-opus-4-6",
    "claude-opus-4-7",
    "claude-opus-4-8",
    "claude-sonnet-4-6",
    "claude-opus-5",
    "claude-sonnet-5",
    "claude-haiku-5",
    "claude-mythos",
    "claude-fable",
)
BUDGET_PREFIXES: Final = (
    "claude-opus-4",
    "claude-sonnet-4",
    "claude-haiku-4-5",
    "claude-3-7-sonnet",
)

# Which block fields go back to the API, per block type (the SDK adds fields of its own, such
# as a parsed output, that the API does not accept in a request).
_KEEP: Final = {
    "text": ("type", "text", "citations"),
    "thinking": ("type", "thinking", "signature"),
    "redacted_thinking": ("type", "data"),
    "tool_use": ("type", "id", "name", "input"),
}


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 8
    base_s: float = 2.0
    max_s: float = 60.0

    def wait(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before attempt ``attempt + 1`` (jittered, never below retry-after)."""
        backoff = min(self.max_s, self.base_s * 2 ** (attempt - 1)) * rng.uniform(0.5, 1.0)
        return max(backoff, retry_after or 0.0)


@dataclass(frozen=True, slots=True)
class CallFailure:
    """What went wrong with a model call, in the terms the retry rule needs."""

    retryable: bool
    status: int | None
    error_type: str | None
    message: str
    retry_after: float | None = None
    too_long: bool = False  # the prompt does not fit: compact, then try again
    connect: bool = False  # no connection could be made (not a timeout of one that was)


def classify(error: BaseException) -> CallFailure:
    """How to treat an exception from a model call."""
    import anthropic

    message = f"{type(error).__name__}: {error}"[:500]
    if isinstance(error, anthropic.APIStatusError):
        status = getattr(error, "status_code", None)
        error_type = _error_type(getattr(error, "body", None))
        retry_after = _retry_after(getattr(error, "response", None))
        too_long = status == 400 and "prompt is too long" in str(error).lower()
        retryable = status in RETRYABLE_STATUS or error_type in RETRYABLE_TYPES
        return CallFailure(retryable, status, error_type, message, retry_after, too_long)
    if isinstance(error, anthropic.APIConnectionError):  # timeouts are connection errors too
        timeout = isinstance(error, anthropic.APITimeoutError)
        message = f"{message} ({one_line(error)})"[:500]
        return CallFailure(True, None, "connection_error", message, connect=not timeout)
    return CallFailure(False, None, None, message)


def _error_type(body: Any) -> str | None:
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("type"), str):
            return inner["type"]
        if isinstance(body.get("type"), str) and body["type"] != "error":
            return body["type"]
    return None


def _retry_after(response: Any) -> float | None:
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw = headers.get("retry-after")
    try:
        return max(0.0, float(raw)) if raw is not None else None
    except ValueError:
        return None


def stream_message(client: Any, request: dict[str, Any]) -> Any:
    """One streamed Messages API call; the final message once the stream is read through."""
    with client.messages.stream(**request) as stream:
        for _event in stream:
            pass
        return stream.get_final_message()


def block_to_param(block: Any) -> dict[str, Any]:
    """A response content block as it must be sent back (thinking signatures untouched)."""
    data = block if isinstance(block, dict) else block.model_dump(mode="json", exclude_none=True)
    keep = _KEEP.get(data.get("type", ""))
    if keep is None:
        return {k: v for k, v in data.items() if v is not None}
    return {k: data[k] for k in keep if k in data and data[k] is not None}


def usage_dict(usage: Any) -> dict[str, int | None]:
    """The token counts of a response's usage, by the trace's column names."""
    names = (
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    )
    return {name: getattr(usage, name, None) for name in names}


def thinking_config(model: str, budget_tokens: int) -> dict[str, Any] | None:
    """The ``thinking`` parameter for ``model``, or None when it does not think."""
    if model.startswith(ADAPTIVE_PREFIXES):
        return {"type": "adaptive"}
    if model.startswith(BUDGET_PREFIXES):
        return {"type": "enabled", "budget_tokens": budget_tokens}
    return None
