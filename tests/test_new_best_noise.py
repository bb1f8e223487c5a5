"""A new best must beat the timing noise measured in the runs, not a fixed 1%."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelseek_tui.evaluate.api import _finish
from kernelseek_tui.evaluate.noise import combined_noise, geomean_noise, is_new_best
from kernelseek_tui.evaluate.result import EvalResult, ScenarioResult
from kernelseek_tui.session.state import SessionState
from kernelseek_tui.trace.schema import Event
from tests.test_agent_tuner import tune
from tests.test_session_support import KnobEvaluator, make_result, make_task_repo, objective_eval


def test_the_geomean_noise_is_the_root_sum_of_squares_over_the_count() -> None:
    assert geomean_noise([]) is None and geomean_noise([None]) is None
    assert geomean_noise([0.04]) == pytest.approx(0.04)
    # Four scenarios each 4% noisy: their geomean is 2% noisy.
    assert geomean_noise([0.04] * 4) == pytest.approx(0.02)
    assert geomean_noise([0.03, 0.04, None]) == pytest.approx(0.025)
    assert combined_noise(0.03, 0.04) == pytest.approx(0.05)
    assert combined_noise(None, 0.04) == pytest.approx(0.04)
    assert combined_noise(None, None) is None


def test_an_evaluation_reports_each_scenarios_spread_and_the_geomeans_noise() -> None:
    result = EvalResult(eval_id="e", verdict="error")
    for i, spread in enumerate([0.06, 0.08]):
        result.scenarios.append(
            ScenarioResult(
                name=f"s{i}", set="bench", fields={}, passed=True, ms=1.0, speedup=2.0,
                spread=spread,
            )
        )  # fmt: skip
    _finish(result, 0.0)
    assert result.verdict == "pass"
    assert result.summary.noise == pytest.approx(0.05)
    again = EvalResult.from_json(result.to_json())
    assert again.summary.noise == pytest.approx(0.05) and again.scenarios[0].spread == 0.06


def test_a_small_gain_outside_a_small_noise_is_a_new_best() -> None:
    # 0.6% faster, measured with 0.2% noise: progress, where the fixed 1% said no.
    assert not is_new_best(1.206, 1.2, 0.01)
    assert is_new_best(1.206, 1.2, 0.01, noise=0.002, previous_noise=0.002)


def test_a_large_gain_inside_a_large_noise_is_no_new_best() -> None:
    # 3% faster, but each run is 5% noisy: the fixed 1% would have called it progress.
    assert is_new_best(1.236, 1.2, 0.01)
    assert not is_new_best(1.236, 1.2, 0.01, noise=0.05)
    assert not is_new_best(1.236, 1.2, 0.01, noise=0.001, previous_noise=0.05)


def test_the_starting_kernel_is_the_floor_and_the_margin_the_fallback() -> None:
    assert not is_new_best(0.99, None, 0.0, noise=0.0)
    assert is_new_best(1.002, None, 0.01, noise=0.001)
    assert not is_new_best(1.002, None, 0.01)  # no noise measured: the margin
    assert not is_new_best(None, None, 0.01, noise=0.001)


def _eval_event(seq: int, speedup: float, noise: float | None) -> Event:
    return objective_eval(seq, speedup, summary={"noise": noise})


def test_the_session_remembers_the_noise_of_its_best() -> None:
    state = SessionState.from_events(
        [_eval_event(1, 1.1, 0.03), _eval_event(2, 1.05, 0.001), _eval_event(3, 1.3, 0.02)]
    )
    assert state.best_speedup == 1.3 and state.best_noise == 0.02
    state = SessionState.from_events([_eval_event(1, 1.1, 0.03), _eval_event(2, 1.0, 0.001)])
    assert state.best_speedup == 1.1 and state.best_noise == 0.03


def test_the_engine_marks_new_bests_by_the_measured_noise(tmp_path: Path) -> None:
    class Measured(KnobEvaluator):
        # The defaults: 3% faster but 5% noisy; one real step after, measured at 1% noise.
        def __call__(self, source, sets, *, knobs=None):
            result = super().__call__(source, sets, knobs=knobs)
            point = self.calls[-1]
            speed, noise = {(64, 64): (1.03, 0.05), (128, 64): (1.2, 0.01)}.get(
                (point["BLOCK_M"], point["BLOCK_N"]), (0.5, 0.01)
            )
            if not result.passed:
                return result
            measured = make_result(speed)
            measured.summary.noise = noise
            return measured

    engine = tune(make_task_repo(tmp_path / "user"), tmp_path / "traces", Measured())
    candidates = engine.history.candidates()
    assert candidates[-1].speedup == 1.03 and candidates[-1].new_best is False
    assert [c.speedup for c in candidates if c.new_best] == [1.2]
