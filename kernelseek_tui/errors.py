"""Errors a user can act on: the CLI prints them as one line and exits nonzero."""

from __future__ import annotations


class KernelseekError(Exception):
    """A problem with the user's input or environment, stated so they can fix it."""

    exit_code = 2


def innermost_cause(error: BaseException) -> BaseException:
    """The exception at the bottom of ``error``'s chain (``raise ... from`` or raised while
    handling another): a DNS failure under a connection error under an API error."""
    seen = {id(error)}
    while True:
        inner = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
        if inner is None or id(inner) in seen:
            return error
        seen.add(id(inner))
        error = inner


def one_line(error: BaseException, limit: int = 300) -> str:
    """``Type: message`` of the innermost cause, on one line (what a person can act on)."""
    inner = innermost_cause(error)
    text = " ".join(f"{type(inner).__name__}: {inner}".split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
