"""``kernelseek compare``: sessions grouped into arms, a table per arm, the verdicts the
numbers allow, and the plot of best speedup over tool calls (one line per session, a colour per
arm, each question a labelled marker).

An experiment's sessions take their arm from ``experiment.json``; a session named on its own
takes its questions mode (``repertoire``, ``off``, ...) as its arm.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from statistics import median

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.experiment.metrics import SessionMetrics, load_session_metrics
from kernelseek_tui.experiment.verdict import Verdict, verdict
from kernelseek_tui.paths import SessionPaths

COLUMNS = (
    "SESSION", "BEST", "VS FA3", "BEST@{calls}", "CALLS", "USD", "WALL", "EVALS TO {reach}",
    "QUESTIONS", "JUMPS (AFTER Q)",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Target:
    """A session to compare and the arm it belongs to."""

    session_dir: Path
    arm: str


def resolve_targets(root: Path, refs: list[str]) -> list[Target]:
    """The sessions ``refs`` name: experiments (every session, by arm) or single sessions."""
    from kernelseek_tui.experiment.record import is_experiment_dir, read_record
    from kernelseek_tui.session.meta import find_session, read_meta

    targets: list[Target] = []
    for ref in refs:
        as_path = Path(ref).expanduser()
        experiment_dir = as_path if is_experiment_dir(as_path) else root / ref
        if is_experiment_dir(experiment_dir):
            record = read_record(experiment_dir)
            for planned in record.sessions:
                if SessionPaths(experiment_dir / planned.session_id).meta.is_file():
                    targets.append(Target(experiment_dir / planned.session_id, planned.arm))
            continue
        session_dir = find_session(root, ref)
        # A session of an experiment, named on its own, is still in its experiment's arm.
        arm = None
        if is_experiment_dir(session_dir.parent):
            arm = read_record(session_dir.parent).arm_of().get(session_dir.name)
        if arm is None:
            arm = str(read_meta(session_dir).config.get("questions_mode", "repertoire"))
        targets.append(Target(session_dir, arm))
    if not targets:
        raise KernelseekError("nothing to compare: the experiments named have no sessions yet")
    # An experiment and one of its sessions both named: the session counts once.
    unique: dict[Path, Target] = {}
    for target in targets:
        unique.setdefault(target.session_dir.resolve(), target)
    return list(unique.values())


@dataclass(slots=True)
class Comparison:
    """The sessions' metrics by arm, and the two levels the table reads them at."""

    arms: dict[str, list[SessionMetrics]]
    equal_calls: int  # the tool calls every session spent at least
    reach: float  # the speedup every session reached at least, unless given

    @classmethod
    def of(cls, metrics: list[SessionMetrics], *, reach: float | None = None) -> Comparison:
        arms: dict[str, list[SessionMetrics]] = {}
        for m in metrics:
            arms.setdefault(m.arm, []).append(m)
        equal_calls = min((m.tool_calls for m in metrics), default=0)
        target = reach if reach is not None else min((m.final_best for m in metrics), default=1.0)
        return cls(arms, equal_calls, target)

    def verdicts(self) -> list[Verdict]:
        """Each arm against the first one, on the best speedup at the end."""
        names = list(self.arms)
        first = names[0]
        return [
            verdict(
                first, [m.final_best for m in self.arms[first]],
                other, [m.final_best for m in self.arms[other]],
                "best speedup",
            )
            for other in names[1:]
        ]  # fmt: skip

    def header(self) -> list[str]:
        """The table's column titles, with the equal tool calls and the speedup to reach."""
        return [c.format(calls=self.equal_calls, reach=f"{self.reach:.3f}x") for c in COLUMNS]

    def arm_rows(self, arm: str) -> list[list[str]]:
        """One arm's rows: one per session, then the arm's medians (first cell ``median``)."""
        sessions = self.arms[arm]
        return [self._row(m) for m in sessions] + [self._median_row(sessions)]

    def tables(self) -> str:
        """A table per arm: one row per session, then the arm's medians."""
        blocks = []
        for arm, sessions in self.arms.items():
            rows = [self.header(), *self.arm_rows(arm)]
            blocks.append(f"arm {arm} ({len(sessions)} sessions)\n" + _aligned(rows))
        return "\n\n".join(blocks)

    def _row(self, m: SessionMetrics) -> list[str]:
        evals = m.evals_to_reach(self.reach)
        return [
            m.session_id,
            f"{m.final_best:.3f}x",
            _num(m.final_vs_fa3),
            f"{m.best_at_calls(self.equal_calls):.3f}x",
            str(m.tool_calls),
            _usd(m.cost_usd),
            _duration(m.seconds),
            "never" if evals is None else str(evals),
            str(len(m.questions)),
            f"{m.jumps} ({m.jumps_after_question})",
        ]

    def _median_row(self, sessions: list[SessionMetrics]) -> list[str]:
        def mid(values: list[float | None]) -> float | None:
            known = [v for v in values if v is not None]
            return median(known) if known else None

        reached = [m.evals_to_reach(self.reach) for m in sessions]
        evals = mid([float(e) for e in reached if e is not None])
        return [
            "median",
            f"{mid([m.final_best for m in sessions]):.3f}x",
            _num(mid([m.final_vs_fa3 for m in sessions])),
            f"{mid([m.best_at_calls(self.equal_calls) for m in sessions]):.3f}x",
            _num(mid([float(m.tool_calls) for m in sessions]), 1),
            _usd(mid([m.cost_usd for m in sessions])),
            _duration(mid([m.seconds for m in sessions]) or 0.0),
            ("never" if evals is None else _num(evals, 1))
            + (f" ({reached.count(None)} never)" if None in reached and evals is not None else ""),
            _num(mid([float(len(m.questions)) for m in sessions]), 1),
            f"{_num(mid([float(m.jumps) for m in sessions]), 1)} "
            f"({_num(mid([float(m.jumps_after_question) for m in sessions]), 1)})",
        ]

    def to_json(self) -> dict[str, object]:
        return {
            "equal_calls": self.equal_calls,
            "reach": self.reach,
            "arms": {
                arm: [
                    {
                        "session_id": m.session_id,
                        "best_speedup": m.final_best,
                        "vs_fa3": m.final_vs_fa3,
                        "best_at_equal_calls": m.best_at_calls(self.equal_calls),
                        "tool_calls": m.tool_calls,
                        "cost_usd": m.cost_usd,
                        "seconds": m.seconds,
                        "evals_to_reach": m.evals_to_reach(self.reach),
                        "questions": len(m.questions),
                        "jumps": m.jumps,
                        "jumps_after_question": m.jumps_after_question,
                    }
                    for m in sessions
                ]
                for arm, sessions in self.arms.items()
            },
            "verdicts": [v.sentence() for v in self.verdicts()],
        }


def load_comparison(root: Path, refs: list[str], *, reach: float | None = None,
                    k: int | None = None) -> Comparison:  # fmt: skip
    options = {"k": k} if k is not None else {}
    metrics = [
        load_session_metrics(t.session_dir, t.arm, **options) for t in resolve_targets(root, refs)
    ]
    return Comparison.of(metrics, reach=reach)


def curve_steps(m: SessionMetrics) -> tuple[list[int], list[float]]:
    """A session's best speedup over tool calls as the corners of a step line (drawn "post":
    each value holds until the next x), from 1.0 at no call to its best at its last call."""
    xs = [0] + [p.tool_calls for p in m.curve] + [m.tool_calls]
    ys = [1.0] + [p.best for p in m.curve] + [m.final_best]
    return xs, ys


def question_marks(m: SessionMetrics) -> list[tuple[str, int, float]]:
    """Each question as (label, tool calls, the best speedup then): where its marker goes."""
    return [
        (q.question_id or q.source or "?", q.tool_calls, m.best_at_calls(q.tool_calls))
        for q in m.questions
    ]


def plot_comparison(comparison: Comparison, path: Path, title: str) -> Path:
    """Best speedup over tool calls, one line per session, a colour per arm, questions as
    markers labelled with their id. Drawn off-screen (Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 5), dpi=110)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, (arm, sessions) in enumerate(comparison.arms.items()):
        colour = colours[index % len(colours)]
        for number, m in enumerate(sessions):
            xs, ys = curve_steps(m)
            ax.step(xs, ys, where="post", color=colour, alpha=0.8, linewidth=1.4,
                    label=arm if number == 0 else None)  # fmt: skip
            for label, x, y in question_marks(m):
                ax.plot([x], [y], marker="v", color=colour, markersize=6)
                ax.annotate(label, (x, y), textcoords="offset points", xytext=(2, 5),
                            fontsize=6, color=colour, rotation=30)  # fmt: skip
    ax.set_xlabel("tool calls")
    ax.set_ylabel("best speedup vs the starting kernel")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(title="arm", loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _aligned(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _usd(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def dumps(comparison: Comparison) -> str:
    return json.dumps(comparison.to_json(), indent=2)  # arms in their order, first first
