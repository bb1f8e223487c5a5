"""The tuner on several evaluation slots: stand-in GPUs that sleep, in one process. The search
is the one-at-a-time search, its points judged two (or three) at once, its trace in a fixed
order, a lost GPU leaving the other going, a crash mid-batch repaired on resume."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.session.agents.tuner import TunerAgent
from kernelseek_tui.session.config import Budgets
from kernelseek_tui.session.engine import Engine
from kernelseek_tui.session.meta import read_meta, write_meta
from tests.test_parallel_support import SleepyGPU, Span, overlapping
from tests.test_session_support import (
    dying_on_call,
    git,
    knob_speed,
    make_task_repo,
    read_events,
    session_config,
)


class Crash(BaseException):
    """The process dying: nothing in the engine catches it."""


@pytest.fixture()
def task_dir(tmp_path: Path) -> Path:
    return make_task_repo(tmp_path / "user")


def gpus(n: int, log: list[Span], **options: Any) -> list[SleepyGPU]:
    return [SleepyGPU(str(i), log, **options) for i in range(n)]


def tune(
    task_dir: Path, traces: Path, evaluators: list[SleepyGPU], session_id: str, **changes: Any
) -> Engine:
    config = session_config(
        task_dir, traces, session_id, agent="tuner", objective_sets=["quick"], **changes
    )
    engine = Engine.start(config, evaluator=evaluators if len(evaluators) > 1 else evaluators[0])
    engine.run(TunerAgent())
    return engine


def judged_points(engine: Engine) -> list[dict[str, int]]:
    events = read_events(engine.session_dir)
    calls = {e.event_id: e for e in events if e.kind == "tool_call"}
    return [calls[e.parent_event_id].tool_input_dict()["knobs"] for e in events if e.kind == "eval"]


def tip_knobs(engine: Engine) -> dict[str, int]:
    """The knobs of the best candidate: the newest one marked a new best."""
    sha = next(c.sha for c in engine.history.candidates() if c.new_best)
    return json.loads(git(engine.history.repo, "show", f"{sha}:kernels/flash_fwd/knobs.json"))[
        "knobs"
    ]


def crashed(engine: Engine) -> Path:
    """After a Crash: release the trace as a dead process would, mark its pid dead."""
    engine.writer.close(compact=False)
    meta = read_meta(engine.session_dir)
    meta.pid = 2**22 + 999
    write_meta(engine.session_dir, meta)
    return engine.session_dir


def test_the_search_and_its_commits_are_those_of_one_at_a_time(
    task_dir: Path, tmp_path: Path
) -> None:
    log: list[Span] = []
    outcomes = {}
    for n in (1, 2, 3):
        engine = tune(task_dir, tmp_path / "traces", gpus(n, log, delay=0), f"g{n}")
        commits = [(c.speedup, c.new_best, c.sha) for c in engine.history.candidates()]
        knobs = [
            json.loads(git(engine.history.repo, "show", f"{sha}:kernels/flash_fwd/knobs.json"))
            for _, _, sha in commits
        ]
        outcomes[n] = (judged_points(engine), [s[:2] for s in commits], knobs)
        assert read_meta(engine.session_dir).end_reason == "done"
    assert outcomes[2] == outcomes[1] and outcomes[3] == outcomes[1]
    points, speeds, knobs = outcomes[1]
    assert len(points) == len({json.dumps(p, sort_keys=True) for p in points})  # none twice
    assert len(speeds) == len(points)  # every point passes here, and each is a commit
    best = next(i for i, (_, new_best) in enumerate(speeds) if new_best)
    assert speeds[best][0] == 1.6 and knobs[best] == {"knobs": {"BLOCK_M": 128, "BLOCK_N": 32}}


def test_a_batch_is_recorded_in_point_order_when_its_last_point_finishes_first(
    task_dir: Path, tmp_path: Path
) -> None:
    log: list[Span] = []
    # BLOCK_M=32 is the first point of the first batch: it takes longest.
    slow_first = gpus(2, log, delays=lambda p: 0.4 if p["BLOCK_M"] == 32 else 0.05)
    engine = tune(task_dir, tmp_path / "traces", slow_first, "order", budgets=Budgets(calls=3))
    events = read_events(engine.session_dir)
    opened = next(e.seq for e in events if e.attrs_dict().get("batch"))
    batch = [e for e in events if e.seq >= opened and e.kind != "control"]
    kinds = [(e.kind, e.tool_input_dict().get("knobs", {}).get("BLOCK_M")) for e in batch]
    # Both calls first, then each point's eval, commit and result in the calls' order.
    assert kinds == [
        ("tool_call", 32),
        ("tool_call", 128),
        ("eval", None),
        ("commit", None),
        ("tool_result", None),
        ("eval", None),
        ("commit", None),
        ("tool_result", None),
    ]
    calls = [e for e in batch if e.kind == "tool_call"]
    evals = [e for e in batch if e.kind == "eval"]
    assert [e.parent_event_id for e in evals] == [c.event_id for c in calls]
    assert [c.attrs_dict()["batch_index"] for c in calls] == [0, 1]
    assert [e.speedup for e in evals] == [0.8, 1.3]
    spans = {dict(s.point)["BLOCK_M"]: s for s in log}
    assert spans[128].end < spans[32].end  # it did finish first
    # Each eval names the GPU it ran on, and the two ran on two GPUs.
    devices = [e.attrs_dict()["device"] for e in evals]
    assert {d["uuid"] for d in devices} == {"GPU-0-uuid", "GPU-1-uuid"}
    assert [e.attrs_dict()["slot_device"] for e in evals] == [d["index"] for d in devices]
    assert not list((engine.session_dir / "evals").glob("pending-*"))


def test_results_on_different_gpus_each_carry_their_own_device_and_baseline_note(
    task_dir: Path, tmp_path: Path
) -> None:
    engine = tune(task_dir, tmp_path / "traces", gpus(2, [], delay=0.05), "dev")
    evals = [e for e in read_events(engine.session_dir) if e.kind == "eval"]
    by_uuid: dict[str, list[Any]] = {}
    for event in evals:
        attrs = json.loads(event.attrs)
        by_uuid.setdefault(attrs["device"]["uuid"], []).append(attrs)
        # The speedup is against the starting kernel timed on this very GPU.
        assert attrs["summary"]["baseline_timing"].startswith("measured on this GPU")
        assert attrs["slot_device"] == attrs["device"]["index"]
    assert set(by_uuid) == {"GPU-0-uuid", "GPU-1-uuid"}
    # Both GPUs are the same model: no warning that speedups may not compare.
    assert not [e for e in read_events(engine.session_dir) if e.kind == "error"]


def test_two_gpus_of_different_models_are_flagged(task_dir: Path, tmp_path: Path) -> None:
    pair = gpus(2, [], delay=0.05)

    class OtherModel(SleepyGPU):
        def __call__(self, source, sets, *, knobs=None):  # type: ignore[no-untyped-def]
            result = super().__call__(source, sets, knobs=knobs)
            result.device["name"] = "another model"
            return result

    pair[1] = OtherModel("1", [], delay=0.05)
    engine = tune(task_dir, tmp_path / "traces", pair, "mixed", budgets=Budgets(calls=3))
    warnings = [e for e in read_events(engine.session_dir) if e.kind == "error"]
    assert len(warnings) == 1 and "not all the same model" in (warnings[0].text or "")


def _tune_on_one_then_two_gpus(
    task_dir: Path, tmp_path: Path
) -> tuple[dict[int, float], dict[int, list[Span]], Engine]:
    """Wall time per judged point and the evaluations' spans, with one GPU and with two."""
    walls: dict[int, float] = {}
    logs: dict[int, list[Span]] = {}
    for n in (1, 2):
        logs[n] = []
        began = time.monotonic()
        engine = tune(
            task_dir, tmp_path / "traces", gpus(n, logs[n]), f"w{n}", budgets=Budgets(calls=5)
        )
        walls[n] = (time.monotonic() - began) / len(judged_points(engine))
        assert len(logs[n]) == 5
    return walls, logs, engine


@pytest.mark.slow
def test_two_slots_overlap_each_point_of_a_pair_on_its_own_gpu(
    task_dir: Path, tmp_path: Path
) -> None:
    _, logs, _ = _tune_on_one_then_two_gpus(task_dir, tmp_path)
    assert overlapping(logs[1]) == []
    pairs = overlapping(logs[2])
    # Two batches of two points each ran at once, each point of a pair on its own GPU and thread.
    assert len(pairs) == 2
    assert all(a.device != b.device and a.thread != b.thread for a, b in pairs)


@pytest.mark.perf
def test_two_slots_nearly_halve_the_wall_time_per_point(task_dir: Path, tmp_path: Path) -> None:
    walls, _, engine = _tune_on_one_then_two_gpus(task_dir, tmp_path)
    # 5 points in 3 rounds against 5: a wall time per point of 3/5 of one GPU's, at best.
    ratio = walls[2] / walls[1]
    assert 0.5 <= ratio < 0.75, (walls, ratio)
    # Within a batch, per point, the drop is close to half: the batch takes one point's time.
    events = read_events(engine.session_dir)
    for batch in {e.attrs_dict().get("batch") for e in events} - {None}:
        inside = [e for e in events if e.attrs_dict().get("batch") == batch]
        seconds = (max(e.ts for e in inside) - min(e.ts for e in inside)) / 1e6
        assert seconds / 2 < 0.6 * walls[1], (seconds, walls)


def test_a_gpu_that_fails_every_evaluation_does_not_stop_the_other(
    task_dir: Path, tmp_path: Path
) -> None:
    log: list[Span] = []
    pair = [
        SleepyGPU("0", log, delay=0.05),
        SleepyGPU("1", log, delay=0.05, raises=RuntimeError("CUDA error: device lost")),
    ]
    engine = tune(task_dir, tmp_path / "traces", pair, "lost")
    events = read_events(engine.session_dir)
    assert read_meta(engine.session_dir).end_reason == "done"
    errors = [e for e in events if e.kind == "error"]
    assert errors and all(e.attrs_dict()["device"] == "1" for e in errors)
    results = {e.tool_call_id: e for e in events if e.kind == "tool_result"}
    on_gpu1 = [e for e in results.values() if e.attrs_dict().get("device") == "1"]
    assert on_gpu1 and all(r.is_error and "on GPU 1" in (r.text or "") for r in on_gpu1)
    evals = [e for e in events if e.kind == "eval"]
    assert evals and all(e.attrs_dict()["device"]["index"] == "0" for e in evals)
    assert all(e.verdict == "pass" for e in evals)
    # Every call got its result; what GPU 0 verified was committed, the faster ones marked.
    calls = [e for e in events if e.kind == "tool_call"]
    assert len(results) == len(calls) == len(evals) + len(on_gpu1)
    bests: list[float] = []
    for event in evals:
        if event.speedup > max([1.0, *bests]) * 1.01:
            bests.append(event.speedup)
    candidates = list(reversed(engine.history.candidates()))
    assert [c.speedup for c in candidates] == [e.speedup for e in evals]
    assert [c.speedup for c in candidates if c.new_best] == bests


def test_a_lost_worker_verdict_on_one_gpu_is_that_points_only(
    task_dir: Path, tmp_path: Path
) -> None:
    pair = [SleepyGPU("0", [], delay=0.05), SleepyGPU("1", [], delay=0.05, lost=True)]
    engine = tune(task_dir, tmp_path / "traces", pair, "lost2")
    evals = [e for e in read_events(engine.session_dir) if e.kind == "eval"]
    verdicts = {(e.attrs_dict()["device"]["index"], e.verdict) for e in evals}
    assert verdicts == {("0", "pass"), ("1", "error")}
    lost = [e for e in evals if e.verdict == "error"]
    assert all("SIGKILL" in e.attrs_dict()["reasons"][0] for e in lost)
    assert read_meta(engine.session_dir).end_reason == "done"


def test_the_calls_budget_cuts_a_batch_at_the_same_point(task_dir: Path, tmp_path: Path) -> None:
    one = tune(task_dir, tmp_path / "t", gpus(1, [], delay=0), "b1", budgets=Budgets(calls=4))
    two = tune(task_dir, tmp_path / "t", gpus(2, [], delay=0), "b2", budgets=Budgets(calls=4))
    assert judged_points(two) == judged_points(one) and len(judged_points(two)) == 4
    meta = read_meta(two.session_dir)
    assert meta.end_reason == "budget_calls" and meta.stats["tool_calls"] == 4


def test_a_crash_mid_batch_keeps_what_finished_and_judges_again_what_did_not(
    task_dir: Path, tmp_path: Path
) -> None:
    log: list[Span] = []

    class DiesOnFirstPoint(SleepyGPU):
        # The process dies while (32, 64), the first point of the first batch, still runs;
        # the batch's other point, (128, 64), has finished by then.
        def __call__(self, source, sets, *, knobs=None):  # type: ignore[no-untyped-def]
            if (knobs or {}).get("BLOCK_M") == 32:
                time.sleep(0.3)
                raise Crash
            return super().__call__(source, sets, knobs=knobs)

    doomed = [DiesOnFirstPoint(str(i), log, delay=0) for i in range(2)]
    config = session_config(
        task_dir, tmp_path / "traces", "crash", agent="tuner", objective_sets=["quick"]
    )
    engine = Engine.start(config, evaluator=doomed)
    with pytest.raises(Crash):
        engine.run(TunerAgent())
    session_dir = crashed(engine)
    first_batch = [e for e in read_events(session_dir) if e.kind == "tool_call"][1:]
    assert (
        len(first_batch) == 2 and not [e for e in read_events(session_dir) if e.kind == "eval"][1:]
    )
    pending = SessionPaths(session_dir).pending_result(first_batch[1].seq)
    assert pending.exists()  # kept, not yet recorded

    again = [SleepyGPU(str(i), log, delay=0) for i in range(2)]
    resumed = Engine.resume(session_dir, evaluator=again)
    resumed.run(TunerAgent())
    events = read_events(session_dir)
    reconcile = next(e for e in events if e.attrs_dict().get("action") == "reconcile")
    assert reconcile.attrs_dict()["evals_recorded"] == 1
    assert reconcile.attrs_dict()["calls_answered"] == 1
    recovered = next(e for e in events if e.kind == "eval" and e.attrs_dict().get("recovered"))
    assert recovered.parent_event_id == first_batch[1].event_id and recovered.speedup == 1.3
    # The finished point was not judged again; the one that was running was.
    assert [dict(s.point) for s in log[:2]] == [
        {"BLOCK_M": 64, "BLOCK_N": 64},
        {"BLOCK_M": 128, "BLOCK_N": 64},
    ]
    judged_again = [dict(s.point) for s in log[2:]]
    assert {"BLOCK_M": 128, "BLOCK_N": 64} not in judged_again
    assert judged_again[0] == {"BLOCK_M": 32, "BLOCK_N": 64}
    points = judged_points(resumed)
    assert len(points) == len({json.dumps(p, sort_keys=True) for p in points})
    fresh = tune(task_dir, tmp_path / "other", gpus(2, [], delay=0), "fresh")
    assert sorted(map(json.dumps, points)) == sorted(map(json.dumps, judged_points(fresh)))
    assert tip_knobs(resumed) == {"BLOCK_M": 128, "BLOCK_N": 32}
    assert not pending.exists()


def test_a_crash_while_recording_a_batch_commits_both_points_on_resume(
    task_dir: Path, tmp_path: Path
) -> None:
    # The defaults (1.0x) are committed first; then the first batch, (32, 64) and (128, 64),
    # both faster, so both are new bests: the first one's commit dies.
    speeds = {(32, 64): 1.2, (128, 64): 1.3}

    class Faster(SleepyGPU):
        def __call__(self, source, sets, *, knobs=None):  # type: ignore[no-untyped-def]
            result = super().__call__(source, sets, knobs=knobs)
            point = self.calls[-1]
            speed = speeds.get((point["BLOCK_M"], point["BLOCK_N"]))
            if speed is not None:
                result.summary.geomean_speedup = speed
            return result

    config = session_config(
        task_dir, tmp_path / "traces", "rec", agent="tuner", objective_sets=["quick"]
    )
    engine = Engine.start(config, evaluator=[Faster(str(i), [], delay=0) for i in range(2)])
    original = engine.history.commit_candidate
    engine.history.commit_candidate = dying_on_call(2, original, Crash)  # type: ignore[method-assign]
    with pytest.raises(Crash):
        engine.run(TunerAgent())
    engine.history.commit_candidate = original  # type: ignore[method-assign]
    session_dir = crashed(engine)
    before = read_events(session_dir)
    assert [e.speedup for e in before if e.kind == "eval"] == [1.0, 1.2]  # the second: pending
    resumed = Engine.resume(session_dir, evaluator=[Faster(str(i), [], delay=0) for i in range(2)])
    resumed.run(TunerAgent())
    events = read_events(session_dir)
    reconcile = next(e for e in events if e.attrs_dict().get("action") == "reconcile")
    assert reconcile.attrs_dict()["commits_made"] == 1
    assert reconcile.attrs_dict()["evals_recorded"] == 1
    committed = list(reversed(resumed.history.candidates()))
    assert [(c.speedup, c.new_best) for c in committed[:3]] == [
        (1.0, False),
        (1.2, True),
        (1.3, True),
    ]
    assert [c.speedup for c in committed if c.new_best][-1] == knob_speed(
        {"BLOCK_M": 128, "BLOCK_N": 32}
    )
    evals = [e for e in events if e.kind == "eval"]
    keys = [e.parent_event_id for e in evals]
    assert len(keys) == len(set(keys))  # no call judged twice


def test_a_batch_without_gpus_runs_one_at_a_time_on_the_sessions_evaluator(
    task_dir: Path, tmp_path: Path
) -> None:
    log: list[Span] = []

    class Batcher:
        name, commit_policy, raises_decisions = "batcher", "improvements", False

        def __init__(self) -> None:
            self.outcomes: list[Any] = []

        def run(self, ctx: Any) -> None:
            assert ctx.eval_slots == 1
            inputs = [{"knobs": {"BLOCK_M": m}} for m in (32, 128)] + [{"knobs": {"X": 1}}]
            self.outcomes = ctx.evaluate_many(inputs)

    config = session_config(task_dir, tmp_path / "traces", "plain", objective_sets=["quick"])
    engine = Engine.start(config, evaluator=SleepyGPU("0", log, delay=0.1))
    agent = Batcher()
    engine.run(agent)  # type: ignore[arg-type]
    assert overlapping(log) == []
    assert [o.is_error for o in agent.outcomes] == [False, False, True]
    assert "has no knob 'X'" in agent.outcomes[2].text
    events = read_events(engine.session_dir)
    evals = [e for e in events if e.kind == "eval"]
    assert [e.speedup for e in evals] == [0.8, 1.3]
    assert all(e.attrs_dict()["slot_device"] is None for e in evals)  # no GPU was named
    results = [e for e in events if e.kind == "tool_result"]
    assert len(results) == 3 and results[2].is_error
