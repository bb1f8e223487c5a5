"""Every reader of the ``attrs`` column goes through ``trace.schema.parse_attrs``: a damaged or
foreign value (not JSON, JSON that is not an object) reads as no attrs, and the reader shows the
rest of the event instead of failing on it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelseek_tui.browse.live import pending_decision
from kernelseek_tui.browse.session_data import counts
from kernelseek_tui.browse.timeline import Timeline, commit_link
from kernelseek_tui.browse.transcript import TranscriptIndex
from kernelseek_tui.experiment.metrics import session_metrics
from kernelseek_tui.external.transcript_sync import _with_source
from kernelseek_tui.trace.schema import Event, events_to_table, parse_attrs

DAMAGED = ["[1, 2]", "not json", "3", '"text"', "", None]


@pytest.mark.parametrize("text", DAMAGED)
def test_parse_attrs_reads_anything_but_an_object_as_empty(text: str | None) -> None:
    assert parse_attrs(text) == {}


def test_parse_attrs_returns_an_object_as_it_is() -> None:
    assert parse_attrs('{"eval_seq": 4, "attached": true}') == {"eval_seq": 4, "attached": True}
    assert Event("s", 1, "commit", attrs='{"n": 2}').attrs_dict() == {"n": 2}


def _session(attrs: str | None) -> list[Event]:
    """One event of every kind whose summary reads attrs, each with the same ``attrs``."""
    kinds = ["tool_call", "eval", "decision", "commit", "compaction", "error", "control"]
    events = [
        Event("s", seq, kind, ts=1_000_000 * seq, attrs=attrs) for seq, kind in enumerate(kinds)
    ]
    events[0].tool_name = "evaluate"
    events[1].verdict, events[1].speedup = "pass", 1.5
    events[3].git_sha = "abc"
    return events


@pytest.mark.parametrize("text", DAMAGED)
def test_readers_show_events_whose_attrs_are_damaged(text: str | None) -> None:
    events = _session(text)
    table = events_to_table(events)
    index = TranscriptIndex(table)
    lines = [index.line(i) for i in range(len(index))]
    assert [line.kind for line in lines] == [e.kind for e in events]
    assert "commit" in index.detail_title(3)
    timeline = Timeline.from_events(table)
    assert timeline.best_speedup == 1.5
    assert commit_link(text) == (None, False)
    assert counts(table)["commits"] == 1
    assert pending_decision(table) is None  # nobody is awaited at a decision without attrs
    metrics = session_metrics(table.to_pylist(), session_id="s", arm="a")
    assert metrics.tool_calls == 1 and metrics.commits


@pytest.mark.parametrize("text", DAMAGED)
def test_an_imported_event_keeps_its_source_whatever_its_attrs(text: str | None) -> None:
    where = Path("/transcripts/one.jsonl")
    assert json.loads(_with_source(text, where)) == {"imported_from": str(where)}
