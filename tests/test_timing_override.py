"""benchmarks/timing_override.py: a task.toml's [timing] values replaced or added for the
timing experiments of scripts/gpu_timing_variants.sh, the rest of the file as written."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from benchmarks.timing_override import override, parse
from kernelseek_tui.task import load_task

ROOT = Path(__file__).resolve().parents[1]
TEXT = """# a task
name = "t"

[timing]
# do_bench's durations
warmup_ms = 25
rep_ms = 100

[dependencies]
warmup_ms = 7
"""


def test_a_value_present_is_replaced_and_one_absent_is_added_to_timing_alone() -> None:
    result = override(TEXT, parse("warmup_ms=300, flush_mb=256"))
    table = tomllib.loads(result)
    assert table["timing"] == {"warmup_ms": 300, "rep_ms": 100, "flush_mb": 256}
    assert table["dependencies"] == {"warmup_ms": 7}  # another table's key of the same name
    assert "# do_bench's durations" in result and result.startswith("# a task")


@pytest.mark.parametrize(
    ("text", "variant"),
    [("name = 1\n", "warmup_ms=3"), (TEXT, "warmup_ms=three"), (TEXT, "warmup_ms")],
)
def test_no_timing_table_a_value_that_is_not_toml_or_no_pair_is_refused(
    text: str, variant: str
) -> None:
    with pytest.raises((ValueError, tomllib.TOMLDecodeError)):
        override(text, parse(variant))


def test_the_flash_task_copied_and_overridden_loads_with_the_new_values(tmp_path: Path) -> None:
    task = tmp_path / "flash_fwd"
    shutil.copytree(ROOT / "kernels" / "flash_fwd", task)
    done = subprocess.run(
        [sys.executable, "benchmarks/timing_override.py", str(task / "task.toml"), "warmup_ms=300"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert load_task(task).timing.warmup_ms == 300
    assert load_task(ROOT / "kernels" / "flash_fwd").timing.warmup_ms == 25
