"""`kernelseek report`: a PNG and an HTML page from a real trace."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks.synthetic import generate_session
from kernelseek_tui.report import session_series, write_report
from kernelseek_tui.trace.reader import read_session


def test_report_plots_best_speedup_and_lists_questions(tmp_path: Path) -> None:
    generate_session(tmp_path, "s1", tool_calls=300, evals=20, questions=6, seed=3)
    png, page = write_report(tmp_path / "s1", tmp_path / "out")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    series = session_series(read_session(tmp_path / "s1"))
    assert len(series.eval_calls) == 20 and len(series.question_calls) == 6
    assert series.eval_best == sorted(series.eval_best)  # the best never goes down
    text = page.read_text()
    assert "20 evaluations, 6" in text and text.count("<b>") == 6


def test_report_of_a_missing_session_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", "report", "nope", "--traces", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "not a session directory" in result.stderr
    assert "Traceback" not in result.stderr
