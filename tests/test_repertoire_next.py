"""`kernelseek repertoire next`: the question to ask now, from the repertoire's own ranking,
leaving out what was asked (named, or found as 'Question: <id>' lines in a notes file)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from kernelseek_tui.cli import main
from kernelseek_tui.repertoire import load_repertoire
from kernelseek_tui.repertoire.model import PlainQuestionRecord

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "repertoire.toml"


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch):
    """A trace store whose records make one plateau question clearly the best."""
    module = types.ModuleType("kernelseek_tui.trace.store")
    best = PlainQuestionRecord(asked=40, followed_by_jump=36, median_gain=1.5)
    poor = PlainQuestionRecord(asked=40, followed_by_jump=0, median_gain=1.0)
    plateau = [q.id for q in load_repertoire(SHIPPED) if q.fits("plateau")]
    records = {qid: poor for qid in plateau}
    records[plateau[3]] = best

    class TraceStore:
        def __init__(self, root: Path) -> None:
            self.root = root

        def question_stats(self) -> dict[str, PlainQuestionRecord]:
            return records

    module.TraceStore = TraceStore  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kernelseek_tui.trace.store", module)
    return plateau


def _next(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["repertoire", "next", "--file", str(SHIPPED), "--traces", str(tmp_path), *args])
    out, _ = capsys.readouterr()
    return code, out.split("\t")[0]


def test_next_follows_the_record_in_the_traces(tmp_path, capsys, store) -> None:
    for seed in range(5):
        code, qid = _next(tmp_path, capsys, "--trigger", "plateau", "--seed", str(seed))
        assert code == 0
        assert qid == store[3]


def test_next_leaves_out_what_was_asked_and_what_the_notes_record(tmp_path, capsys, store) -> None:
    code, qid = _next(tmp_path, capsys, "--trigger", "plateau", "--asked", store[3], "--seed", "1")
    assert code == 0 and qid != store[3] and qid in store
    notes = tmp_path / "NOTES.md"
    notes.write_text(f"## v3\n\nQuestion: `{store[3]}`\nIt made us measure the SASS.\n")
    code, from_notes = _next(
        tmp_path, capsys, "--trigger", "plateau", "--notes", str(notes), "--seed", "1"
    )
    assert code == 0 and from_notes == qid


def test_next_says_so_when_every_question_was_asked(tmp_path, capsys, store) -> None:
    asked = [arg for q in load_repertoire(SHIPPED) for arg in ("--asked", q.id)]
    args = ["--trigger", "plateau", "--avoid-last", "1000", *asked]
    code = main(["repertoire", "next", "--file", str(SHIPPED), "--traces", str(tmp_path), *args])
    _, err = capsys.readouterr()
    assert code == 1 and "asked too recently" in err


def test_next_refuses_an_unknown_trigger(tmp_path, capsys) -> None:
    code = main(["repertoire", "next", "--file", str(SHIPPED), "--trigger", "plateu"])
    _, err = capsys.readouterr()
    assert code == 2 and "unknown trigger 'plateu'" in err
