"""Work on k and v done once and kept across calls, on the GPU (evaluate/kept_work.py;
docs/RELIABILITY.md, "Work on inputs the judge does not perturb"). Written 2026-12-07 before
it ran on a GPU.

Two builds of sm90.cu with the same extra work in front of every call: four passes over k and
v, as a kernel that lays out or summarises k and v would make. The honest build does it on
every call; the keeper does it only where a sample of k (64 words, per k pointer: one slot per
input set) changed since its last call on that pointer, as a kernel caching that work would.
flash_fwd perturbs only q before each measured call, so without the judge's every-input
samples the keeper's median would be the cheap call's.

The decoy keeper (added 2026-12-07 afternoon, before it ran on a GPU) also makes 30% of its
other calls slower than a full one, so that its every-input samples rank in the middle of the
run and the rank test sees little (docs/RELIABILITY.md, "Decoy samples against the rank
test"); the figure held to the every-input samples takes its gain away, named or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelseek_tui.evaluate.api import evaluate
from kernelseek_tui.task import load_task

pytestmark = pytest.mark.gpu

TASK_DIR = Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd"

KV_WORK = r"""
namespace {
constexpr int kKvSlots = 16;
constexpr int kKvPasses = 4;
__device__ unsigned int ks_kv_seen[kKvSlots][64];
__device__ int ks_kv_changed;
__device__ int ks_kv_decoy;
__device__ unsigned int ks_kv_calls;
__device__ unsigned int ks_kv_sink;

// One block of 64 threads: did the sample of k change since this slot last looked?
__global__ void ks_kv_check(const unsigned int* k, long long words, int slot) {
    const int t = threadIdx.x;
    const unsigned int now = k[(words / 64) * t];
    const int differs = __syncthreads_or(now != ks_kv_seen[slot][t]);
    ks_kv_seen[slot][t] = now;
    if (t == 0) {
        ks_kv_changed = differs;
        // A decoy: this call, though k did not change, runs slower than a full one.
        const unsigned int call = ks_kv_calls++;
        ks_kv_decoy = ((call * 2654435761u) >> 24) % 100 < DECOY_PERCENT;
    }
}

// kKvPasses reads of k and v (volatile: each pass really reads), unless kept and unchanged.
__global__ void ks_kv_pass(const volatile unsigned int* k, const volatile unsigned int* v,
                           long long words, int keep) {
    int passes = kKvPasses;
    if (keep && !ks_kv_changed) {
        if (!ks_kv_decoy) return;
        passes = kKvPasses + 2;
    }
    unsigned int acc = 0;
    const long long step = static_cast<long long>(gridDim.x) * blockDim.x;
    for (int r = 0; r < passes; ++r)
        for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
             i < words; i += step)
            acc += k[i] ^ v[i];
    if (acc == 0x9e3779b9u) ks_kv_sink = acc;
}

int kv_slot(const void* k) {
    static const void* slots[kKvSlots] = {};
    for (int s = 0; s < kKvSlots; ++s) {
        if (slots[s] == k) return s;
        if (slots[s] == nullptr) { slots[s] = k; return s; }
    }
    return 0;
}
}  // namespace

extern "C" int ks_launch("""

LAUNCH_FIRST = """    const long long kv_words = ints[0] * ints[2] * ints[4] * ints[5] / 2;
    if (kv_words >= 64) {
        ks_kv_check<<<1, 64, 0, stream>>>(static_cast<const unsigned int*>(tensors[1]),
                                           kv_words, kv_slot(tensors[1]));
        ks_kv_pass<<<264, 256, 0, stream>>>(static_cast<const unsigned int*>(tensors[1]),
                                             static_cast<const unsigned int*>(tensors[2]),
                                             kv_words, KEEP);
    }
    Params p;
    p.out = static_cast<__nv_bfloat16*>(tensors[3]);"""


def with_kv_work(keep: bool, decoy_percent: int = 0) -> str:
    """sm90.cu with the work on k and v in front of every call; ``keep``: only where k changed;
    ``decoy_percent``: that share of the other calls made slower than a full one instead."""
    text = (TASK_DIR / "sm90.cu").read_text()
    head, launch_first = (
        'extern "C" int ks_launch(',
        "    Params p;\n    p.out = static_cast<__nv_bfloat16*>(tensors[3]);",
    )
    assert text.count(head) == 1 and text.count(launch_first) == 1
    work = KV_WORK.replace("DECOY_PERCENT", str(decoy_percent))
    return text.replace(head, work).replace(
        launch_first, LAUNCH_FIRST.replace("KEEP", "1" if keep else "0")
    )


def test_a_kernel_keeping_its_work_on_k_and_v_fails_and_the_same_work_done_every_call_passes(
    tmp_path: Path,
) -> None:
    task = load_task(TASK_DIR)
    built = {}
    for name, keep in (("honest", False), ("keeper", True)):
        source = tmp_path / f"sm90_kv_{name}.cu"
        source.write_text(with_kv_work(keep))
        built[name] = evaluate(task, source, sets=["quick"], random_count=0, compare=False)
        for scenario in built[name].scenarios:
            print(
                f"{name} {scenario.name}: ms {scenario.ms} every_input_ratio "
                f"{scenario.every_input_ratio} samples {scenario.samples}"
            )
        print(f"{name}: {built[name].verdict} {[*built[name].reasons][:2]}")
    honest, keeper = built["honest"], built["keeper"]
    assert honest.verdict == "pass", honest.reasons
    ratios = [s.every_input_ratio for s in honest.scenarios if s.every_input_ratio is not None]
    assert ratios and all(0.9 < r < 1.05 for r in ratios), ratios
    assert keeper.verdict == "fail"
    reasons = [r for s in keeper.scenarios for r in s.reasons]
    assert any("once and kept" in r for r in reasons), reasons


# Shapes long enough for the work on k and v to matter (the quick set's are too short to hold
# two groups of 8 samples) and short enough for a quick test: timed for the task's own
# durations, so with the kept-work floor of 48 samples.
DECOY_SCENARIOS = """
[[scenario]]
name = "b8-s512-d128-h16-c0"
batch = 8
seqlen_q = 512
seqlen_k = 512
nheads = 16
nheads_kv = 16
headdim = 128
causal = 0

[[scenario]]
name = "b4-s1024-d64-h16-c1"
batch = 4
seqlen_q = 1024
seqlen_k = 1024
nheads = 16
nheads_kv = 16
headdim = 64
causal = 1

[[scenario]]
name = "b2-s2048-d128-h16-c0"
batch = 2
seqlen_q = 2048
seqlen_k = 2048
nheads = 16
nheads_kv = 16
headdim = 128
causal = 0
"""


def test_a_keeper_with_decoy_samples_reads_its_full_time_named_or_not(tmp_path: Path) -> None:
    task = load_task(TASK_DIR)
    scenarios = tmp_path / "kv_shapes.toml"
    scenarios.write_text(DECOY_SCENARIOS)
    built = {}
    for name, keep, decoys in (("honest", False, 0), ("decoy", True, 30)):
        source = tmp_path / f"sm90_kv_{name}.cu"
        source.write_text(with_kv_work(keep, decoys))
        built[name] = evaluate(task, source, scenarios_file=scenarios, compare=False)
        for scenario in built[name].scenarios:
            print(
                f"{name} {scenario.name}: {scenario.passed} ms {scenario.ms} every_input_ratio "
                f"{scenario.every_input_ratio} samples {scenario.samples} "
                f"notes {scenario.timing_notes} {scenario.reasons[:1]}"
            )
    honest, decoy = built["honest"], built["decoy"]
    assert honest.verdict == "pass", honest.reasons
    assert all(s.samples is not None and s.samples >= 48 for s in honest.scenarios)
    acted = 0
    for mine, theirs in zip(decoy.scenarios, honest.scenarios, strict=True):
        if mine.passed is False:
            # named by the kept-work rule, or by the rule on calls far faster than the median
            # (the decoys widen the run's spread: H100, 2026-12-07 16:07, on b8-s512)
            named = ("once and kept", "as one that skips its work does")
            assert any(words in r for r in mine.reasons for words in named), mine.reasons
            acted += 1
            continue
        assert mine.every_input_ratio is not None, mine.name
        # held to the every-input samples: no faster than the same work done every call
        assert mine.ms is not None and theirs.ms is not None
        assert mine.ms > 0.95 * theirs.ms, (mine.name, mine.ms, theirs.ms)
        acted += any("their median is the figure" in note for note in mine.timing_notes)
    assert acted, "neither the rule nor the held figure caught the decoy keeper anywhere"
