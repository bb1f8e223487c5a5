"""`kernelseek report`: a PNG and an HTML page from a real trace."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from kernelseek_tui.report import session_series, write_report
from kernelseek_tui.trace.reader import read_session
from tests.synthetic import generate_session


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


def test_the_page_of_the_scripted_demo_is_one_offline_file_with_labelled_questions(
    tmp_path: Path,
) -> None:
    import re
    import xml.etree.ElementTree as ET

    from kernelseek_tui.paths import DEMO_DIR

    png, page = write_report(DEMO_DIR / "scripted-claude", tmp_path)
    text = page.read_text()
    assert "Caveat: scripted: recorded Messages-API replies" in text
    assert re.findall(r'(?:src|href)="(?!#)[^"]+"', text) == []  # nothing fetched
    svg = ET.fromstring(text[text.index("<svg") : text.index("</svg>") + 6])
    titles = [e.text for e in svg.iter("{http://www.w3.org/2000/svg}title")]
    questions = read_session(DEMO_DIR / "scripted-claude").to_pylist()
    asked = [r["question_text"] for r in questions if r["kind"] == "question"]
    assert titles == asked * 2  # each question hovers its text, in both panels
    assert "Per scenario: the best candidate" in text and "claude-sonnet-4-5" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "at list prices" in text  # a model was at work: its cost and tokens
    measured, _ = write_report(DEMO_DIR / "gpu-tuner-20261202-171357", tmp_path)
    tuner = measured.with_suffix(".html").read_text()
    assert "Caveat" not in tuner and "Recorded: measured: a tuner session" in tuner
    assert "Agent tuner, no model (no tokens, no cost)" in tuner


def test_the_page_of_the_recorded_climb_says_what_it_is(tmp_path: Path) -> None:
    from kernelseek_tui.paths import DEMO_DIR

    _, page = write_report(DEMO_DIR / "climb-20261205-224256", tmp_path)
    text = page.read_text()
    assert "Caveat: a replay of kernels/flash_fwd/sm90.cu&#x27;s git history" in text
    assert "Recorded: measured: a replay of this project&#x27;s own climb" in text
    assert "Agent replay, no model (no tokens, no cost)" in text
    assert "best vs FA3 1.013x" in text


def test_vs_fa3_has_its_own_panel_under_the_speedup_so_neither_hides_the_other() -> None:
    import matplotlib.pyplot as plt

    from kernelseek_tui.experiment.metrics import load_session_metrics
    from kernelseek_tui.paths import DEMO_DIR
    from kernelseek_tui.report_figure import FA3_COLOUR, figure, time_unit

    m = load_session_metrics(DEMO_DIR / "scripted-claude", "repertoire")
    fig = figure(m, "t")
    try:
        assert len(fig.axes) == 4
        calls_ax, time_ax, calls_fa3, time_fa3 = fig.axes
        for above, below in ((calls_ax, calls_fa3), (time_ax, time_fa3)):
            # below it, not laid over it (a twin axis shares its box)
            assert below.get_position().y1 < above.get_position().y0
        fa3_values = [p.best_vs_fa3 for p in m.curve if p.best_vs_fa3]
        for ax in (calls_fa3, time_fa3):
            (line,) = [ln for ln in ax.get_lines() if ln.get_color() == FA3_COLOUR]
            assert set(line.get_ydata()) == set(fa3_values)
            low, high = ax.get_ylim()  # scaled to the vs-FA3 values, not to the speedups
            assert low <= min(fa3_values) and max(fa3_values) <= high < 1.0
        for ax in (calls_ax, time_ax):
            assert not [ln for ln in ax.get_lines() if ln.get_color() == FA3_COLOUR]
            assert ax.get_ylim()[0] < 1.0 and ax.get_ylim()[1] > m.final_best
        # the short scripted session reads in seconds, not in hundredths of a minute
        assert time_fa3.get_xlabel() == "seconds" and calls_fa3.get_xlabel() == "tool calls"
    finally:
        plt.close(fig)
    assert time_unit(30) == ("seconds", 1.0) and time_unit(600) == ("minutes", 60.0)
    assert time_unit(3 * 3600) == ("hours", 3600.0)


def test_the_figure_carries_the_caveat_because_the_png_travels_alone(
    tmp_path: Path, monkeypatch: Any
) -> None:
    import kernelseek_tui.report_figure as report_figure
    from kernelseek_tui.paths import DEMO_DIR

    titles: list[str] = []
    drawn = report_figure.draw

    def recording_draw(metrics: Any, title: str, fmt: str) -> bytes:
        titles.append(title)
        return drawn(metrics, title, fmt)

    monkeypatch.setattr(report_figure, "draw", recording_draw)
    write_report(DEMO_DIR / "scripted-claude", tmp_path)
    assert len(titles) == 2 and titles[0] == titles[1]  # the PNG's and the page's SVG
    head, *caveat = titles[0].splitlines()
    assert head == "session scripted-claude"
    assert " ".join(caveat).startswith("caveat: scripted: recorded Messages-API replies")
    titles.clear()
    write_report(DEMO_DIR / "gpu-tuner-20261202-171357", tmp_path)
    assert titles[0] == "session gpu-tuner-20261202-171357"  # measured: no caveat line
