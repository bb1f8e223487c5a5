"""scripts/with_private_mps.sh with a stand-in for nvidia-cuda-mps-control: the daemon is
started before the command, with the command given its pipe and log directories, and quit after
it however it ends, the command's exit status kept."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).parents[1] / "scripts" / "with_private_mps.sh"


def stand_in_control(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "control.log"
    control = tmp_path / "control"
    control.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "-d" ]; then echo "start $CUDA_MPS_PIPE_DIRECTORY" >> {log}; exit 0; fi\n'
        f'read line; echo "$line" >> {log}\n'
    )
    control.chmod(control.stat().st_mode | stat.S_IXUSR)
    return control, log


def run(tmp_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    control, _ = stand_in_control(tmp_path)
    env = {**os.environ, "MPS_CONTROL": str(control)}
    return subprocess.run(
        ["bash", str(SCRIPT), "sh", "-c", command],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_the_daemon_brackets_the_command_and_its_status_is_kept(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    done = run(
        tmp_path, f'echo "$CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY" > {seen}; exit 3'
    )
    assert done.returncode == 3, done.stderr
    pipe, log_dir = seen.read_text().split()
    lines = (tmp_path / "control.log").read_text().splitlines()
    assert lines == [f"start {pipe}", "quit"]
    assert Path(pipe).parent == Path(log_dir).parent
    assert not Path(pipe).parent.exists(), "the private directories are removed afterwards"


def test_without_a_control_program_it_says_so(tmp_path: Path) -> None:
    env = {**os.environ, "MPS_CONTROL": str(tmp_path / "absent")}
    done = subprocess.run(
        ["bash", str(SCRIPT), "true"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2 and "not found" in done.stderr
