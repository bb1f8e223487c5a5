"""Running an experiment: every planned session, each its own ``kernelseek run`` process on
its own GPU (or stand-in slot), as many at once as there are slots.

Each session is started with ``kernelseek run TASK --session-id ID --traces EXPERIMENT_DIR
--config arms/<arm>.toml`` (so an arm's settings mean exactly what they mean to ``run``), in a
process session of its own: a runner that dies leaves its sessions running, like a dropped SSH
connection leaves a detached session running. The runner reads where things stand from the
sessions' own ``session.json`` every time round, so a resumed runner (``experiment --resume``)
picks up live sessions as running, resumes crashed ones (``run --resume``) and starts the rest.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.experiment.record import (
    ExperimentRecord,
    PlannedSession,
    read_record,
    write_record,
)
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.session.meta import (
    CRASHED,
    FINISHED,
    LIVE_STATUSES,
    RUNNING,
    effective_status,
    process_start_ticks,
    read_meta,
)

ARMS_DIR: Final = "arms"
LOGS_DIR: Final = "logs"
MAX_LAUNCHES: Final = 3  # a session that crashes on every start is given up after this many
PLANNED: Final = "planned"
GAVE_UP: Final = "gave_up"


@dataclass(frozen=True, slots=True)
class SessionProgress:
    """Where one planned session stands, read from its own ``session.json``."""

    session_id: str
    arm: str
    status: str  # planned, running, paused, finished, crashed, gave_up
    end_reason: str | None
    stats: dict[str, Any]


def session_states(experiment_dir: Path, record: ExperimentRecord) -> list[SessionProgress]:
    """Every planned session's state, in plan order."""
    states = []
    for planned in record.sessions:
        session_dir = Path(experiment_dir) / planned.session_id
        if not SessionPaths(session_dir).meta.is_file():
            # A session whose process keeps dying before it exists is given up too.
            status = GAVE_UP if planned.launches >= MAX_LAUNCHES else PLANNED
            states.append(SessionProgress(planned.session_id, planned.arm, status, None, {}))
            continue
        try:
            meta = read_meta(session_dir)
        except KernelseekError:
            states.append(SessionProgress(planned.session_id, planned.arm, CRASHED, None, {}))
            continue
        status = effective_status(meta)
        if status == CRASHED and planned.launches >= MAX_LAUNCHES:
            status = GAVE_UP
        states.append(
            SessionProgress(planned.session_id, planned.arm, status, meta.end_reason, meta.stats)
        )
    return states


def toml_table(name: str, values: dict[str, Any]) -> str:
    """``values`` as a TOML table (strings, numbers, booleans and lists of them)."""

    def literal(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return repr(value)
        if isinstance(value, str):
            return json.dumps(value)  # a JSON string is a TOML basic string
        if isinstance(value, list):
            return "[" + ", ".join(literal(v) for v in value) + "]"
        raise KernelseekError(f"setting value {value!r} cannot be written to TOML")

    lines = [f"[{name}]"] + [f"{key} = {literal(v)}" for key, v in sorted(values.items())]
    return "\n".join(lines) + "\n"


def write_arm_files(experiment_dir: Path, record: ExperimentRecord) -> None:
    """One ``arms/<arm>.toml`` per arm: the ``[session]`` table its sessions run with."""
    spec = record.experiment
    folder = Path(experiment_dir) / ARMS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for arm in spec.arms:
        (folder / f"{arm.name}.toml").write_text(toml_table("session", spec.arm_settings(arm)))


class ExperimentRunner:
    """Runs the sessions of one experiment directory until each has finished (see the module
    docstring). ``slots``: the GPUs (CUDA_VISIBLE_DEVICES entries) each session may have to
    itself, or None for stand-in slots with no GPU of their own."""

    def __init__(
        self,
        experiment_dir: Path,
        *,
        slots: list[str | None],
        python: str = sys.executable,
        poll_s: float = 0.2,
        say: Callable[[str], None] = print,
    ) -> None:
        if not slots:
            raise KernelseekError("an experiment needs at least one slot to run sessions in")
        self.dir = Path(experiment_dir).resolve()
        self.slots = [s if s is None else str(s) for s in slots]
        self.slot_names = [s if s is not None else f"slot{i}" for i, s in enumerate(slots)]
        self.python = python
        self.poll_s = poll_s
        self.say = say
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self._stop = threading.Event()

    def run(self) -> str:
        """Run to the end; returns the record's end reason (``done`` or ``terminated``)."""
        record = read_record(self.dir)
        record.status = RUNNING
        record.end_reason = None
        record.pid = os.getpid()
        record.pid_start = process_start_ticks(os.getpid())
        record.host = socket.gethostname()
        write_arm_files(self.dir, record)
        write_record(self.dir, record)
        restore = self._on_sigterm()
        try:
            reason = self._loop(record)
        finally:
            restore()
        record.status = FINISHED
        record.end_reason = reason
        write_record(self.dir, record)
        return reason

    def _loop(self, record: ExperimentRecord) -> str:
        while True:
            self._reap()
            states = {s.session_id: s for s in session_states(self.dir, record)}
            open_states = [s for s in states.values() if s.status not in (FINISHED, GAVE_UP)]
            if not open_states and not self.children:
                return "done"
            if self._stop.is_set():
                self._stop_children()
                return "terminated"
            busy = {
                p.slot
                for p in record.sessions
                if p.session_id in self.children or states[p.session_id].status in LIVE_STATUSES
            }
            for planned in record.sessions:
                state = states[planned.session_id]
                if planned.session_id in self.children or state.status not in (PLANNED, CRASHED):
                    continue
                free = [name for name in self.slot_names if name not in busy]
                if not free:
                    break
                self._launch(planned, free[0], resume=state.status == CRASHED)
                busy.add(free[0])
                write_record(self.dir, record)
            time.sleep(self.poll_s)

    def _launch(self, planned: PlannedSession, slot_name: str, *, resume: bool) -> None:
        spec_data = read_record(self.dir).spec
        command = [self.python, "-m", "kernelseek_tui", "run"]
        if resume:
            command += ["--resume", planned.session_id]
        else:
            command += [spec_data["task_dir"], "--session-id", planned.session_id]
            command += ["--config", str(self.dir / ARMS_DIR / f"{planned.arm}.toml")]
            if spec_data.get("source"):
                command += ["--source", spec_data["source"]]
            if spec_data.get("evaluator"):
                command += ["--evaluator", spec_data["evaluator"]]
        command += ["--traces", str(self.dir), "--quiet"]
        env = dict(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env["PYTHONUNBUFFERED"] = "1"
        gpu = self.slots[self.slot_names.index(slot_name)]
        if gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = gpu  # the session sees its own GPU only
        logs = self.dir / LOGS_DIR
        logs.mkdir(exist_ok=True)
        with (logs / f"{planned.session_id}.log").open("ab") as out:
            self.children[planned.session_id] = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the session outlives a runner that dies
                close_fds=True,
                env=env,
            )
        planned.slot = slot_name
        planned.launches += 1
        verb = "resumed" if resume else "started"
        self.say(f"{planned.session_id} ({planned.arm}) {verb} on {slot_name}")

    def _reap(self) -> None:
        for session_id, child in list(self.children.items()):
            code = child.poll()
            if code is None:
                continue
            del self.children[session_id]
            try:
                meta = read_meta(self.dir / session_id)
                outcome = f"{meta.status} ({meta.end_reason})"
            except KernelseekError:
                outcome = f"exited {code} before its session existed"
            self.say(f"{session_id} {outcome}")

    def _stop_children(self) -> None:
        """Ask every running session to end at its next checkpoint, and wait for them."""
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in self.children.values():
            try:
                child.wait(timeout=60)
            except subprocess.TimeoutExpired:
                child.kill()
        self.children.clear()

    def _on_sigterm(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        def handler(signum: int, frame: object) -> None:
            self._stop.set()

        previous = signal.signal(signal.SIGTERM, handler)

        def restore() -> None:
            signal.signal(signal.SIGTERM, previous)

        return restore


def default_slots(spec_parallel: int | None, *, stand_in: bool) -> list[str | None]:
    """One slot per visible GPU (at most ``parallel``); a stand-in evaluator needs no GPU, so
    its experiment has ``parallel`` slots (1 by default)."""
    if stand_in:
        return [None] * (spec_parallel or 1)
    from kernelseek_tui.evaluate.pool import visible_devices

    gpus: list[str | None] = [str(g) for g in visible_devices()]
    if not gpus:
        raise KernelseekError("no GPU visible: an experiment's sessions need one each")
    return gpus[: spec_parallel or len(gpus)]
