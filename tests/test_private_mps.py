"""Private MPS servers, with stand-ins for nvidia-cuda-mps-control.

scripts/with_private_mps.sh: the daemon is started before the command, with the command given
its pipe and log directories, and quit after it however it ends, the command's exit status kept.
The judge's own (evaluate/private_mps.py): directories of its own, removed at the end; a server
that does not quit is killed; a restart keeps the directories; a server for one GPU; and when
none is started (one named already, KERNELSEEK_MPS=off, no control program), said why."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from kernelseek_tui.evaluate import private_mps
from kernelseek_tui.evaluate.private_mps import (
    GPU_VARIABLE,
    LOG_VARIABLE,
    MPS_VARIABLE,
    PIPE_VARIABLE,
    MpsChoice,
    MpsError,
    PrivateMps,
    mps_for_isolation,
    reap_orphans,
)
from kernelseek_tui.evaluate.proc_stat import stat_fields

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


# -- the judge's own server (kernelseek_tui/evaluate/private_mps.py) ---------------------------

STAND_IN_DAEMON = """#!/bin/sh
# A stand-in for nvidia-cuda-mps-control: "-d" logs how it was started and leaves a process of
# the same name behind (the daemon); a line on stdin is logged, and "quit" ends that process
# unless the file "stuck" exists beside this script.
here=$(dirname "$0")
if [ "$1" = "-d" ]; then
    echo "start $CUDA_MPS_PIPE_DIRECTORY ${CUDA_VISIBLE_DEVICES:-all}" >> "$here/control.log"
    "$0" serve </dev/null >/dev/null 2>&1 &
    exit 0
fi
if [ "$1" = "serve" ]; then
    while [ ! -f "$CUDA_MPS_PIPE_DIRECTORY/quit" ]; do sleep 0.05; done
    rm -f "$CUDA_MPS_PIPE_DIRECTORY/quit"
    exit 0
fi
read line
echo "$line" >> "$here/control.log"
if [ "$line" = quit ] && [ ! -f "$here/stuck" ]; then touch "$CUDA_MPS_PIPE_DIRECTORY/quit"; fi
"""


def stand_in_daemon(tmp_path: Path) -> Path:
    # Named as the real one: its processes' names are how a server's processes are found.
    control = tmp_path / "bin" / "nvidia-cuda-mps-control"
    control.parent.mkdir(exist_ok=True)
    control.write_text(STAND_IN_DAEMON)
    control.chmod(0o755)
    return control


def log_of(control: Path) -> list[str]:
    """The commands the stand-in daemon got, less the share queries every start makes
    (``PrivateMps.share_settings``; their own tests are below)."""
    log = control.parent / "control.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if not line.startswith("get_")]


def wait_for(predicate, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_the_judges_server_lives_in_directories_of_its_own_and_leaves_none(tmp_path: Path) -> None:
    control = stand_in_daemon(tmp_path)
    mps = PrivateMps(str(control), stop_timeout_s=3)
    environment = mps.start()
    pipe, log = Path(environment[PIPE_VARIABLE]), Path(environment[LOG_VARIABLE])
    assert pipe.is_dir() and log.is_dir() and pipe.parent == log.parent
    assert log_of(control) == [f"start {pipe} all"]
    assert wait_for(lambda: len(mps.processes()) == 1), "the daemon is found by its pipe"
    assert mps.stop() == []  # quit was enough
    assert log_of(control)[-1] == "quit"
    assert not pipe.parent.exists()
    assert not mps.running


def test_a_server_that_does_not_quit_is_killed(tmp_path: Path) -> None:
    control = stand_in_daemon(tmp_path)
    (control.parent / "stuck").touch()
    mps = PrivateMps(str(control), stop_timeout_s=0.5)
    mps.start()
    assert wait_for(lambda: len(mps.processes()) == 1)
    daemon = mps.processes()[0]
    notes = mps.stop()
    assert notes == [f"killed MPS process(es) {daemon} after quit"]
    assert wait_for(lambda: not Path(f"/proc/{daemon}").exists() or _zombie(daemon))


def test_a_daemon_ended_by_a_quit_not_the_judges_is_seen_and_started_again(
    tmp_path: Path,
) -> None:
    """A kernel's process may send ``quit`` to the control daemon's socket (its pipe directory
    is the clients'): the judge sees the daemon gone after the evaluation, and its next start
    brings up a new one in the same directories."""
    control = stand_in_daemon(tmp_path)
    mps = PrivateMps(str(control), stop_timeout_s=3)
    environment = mps.start()
    try:
        assert not mps.daemon_gone()
        first = mps.processes()
        assert first
        # What a client would do: the control program, with the clients' environment.
        subprocess.run(
            [str(control)], input="quit\n", text=True, env={**os.environ, **environment},
            check=True, timeout=10,
        )  # fmt: skip
        assert wait_for(mps.daemon_gone), "the judge sees the daemon gone"
        assert mps.running  # it did not stop it itself
        assert mps.start() == environment  # the same directories, a new daemon
        assert not mps.daemon_gone() and mps.processes() and mps.processes() != first
        # Once more; now the judge's restart after the evaluation brings it back, and sends no
        # quit of its own to a daemon that is not there.
        second = mps.processes()
        subprocess.run(
            [str(control)], input="quit\n", text=True, env={**os.environ, **environment},
            check=True, timeout=10,
        )  # fmt: skip
        assert wait_for(mps.daemon_gone)
        quits = log_of(control).count("quit")
        assert mps.restart() == ["the control daemon had already ended"]
        assert log_of(control).count("quit") == quits
        assert not mps.daemon_gone() and mps.processes() and mps.processes() != second
    finally:
        mps.stop()


def test_a_decoy_that_takes_the_daemons_name_keeps_nothing_alive(tmp_path: Path) -> None:
    """A review (2026-12-07, late): a process named as MPS's, with the judge's pipe directory
    in its environment, kept ``daemon_gone`` False after a ``quit`` and passed as the judge's
    own. The daemon is known by its pid and start time now."""
    control = stand_in_daemon(tmp_path)
    mps = PrivateMps(str(control), stop_timeout_s=3)
    environment = mps.start()
    decoy_program = tmp_path / "nvidia-cuda-mps-server"
    shutil.copy("/bin/sleep", decoy_program)
    decoy = subprocess.Popen([str(decoy_program), "30"], env={**os.environ, **environment})
    try:
        assert wait_for(lambda: decoy.pid in mps.processes())
        assert decoy.pid not in mps.own_processes() and mps.own_processes()
        subprocess.run(
            [str(control)], input="quit\n", text=True, env={**os.environ, **environment},
            check=True, timeout=10,
        )  # fmt: skip
        assert wait_for(mps.daemon_gone), "the decoy kept the daemon 'alive'"
        assert decoy.pid in mps.processes() and mps.own_processes() == []
    finally:
        decoy.kill()
        decoy.wait()
        mps.stop()


def test_a_short_lived_child_caught_at_the_start_is_not_taken_for_the_daemon_ending(
    tmp_path: Path,
) -> None:
    """The stand-in's daemon forks a `sleep` every 50 ms; a scan at its start can catch one,
    and that child's end is not the daemon's. Found by reading the code after a fresh-clone CI
    run (2026-12-07, about 21:50, on a loaded machine) failed
    test_an_isolated_worker_is_a_client_of_the_judges_mps_server_restarted_after_a_hang once;
    that failure was not reproduced alone, so this race is a suspect, not a proven cause.
    Simulated by adding such a child's identity to what the start recorded."""
    control = stand_in_daemon(tmp_path)
    mps = PrivateMps(str(control), stop_timeout_s=3)
    mps.start()
    try:
        assert mps.own_processes() and not mps.daemon_gone()
        child = subprocess.Popen(["sleep", "0.1"])
        fields = stat_fields(child.pid)
        assert fields is not None
        mps._daemon_ids[child.pid] = fields[19]
        child.wait()
        assert not mps.daemon_gone()
    finally:
        mps.stop()


def test_a_daemon_never_seen_in_proc_is_never_called_gone(tmp_path: Path) -> None:
    control, _ = settings_control(tmp_path)
    server = PrivateMps(str(control), proc=tmp_path)  # a /proc with no processes in it
    try:
        server.start()
        assert not server.processes() and not server.daemon_gone()
    finally:
        server.stop()


def _zombie(pid: int) -> bool:
    fields = stat_fields(pid)
    return fields is None or fields[0] == "Z"


def test_a_restart_keeps_the_directories_its_clients_find_it_by(tmp_path: Path) -> None:
    control = stand_in_daemon(tmp_path)
    mps = PrivateMps(str(control), stop_timeout_s=3)
    before = mps.start()
    assert wait_for(lambda: len(mps.processes()) == 1)
    first = mps.processes()
    assert mps.restart() == []
    assert mps.environment() == before and Path(before[PIPE_VARIABLE]).is_dir()
    assert wait_for(lambda: len(mps.processes()) == 1 and mps.processes() != first)
    pipe = before[PIPE_VARIABLE]
    assert log_of(control) == [f"start {pipe} all", "quit", f"start {pipe} all"]
    mps.stop()


def test_a_server_for_one_gpu_sees_only_it_and_its_clients_leave_theirs_unset(
    tmp_path: Path,
) -> None:
    control = stand_in_daemon(tmp_path)
    mps = PrivateMps(str(control), stop_timeout_s=3, visible_devices="1")
    environment = mps.start()
    assert log_of(control) == [f"start {environment[PIPE_VARIABLE]} 1"]
    choice = MpsChoice("a private MPS server started by the judge", environment, mps)
    client = choice.client_environment({"CUDA_VISIBLE_DEVICES": "1", "HOME": "/h"})
    # NVIDIA's MPS guide: a client does not set CUDA_VISIBLE_DEVICES; the worker still says
    # which GPU it was given.
    assert client == {**environment, "HOME": "/h", GPU_VARIABLE: "1"}
    mps.stop()


def test_without_the_control_program_the_judge_says_what_isolation_costs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PIPE_VARIABLE, raising=False)
    monkeypatch.delenv(MPS_VARIABLE, raising=False)
    monkeypatch.setattr(private_mps, "_SERVERS", {})
    with pytest.raises(MpsError, match="not found"):
        PrivateMps(str(tmp_path / "absent")).start()
    choice = mps_for_isolation(None, control=str(tmp_path / "absent"))
    assert choice.server is None and choice.environment == {}
    assert choice.said.startswith("none (") and "switching between" in choice.said
    assert choice.client_environment({"A": "1"}) == {"A": "1"}


def test_a_server_named_in_the_environment_or_mps_off_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    control = stand_in_daemon(tmp_path)
    monkeypatch.setattr(private_mps, "_SERVERS", {})
    monkeypatch.setenv(PIPE_VARIABLE, "/somewhere/pipe")
    named = mps_for_isolation(None, control=str(control))
    assert named.said == f"the MPS server of {PIPE_VARIABLE}=/somewhere/pipe"
    assert named.server is None
    monkeypatch.delenv(PIPE_VARIABLE)
    monkeypatch.setenv(MPS_VARIABLE, "off")
    off = mps_for_isolation(None, control=str(control))
    assert off.said.startswith(f"none ({MPS_VARIABLE}=off)") and off.server is None
    assert log_of(control) == []


def test_a_server_whose_judge_was_killed_is_reaped_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    control = stand_in_daemon(tmp_path)
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    # One started by a judge that is gone: a finished process's id stands for it.
    gone = subprocess.Popen(["true"])
    gone.wait()
    orphan = PrivateMps(str(control), stop_timeout_s=3)
    root = Path(orphan.start()[PIPE_VARIABLE]).parent
    (root / "owner").write_text(f"{gone.pid} 12345")
    assert wait_for(lambda: len(orphan.processes()) == 1)
    daemon = orphan.processes()[0]
    # One whose judge still runs (this process), and one of the script's (no owner file).
    alive = PrivateMps(str(control), stop_timeout_s=3)
    alive_root = Path(alive.start()[PIPE_VARIABLE]).parent
    scripts = temp / "kernelseek-mps.script"
    scripts.mkdir()
    assert reap_orphans(str(control)) == [root]
    assert not root.exists() and alive_root.exists() and scripts.exists()
    assert wait_for(lambda: not Path(f"/proc/{daemon}").exists() or _zombie(daemon))
    alive.stop()


def settings_control(tmp_path: Path, fails: bool = False) -> tuple[Path, Path]:
    """A stand-in control program that answers the share queries from files under ``state``
    (100.0 where a file is missing) and forgets the set shares on ``quit``, as the daemon does;
    with ``fails``, every query exits 1."""
    state = tmp_path / "state"
    state.mkdir()
    control = tmp_path / "control"
    control.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-d" ]; then exit 0; fi\n' + ("exit 1\n" if fails else "") + "read line\n"
        'case "$line" in\n'
        f"  get_default_active_thread_percentage) cat {state}/default 2>/dev/null"
        " || echo 100.0 ;;\n"
        f"  get_server_list) cat {state}/servers 2>/dev/null || true ;;\n"
        "  get_active_thread_percentage*) pid=${line#get_active_thread_percentage };"
        f" cat {state}/server-$pid 2>/dev/null || echo 100.0 ;;\n"
        f"  quit) rm -f {state}/default {state}/server-* ;;\n"
        "esac\n"
    )
    control.chmod(control.stat().st_mode | stat.S_IXUSR)
    return control, state


def test_a_change_to_the_share_new_clients_get_is_seen_and_a_restart_forgets_it(
    tmp_path: Path,
) -> None:
    control, state = settings_control(tmp_path)
    server = PrivateMps(str(control), proc=tmp_path)
    try:
        server.start()
        assert server.share_settings() == "default 100"
        # a server started for the first client, with the default share: no change
        (state / "servers").write_text("4242\n")
        assert server.share_settings() == "default 100; server 4242 100"
        assert server.settings_changed() is None
        # a kernel's process lowers the share of the running server's later clients
        (state / "server-4242").write_text("50.0\n")
        changed = server.settings_changed()
        assert changed is not None and "server 4242 50 after" in changed
        # or the default, for every server started later
        (state / "server-4242").unlink()
        (state / "default").write_text("25.0\n")
        assert "default 25; server 4242 100 after" in (server.settings_changed() or "")
        # the same share written another way is no change
        (state / "default").write_text("100\n")
        assert server.settings_changed() is None
        # a restart quits the daemon, which forgets what was set, and notes the answer anew
        server.restart()
        assert server.settings_changed() is None
    finally:
        server.stop()


def test_a_daemon_that_cannot_answer_is_no_change(tmp_path: Path) -> None:
    control, _ = settings_control(tmp_path, fails=True)
    server = PrivateMps(str(control), proc=tmp_path)
    try:
        server.start()
        assert server.share_settings() is None and server.settings_changed() is None
    finally:
        server.stop()
    assert PrivateMps(str(control), proc=tmp_path).share_settings() is None  # never started


def test_an_evaluation_that_changed_the_share_fails_and_the_server_restarts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernelseek_tui.evaluate import api
    from kernelseek_tui.evaluate.result import EvalResult
    from kernelseek_tui.evaluate.spare import SpareKey

    class Server:
        restarted = 0

        def __init__(self, changed: str | None) -> None:
            self.changed = changed

        def settings_changed(self) -> str | None:
            return self.changed

        def daemon_gone(self) -> bool:
            return False

        def restart(self) -> list[str]:
            Server.restarted += 1
            return []

    dropped: list[SpareKey] = []
    monkeypatch.setattr(api.SPARES, "drop", dropped.append)
    key = SpareKey(visible_devices="0", task_dir="t", command=("w",))
    calm = EvalResult(eval_id="a", verdict="pass", mps="a private MPS server")
    api._check_mps_settings(Server(None), key, calm)  # type: ignore[arg-type]
    assert not calm.reasons and Server.restarted == 0 and not dropped
    changed = EvalResult(eval_id="b", verdict="pass", mps="a private MPS server")
    api._check_mps_settings(Server("default 100.0 before, default 25.0 after"), key, changed)  # type: ignore[arg-type]
    assert Server.restarted == 1 and dropped == [key]
    assert "reached the MPS control daemon" in changed.reasons[0]
    assert "default 25.0 after" in changed.reasons[0]
    assert "its share for new clients had been changed" in (changed.mps or "")


def test_an_evaluation_whose_daemon_ended_fails_and_the_server_restarts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kernelseek_tui.evaluate import api
    from kernelseek_tui.evaluate.result import EvalResult
    from kernelseek_tui.evaluate.spare import SpareKey

    class Server:
        restarts = 0

        def daemon_gone(self) -> bool:
            return self.restarts == 0

        def settings_changed(self) -> str | None:
            return None

        def restart(self) -> list[str]:
            self.restarts += 1
            return ["quit answered 1"]

    dropped: list[SpareKey] = []
    monkeypatch.setattr(api.SPARES, "drop", dropped.append)
    key = SpareKey(visible_devices="0", task_dir="t", command=("w",))
    server = Server()
    ended = EvalResult(eval_id="c", verdict="pass", mps="a private MPS server")
    api._check_mps_settings(server, key, ended)  # type: ignore[arg-type]
    assert server.restarts == 1 and dropped == [key]
    assert "MPS control daemon ended during this evaluation" in ended.reasons[0]
    assert "its control daemon had ended" in (ended.mps or "")
    after = EvalResult(eval_id="d", verdict="pass", mps="a private MPS server")
    api._check_mps_settings(server, key, after)  # type: ignore[arg-type]
    assert not after.reasons and server.restarts == 1
