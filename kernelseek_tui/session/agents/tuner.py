"""The offline agent: a search over the task's knobs, one evaluation per point.

Coordinate descent from the defaults: for each knob in turn, every one of its values with the
other knobs held at the best point so far; passes repeat until one changes nothing. Then a
refinement pass over the best point's neighbours (one step along one or two knobs, in the order
task.toml lists the values) catches what moving one knob at a time misses; an improvement there
starts the descent again. No point is evaluated twice.

Each evaluation is an ``evaluate`` tool call with the point as its ``knobs`` (the engine writes
``knobs.json`` next to the kernel and commits it with every improvement). On resume the points
already judged are read from the trace, so the search replays to where it stopped without
calling anything again.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from kernelseek_tui.session.agents.base import AgentContext, CommitPolicy
from kernelseek_tui.session.state import event_attrs
from kernelseek_tui.task import Knob

Point = tuple[tuple[str, int], ...]


def point_key(knobs: dict[str, int]) -> Point:
    return tuple(sorted(knobs.items()))


class TunerAgent:
    """Knob search (see the module docstring). ``margin``: how much faster counts as better."""

    name: str = "tuner"
    commit_policy: CommitPolicy = "improvements"
    raises_decisions: bool = False  # it cannot read a question: asking one would only be noise

    def __init__(self, margin: float = 0.0) -> None:
        if not (math.isfinite(margin) and margin >= 0):
            raise ValueError("margin must be a finite number >= 0")
        self.margin = margin
        self.judged: dict[Point, float | None] = {}
        self.evaluated: list[dict[str, int]] = []  # the points this run evaluated, in order

    def run(self, ctx: AgentContext) -> None:
        knobs = list(ctx.task.knobs)
        self.judged = judged_points(ctx)
        current = ctx.task.default_knobs()
        best = self._score(ctx, current)
        if not knobs:
            return
        while True:
            current, best = self._descend(ctx, knobs, current, best)
            moved, current, best = self._refine(ctx, knobs, current, best)
            if not moved:
                return

    def _descend(
        self, ctx: AgentContext, knobs: list[Knob], current: dict[str, int], best: float | None
    ) -> tuple[dict[str, int], float | None]:
        improved = True
        while improved:
            improved = False
            for knob in knobs:
                for value in knob.values:
                    if value == current[knob.name]:
                        continue
                    point = {**current, knob.name: value}
                    score = self._score(ctx, point)
                    if self._better(score, best):
                        current, best, improved = point, score, True
        return current, best

    def _refine(
        self, ctx: AgentContext, knobs: list[Knob], current: dict[str, int], best: float | None
    ) -> tuple[bool, dict[str, int], float | None]:
        moved = False
        start = dict(current)
        for point in neighbours(knobs, start):
            if point_key(point) in self.judged:
                continue
            score = self._score(ctx, point)
            if self._better(score, best):
                current, best, moved = point, score, True
        return moved, current, best

    def _better(self, score: float | None, best: float | None) -> bool:
        if score is None:
            return False
        return best is None or score > best * (1 + self.margin)

    def _score(self, ctx: AgentContext, point: dict[str, int]) -> float | None:
        key = point_key(point)
        if key in self.judged:
            return self.judged[key]
        outcome = ctx.call_tool("evaluate", {"knobs": dict(point)})
        self.evaluated.append(dict(point))
        result = outcome.data.get("result")
        score = None
        if result is not None and result.verdict == "pass":
            speed = result.summary.geomean_speedup
            score = speed if speed is not None and math.isfinite(speed) else None
        self.judged[key] = score
        return score


def neighbours(knobs: list[Knob], point: dict[str, int]) -> list[dict[str, int]]:
    """Points one step away along one knob, then along two knobs at once."""
    steps: dict[str, list[int]] = {}
    for knob in knobs:
        index = knob.values.index(point[knob.name])
        steps[knob.name] = [
            knob.values[i] for i in (index - 1, index + 1) if 0 <= i < len(knob.values)
        ]
    found: list[dict[str, int]] = []
    for knob in knobs:
        for value in steps[knob.name]:
            found.append({**point, knob.name: value})
    for first, second in itertools.combinations(knobs, 2):
        for a, b in itertools.product(steps[first.name], steps[second.name]):
            found.append({**point, first.name: a, second.name: b})
    return found


def judged_points(ctx: AgentContext) -> dict[Point, float | None]:
    """The knob points a resumed session already judged: evaluate calls with a finished eval."""
    calls: dict[str, dict[str, Any]] = {}
    judged: dict[Point, float | None] = {}
    for event in ctx.past_events:
        if event.kind == "tool_call" and event.tool_name == "evaluate":
            calls[event.event_id] = event.tool_input_dict()
        elif event.kind == "eval" and event.parent_event_id in calls:
            knobs = calls[event.parent_event_id].get("knobs")
            if not isinstance(knobs, dict):
                knobs = event_attrs(event).get("knobs") or {}
            full = {**ctx.task.default_knobs(), **knobs}
            speed = event.speedup if event.verdict == "pass" else None
            judged[point_key(full)] = speed
    return judged
