"""benchmarks/clock_phases.py: nvidia-smi's samples split by the phase marks of
scripts/gpu_isolation_check.sh (CLOCKS=1), on made-up samples."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.clock_phases import read_phases, read_samples, summary

ROOT = Path(__file__).resolve().parents[1]


def line(seconds: float, sm: int, power: float) -> str:
    stamp = datetime.fromtimestamp(1_765_000_000 + seconds, tz=UTC)
    return f"{stamp:%Y/%m/%d %H:%M:%S}.{int(stamp.microsecond / 1000):03d}, {sm}, 2619, {power}, 45"


SAMPLES = "\n".join(
    [line(t / 10, 1980, 600.0) for t in range(0, 100)]  # 0-10 s: the judge
    + ["[N/A], [N/A], [N/A], [N/A], [N/A]"]
    + [line(10 + t / 10, 1755, 690.0) for t in range(0, 100)]  # 10-20 s: fa_bench
)
PHASES = (
    "judge-fenced start 1765000000.0\njudge-fenced end 1765000010.0\n"
    "fa_bench start 1765000010.0\nfa_bench end 1765000020.0\nstray end 1.0\n"
)


def test_samples_are_read_and_the_unreadable_left_out() -> None:
    samples = read_samples(SAMPLES)
    assert len(samples) == 200
    assert samples[0].at == 1_765_000_000.0 and samples[0].sm_mhz == 1980.0
    assert samples[150].power_w == 690.0


def test_each_phase_gets_its_own_samples() -> None:
    phases = read_phases(PHASES)
    assert [name for name, _, _ in phases] == ["judge-fenced", "fa_bench"]
    lines = summary(read_samples(SAMPLES), phases)
    assert lines[1].startswith("judge-fenced | 10.0 | 100 | 1980 (1980-1980) | 600 (600-600)")
    assert lines[2].startswith("fa_bench | 10.0 | 100 | 1755 (1755-1755) | 690 (690-690)")


def test_the_script_says_when_it_has_nothing(tmp_path: Path) -> None:
    (tmp_path / "clocks.csv").write_text("")
    (tmp_path / "phases.txt").write_text(PHASES)
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "clock_phases.py"), "clocks.csv", "phases.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1 and "read 0 samples and 2 phases" in done.stdout
