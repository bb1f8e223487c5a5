"""Importing Claude Code transcripts: merged responses, tree order, usage once, idempotence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from kernelseek_tui.trace.importers.claude_code import (
    TranscriptError,
    import_claude_code,
    parse_transcript,
)
from kernelseek_tui.trace.importers.claude_code_project import import_transcripts
from kernelseek_tui.trace.pricing import estimate_cost
from kernelseek_tui.trace.reader import read_session

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"


def _import(path: Path, root: Path, **kwargs):
    result = import_claude_code(path, root, **kwargs)
    return result, read_session(result.session_dir).to_pylist()


def test_simple_transcript_becomes_ordered_trace_rows(tmp_path: Path) -> None:
    result, rows = _import(FIXTURES / "simple.jsonl", tmp_path)
    assert result.session_id == "cc-simple" and result.added == 8
    assert [(r["kind"], r["role"]) for r in rows] == [
        ("message", "harness"),  # the summary line
        ("message", "user"),
        ("thinking", "assistant"),
        ("message", "assistant"),
        ("tool_call", "assistant"),
        ("tool_result", "user"),  # after its call, although the file has it before
        ("message", "assistant"),
        ("message", "harness"),  # the system line
    ]
    assert {r["source"] for r in rows} == {"importer"}
    assert [r["seq"] for r in rows] == list(range(8))
    assert rows[4]["tool_name"] == "Bash"
    assert json.loads(rows[4]["tool_input"]) == {
        "command": "make bench",
        "description": "Build and time",
    }
    assert rows[5]["tool_name"] == "Bash" and rows[5]["tool_call_id"] == "toolu_01Build"
    assert rows[5]["text"] == "baseline: 1.92 ms\nok" and rows[5]["is_error"] is False
    assert json.loads(rows[5]["attrs"])["cc_tool_use_result"]["stdout"].startswith("baseline")


def test_one_response_split_over_lines_counts_its_usage_once(tmp_path: Path) -> None:
    _, rows = _import(FIXTURES / "simple.jsonl", tmp_path)
    first = rows[2:5]  # thinking, text, tool_use: three lines sharing message.id
    assert first[0]["response_id"] == "msg_01SimpleFirst"
    assert first[0]["output_tokens"] == 210  # the largest (final) count, not 5 + 5 + 210
    assert first[0]["input_tokens"] == 12 and first[0]["cache_read_input_tokens"] == 9000
    assert first[0]["stop_reason"] == "tool_use"
    assert all(r["input_tokens"] is None and r["response_id"] is None for r in first[1:])
    assert sum(r["output_tokens"] or 0 for r in rows) == 210 + 40
    assert sum(r["input_tokens"] or 0 for r in rows) == 12 + 30
    model = "claude-sonnet-4-5-20250929"
    assert first[0]["model"] == model
    assert first[0]["cost_usd"] == pytest.approx(estimate_cost(model, 12, 210, 4000, 9000))
    # Each block keeps the time of its own line.
    assert first[0]["ts"] < first[1]["ts"] < first[2]["ts"]


def test_parent_links_follow_the_transcript_tree(tmp_path: Path) -> None:
    _, rows = _import(FIXTURES / "simple.jsonl", tmp_path)
    ids = [r["event_id"] for r in rows]
    assert rows[1]["parent_event_id"] is None
    assert [r["parent_event_id"] for r in rows[2:8]] == ids[1:7]


def test_parallel_tool_calls_compaction_and_other_blocks(tmp_path: Path) -> None:
    _, rows = _import(FIXTURES / "parallel_tools.jsonl", tmp_path)
    assert [r["kind"] for r in rows] == [
        "message",
        "message",
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "compaction",
        "message",
        "message",
    ]
    assert rows[1]["text"] == "[image]"
    calls = {r["tool_call_id"]: r for r in rows if r["kind"] == "tool_call"}
    results = {r["tool_call_id"]: r for r in rows if r["kind"] == "tool_result"}
    assert set(calls) == set(results) == {"toolu_A", "toolu_B"}
    assert (
        results["toolu_A"]["tool_name"] == "Read"
        and results["toolu_A"]["text"] == "// baseline kernel"
    )
    assert results["toolu_B"]["is_error"] is True
    # Two lines of one response: usage on the first tool call only.
    assert calls["toolu_A"]["output_tokens"] == 300 and calls["toolu_B"]["output_tokens"] is None
    assert json.loads(rows[7]["attrs"])["cc_is_meta"] is True
    assert json.loads(rows[8]["attrs"])["cc_is_sidechain"] is True
    # turn counts typed prompts, not tool results or injected text
    assert {r["turn"] for r in rows} == {1}


def test_importing_the_same_file_again_adds_nothing(tmp_path: Path) -> None:
    _first, rows = _import(FIXTURES / "simple.jsonl", tmp_path)
    again, rows_again = _import(FIXTURES / "simple.jsonl", tmp_path)
    assert (again.added, again.already_present) == (0, 8)
    assert rows_again == rows


def test_a_transcript_that_grew_adds_only_its_new_lines(tmp_path: Path) -> None:
    transcript = tmp_path / "grow.jsonl"
    shutil.copy(FIXTURES / "simple.jsonl", transcript)
    _import(transcript, tmp_path / "traces")
    last = json.loads(transcript.read_text().splitlines()[-1])
    new_line = {
        "type": "user",
        "uuid": "a1000000-0000-4000-8000-000000000099",
        "parentUuid": last["uuid"],
        "sessionId": last["sessionId"],
        "timestamp": "2026-11-30T09:01:00Z",
        "message": {"role": "user", "content": "Now try a larger tile."},
    }
    with open(transcript, "a") as handle:
        handle.write(json.dumps(new_line) + "\n")
    result, rows = _import(transcript, tmp_path / "traces")
    assert (result.added, result.already_present) == (1, 8)
    assert rows[-1]["seq"] == 8 and rows[-1]["text"] == "Now try a larger tile."
    assert rows[-1]["turn"] == 2


def test_an_unfinished_last_line_is_left_out(tmp_path: Path) -> None:
    result, rows = _import(FIXTURES / "torn_tail.jsonl", tmp_path)
    assert result.torn_last_line is True
    assert [r["kind"] for r in rows] == ["message", "message", "tool_call", "tool_call"]


def test_the_session_id_can_be_chosen(tmp_path: Path) -> None:
    result, _ = _import(FIXTURES / "simple.jsonl", tmp_path, session_id="mine")
    assert result.session_dir == tmp_path / "mine"
    meta = json.loads((tmp_path / "mine" / "session.json").read_text())
    assert meta["status"] == "finished" and meta["session_id"] == "mine"
    assert meta["created"] == "2026-11-30T09:00:00Z"


def test_imported_files_are_plain_parquet(tmp_path: Path) -> None:
    result, _ = _import(FIXTURES / "simple.jsonl", tmp_path)
    rows = duckdb.sql(
        f"SELECT kind, sum(output_tokens) FROM '{result.session_dir}/events.parquet' "
        "GROUP BY kind ORDER BY kind"
    ).fetchall()
    assert ("thinking", 210) in rows


def test_not_a_transcript(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match=r"not_jsonl\.jsonl:1: not a Claude Code JSONL"):
        parse_transcript(FIXTURES / "not_jsonl.jsonl")


def _resumed_copy(original: Path, dest: Path) -> Path:
    """What ``claude --resume`` writes: the earlier lines copied (same uuids, the new file's
    session id), then the new turn."""
    lines = [json.loads(line) for line in original.read_text().splitlines()]
    copied = [{**line, "sessionId": "resumed-0001"} for line in lines if line.get("uuid")]
    last = copied[-1]
    new_turn = [
        {
            "type": "user",
            "uuid": "b2000000-0000-4000-8000-000000000001",
            "parentUuid": last["uuid"],
            "sessionId": "resumed-0001",
            "timestamp": "2026-12-01T10:00:00Z",
            "message": {"role": "user", "content": "Go on from there."},
        },
        {
            "type": "assistant",
            "uuid": "b2000000-0000-4000-8000-000000000002",
            "parentUuid": "b2000000-0000-4000-8000-000000000001",
            "sessionId": "resumed-0001",
            "timestamp": "2026-12-01T10:00:05Z",
            "message": {
                "id": "msg_02Resumed",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "Going on."}],
                "usage": {"input_tokens": 11, "output_tokens": 7},
            },
        },
    ]
    dest.write_text("".join(json.dumps(line) + "\n" for line in copied + new_turn))
    return dest


def _totals(root: Path) -> tuple[int, int, int]:
    ((events, distinct, tokens),) = duckdb.sql(
        f"SELECT count(*), count(DISTINCT event_id), sum(output_tokens) "
        f"FROM read_parquet('{root}/*/events.parquet')"
    ).fetchall()
    return events, distinct, tokens


@pytest.mark.parametrize("order", ["together", "resumed first", "original first"])
def test_a_resumed_session_counts_each_line_once(tmp_path: Path, order: str) -> None:
    project = tmp_path / "projects" / "-home-dev-kernels"
    project.mkdir(parents=True)
    original = project / "first.jsonl"
    shutil.copy(FIXTURES / "simple.jsonl", original)
    resumed = _resumed_copy(original, project / "second.jsonl")
    root = tmp_path / "traces"
    if order == "together":
        outcomes = import_transcripts([resumed, original], root)  # any order on the line
    elif order == "resumed first":
        outcomes = import_transcripts([resumed], root) + import_transcripts([original], root)
    else:
        outcomes = import_transcripts([original], root) + import_transcripts([resumed], root)
    assert all(o.error is None for o in outcomes)
    alone = tmp_path / "alone"
    import_transcripts([FIXTURES / "simple.jsonl"], alone)
    events, distinct, tokens = _totals(root)
    _, _, tokens_alone = _totals(alone)
    # The 8 events of the original once, plus the resumed turn (2 events, 7 output tokens).
    assert (events, distinct, tokens) == (10, 10, tokens_alone + 7)
    by_path = {o.path: o.result for o in outcomes}
    added = sum(r.added for r in by_path.values() if r is not None)
    assert added == 10


def test_every_good_file_is_imported_and_each_bad_one_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    snapshots = tmp_path / "snapshots.jsonl"
    snapshots.write_text(
        json.dumps({"type": "file-history-snapshot", "messageId": "m1", "snapshot": {}}) + "\n"
    )
    files = [bad, FIXTURES / "simple.jsonl", snapshots, FIXTURES / "parallel_tools.jsonl"]
    outcomes = import_transcripts(files, tmp_path / "traces")
    assert [o.path for o in outcomes] == files
    assert outcomes[0].error is not None and "bad.jsonl:1" in outcomes[0].error
    assert outcomes[1].result is not None and outcomes[1].result.added == 8
    # Claude Code writes files of snapshot lines only: nothing to import, and no error.
    assert outcomes[2].error is None and outcomes[2].result is not None
    assert outcomes[2].result.added == 0 and not (tmp_path / "traces" / "cc-snapshots").exists()
    assert outcomes[3].result is not None and outcomes[3].result.added > 0
