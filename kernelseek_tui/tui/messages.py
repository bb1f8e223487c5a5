"""Messages the panes send one another through the app (the app owns the wiring)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from textual.message import Message


class EventSelected(Message):
    """The transcript's cursor moved to the event with this ``seq``."""

    def __init__(self, seq: int, kind: str) -> None:
        super().__init__()
        self.seq = seq
        self.kind = kind


class CandidateSelected(Message):
    """The history's cursor moved to a candidate commit; ``eval_seq`` is the eval behind it."""

    def __init__(self, sha: str, eval_seq: int | None) -> None:
        super().__init__()
        self.sha = sha
        self.eval_seq = eval_seq


class QuestionSubmitted(Message):
    """The person asked a question (typed, or a suggestion picked by number)."""

    def __init__(self, text: str, question_id: str | None, trigger: str | None) -> None:
        super().__init__()
        self.text = text
        self.question_id = question_id
        self.trigger = trigger


class NewEvents(Message):
    """A live session wrote more events (a batch, coalesced by the follower)."""

    def __init__(self, table: pa.Table, meta: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.table = table
        self.meta = meta
