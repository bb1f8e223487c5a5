"""An experiment's TOML file: the task, how many sessions per arm, the settings every session
shares and what each arm changes.

    [experiment]
    name = "questions-ab"          # the directory under the traces root, and the session ids
    task = "kernels/flash_fwd"     # relative to this file
    sessions_per_arm = 2
    parallel = 2                   # optional: sessions at once (default: one per visible GPU)

    [session]                      # what every session shares: run's --config keys
    agent = "claude"
    budget_calls = 60
    objective_sets = ["quick"]

    [[arm]]
    name = "questions"
    questions = "repertoire"

    [[arm]]
    name = "off"
    questions = "off"

An arm's keys (besides ``name``) override ``[session]``; both take the keys of ``kernelseek
run --config``'s ``[session]`` table (the caller checks them against that list).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,60}$")
EXPERIMENT_KEYS = frozenset(
    {"name", "task", "source", "sessions_per_arm", "parallel", "evaluator", "description"}
)


@dataclass(frozen=True, slots=True)
class Arm:
    """One way of running a session: a name and the settings it changes."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExperimentSpec:
    """A loaded experiment file (see the module docstring)."""

    name: str
    task_dir: Path
    sessions_per_arm: int
    arms: tuple[Arm, ...]
    shared: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    parallel: int | None = None
    # MODULE:FUNCTION of a stand-in evaluator (tests and demos without a GPU), as run's.
    evaluator: str | None = None
    description: str = ""

    def arm_settings(self, arm: Arm) -> dict[str, Any]:
        """The ``[session]`` table a session of ``arm`` runs with."""
        return {**self.shared, **arm.settings}

    def session_ids(self) -> list[tuple[str, str]]:
        """``(session_id, arm name)`` of every planned session, arm by arm, alternating so the
        first sessions to run cover every arm."""
        return [
            (f"{self.name}-{arm.name}-{index}", arm.name)
            for index in range(1, self.sessions_per_arm + 1)
            for arm in self.arms
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "task_dir": str(self.task_dir),
            "sessions_per_arm": self.sessions_per_arm,
            "arms": [{"name": a.name, **a.settings} for a in self.arms],
            "shared": dict(self.shared),
            "source": self.source,
            "parallel": self.parallel,
            "evaluator": self.evaluator,
            "description": self.description,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExperimentSpec:
        arms = tuple(
            Arm(str(a["name"]), {k: v for k, v in a.items() if k != "name"}) for a in data["arms"]
        )
        return cls(
            name=data["name"],
            task_dir=Path(data["task_dir"]),
            sessions_per_arm=int(data["sessions_per_arm"]),
            arms=arms,
            shared=dict(data.get("shared") or {}),
            source=data.get("source"),
            parallel=data.get("parallel"),
            evaluator=data.get("evaluator"),
            description=data.get("description") or "",
        )


def load_spec(path: Path, *, allowed_settings: frozenset[str] | None = None) -> ExperimentSpec:
    """Read and check an experiment file; every problem is a KernelseekError naming the file."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise KernelseekError(f"experiment file {str(path)!r} does not exist") from None
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise KernelseekError(f"{path}: {error}") from None

    def fail(why: str) -> KernelseekError:
        return KernelseekError(f"{path}: {why}")

    head = raw.get("experiment")
    if not isinstance(head, dict):
        raise fail("needs an [experiment] table with name and task")
    unknown = sorted(set(head) - EXPERIMENT_KEYS)
    if unknown:
        raise fail(f"unknown [experiment] key(s) {unknown}")
    name = head.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise fail("[experiment] name must be letters, digits, '-' or '_' (it names a directory)")
    task = head.get("task")
    if not isinstance(task, str):
        raise fail("[experiment] task must name the task directory")
    task_dir = (path.parent / task).resolve()
    if not (task_dir / "task.toml").is_file():
        raise fail(f"task {task!r} has no task.toml (looked in {task_dir})")
    per_arm = head.get("sessions_per_arm", 1)
    if not isinstance(per_arm, int) or isinstance(per_arm, bool) or per_arm < 1:
        raise fail("sessions_per_arm must be a whole number of at least 1")
    parallel = head.get("parallel")
    if parallel is not None and (not isinstance(parallel, int) or parallel < 1):
        raise fail("parallel must be a whole number of at least 1")
    shared = raw.get("session", {})
    if not isinstance(shared, dict):
        raise fail("[session] must be a table")
    arms_raw = raw.get("arm")
    if not isinstance(arms_raw, list) or not arms_raw:
        raise fail("needs at least one [[arm]] table")
    arms: list[Arm] = []
    for number, table in enumerate(arms_raw, start=1):
        arm_name = table.get("name") if isinstance(table, dict) else None
        if not isinstance(arm_name, str) or not _NAME.match(arm_name):
            raise fail(f"arm {number} needs a name of letters, digits, '-' or '_'")
        if any(a.name == arm_name for a in arms):
            raise fail(f"two arms are named {arm_name!r}")
        arms.append(Arm(arm_name, {k: v for k, v in table.items() if k != "name"}))
    if allowed_settings is not None:
        for where, table in [("[session]", shared)] + [
            (f"arm {a.name!r}", a.settings) for a in arms
        ]:
            bad = sorted(set(table) - allowed_settings)
            if bad:
                raise fail(f"{where}: unknown setting(s) {bad} (run --config's [session] keys)")
    return ExperimentSpec(
        name=name,
        task_dir=task_dir,
        sessions_per_arm=per_arm,
        arms=tuple(arms),
        shared=dict(shared),
        source=head.get("source"),
        parallel=parallel,
        evaluator=head.get("evaluator"),
        description=str(head.get("description") or ""),
    )
