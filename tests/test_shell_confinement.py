"""The agent's shell confined with Landlock (session/shell_confinement.py,
session/confined_shell.cpp): writes only in the workspace and its own TMPDIR, the judge's files
and processes out of reach; where the machine cannot confine, said once and run as before. Needs
a C++ compiler and Landlock for the confined cases (skipped, with the reason, without them)."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kernelseek_tui.session import shell_confinement
from kernelseek_tui.session.engine import Engine
from kernelseek_tui.session.shell_confinement import ShellConfinement
from kernelseek_tui.session.tools import run_shell, scrubbed_env
from tests.test_session_support import (
    ScriptedAgent,
    SequenceEvaluator,
    make_task_repo,
    read_events,
    session_config,
)


def _landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.syscall(444, None, 0, 1))  # landlock_create_ruleset(NULL, 0, VERSION)


def _confined(tmp_path: Path) -> ShellConfinement:
    if shutil.which("g++") is None:
        pytest.skip("no g++ to build the launcher")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    confinement = ShellConfinement.start(workspace, tmp_path / "scratch")
    if not confinement.confined:
        pytest.skip(confinement.said)
    return confinement


def _run(confinement: ShellConfinement, command: str):
    return run_shell(
        command,
        confinement.workspace,
        env=confinement.environment(scrubbed_env()),
        prefix=confinement.prefix,
    )


def test_the_shell_writes_in_its_workspace_and_tmpdir_and_nowhere_else(tmp_path: Path) -> None:
    confinement = _confined(tmp_path)
    outside = tmp_path / "judge"
    outside.mkdir()
    (outside / "baseline.cu").write_text("// the starting kernel\n")
    done = _run(
        confinement,
        'echo kernel > mine.cu && echo scratch > "$TMPDIR/t" && nvcc_tmp=$(mktemp) && echo ok',
    )
    assert not done.is_error, done.text
    assert (confinement.workspace / "mine.cu").read_text() == "kernel\n"
    assert (confinement.scratch / "t").is_file()
    refused = _run(confinement, f"echo '// spin' >> {outside}/baseline.cu")
    assert refused.is_error and "Permission denied" in refused.text
    assert (outside / "baseline.cu").read_text() == "// the starting kernel\n"
    for command in (f"rm {outside}/baseline.cu", f"mv {outside}/baseline.cu mine2.cu"):
        assert _run(confinement, command).is_error
    assert (outside / "baseline.cu").is_file()
    # It still reads anything, builds and runs programs.
    assert "the starting kernel" in _run(confinement, f"cat {outside}/baseline.cu").text
    assert not _run(confinement, "python3 -c 'print(6 * 7)' | grep 42").is_error


def test_the_shell_cannot_write_a_terminal_nor_reach_a_local_server(tmp_path: Path) -> None:
    """A review (2026-12-07, late): with every /dev entry writable, TIOCSTI on a person's
    terminal typed into the attached app; and the served app takes keystrokes from any local
    websocket. Only the GPU's and the harmless device files, and only Nsight Compute's ports."""
    confinement = _confined(tmp_path)
    leader, follower = os.openpty()  # a terminal of "a person's", outside the shell
    try:
        terminal = os.ttyname(follower)
        written = _run(confinement, f"echo x > {terminal}")
        assert written.is_error and "Permission denied" in written.text
        assert not run_shell(f"echo x > {terminal}", tmp_path).is_error  # unconfined, it can
    finally:
        os.close(leader)
        os.close(follower)
    assert not _run(
        confinement, "echo x > /dev/null && head -c 4 /dev/urandom > /dev/null"
    ).is_error
    if _landlock_abi() < 4:
        pytest.skip("Landlock before ABI 4 does not handle TCP")
    import socket

    # A server outside the profiler's ports: an ephemeral port (bind to 0) can fall among them
    # (a CI run, 2026-12-07 23:0x, drew one there and the connection was rightly allowed).
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    while 49152 <= server.getsockname()[1] <= 49215:
        server.close()
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        reach = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}))\""
        refused = _run(confinement, reach)
        assert refused.is_error and "Permission denied" in refused.text
    finally:
        server.close()
    profiler = (
        "python3 -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 49201)); "
        "s.listen(); socket.create_connection(('127.0.0.1', 49201))\""
    )
    assert not _run(confinement, profiler).is_error


def test_the_shell_cannot_signal_processes_outside_it(tmp_path: Path) -> None:
    confinement = _confined(tmp_path)
    if _landlock_abi() < 6:
        pytest.skip("Landlock before ABI 6 does not scope signals")
    judge = subprocess.Popen(["sleep", "30"])
    try:
        stopped = _run(confinement, f"kill -STOP {judge.pid}")
        assert stopped.is_error and "not permitted" in stopped.text
        assert judge.poll() is None
        # Its own children it may still signal.
        assert not _run(confinement, "sleep 30 & kill $!; wait; true").is_error
    finally:
        judge.kill()
        judge.wait()


def test_without_a_compiler_it_says_so_and_the_shell_runs_unconfined(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    confinement = ShellConfinement.start(workspace, tmp_path / "s", compiler="no-such-compiler")
    assert not confinement.confined and confinement.prefix == []
    assert confinement.said.startswith("not confined: no-such-compiler not found")


def _session(tmp_path: Path, steps, **changes):
    """A scripted session; ``steps``: the agent's steps, or a function of the original task
    directory that gives them."""
    task_dir = make_task_repo(tmp_path / "user")
    config = session_config(task_dir, tmp_path / "traces", **changes)
    engine = Engine.start(config, evaluator=SequenceEvaluator([1.0]))
    agent = ScriptedAgent(steps(task_dir) if callable(steps) else steps)
    engine.run(agent)
    return task_dir, engine, agent


def test_in_a_session_the_agents_shell_cannot_touch_the_original_task(tmp_path: Path) -> None:
    if shutil.which("g++") is None or _landlock_abi() < 1:
        pytest.skip("no g++ or no Landlock here")

    def spin(task_dir: Path) -> list:
        return [("tool", "run_shell", {"command": f"echo '// spin' >> {task_dir}/baseline.cu"})]

    task_dir, engine, agent = _session(tmp_path, spin)
    assert agent.outcomes[0].is_error and "Permission denied" in agent.outcomes[0].text
    assert "// spin" not in (task_dir / "baseline.cu").read_text()
    assert not [e for e in read_events(engine.session_dir) if e.kind == "error"]


def test_a_session_told_so_runs_the_shell_unconfined(tmp_path: Path) -> None:
    marker = tmp_path / "outside"
    _, _, agent = _session(
        tmp_path, [("tool", "run_shell", {"command": f"echo x > {marker}"})], confine_shell=False
    )
    assert not agent.outcomes[0].is_error and marker.is_file()


def test_where_it_cannot_confine_the_session_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_launcher(compiler=None):
        from kernelseek_tui.evaluate.sandbox_host import SandboxError

        raise SandboxError("g++ not found: it builds the agent's confined shell", "error")

    monkeypatch.setattr(shell_confinement, "launcher", no_launcher)
    steps = [("tool", "run_shell", {"command": "true"}), ("tool", "run_shell", {"command": "true"})]
    _, engine, agent = _session(tmp_path, steps)
    assert [o.is_error for o in agent.outcomes] == [False, False]
    errors = [e.text for e in read_events(engine.session_dir) if e.kind == "error"]
    assert errors == ["the agent's shell runs unconfined: not confined: g++ not found: it builds "
                      "the agent's confined shell"]  # fmt: skip
