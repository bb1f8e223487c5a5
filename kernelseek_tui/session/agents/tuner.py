"""The offline agent: a search over the task's knobs, one evaluation per point.

Coordinate descent from the defaults: for each knob in turn, every one of its values with the
other knobs held at the best point so far; passes repeat until one changes nothing. Then a
refinement pass over the best point's neighbours (one step along one or two knobs, in the order
task.toml lists the values) catches what moving one knob at a time misses; an improvement there
starts the descent again. No point is evaluated twice.

Each evaluation is an ``evaluate`` tool call with the point as its ``knobs`` (the engine writes
``knobs.json`` next to the kernel and commits it with every point that passes, marking the new
bests). On resume the points already judged are read from the trace, so the search replays to
where it stopped without calling anything again.

With several evaluation slots (``--gpus``) the points of one step that do not depend on each
other (every value of the knob being varied; every neighbour of a refinement pass) are judged
up to ``eval_slots`` at once (``evaluate_many``), then taken in the same order as one at a time,
so the search visits the same points in the same order and makes the same commits.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from kernelseek_tui.session.agents.base import AgentContext
from kernelseek_tui.session.tools import ToolOutcome
from kernelseek_tui.task import Knob

Point = tuple[tuple[str, int], ...]


def point_key(knobs: dict[str, int]) -> Point:
    return tuple(sorted(knobs.items()))


class TunerAgent:
    """Knob search (see the module docstring). ``margin``: how much faster counts as better."""

    name: str = "tuner"
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
                # Every value of this knob with the others held: moving to a better one on the
                # way changes only this knob, so these are the points whatever the outcomes.
                points = [{**current, knob.name: v} for v in knob.values if v != current[knob.name]]
                for point, score in zip(points, self._score_all(ctx, points), strict=True):
                    if self._better(score, best):
                        current, best, improved = point, score, True
        return current, best

    def _refine(
        self, ctx: AgentContext, knobs: list[Knob], current: dict[str, int], best: float | None
    ) -> tuple[bool, dict[str, int], float | None]:
        moved = False
        fresh = [p for p in neighbours(knobs, dict(current)) if point_key(p) not in self.judged]
        for point, score in zip(fresh, self._score_all(ctx, fresh), strict=True):
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
        self.judged[key] = score_of(outcome)
        return self.judged[key]

    def _score_all(self, ctx: AgentContext, points: list[dict[str, int]]) -> list[float | None]:
        """The scores of ``points``, judging the new ones ``ctx.eval_slots`` at a time."""
        slots = ctx.eval_slots
        if slots <= 1:
            return [self._score(ctx, point) for point in points]
        todo: list[dict[str, int]] = []
        for point in points:
            if point_key(point) not in self.judged and point not in todo:
                todo.append(point)
        for start in range(0, len(todo), slots):
            chunk = todo[start : start + slots]
            outcomes = ctx.evaluate_many([{"knobs": dict(point)} for point in chunk])
            for point, outcome in zip(chunk, outcomes, strict=True):
                self.evaluated.append(dict(point))
                self.judged[point_key(point)] = score_of(outcome)
        return [self.judged[point_key(point)] for point in points]


def score_of(outcome: ToolOutcome) -> float | None:
    """A point's score: the speedup of a passing evaluation, else None."""
    result = outcome.data.get("result")
    if result is None or result.verdict != "pass":
        return None
    speed = result.summary.geomean_speedup
    return speed if speed is not None and math.isfinite(speed) else None


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
                knobs = event.attrs_dict().get("knobs") or {}
            full = {**ctx.task.default_knobs(), **knobs}
            speed = event.speedup if event.verdict == "pass" else None
            judged[point_key(full)] = speed
    return judged
