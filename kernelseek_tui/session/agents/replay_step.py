"""One step of a replay: a tool call to make again, or a question to ask again.

Its own module so that both plans, a recorded session's (``replay``) and a git history's
(``history_plan``), build steps without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ReplayStep:
    """One thing to do again: a tool call (``tool`` set) or a question."""

    index: int
    tool: str | None = None
    tool_input: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
    question_id: str | None = None
    source: str | None = None
    trigger: str | None = None
    # Where the step comes from when it is not a recorded session (a history replay): the
    # commit and version label, recorded in the step's attrs so a candidate names its commit.
    commit: str | None = None
    version: str | None = None

    def origin_attrs(self) -> dict[str, Any]:
        """``replayed_commit`` / ``replayed_version`` for the trace, when known."""
        attrs: dict[str, Any] = {}
        if self.commit is not None:
            attrs["replayed_commit"] = self.commit
        if self.version is not None:
            attrs["replayed_version"] = self.version
        return attrs
