"""The transcript: the index over a session's events (lines, detail, filters, search, appends)
and the pane a person drives with the keyboard (every binding, the detail modal, the search
prompt, filters, live appends)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from textual.app import App, ComposeResult
from textual.widgets import Static

from kernelseek_tui.browse.transcript import TranscriptIndex
from kernelseek_tui.paths import DEMO_DIR
from kernelseek_tui.trace.reader import read_session
from kernelseek_tui.trace.schema import Event, events_to_table, to_json_text
from kernelseek_tui.tui.messages import EventSelected
from kernelseek_tui.tui.screens.event_detail import EventDetailScreen
from kernelseek_tui.tui.widgets.transcript import TranscriptView
from tests.synthetic import session_table

# -- fixtures -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_table() -> pa.Table:
    return session_table("s1", tool_calls=300, evals=30, questions=12, seed=3)


@pytest.fixture(scope="module")
def big_table() -> pa.Table:
    return session_table("big")  # ~29,500 events


def hand_events() -> pa.Table:
    """A short session with one event of each shape the summaries treat specially."""
    base = 1_780_000_000_000_000
    rows = [
        Event("h", 0, "message", ts=base, role="user", source="harness", text="Make it fast."),
        Event(
            "h",
            1,
            "thinking",
            ts=base + 1_000_000,
            role="assistant",
            text=" ".join(f"word{i}" for i in range(40)),
        ),
        Event(
            "h",
            2,
            "tool_call",
            ts=base + 2_000_000,
            role="assistant",
            tool_name="edit_file",
            tool_call_id="c1",
            tool_input=to_json_text(
                {"path": "kernel.cu", "old_text": "a\nb", "new_text": "x\ny\nz"}
            ),
        ),
        Event(
            "h",
            3,
            "tool_result",
            ts=base + 3_000_000,
            tool_name="edit_file",
            tool_call_id="c1",
            text="edited kernel.cu\nline two of the result",
            duration_ms=12.0,
        ),
        Event(
            "h",
            4,
            "tool_call",
            ts=base + 4_000_000,
            tool_name="run_shell",
            tool_call_id="c2",
            tool_input=to_json_text({"command": "nvcc -O3 -arch=sm_90a kernel.cu"}),
        ),
        Event(
            "h",
            5,
            "tool_result",
            ts=base + 5_000_000,
            tool_name="run_shell",
            tool_call_id="c2",
            text="kernel.cu(12): error: identifier BLOCK_K is undefined",
            is_error=True,
        ),
        Event(
            "h",
            6,
            "tool_call",
            ts=base + 6_000_000,
            tool_name="evaluate",
            tool_call_id="c3",
            tool_input=to_json_text({"knobs": {"BLOCK_M": 128}}),
        ),
        Event(
            "h",
            8,
            "eval",
            ts=base + 8_000_000,
            verdict="fail",
            scenarios_passed=3,
            scenarios_total=24,
            candidate_sha="deadbeefcafe",
            attrs=to_json_text({"objective": True, "reasons": ["causal_4k: max error 0.3"]}),
        ),
        Event(
            "h",
            9,
            "decision",
            ts=base + 9_000_000,
            trigger="failure_streak",
            text="three failures in a row",
            attrs=to_json_text({"wait_s": 60, "suggestions": [{"id": "a", "text": "?"}]}),
        ),
        Event(
            "h",
            10,
            "question",
            ts=base + 10_000_000,
            source="repertoire",
            trigger="failure_streak",
            question_id="q-why",
            question_text="What would you expect to see if your explanation were wrong?",
        ),
        Event(
            "h",
            11,
            "eval",
            ts=base + 11_000_000,
            verdict="pass",
            scenarios_passed=24,
            scenarios_total=24,
            speedup=1.2345,
            best_speedup=1.2345,
            vs_fa3=0.61,
        ),
        Event(
            "h",
            12,
            "commit",
            ts=base + 12_000_000,
            git_sha="0123456789abcdef",
            text="candidate 2: 1.234x (24/24)\n\nKernelseek-Seq: 11",
        ),
        Event(
            "h",
            13,
            "compaction",
            ts=base + 13_000_000,
            attrs=to_json_text(
                {"cleared": ["c1", "c2"], "prompt_tokens": 150_000, "budget_tokens": 160_000}
            ),
        ),
        Event(
            "h",
            14,
            "error",
            ts=base + 14_000_000,
            text="overloaded",
            attrs=to_json_text({"error_type": "overloaded_error", "status": 529, "attempt": 2}),
        ),
    ]
    return events_to_table(rows)


# -- the index ----------------------------------------------------------------------------


def test_index_rows_and_row_of_seq() -> None:
    index = TranscriptIndex(hand_events())
    assert len(index) == 14
    assert index.seq_at(0) == 0 and index.kind_at(2) == "tool_call"
    assert index.row_of_seq(4) == 4
    assert index.row_of_seq(7) == index.row_of_seq(6) == 6  # seq 7 is missing: nearest earlier
    assert index.row_of_seq(8) == 7
    assert index.row_of_seq(10_000) == len(index) - 1
    assert index.row_of_seq(-1) is None


def test_lines_say_what_happened() -> None:
    index = TranscriptIndex(hand_events())
    lines = [index.line(i) for i in range(len(index))]
    by_seq = {line.seq: line for line in lines}
    assert by_seq[0].summary == "user: Make it fast."
    assert by_seq[0].clock == time.strftime("%H:%M:%S", time.gmtime(1_780_000_000))
    think = by_seq[1]
    assert think.label == "think" and think.summary.endswith("…")
    assert think.summary.startswith("word0 word1") and "word39" not in think.summary
    assert by_seq[2].summary == "edit_file  kernel.cu  -2 +3 lines"
    assert by_seq[3].summary.startswith("edit_file → edited kernel.cu")
    assert "2 lines" in by_seq[3].summary and "12 ms" in by_seq[3].summary
    assert by_seq[4].summary == "run_shell  $ nvcc -O3 -arch=sm_90a kernel.cu"
    failed_result = by_seq[5]
    assert failed_result.is_error and "red" in failed_result.style
    assert failed_result.summary.startswith("ERROR run_shell → kernel.cu(12): error")
    assert by_seq[6].summary == "evaluate  objective BLOCK_M=128"
    failed_eval = by_seq[8].summary
    assert failed_eval.startswith("FAIL  3/24") and "cand deadbee" in failed_eval
    assert "causal_4k: max error 0.3" in failed_eval
    decision = by_seq[9].summary
    assert "failure_streak: three failures in a row" in decision
    assert "waits 60 s" in decision and "1 suggestions" in decision
    question = by_seq[10]
    assert question.label == "question"
    assert question.summary == (
        "[failure_streak] repertoire: What would you expect to see if your explanation were wrong?"
    )
    assert "on" in question.style  # a background: questions stand out from every other row
    assert by_seq[11].summary == "PASS  24/24  1.234x  vs FA3 0.61x  best 1.234x"
    assert by_seq[11].style != by_seq[8].style  # a passing eval looks unlike a failing one
    assert by_seq[12].summary == "0123456 candidate 2: 1.234x (24/24)"
    assert by_seq[13].summary == "cleared 2 tool results (prompt 150k / budget 160k)"
    error = by_seq[14]
    assert error.is_error and error.summary == "overloaded_error 529: overloaded  (attempt 2)"


def test_a_replayed_history_names_each_version_it_writes_and_judges() -> None:
    """The demo's climb: each write and evaluation says which committed version it replays."""
    index = TranscriptIndex(read_session(DEMO_DIR / "climb-20261205-224256"))
    calls = [index.line(i).summary for i in range(len(index)) if index.line(i).label == "call"]
    assert calls[0].startswith("write_file  baseline.cu") and "[replayed v1 aef20c5]" in calls[0]
    assert calls[1] == "evaluate  objective  [replayed v1 aef20c5]"
    assert "[replayed v34 6bb24b5]" in calls[-1]


def test_lines_of_a_synthetic_session(small_table: pa.Table) -> None:
    index = TranscriptIndex(small_table)
    rows = small_table.to_pylist()
    for i, row in enumerate(rows):
        line = index.line(i)
        assert line.seq == row["seq"] and line.kind == row["kind"]
        assert "\n" not in line.summary
        if row["kind"] == "tool_call":
            assert line.summary.startswith(row["tool_name"])
            arguments = json.loads(row["tool_input"])
            if "path" in arguments and row["tool_name"] != "bash":
                assert arguments["path"] in line.summary
        elif row["kind"] == "eval":
            assert f"{row['scenarios_passed']}/{row['scenarios_total']}" in line.summary
            assert line.summary.startswith(row["verdict"].upper())
            if row["speedup"] is not None:
                assert f"{row['speedup']:.3f}x" in line.summary and "vs FA3" in line.summary
        elif row["kind"] == "question":
            assert row["question_text"] in line.summary
            assert f"[{row['trigger']}]" in line.summary and row["source"] in line.summary
        elif row["kind"] == "commit":
            assert line.summary.startswith(row["git_sha"][:7])


def test_detail_holds_everything() -> None:
    index = TranscriptIndex(hand_events())
    call = index.detail(2)
    assert index.detail_title(2).startswith("tool_call · seq 2 · ")
    assert "tool_call · seq 2" not in call  # said once, in the title
    assert '"path": "kernel.cu"' in call  # pretty JSON, one key a line
    assert "tool input · new_text " in call and "\nx\ny\nz\n" in call  # the edit as it reads
    assert "result (seq 3)" in call and "line two of the result" in call
    failed = index.detail(7)
    assert 'reasons: ["causal_4k: max error 0.3"]' in failed  # attrs as key: value lines
    assert "objective: True" in failed and "{" not in failed.split("── attrs")[1].split("\n")[1]
    assert "deadbeefcafe" in failed  # the full sha, not the short one
    passed = index.detail(index.row_of_seq(11) or 0)
    assert "speedup: 1.234x" in passed and "vs_fa3: 0.610x" in passed  # units, not raw floats
    assert "1.2345" not in passed


def test_filters(small_table: pa.Table) -> None:
    index = TranscriptIndex(small_table)
    kinds = small_table.column("kind").to_pylist()
    errors = small_table.column("is_error").to_pylist()
    questions = index.filtered(frozenset({"question"}), False)
    assert questions == [i for i, k in enumerate(kinds) if k == "question"]
    assert len(questions) == 12
    evals = index.filtered(frozenset({"eval", "commit"}), False)
    assert evals and all(kinds[i] in ("eval", "commit") for i in evals)
    only_errors = index.filtered(None, True)
    assert only_errors == [i for i, e in enumerate(errors) if e]
    assert index.filtered(None, False) == list(range(len(kinds)))
    assert index.filtered(frozenset({"question"}), True) == []


def test_search(small_table: pa.Table) -> None:
    index = TranscriptIndex(small_table)
    texts = small_table.column("text").to_pylist()
    inputs = small_table.column("tool_input").to_pylist()
    expected = [
        i
        for i in range(len(index))
        if "syncthreads" in (texts[i] or "").lower() or "syncthreads" in (inputs[i] or "").lower()
    ]
    assert len(expected) > 3
    first = index.search("SyncThreads", 0)  # case-insensitive
    assert first == expected[0]
    assert index.search("syncthreads", first + 1) == expected[1]
    assert index.search("syncthreads", expected[-1] + 1) == expected[0]  # wraps forward
    assert index.search("syncthreads", first - 1, backwards=True) == expected[-1]  # and back
    assert index.search("syncthreads", expected[2], backwards=True) == expected[2]
    assert index.search("no such text anywhere", 0) is None
    subset = expected[1::2]
    assert index.search("syncthreads", 0, rows=subset) == subset[0]
    questions = small_table.filter(pc.equal(small_table.column("kind"), "question"))
    question_text = questions.column("question_text")[0].as_py()
    assert index.kind_at(index.search(question_text.upper(), 0) or 0) == "question"
    assert index.search("list_dir", 0) is not None  # tool names are searched too


def test_extend_appends_and_keeps_search_current(small_table: pa.Table) -> None:
    head, tail = small_table.slice(0, 200), small_table.slice(200)
    index = TranscriptIndex(head)
    before = list(index.matches("syncthreads"))
    index.extend(tail)
    assert len(index) == small_table.num_rows
    assert index.seq_at(len(index) - 1) == small_table.column("seq")[-1].as_py()
    assert index.matches("syncthreads") == TranscriptIndex(small_table).matches("syncthreads")
    assert len(index.matches("syncthreads")) > len(before)
    assert index.line(250).seq == 250 and index.detail_title(250).startswith(index.kind_at(250))
    index.extend(small_table.slice(0, 0))  # an empty batch changes nothing
    assert len(index) == small_table.num_rows


@pytest.mark.perf
def test_index_builds_fast_for_thirty_thousand_events(big_table: pa.Table) -> None:
    assert big_table.num_rows > 29_000
    elapsed = min(_timed(lambda: TranscriptIndex(big_table)) for _ in range(3))
    assert elapsed < 0.3, f"index took {elapsed * 1000:.0f} ms"
    index = TranscriptIndex(big_table)
    elapsed = _timed(lambda: [index.line(i) for i in range(10_000, 10_060)])
    assert elapsed < 0.1, f"a screenful of lines took {elapsed * 1000:.0f} ms"


def _timed(work: Callable[[], Any]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


# -- the pane -----------------------------------------------------------------------------


class TranscriptApp(App[None]):
    """The view alone, recording the selections it posts."""

    def __init__(self, index: TranscriptIndex | None) -> None:
        super().__init__()
        self.index = index
        self.selected: list[tuple[int, str]] = []

    def compose(self) -> ComposeResult:
        yield TranscriptView(self.index, id="transcript")
        yield Static("below")

    def on_event_selected(self, message: EventSelected) -> None:
        self.selected.append((message.seq, message.kind))


def drive(
    index: TranscriptIndex | None,
    script: Callable[[TranscriptApp, TranscriptView, Any], Awaitable[None]],
    size: tuple[int, int] = (100, 20),
) -> None:
    async def main() -> None:
        app = TranscriptApp(index)
        async with app.run_test(size=size) as pilot:
            view = app.query_one(TranscriptView)
            view.focus()
            await pilot.pause()
            await script(app, view, pilot)

    asyncio.run(main())


def screen_text(view: TranscriptView) -> list[str]:
    return [view.render_line(y).text for y in range(view.scrollable_content_region.height)]


def test_moving_the_cursor_posts_selections(small_table: pa.Table) -> None:
    index = TranscriptIndex(small_table)
    last = small_table.num_rows - 1

    async def script(app: TranscriptApp, view: TranscriptView, pilot: Any) -> None:
        assert view.selected_seq == 0
        assert screen_text(view)[0].startswith("▶")
        await pilot.press("j", "down")
        assert view.selected_seq == 2
        await pilot.press("k")
        assert view.selected_seq == 1
        await pilot.press("up", "up")  # stops at the top
        assert view.selected_seq == 0
        await pilot.press("G")
        assert view.selected_seq == last
        assert screen_text(view)[-1].startswith("▶")  # scrolled so the cursor shows
        await pilot.press("g")
        assert view.selected_seq == 0
        await pilot.press("end")
        assert view.selected_seq == last
        await pilot.press("home", "pagedown")
        page = view.selected_seq
        assert page is not None and 10 <= page < 20
        await pilot.press("pagedown", "pageup")
        assert view.selected_seq == page
        await pilot.pause()
        seqs = [seq for seq, _ in app.selected]
        assert seqs[:4] == [1, 2, 1, 0] and last in seqs
        assert app.selected[-1] == (page, index.kind_at(page))

    drive(index, script)


def test_eval_jumps(small_table: pa.Table) -> None:
    index = TranscriptIndex(small_table)
    evals = index.filtered(frozenset({"eval"}), False)

    async def script(app: TranscriptApp, view: TranscriptView, pilot: Any) -> None:
        await pilot.press("right_square_bracket")
        assert view.selected_row == evals[0]
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert view.selected_row == evals[2]
        await pilot.press("left_square_bracket")
        assert view.selected_row == evals[1]
        assert "eval" in screen_text(view)[view.selected_row - int(view.scroll_offset.y)]

    drive(index, script)


def test_enter_opens_the_detail_and_escape_or_q_closes_it() -> None:
    index = TranscriptIndex(hand_events())

    async def script(app: TranscriptApp, view: TranscriptView, pilot: Any) -> None:
        await pilot.press("j", "j", "enter")
        await pilot.pause()
        assert isinstance(app.screen, EventDetailScreen)
        assert "tool input · new_text" in app.screen.detail
        assert "seq 2" in app.screen.title_text
        await pilot.press("j", "G", "g")  # scroll keys belong to the modal now
        assert view.selected_seq == 2
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, EventDetailScreen)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, EventDetailScreen)
        await pilot.press("q")
        await pilot.pause()
        assert not isinstance(app.screen, EventDetailScreen)
        assert app.is_running

    drive(index, script)


def test_search_prompt_finds_next_and_previous(small_table: pa.Table) -> None:
    index = TranscriptIndex(small_table)
    matches = index.matches("syncthreads")

    async def script(app: TranscriptApp, view: TranscriptView, pilot: Any) -> None:
        await pilot.press("slash")
        assert view.searching
        await pilot.press(*"SYNCTHREADS", "q", "backspace")  # letters are the prompt's
        assert view.selected_seq == 0 and app.is_running
        assert screen_text(view)[-1].startswith("/SYNCTHREADS")
        await pilot.press("enter")
        assert view.selected_row == matches[0]
        await pilot.press("enter")
        assert view.selected_row == matches[1]
        assert f"match 2/{len(matches)}" in screen_text(view)[-1]
        await pilot.press("escape")
        assert not view.searching and view.search_query == "SYNCTHREADS"
        await pilot.press("n")
        assert view.selected_row == matches[2]
        await pilot.press("N", "N")
        assert view.selected_row == matches[0]
        await pilot.press("N")  # wraps to the last match
        assert view.selected_row == matches[-1]
        await pilot.press("slash", *"zzz no such", "enter")
        assert view.selected_row == matches[-1]
        assert "no match for 'zzz no such'" in screen_text(view)[-1]
        await pilot.press("escape", "j")
        assert view.selected_row == matches[-1] + 1  # j moves again once the prompt is closed

    drive(index, script)


def test_filter_cycles_and_keeps_the_event(small_table: pa.Table) -> None:
    index = TranscriptIndex(small_table)
    kinds = small_table.column("kind").to_pylist()
    errors = small_table.column("is_error").to_pylist()
    questions = [i for i, k in enumerate(kinds) if k in ("question", "decision")]

    async def script(app: TranscriptApp, view: TranscriptView, pilot: Any) -> None:
        view.jump_to_seq(questions[3] + 1)  # just past a question
        await pilot.press("f")
        assert view.filter_name == "questions"
        assert view.visible_rows == questions
        assert view.selected_row == questions[3]  # the nearest earlier question
        assert all(" question " in line for line in screen_text(view) if line.strip())
        question_row = view.render_line(1)  # not the cursor's: its own highlight shows
        assert any(segment.style and segment.style.bgcolor for segment in question_row)
        await pilot.press("f")
        assert view.filter_name == "evals"
        assert all(kinds[i] in ("eval", "commit") for i in view.visible_rows)
        await pilot.press("f")
        assert view.filter_name == "errors"
        assert view.visible_rows == [i for i, e in enumerate(errors) if e]
        assert all("ERROR" in line for line in screen_text(view) if line.strip())
        await pilot.press("f")
        assert view.filter_name == "all" and len(view.visible_rows) == len(kinds)
        view.set_filter("questions")
        await pilot.press("G")
        assert view.selected_row == questions[-1]
        with pytest.raises(ValueError):
            view.set_filter("nonsense")

    drive(index, script)


def test_jump_to_seq_and_a_late_index(small_table: pa.Table) -> None:
    async def script(app: TranscriptApp, view: TranscriptView, pilot: Any) -> None:
        assert view.selected_seq is None
        assert "loading" in screen_text(view)[0]
        await pilot.press("j", "enter", "n")  # nothing to move, nothing breaks
        view.set_index(TranscriptIndex(small_table))
        await pilot.pause()
        view.jump_to_seq(250)
        await pilot.pause()
        assert view.selected_seq == 250
        assert any(line.startswith("▶") for line in screen_text(view))
        assert app.selected == []  # a programmatic jump does not echo back
        view.jump_to_seq(120, announce=True)
        await pilot.pause()
        assert app.selected == [(120, small_table.column("kind")[120].as_py())]

    drive(None, script)


def test_append_follows_the_tail_only_from_the_last_row(small_table: pa.Table) -> None:
    first, second, third = (
        small_table.slice(0, 100),
        small_table.slice(100, 50),
        small_table.slice(150),
    )

    async def script(app: TranscriptApp, view: TranscriptView, pilot: Any) -> None:
        await pilot.press("G")
        assert view.selected_seq == 99
        view.append(second)
        await pilot.pause()
        assert view.selected_seq == 149  # was on the last row: follows
        assert screen_text(view)[-1].startswith("▶")
        await pilot.press("k", "k")
        view.append(third)
        await pilot.pause()
        assert view.selected_seq == 147  # elsewhere: stays put
        assert len(view.visible_rows) == small_table.num_rows
        view.set_filter("questions")
        await pilot.press("G")
        view.append(session_table("s1", tool_calls=10, questions=3, evals=0, seed=9).slice(0, 0))
        assert view.filter_name == "questions"

    drive(TranscriptIndex(first), script)


def test_append_under_a_filter_adds_only_matching_rows() -> None:
    table = hand_events()
    head, tail = table.slice(0, 8), table.slice(8)

    async def script(app: TranscriptApp, view: TranscriptView, pilot: Any) -> None:
        view.set_filter("questions")
        assert [view.index.kind_at(i) for i in view.visible_rows] == []  # type: ignore[union-attr]
        view.append(tail)
        await pilot.pause()
        kinds = [view.index.kind_at(i) for i in view.visible_rows]  # type: ignore[union-attr]
        assert kinds == ["decision", "question"]

    drive(TranscriptIndex(head), script)


@pytest.mark.perf
def test_cursor_moves_stay_fast_at_thirty_thousand_rows(big_table: pa.Table) -> None:
    index = TranscriptIndex(big_table)

    async def script(app: TranscriptApp, view: TranscriptView, pilot: Any) -> None:
        await pilot.press("G", "g")
        durations = []
        for key in ("j",) * 10 + ("pagedown",) * 5 + ("k",) * 5 + ("G",):
            start = time.perf_counter()
            await pilot.press(key)
            durations.append(time.perf_counter() - start)
        assert max(durations) < 0.2, f"slowest key took {max(durations) * 1000:.0f} ms"
        assert view.selected_seq == big_table.num_rows - 1
        start = time.perf_counter()
        await pilot.press("f")
        assert time.perf_counter() - start < 0.2
        assert view.filter_name == "questions"

    drive(index, script, size=(120, 40))


def test_search_finds_what_the_lines_show_not_the_stored_json() -> None:
    base = 1_780_000_000_000_000
    knobs = {"BLOCK_M": 64, "BLOCK_N": 128}
    table = events_to_table(
        [
            Event("k", 0, "message", ts=base, role="assistant", text="Trying tiles.\nsecond line"),
            Event(
                "k", 1, "tool_call", ts=base + 1, tool_name="evaluate", tool_call_id="c1",
                tool_input=to_json_text({"knobs": knobs}),
            ),
            Event(
                "k", 2, "eval", ts=base + 2, verdict="pass", scenarios_passed=12,
                scenarios_total=12, speedup=1.345, best_speedup=1.345,
                attrs=to_json_text({"objective": True, "knobs": knobs}),
            ),
        ]
    )  # fmt: skip
    index = TranscriptIndex(table)
    shown = [index.line(i).summary for i in range(len(index))]
    assert "BLOCK_N=128" in shown[1] and "BLOCK_N=128" in shown[2]
    assert index.matches("block_n=128") == [1, 2]  # as drawn, in any case
    assert index.matches('"BLOCK_N": 128') == []  # the stored JSON is not on screen
    assert index.matches("1.345x") == [2]  # eval rows match what they show
    assert index.matches("eval") == [1, 2]  # the label ("eval") and the tool name
    assert index.matches("second line") == []  # only the first line of a message is drawn
    assert index.matches("Trying tiles") == [0]


@pytest.mark.perf
def test_a_prepared_search_of_thirty_thousand_events_answers_at_once(big_table: pa.Table) -> None:
    index = TranscriptIndex(big_table)
    prepare = _timed(index.prepare_search)
    assert prepare < 5, f"rendering every line took {prepare:.1f} s"
    elapsed = _timed(lambda: index.matches("syncthreads"))
    assert elapsed < 0.1, f"a search took {elapsed * 1000:.0f} ms"
    assert index.matches("syncthreads")


@pytest.mark.parametrize("width", [34, 40, 52])
def test_a_narrow_pane_cuts_lines_by_words_with_an_ellipsis(width: int) -> None:
    # Cut at the edge, "BLOCK_M=128" read "BLOCK_M=1" and a speedup of 1.234x read "1".
    index = TranscriptIndex(hand_events())

    async def script(app: TranscriptApp, view: TranscriptView, pilot: Any) -> None:
        drawn = screen_text(view)
        for row in range(len(index)):
            line = index.line(row)
            text = drawn[row].rstrip()
            assert text.startswith(("▶", " ")) and line.clock in text
            summary = text.split(line.clock, 1)[1][1 + 8 :].split()  # after clock and label
            whole = line.summary.split()
            assert all(word in whole or word.endswith("…") for word in summary), (width, text)
            if summary != whole:
                assert summary and summary[-1].endswith("…"), (width, text)
        assert "BLOCK_M=1" not in " ".join(drawn).split()

    drive(index, script, size=(width, 20))
