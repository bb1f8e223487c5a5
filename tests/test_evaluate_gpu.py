"""The evaluator on the GPU: the starting kernel passes, and each kind of broken kernel fails
with a reason a kernel engineer can act on, while the next evaluation still works."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelseek_tui.evaluate.api import evaluate
from kernelseek_tui.task import load_task

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "kernels" / "flash_fwd"
SMALL = Path(__file__).parent / "data" / "flash_small.toml"
TIMED = Path(__file__).parent / "data" / "flash_timed.toml"
TIMED_TEN = Path(__file__).parent / "data" / "flash_timed_ten.toml"
KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture(scope="module")
def task():
    return load_task(TASK_DIR)


def _variant(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """The starting kernel with one line changed: a realistic, subtle bug."""
    source = (TASK_DIR / "baseline.cu").read_text()
    assert source.count(old) == 1, f"the baseline no longer contains {old!r}"
    path = tmp_path / f"{name}.cu"
    path.write_text(source.replace(old, new))
    return path


def _small(task, source: Path, **kwargs):
    return evaluate(task, source, scenarios_file=SMALL, timed=False, compare=False, **kwargs)


def test_baseline_passes_all_182(task) -> None:
    result = evaluate(task, task.source, sets=["correctness"], random_count=0, compare=False)
    assert result.verdict == "pass", result.reasons
    assert result.summary.passed == result.summary.total == 182


def test_baseline_passes_fresh_random_scenarios(task) -> None:
    result = evaluate(task, task.source, sets=[], random_count=6, compare=False)
    assert result.verdict == "pass", result.reasons
    assert result.summary.total == 6


VARIANTS = {
    "half_rows": (
        "dim3 grid((p.seqlen_q + BM - 1) / BM, p.nheads, batch);",
        "dim3 grid(((p.seqlen_q + BM - 1) / BM + 1) / 2, p.nheads, batch);",
        ["NaN"],
    ),
    "top_left_causal": (
        "const int causal_offset = p.seqlen_k - p.seqlen_q;",
        "const int causal_offset = 0;",
        ["max error", "elements"],
    ),
    "ignores_scale": (
        "p.scale_log2 = (float)(floats[0] * (double)kLog2e);",
        "p.scale_log2 = (float)(kLog2e / sqrt((double)headdim));",
        ["max error", "elements"],
    ),
    "writes_past_lse": (
        "p.lse[((int64_t)batch * p.nheads + head) * p.seqlen_q + qi] = lse;",
        "p.lse[((int64_t)batch * p.nheads + head) * p.seqlen_q + qi + 1] = lse;",
        ["guard band"],
    ),
    "modifies_input": (
        "p.lse[((int64_t)batch * p.nheads + head) * p.seqlen_q + qi] = lse;",
        "p.lse[((int64_t)batch * p.nheads + head) * p.seqlen_q + qi] = lse;"
        " const_cast<__nv_bfloat16*>(p.k)[0] = __float2bfloat16(7.f);",
        ["modified"],
    ),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_subtly_wrong_kernels_fail_with_reason(task, tmp_path: Path, name: str) -> None:
    old, new, expected = VARIANTS[name]
    result = _small(task, _variant(tmp_path, name, old, new))
    assert result.verdict == "fail"
    text = " ".join(result.reasons)
    assert any(word in text for word in expected), text


BROKEN = {
    "write_nothing.cu": ["never written"],
    "zeros.cu": ["max error", "elements"],
    "nan_out.cu": ["NaN"],
    "illegal_address.cu": ["CUDA error", "illegal"],
    "segfault.cu": ["SIGSEGV"],
    "hang.cu": ["no progress"],
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_kernels_fail_with_reason_and_the_next_evaluation_works(task, name: str) -> None:
    result = _small(task, KERNELS / name, stall_timeout_s=20)
    assert result.verdict == "fail", result.reasons
    text = " ".join(result.reasons)
    assert any(word in text for word in BROKEN[name]), text
    after = _small(task, task.source)
    assert after.verdict == "pass", after.reasons


def test_inputs_rewritten_during_the_timed_calls_are_caught(task, tmp_path: Path) -> None:
    # After the checked first call, every call zeroes v before computing: out is then honestly
    # zero for the rewritten inputs, and a judge that built its reference from the buffers
    # after timing would pass it. The inputs must match what the measured calls started from.
    source = _variant(
        tmp_path,
        "zeroes_v_when_timed",
        "    if (batch <= 0 || p.seqlen_q <= 0 || p.nheads <= 0) return 0;  // nothing to compute",
        "    if (batch <= 0 || p.seqlen_q <= 0 || p.nheads <= 0) return 0;  // nothing to compute\n"
        "    static int calls = 0;\n"
        "    if (++calls > 1)\n"
        "        cudaMemsetAsync(tensors[2], 0, (size_t)batch * p.seqlen_k * p.nheads_kv *"
        " (size_t)ints[5] * 2, stream);",
    )
    result = evaluate(task, source, scenarios_file=TIMED, compare=False)
    assert result.verdict == "fail"
    text = " ".join(result.reasons)
    assert "modified inputs" in text, text


NOTHING_TO_COMPUTE = (
    "    if (batch <= 0 || p.seqlen_q <= 0 || p.nheads <= 0) return 0;  // nothing to compute"
)


def test_a_kernel_that_works_on_one_call_in_four_is_caught_at_a_measured_call(
    task, tmp_path: Path
) -> None:
    # It computes on one call in four and on any call that finds its stream idle (the judge
    # synchronises the device before each scenario's checked first call, so that call is
    # right); every other call returns at once, leaving the outputs of an earlier call. Before
    # the judged measured call, the skipped calls' outputs were right for inputs that stayed the
    # same through the measured calls. Now the inputs change before every measured call and one
    # measured call per scenario, drawn at random, is judged: it is a skipped one with
    # probability about 3/4, so all ten scenarios miss with probability about 1e-6.
    source = _variant(
        tmp_path,
        "works_one_call_in_four",
        NOTHING_TO_COMPUTE,
        NOTHING_TO_COMPUTE + "\n"
        "    static unsigned long long calls = 0;\n"
        "    if (++calls % 4 != 0) {\n"
        "        const bool idle = cudaStreamQuery(stream) == cudaSuccess;\n"
        "        (void)cudaGetLastError();  // a busy stream's answer is no error of ours\n"
        "        if (!idle) return 0;\n"
        "    }",
    )
    result = evaluate(task, source, scenarios_file=TIMED_TEN, compare=False)
    assert result.verdict == "fail", result.reasons
    reasons = [reason for scenario in result.scenarios for reason in scenario.reasons]
    named = [r for r in reasons if r.startswith("measured call ")]
    assert named, reasons
    assert re.match(r"measured call \d+ of \d+ \(input set \d+\): (out|lse): ", named[0]), named


def test_the_starting_kernel_passes_with_judged_measured_calls_and_peers(task) -> None:
    # The judged measured call, the perturbations and their replay on an honest kernel, in both
    # timed runs: every scenario here is short enough (under 5 ms) to be timed again after the
    # peers, where set 0's outputs are now judged against a fresh reference.
    result = evaluate(task, task.source, scenarios_file=TIMED_TEN)
    assert result.verdict == "pass", result.reasons
    assert all(s.passed and s.ms for s in result.scenarios), [s.reasons for s in result.scenarios]


def test_work_on_another_stream_is_caught(task, tmp_path: Path) -> None:
    source = _variant(
        tmp_path,
        "wrong_stream",
        "kernel<<<grid, kThreads, T::kSmemBytes, stream>>>(p);",
        "kernel<<<grid, kThreads, T::kSmemBytes, 0>>>(p);",
    )
    result = evaluate(task, source, scenarios_file=TIMED, compare=False)
    assert result.verdict == "fail"
    text = " ".join(result.reasons)
    assert "outside the given stream" in text or "NaN" in text, text


def test_work_done_and_waited_for_inside_ks_launch_is_caught_by_the_gate(
    task, tmp_path: Path
) -> None:
    # Found by a review (2026-12-07): the kernel run on the legacy stream and waited for inside
    # ks_launch, so its outputs are right before the sample's start event and nothing of it is
    # timed. The judge's gate now holds every SM while ks_launch runs (evaluate/gate.py): the
    # wait can only end by the gate letting go at its limit, which fails the scenario.
    source = _variant(
        tmp_path,
        "work_before_the_sample",
        "kernel<<<grid, kThreads, T::kSmemBytes, stream>>>(p);",
        "kernel<<<grid, kThreads, T::kSmemBytes, cudaStreamLegacy>>>(p); "
        "cudaStreamSynchronize(cudaStreamLegacy);",
    )
    result = evaluate(task, source, scenarios_file=TIMED, compare=False)
    assert result.verdict == "fail", result.reasons
    assert "kept the judge's gate waiting" in " ".join(result.reasons), result.reasons


def test_timed_quick_run_measures_candidate_and_peers(task) -> None:
    result = evaluate(task, task.source, scenarios_file=TIMED)
    assert result.verdict == "pass", result.reasons
    (scenario,) = result.scenarios
    assert scenario.ms and scenario.ms > 0 and scenario.tflops and scenario.tflops > 0
    assert scenario.speedup == pytest.approx(1.0)  # the candidate is the starting kernel
    for name in ("fa3", "cudnn"):
        peer = scenario.peers[name]
        assert (peer.ms is not None) != (peer.absent is not None), peer
        # A peer measured here is also judged by the task's own rules: FA3 must meet them.
        assert not peer.notes, peer.notes


def test_the_peers_warm_up_calls_each_peer_at_every_head_dim(task) -> None:
    from kernelseek_tui.evaluate.comparators import load_module

    module = load_module(task.comparator_module, "flash_fwd_comparators_warm_up")
    ran = module.warm_up()
    assert ran == [
        f"{n} d{d} c{c}" for d in (64, 128, 256) for c in (0, 1) for n in ("fa3", "cudnn")
    ]


def test_the_quick_set_times_for_its_own_shorter_runs(task, tmp_path: Path) -> None:
    # bench-s2048-d64-c0 takes the starting kernel about 10 ms a call (H200, 2026-12-02): the
    # quick set's 20 ms runs give it the minimum of 3 samples, the task's 100 ms about ten.
    name = "bench-s2048-d64-c0"
    quick = evaluate(task, task.source, sets=["quick"], random_count=0, compare=False)
    (short,) = [s for s in quick.scenarios if s.name == name]
    alone = tmp_path / "one.toml"
    scenario = next(s for s in task.scenarios("bench") if s.name == name)
    fields = "\n".join(f"{k} = {v}" for k, v in scenario.fields.items())
    alone.write_text(f'[[scenario]]\nname = "{name}"\n{fields}\n')
    full = evaluate(task, task.source, scenarios_file=alone, compare=False)
    (long,) = full.scenarios
    assert short.passed and long.passed, (short.reasons, long.reasons)
    assert short.samples is not None and long.samples is not None
    assert short.samples < long.samples, (short.samples, long.samples)


def test_a_knob_changes_the_build_and_still_passes(task) -> None:
    result = _small(task, task.source, knobs={"BLOCK_N": 32})
    assert result.verdict == "pass", result.reasons
