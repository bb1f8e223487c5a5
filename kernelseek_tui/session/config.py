"""A session's settings: budgets, thresholds, the objective override and the agent's options.

They come from the command line (or a ``--config`` TOML file's ``[session]`` table), never from
the task directory the agent can edit. ``session.json`` stores them so that ``--resume`` runs the
session on with the same settings, unless the command line overrides some.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.session.inbox import ATTACHED_FRESH_S
from kernelseek_tui.session.questions_mode import REPERTOIRE, check_questions_mode
from kernelseek_tui.session.tools import DEFAULT_SHELL_OUTPUT_CHARS, DEFAULT_SHELL_TIMEOUT_S

DECISION_KEYS = (
    "plateau_evals",
    "failure_streak",
    "cooldown_evals",
    "finish_questions",
    "new_best_margin",
)
DEFAULT_FINISH_QUESTIONS = 1  # the first finish is answered with a question, the next one ends


@dataclass(slots=True)
class Budgets:
    """Limits after which the session ends cleanly; None is no limit."""

    calls: int | None = None  # tool calls executed
    usd: float | None = None  # model spend at list prices
    hours: float | None = None  # engine time, over every run of a resumed session

    def __post_init__(self) -> None:
        if self.calls is not None and self.calls < 1:
            raise KernelseekError("--budget-calls must be at least 1")
        for name in ("usd", "hours"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise KernelseekError(f"--budget-{name} must be a positive number")

    def describe(self) -> str:
        parts = []
        if self.calls is not None:
            parts.append(f"{self.calls} tool calls")
        if self.usd is not None:
            parts.append(f"${self.usd:g}")
        if self.hours is not None:
            parts.append(f"{self.hours:g} h")
        return ", ".join(parts) or "none"


@dataclass(slots=True)
class SessionConfig:
    """Everything that shapes a session besides its task (see the module docstring)."""

    task_dir: Path
    traces_root: Path
    session_id: str
    agent: str
    model: str | None = None
    objective_sets: list[str] | None = None
    budgets: Budgets = field(default_factory=Budgets)
    decisions: dict[str, Any] = field(default_factory=dict)
    attach_wait_s: float = 60.0
    attached_fresh_s: float = ATTACHED_FRESH_S
    repertoire: Path | None = None
    shell_timeout_s: float = DEFAULT_SHELL_TIMEOUT_S
    shell_output_chars: int = DEFAULT_SHELL_OUTPUT_CHARS
    # Run the agent's shell confined with Landlock (session/shell_confinement.py): writes only
    # to its workspace and a temporary directory of its own. Where the machine cannot, it runs
    # unconfined and the session says so.
    confine_shell: bool = True
    seed: int | None = None
    agent_options: dict[str, Any] = field(default_factory=dict)
    evaluator: str | None = None  # MODULE:FUNCTION of a stand-in evaluator factory
    evaluator_options: dict[str, Any] = field(default_factory=dict)
    # The GPUs evaluations may run on at once (CUDA_VISIBLE_DEVICES entries, see
    # session/slots.py); None: one evaluation at a time, as --device says.
    gpus: list[str] | None = None
    # The starting kernel, a file in the task directory (None: the task's own source).
    source: str | None = None
    # Who answers decision moments (session/questions_mode.py); "off" is the control arm.
    questions_mode: str = REPERTOIRE
    # Time each objective evaluation interleaved with the session's best so far and decide a
    # new best by the paired rule (evaluate/paired.py). None, the default: wherever the session's
    # evaluator can pair (the task's judge, ``pairs_with_best``) and evaluations run one at a
    # time; True: always (refused where it cannot be kept); False: never.
    paired_timing: bool | None = None

    def __post_init__(self) -> None:
        if self.gpus is not None:
            self.gpus = [str(g) for g in self.gpus] or None  # no GPUs named: one at a time
        if self.gpus is not None:
            if len(set(self.gpus)) != len(self.gpus):
                raise KernelseekError(f"gpus must name distinct GPUs, got {self.gpus}")
            if self.evaluator_options.get("device") is not None:
                raise KernelseekError("give --gpus or --device, not both")
        unknown = set(self.decisions) - set(DECISION_KEYS)
        if unknown:
            raise KernelseekError(f"unknown decision setting(s): {', '.join(sorted(unknown))}")
        self.decisions.setdefault("finish_questions", DEFAULT_FINISH_QUESTIONS)
        if self.attach_wait_s < 0:
            raise KernelseekError("--attach-wait must not be negative")
        check_questions_mode(self.questions_mode)

    @property
    def session_dir(self) -> Path:
        return self.traces_root / self.session_id

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("task_dir", "traces_root", "repertoire"):
            if data[key] is not None:
                data[key] = str(data[key])
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionConfig:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["budgets"] = Budgets(**(values.get("budgets") or {}))
        for key in ("task_dir", "traces_root", "repertoire"):
            if values.get(key) is not None:
                values[key] = Path(values[key])
        return cls(**values)


def load_config_file(path: Path) -> dict[str, Any]:
    """The ``[session]`` table of a TOML settings file (keys as the long flags, with ``_``)."""
    try:
        raw = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise KernelseekError(f"settings file {str(path)!r} does not exist") from None
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise KernelseekError(f"{path}: {error}") from None
    table = raw.get("session", {})
    if not isinstance(table, dict):
        raise KernelseekError(f"{path}: [session] must be a table")
    return table
