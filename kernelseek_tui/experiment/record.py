"""``experiment.json``: what an experiment plans, who runs it, and whether it still lives.

The runner writes it (atomically) when it starts, whenever a session starts or ends, and when
it ends; ``kernelseek ls``, ``compare`` and ``experiment --resume`` read it. As with a session, a
record that says ``running`` whose runner process is gone *is* crashed, and resuming it
continues where it stopped: finished sessions stay, crashed ones resume, the rest start.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.experiment.spec import ExperimentSpec
from kernelseek_tui.paths import EXPERIMENT_FILE
from kernelseek_tui.session.meta import CRASHED, RUNNING, pid_alive, utc_now

RUNNER_LOG: Final = "experiment.log"


@dataclass(slots=True)
class PlannedSession:
    """One session of the experiment: its id, its arm, and what the runner did with it."""

    session_id: str
    arm: str
    slot: str | None = None  # the GPU (or stand-in slot) it was last launched on
    launches: int = 0  # starts plus resumes, so a session that keeps crashing is given up


@dataclass(slots=True)
class ExperimentRecord:
    """The contents of ``experiment.json``."""

    name: str
    spec: dict[str, Any]
    sessions: list[PlannedSession]
    status: str = RUNNING
    end_reason: str | None = None
    pid: int | None = None
    pid_start: int | None = None
    host: str | None = None
    created: str = field(default_factory=utc_now)
    updated: str = field(default_factory=utc_now)

    @property
    def experiment(self) -> ExperimentSpec:
        return ExperimentSpec.from_dict(self.spec)

    def arm_of(self) -> dict[str, str]:
        """Session id -> arm name."""
        return {s.session_id: s.arm for s in self.sessions}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExperimentRecord:
        values = dict(data)
        values["sessions"] = [PlannedSession(**s) for s in data.get("sessions", [])]
        return cls(**values)

    @classmethod
    def plan(cls, spec: ExperimentSpec) -> ExperimentRecord:
        sessions = [PlannedSession(sid, arm) for sid, arm in spec.session_ids()]
        return cls(name=spec.name, spec=spec.to_dict(), sessions=sessions)


def is_experiment_dir(path: Path) -> bool:
    return (Path(path) / EXPERIMENT_FILE).is_file()


def read_record(experiment_dir: Path) -> ExperimentRecord:
    path = Path(experiment_dir) / EXPERIMENT_FILE
    try:
        return ExperimentRecord.from_dict(json.loads(path.read_text()))
    except FileNotFoundError:
        raise KernelseekError(
            f"{experiment_dir} is not an experiment: it has no {EXPERIMENT_FILE}"
        ) from None
    except (OSError, ValueError, TypeError, KeyError) as error:
        raise KernelseekError(f"cannot read {path}: {error}") from None


def write_record(experiment_dir: Path, record: ExperimentRecord) -> None:
    """Write ``experiment.json`` atomically (a temporary file renamed over it)."""
    record.updated = utc_now()
    directory = Path(experiment_dir)
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record.to_dict(), indent=2, sort_keys=True, default=str) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".experiment.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, directory / EXPERIMENT_FILE)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def effective_status(record: ExperimentRecord) -> str:
    """``crashed`` for a running record whose runner is gone (on this host), else its status."""
    here = record.host in (None, _host())
    if record.status == RUNNING and here and not pid_alive(record.pid, record.pid_start):
        return CRASHED
    return record.status


def _host() -> str:
    import socket

    return socket.gethostname()


def list_experiments(root: Path) -> list[tuple[Path, ExperimentRecord, str]]:
    """Every experiment directory under ``root`` with its record and effective status."""
    found: list[tuple[Path, ExperimentRecord, str]] = []
    if not Path(root).is_dir():
        return found
    for child in sorted(Path(root).iterdir()):
        if not is_experiment_dir(child):
            continue
        try:
            record = read_record(child)
        except KernelseekError:
            continue
        found.append((child, record, effective_status(record)))
    return found
