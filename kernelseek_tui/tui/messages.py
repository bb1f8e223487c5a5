"""Messages the panes and the app's workers send through the app (the app owns the wiring).

A worker thread never touches a widget: it posts one of these, and the handler on the app,
on the app's own thread, updates the panes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa
from textual.message import Message

if TYPE_CHECKING:
    from kernelseek_tui.browse.session_data import SessionData
    from kernelseek_tui.browse.timeline import Timeline
    from kernelseek_tui.browse.transcript import TranscriptIndex
    from kernelseek_tui.evaluate.result import EvalResult


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


class SessionLoaded(Message):
    """The session was read (in a worker): its data, transcript index and timeline."""

    def __init__(self, data: SessionData, index: TranscriptIndex, timeline: Timeline) -> None:
        super().__init__()
        self.data = data
        self.index = index
        self.timeline = timeline


class BenchmarkLoaded(Message):
    """The full result of a selected evaluation or commit was read (in a worker); ``result``
    is None when there is none; ``label`` says what it is the result of."""

    def __init__(self, result: EvalResult | None, label: str) -> None:
        super().__init__()
        self.result = result
        self.label = label
