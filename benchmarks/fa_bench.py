"""FlashAttention forward, stand-alone: candidates against FA3 and cuDNN with FA3's own method.

Run by hand on the GPU box (not in CI). Builds each candidate with the harness's build (same
checks and flags as the judge), then times every candidate, FA3 and cuDNN on the task's 36 bench
shapes with `triton.testing.do_bench` (median; the L2 is flushed before every call), interleaved
shape by shape in one process, the order rotated one place per shape so no entry is always timed
first (`--fixed-order` keeps it). Prints one row per shape and the geomeans; `--json` writes them.
The same source given twice is timed twice (`v14`, `v14#2`): an A/A run, whose spread is the
noise any two versions' comparison in that run carries.

`--pre-call-flips` adds, per candidate, the same timing loop written out here (`NAME@loop`: the L2
flushed by do_bench's 256 MB memset, then the call between two events; it should read as
do_bench does), that loop with the judge's sign-flip kernel before each flush, over q, k and v
(`NAME@flip`) or q alone (`NAME@flipq`), and with the judge's own flush size (twice the L2, at
least 64 MiB) without a flip (`NAME@jflush`), after a flip of q (`NAME@judgeq`), and after the
judge's copy of the call's whole set aside and a flip of q (`NAME@judgeqc`, the judge's
conditions for flash_fwd since 2026-12-07), or of its outputs alone (`NAME@judgeqo`): what
the judge's per-call work does to a kernel's measured speed. It also prints, once, the GPU
time of each piece of that work (each flip, by either flip kernel, each flush, a copy of q).
`KERNELSEEK_FLIP=vector` makes the timed columns flip with the judge's 16-byte kernel.

`--in-turn` adds, per shape, every entry (candidates and peers) timed by the judge's own
`time_interleaved` (`NAME@turn`): one sample of each per round, the L2 flushed before each, the
stream held first where the host enqueues more slowly than the GPU runs (so a peer's Python-side
launch never enters its time), and `CAND@turn/fa3`, the median over rounds of FA3's sample over
the candidate's: the method the judge times candidate and peers with, in this file's process.

`--aa-peers` times FA3 and cuDNN twice each by do_bench in the same rotation (`fa3#2`,
`cudnn#2`), and a source given twice does the same for a candidate: the summary counts the shapes
where the two do_bench medians of one kernel agree within 3%, the best any method can do against
"a do_bench median" on this card in this run.

`--dobench-turn R` adds, per shape, every entry timed by do_bench itself in R rounds in turn (A B
C, C B A, ...: one do_bench window of each per round; `NAME@dbturn`, the median of its R
medians; `CAND@dbturn/fa3`, the median per-round ratio): interleaved, as the judge's rule asks,
at do_bench's window rather than one sample, so each kernel settles at its own clock first.

`--pause-s S` leaves the GPU idle S seconds before each shape after the first: fa_bench otherwise
loads the card without a break, and on an H100 at its 700 W cap that alone moves a heavy
shape's figure by up to 10% (docs/BENCHMARKS.md, "The judge's clock against fa_bench's").

As a sanity check (not the judge: `kernelseek eval` is), each row also shows the largest
|out - FA3's out| of the first candidate on the same inputs.

    python3 benchmarks/fa_bench.py --source kernels/flash_fwd/sm90.cu [--source other.cu]
        [--task kernels/flash_fwd] [--json out.json] [--only d128,s8192,c0] [--rep 100]
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from kernelseek_tui.evaluate.build import build
from kernelseek_tui.evaluate.gpu_sharing import gpu_line
from kernelseek_tui.task import Task, load_task


def bench_shapes(task: Task, only: str | None) -> list[dict[str, int]]:
    """The task's own bench set (FA3's shapes); ``only`` keeps the shapes that carry every tag
    of a comma-separated list: d<headdim>, s<seqlen>, c<causal> (e.g. ``d128`` or
    ``d128,s8192,c0``: one shape, as a profiler run wants)."""
    shapes = [dict(s.fields) for s in task.scenarios("bench")]
    wanted = set(only.split(",")) if only else set()

    def tags(shape: dict[str, int]) -> set[str]:
        return {f"d{shape['headdim']}", f"s{shape['seqlen_q']}", f"c{shape['causal']}"}

    return [s for s in shapes if wanted <= tags(s)]


def candidate_names(sources: list[Path]) -> list[str]:
    """A name per source: its file stem, with #2, #3 ... on repeats, so the same file can be
    timed twice in one run (an A/A comparison: the spread it shows is the run's noise)."""
    names: list[str] = []
    for source in sources:
        name, count = source.stem, 1
        while name in names:
            count += 1
            name = f"{source.stem}#{count}"
        names.append(name)
    return names


def turn_order(entries: list[str], shape_index: int, rotate: bool) -> list[str]:
    """The order in which one shape times its entries (candidates, then peers, as listed).
    Rotated by one place per shape, so over the bench set every entry is timed in every
    position equally often: measured on the H200 (2026-12-03 17:29), the same code timed second
    came out 1.3% faster on median over 24 shapes, a bias one fixed order puts into every
    comparison."""
    if not rotate or not entries:
        return list(entries)
    shift = shape_index % len(entries)
    return entries[shift:] + entries[:shift]


def load_flops(task_dir: Path) -> Any:
    spec = importlib.util.spec_from_file_location("ks_reference", task_dir / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.flops


class Candidate:
    """One built source, called through the judge's own ks_launch binding on torch's stream."""

    def __init__(self, name: str, library: Path) -> None:
        from kernelseek_tui.evaluate.worker import Kernel

        self.name = name
        self._kernel = Kernel(str(library))

    def bind(self, tensors: list[Any], shape: dict[str, int], scale: float, stream: int):
        order = ("batch", "seqlen_q", "seqlen_k", "nheads", "nheads_kv", "headdim", "causal")
        launch = self._kernel.bind(
            [t.data_ptr() for t in tensors], [shape[k] for k in order], [scale], stream
        )

        def call() -> None:
            code = launch()
            if code != 0:
                raise RuntimeError(f"{self.name}: ks_launch returned {code}")

        return call


def peers() -> dict[str, Any]:
    """FA3 and cuDNN callables taking (q, k, v, scale, causal), where importable."""
    import torch

    found: dict[str, Any] = {}
    try:
        import fa3_fwd_config

        sys.modules.setdefault("flash_attn_config", fa3_fwd_config)
        from fa3_fwd_interface import flash_attn_func

        def fa3(q, k, v, scale, causal):
            result = flash_attn_func(q, k, v, softmax_scale=scale, causal=causal)
            return result[0] if isinstance(result, tuple) else result

        found["fa3"] = fa3
    except Exception as error:  # report, never guess a number
        print(f"FA3 absent: {type(error).__name__}: {error}")
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.nn.functional import scaled_dot_product_attention

        def cudnn(q, k, v, scale, causal):
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                out = scaled_dot_product_attention(
                    q.transpose(1, 2),
                    k.transpose(1, 2),
                    v.transpose(1, 2),
                    is_causal=causal,
                    scale=scale,
                )
            return out.transpose(1, 2)

        found["cudnn"] = cudnn
    except Exception as error:
        print(f"cuDNN absent: {type(error).__name__}: {error}")
    del torch
    return found


def graph_tflops(fn: Any, call_args: tuple, work: float, rep: int) -> float | None:
    """TFLOP/s of ``fn`` replayed from a CUDA graph: its GPU time without the host's launch
    time (nor an L2 flush), or None where it cannot be captured."""
    from triton.testing import do_bench_cudagraph

    try:
        ms = do_bench_cudagraph(functools.partial(fn, *call_args), rep=rep, return_mode="median")
    except Exception as error:  # report, never guess a number
        print(f"cuda graph of {fn.__name__} failed: {type(error).__name__}: {error}")
        return None
    return work / (ms * 1e-3) / 1e12


DO_BENCH_FLUSH = 256_000_000  # triton's do_bench clears a 256 MB buffer before each call
# Each mode: the inputs flipped before each flush, and the flush ("judge": the judge's size).
PRE_CALL_FLIPS: dict[str, tuple[tuple[str, ...], str]] = {
    "loop": ((), "do_bench"),
    "flip": (("q", "k", "v"), "do_bench"),
    "flipq": (("q",), "do_bench"),
    "jflush": ((), "judge"),
    "judgeq": (("q",), "judge"),
    "judgeqc": (("q",), "judge"),
    "judgeqo": (("q",), "judge"),
}
# Modes that also copy tensors of the call's set aside before each flip, as the judge does after
# every sample since 2026-12-07 (`87ac740`: the same copy after every sample, only the judged
# one's kept): the whole set (q, k, v, out, lse), or the outputs alone (out, lse: the copy a
# judge needs where the inputs are checked by replay instead).
COPIES_OUTPUT = {"judgeqc": ("q", "k", "v", "out", "lse"), "judgeqo": ("out", "lse")}


# The judge's timing code with its own flush size (None) or do_bench's, in MB.
JUDGE_METHODS: dict[str, float | None] = {"judge": None, "judge256": DO_BENCH_FLUSH / 1e6}


def time_by_judge(call: Any, timing: Any, flush_mb: float | None) -> float:
    """Median ms of ``call`` timed by the judge's own code (time_calls with the task's
    [timing], one input set, no hooks: so no flips), on torch's current stream."""
    import dataclasses

    import cupy as cp
    import torch

    from kernelseek_tui.evaluate.timing import time_calls

    stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    timing = dataclasses.replace(timing, flush_mb=flush_mb)
    with stream:
        stats = time_calls(cp, stream, lambda _set: call(), 1, timing)
    return stats.median_ms


def time_in_turn(calls: list[Any], timing: Any) -> tuple[list[float], Any]:
    """Median ms of each of ``calls`` timed in turn by the judge's own time_interleaved (the
    task's [timing], one input set, no hooks), on torch's current stream; and the timings."""
    import cupy as cp
    import torch

    from kernelseek_tui.evaluate.timing import time_interleaved

    stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    with stream:
        timed = time_interleaved(cp, stream, [lambda _set, c=c: c() for c in calls], 1, timing)
    return [stats.median_ms for stats in timed.stats], timed


def judge_flush_bytes() -> int:
    """The judge's flush size on this GPU (kernelseek_tui.evaluate.timing.l2_flush_bytes)."""
    import torch

    from kernelseek_tui.evaluate.timing import l2_flush_bytes

    return l2_flush_bytes(int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)))


def flush_bytes_of(kind: str) -> int:
    return DO_BENCH_FLUSH if kind == "do_bench" else judge_flush_bytes()


def gpu_us(work: Any, reps: int = 20) -> float:
    """Median GPU microseconds of ``work()`` alone, between two events on torch's stream."""
    import torch

    times = []
    for _ in range(reps):
        first, last = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        first.record()
        work()
        last.record()
        torch.cuda.synchronize()
        times.append(first.elapsed_time(last) * 1000.0)
    return sorted(times)[len(times) // 2]


def print_pre_call_costs(tensors: dict[str, Any]) -> None:
    """The GPU time of each piece of pre-call work, on this shape's tensors."""
    import torch

    costs = []
    # Both flip kernels, whichever the timed columns use (KERNELSEEK_FLIP).
    for kernel in ("scalar", "vector"):
        for names in (("q", "k", "v"), ("q",)):
            flip = sign_flipper(tensors, names, kernel)
            costs.append(f"flip {'+'.join(names)} ({kernel}) {gpu_us(flip):.0f} us")
    copy_source = torch.empty_like(tensors["q"])
    costs.append(f"copy of q {gpu_us(lambda: copy_source.copy_(tensors['q'])):.0f} us")
    for kind in ("do_bench", "judge"):
        size = flush_bytes_of(kind)
        cache = torch.empty(size // 4, dtype=torch.int32, device="cuda")
        costs.append(f"{kind} flush {size / 1e6:.0f} MB {gpu_us(cache.zero_):.0f} us")
    print("# pre-call work, GPU time: " + "; ".join(costs))


def time_with_pre_call(
    call: Any, pre: Any, warmup_ms: float, rep_ms: float, flush_bytes: int = DO_BENCH_FLUSH
) -> float:
    """Median ms of ``call`` timed as do_bench does (the L2 flushed by a memset of 256 MB, then
    the call between two events), with ``pre()`` enqueued before each flush when given."""
    import torch

    cache = torch.empty(flush_bytes // 4, dtype=torch.int32, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        cache.zero_()
        call()
    end.record()
    torch.cuda.synchronize()
    estimate = max(start.elapsed_time(end) / 5, 1e-3)
    for _ in range(max(1, int(warmup_ms / estimate))):
        call()
    events = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(max(1, int(rep_ms / estimate)))
    ]
    for first, last in events:
        if pre is not None:
            pre()
        cache.zero_()
        first.record()
        call()
        last.record()
    torch.cuda.synchronize()
    times = sorted(first.elapsed_time(last) for first, last in events)
    return times[len(times) // 2]


def set_copier(tensors: tuple[Any, ...], then: Any) -> Any:
    """``then`` (if any) after a copy of every tensor of the call's set (inputs and outputs)
    into buffers nothing reads: the judge's copy after every sample, the same work whether or
    not the sample is the judged one (evaluate/worker.py, ``copy_aside``)."""
    import torch

    decoys = [torch.empty_like(tensor) for tensor in tensors]

    def pre() -> None:
        for decoy, tensor in zip(decoys, tensors, strict=True):
            decoy.copy_(tensor)
        if then is not None:
            then()

    return pre


def sign_flipper(tensors: dict[str, Any], names: tuple[str, ...], kernel: str | None = None) -> Any:
    """The judge's own sign-flip kernel over ``names`` of ``tensors`` (bf16), on torch's stream,
    a fresh key per call; None for no tensors. ``kernel``: "scalar" or "vector" (default: as
    ``KERNELSEEK_FLIP`` says)."""
    if not names:
        return None
    import cupy as cp
    import torch

    from kernelseek_tui.evaluate.perturb import SignFlipper

    bodies = [(cp.asarray(tensors[n].view(torch.int16)).reshape(-1), "bfloat16") for n in names]
    flipper = SignFlipper(cp, bodies, kernel)
    stream = cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    keys = iter(range(1, 1 << 62))

    def pre() -> None:
        with stream:
            flipper(next(keys) * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF)

    return pre


def time_dobench_in_turn(
    calls: list[Any], rounds: int, warmup_ms: int, rep_ms: int
) -> list[list[float]]:
    """Each of ``calls`` timed by do_bench once per round, in turn (forward on even rounds,
    reversed on odd ones, as the judge orders its rounds): per call, its ``rounds`` medians."""
    from triton.testing import do_bench

    from kernelseek_tui.evaluate.timing import round_order

    medians: list[list[float]] = [[] for _ in calls]
    for round_index in range(rounds):
        for k in round_order(len(calls), round_index):
            ms = do_bench(calls[k], warmup=warmup_ms, rep=rep_ms, return_mode="median")
            medians[k].append(ms)
    return medians


def agreement(rows: list[dict[str, Any]], a: str, b: str, tolerance: float = 0.03) -> str:
    """How many shapes have columns ``a`` and ``b`` within ``tolerance`` of each other, and the
    largest gap, as one line."""
    ratios = [r[a] / r[b] for r in rows if r.get(a) and r.get(b)]
    if not ratios:
        return f"{a} against {b}: no shapes"
    within = sum(abs(x - 1) <= tolerance for x in ratios)
    worst = max(ratios, key=lambda x: abs(x - 1))
    return (
        f"{a} against {b}: {within}/{len(ratios)} shapes within {tolerance:.0%}, "
        f"worst {worst:.3f}, geomean {geomean(ratios):.3f}"
    )


def entry_call(
    name: str,
    *,
    candidates: dict[str, Candidate],
    peers: dict[str, Any],
    tensors: tuple[Any, ...],
    shape: dict[str, int],
    scale: float,
    stream: int,
) -> Any:
    """The entry ``name`` (a candidate, or a peer) as a callable on ``tensors`` (q, k, v, out,
    lse) of ``shape``."""
    if name in candidates:
        return candidates[name].bind(list(tensors), shape, scale, stream)
    q, k, v = tensors[:3]
    return functools.partial(peers[name], q, k, v, scale, bool(shape["causal"]))


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--task", type=Path, default=Path("kernels/flash_fwd"))
    parser.add_argument("--source", type=Path, action="append", required=True)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", help="shape tags, e.g. d128 or d128,s8192,c0")
    parser.add_argument("--warmup", type=int, default=25, help="do_bench warm-up, ms")
    parser.add_argument("--rep", type=int, default=100, help="do_bench repetitions, ms")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument(
        "--fixed-order",
        action="store_true",
        help="time every shape's entries in the order given (default: rotated shape by shape)",
    )
    parser.add_argument(
        "--graph-peers",
        action="store_true",
        help="also time each peer with do_bench_cudagraph (no host launch time, no L2 flush)",
    )
    parser.add_argument(
        "--pre-call-flips",
        action="store_true",
        help="also time each candidate in this file's loop: plain, and after the judge's "
        "sign flips of q, k, v or of q alone before each flush (NAME@loop, @flip, @flipq), at "
        "the judge's flush size (@jflush, @judgeq) and with the judge's copy of the call's set "
        "after each call too (@judgeqc; of its outputs alone, @judgeqo)",
    )
    parser.add_argument(
        "--judge-method",
        action="store_true",
        help="also time every entry, candidates and peers, with the judge's own timing code "
        "(kernelseek_tui.evaluate.timing.time_calls, the task's [timing], no flips) at the "
        "judge's flush size and at do_bench's (NAME@judge, NAME@judge256)",
    )
    parser.add_argument(
        "--in-turn",
        action="store_true",
        help="also time every entry of a shape in turn with the judge's own time_interleaved "
        "(NAME@turn) and give each candidate's median per-round ratio to FA3 (CAND@turn/fa3)",
    )
    parser.add_argument(
        "--pause-s",
        type=float,
        default=0.0,
        help="leave the GPU idle this many seconds before each shape after the first",
    )
    parser.add_argument(
        "--aa-peers",
        action="store_true",
        help="time FA3 and cuDNN twice each by do_bench (fa3#2, cudnn#2): their A/A agreement",
    )
    parser.add_argument(
        "--dobench-turn",
        type=int,
        default=0,
        metavar="ROUNDS",
        help="also time every entry by do_bench in ROUNDS rounds in turn (NAME@dbturn) and give "
        "each candidate's median per-round ratio to FA3 (CAND@dbturn/fa3)",
    )
    args = parser.parse_args()

    import torch
    from triton.testing import do_bench

    task = load_task(args.task)
    flops = load_flops(args.task)
    candidates = []
    for source, name in zip(args.source, candidate_names(args.source), strict=True):
        built = build(source.read_text(), rule=task.dependency_rule, extra_flags=task.nvcc_flags)
        if not built.ok or built.library is None:
            print(f"{source}: build failed: {'; '.join(built.reasons)}")
            return 1
        candidates.append(Candidate(name, built.library))
    others = {} if args.no_peers else peers()
    twins = [f"{n}#2" for n in others] if args.aa_peers else []
    if args.dobench_turn and args.dobench_turn < 2:
        parser.error("--dobench-turn needs 2 rounds or more")
    names = [c.name for c in candidates] + list(others) + twins
    if args.pre_call_flips:
        names += [f"{c.name}@{mode}" for c in candidates for mode in PRE_CALL_FLIPS]
    entries = [c.name for c in candidates] + list(others)
    if args.judge_method:
        names += [f"{n}@{mode}" for n in entries for mode in JUDGE_METHODS]
    if args.in_turn:
        names += [f"{n}@turn" for n in entries]
    if args.dobench_turn:
        names += [f"{n}@dbturn" for n in entries]
    gpu = gpu_line("name,driver_version,clocks.sm")
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M:%S')} on {gpu} ({platform.node()}); "
        f"torch {torch.__version__}; do_bench median, L2 flushed per call, "
        f"warmup {args.warmup} ms, rep {args.rep} ms; "
        + ("entries in the order given" if args.fixed_order else "order rotated shape by shape")
        + (f"; the GPU idle {args.pause_s:g} s before each shape" if args.pause_s else "")
    )

    rows = []
    header = ["d", "causal", "seqlen"] + [f"{n} TF/s" for n in names]
    if others.get("fa3") is not None:
        header += [f"{c.name}/fa3" for c in candidates]
        header += [f"{c.name}@turn/fa3" for c in candidates if args.in_turn]
        header += [f"{c.name}@dbturn/fa3" for c in candidates if args.dobench_turn]
        header += ["max|out-fa3|"]
    print(" | ".join(header))
    stream = torch.cuda.current_stream().cuda_stream
    by_name = {c.name: c for c in candidates}
    for index, shape in enumerate(bench_shapes(task, args.only)):
        if args.pause_s and index:
            # The card idle between shapes, as the judge's checks and references leave it
            # between timed runs: what the seconds before a timing do to its figures.
            torch.cuda.synchronize()
            time.sleep(args.pause_s)
        torch.manual_seed(0)
        b, s, h, d = shape["batch"], shape["seqlen_q"], shape["nheads"], shape["headdim"]
        q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        if args.pre_call_flips and index == 0:
            print_pre_call_costs({"q": q, "k": k, "v": v})  # every bench shape's inputs: 64 MiB
        out = torch.empty_like(q)
        lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
        scale = 1.0 / math.sqrt(d)
        causal = bool(shape["causal"])
        work = flops(shape)
        row: dict[str, Any] = dict(shape)
        call_of = functools.partial(
            entry_call,
            candidates=by_name,
            peers=others,
            tensors=(q, k, v, out, lse),
            shape=shape,
            scale=scale,
            stream=stream,
        )
        if args.in_turn:
            calls = [call_of(n) for n in entries]
            medians, in_turn = time_in_turn(calls, task.timing)
            for n, ms in zip(entries, medians, strict=True):
                row[f"{n}@turn"] = work / (ms * 1e-3) / 1e12
            if "fa3" in others:
                fa3_at = entries.index("fa3")
                for c in candidates:
                    per_round = in_turn.ratios(fa3_at, entries.index(c.name))
                    row[f"{c.name}@turn/fa3"] = statistics.median(per_round)
        if args.dobench_turn:
            calls = [call_of(n) for n in entries]
            windows = time_dobench_in_turn(calls, args.dobench_turn, args.warmup, args.rep)
            for n, medians in zip(entries, windows, strict=True):
                row[f"{n}@dbturn"] = work / (statistics.median(medians) * 1e-3) / 1e12
            if "fa3" in others:
                fa3_windows = windows[entries.index("fa3")]
                for c in candidates:
                    mine = windows[entries.index(c.name)]
                    per_round = [f / m for f, m in zip(fa3_windows, mine, strict=True)]
                    row[f"{c.name}@dbturn/fa3"] = statistics.median(per_round)
        for name in turn_order(names, index, rotate=not args.fixed_order):
            if name.endswith(("@turn", "@dbturn")):
                continue  # timed above, all together
            if "@" in name and name.split("@")[1] in JUDGE_METHODS:
                base, mode = name.split("@")
                ms = time_by_judge(call_of(base), task.timing, JUDGE_METHODS[mode])
                row[name] = work / (ms * 1e-3) / 1e12
                continue
            if "@" in name:
                base, mode = name.split("@")
                call = by_name[base].bind([q, k, v, out, lse], shape, scale, stream)
                flipped, flush = PRE_CALL_FLIPS[mode]
                pre = sign_flipper({"q": q, "k": k, "v": v}, flipped)
                if mode in COPIES_OUTPUT:
                    named = {"q": q, "k": k, "v": v, "out": out, "lse": lse}
                    pre = set_copier(tuple(named[n] for n in COPIES_OUTPUT[mode]), pre)
                ms = time_with_pre_call(call, pre, args.warmup, args.rep, flush_bytes_of(flush))
                row[name] = work / (ms * 1e-3) / 1e12
                continue
            if name in by_name:
                call = by_name[name].bind([q, k, v, out, lse], shape, scale, stream)
                ms = do_bench(call, warmup=args.warmup, rep=args.rep, return_mode="median")
                row[name] = work / (ms * 1e-3) / 1e12
                continue
            fn = others[name.removesuffix("#2")]
            ms = do_bench(
                functools.partial(fn, q, k, v, scale, causal),
                warmup=args.warmup,
                rep=args.rep,
                return_mode="median",
            )
            row[name] = work / (ms * 1e-3) / 1e12
            if args.graph_peers:
                row[f"{name}_graph"] = graph_tflops(fn, (q, k, v, scale, causal), work, args.rep)
        if candidates and others.get("fa3") is not None:
            candidates[0].bind([q, k, v, out, lse], shape, scale, stream)()
            torch.cuda.synchronize()
            first_out = out.clone()
            reference = others["fa3"](q, k, v, scale, causal)
            row["max_abs_diff_vs_fa3"] = float((first_out.float() - reference.float()).abs().max())
        rows.append(row)
        cells = [str(d), str(shape["causal"]), str(s)] + [
            f"{row.get(n, float('nan')):.1f}" for n in names
        ]
        if "fa3" in others:
            cells += [f"{row[c.name] / row['fa3']:.3f}" for c in candidates]
            if args.in_turn:
                cells += [f"{row[f'{c.name}@turn/fa3']:.3f}" for c in candidates]
            if args.dobench_turn:
                cells += [f"{row[f'{c.name}@dbturn/fa3']:.3f}" for c in candidates]
            cells += [f"{row.get('max_abs_diff_vs_fa3', float('nan')):.4f}"]
        print(" | ".join(cells), flush=True)

    summed = names + ([f"{n}_graph" for n in others] if args.graph_peers else [])
    summary = {name: geomean([r.get(name) or 0.0 for r in rows]) for name in summed}
    print("geomean TFLOP/s: " + ", ".join(f"{n} {summary[n]:.1f}" for n in summed if summary[n]))
    if "fa3" in others:
        for cand in candidates:
            ratio = geomean([r[cand.name] / r["fa3"] for r in rows])
            worst = min(rows, key=lambda r: r[cand.name] / r["fa3"])
            print(
                f"{cand.name}: geomean {ratio:.3f}x FA3; worst d{worst['headdim']} "
                f"causal={worst['causal']} s{worst['seqlen_q']} at "
                f"{worst[cand.name] / worst['fa3']:.3f}x"
            )
            if args.in_turn:
                key = f"{cand.name}@turn/fa3"
                turned = geomean([r[key] for r in rows])
                worst = min(rows, key=lambda r: r[key])
                print(
                    f"{cand.name} in turn: geomean {turned:.3f}x FA3; worst d{worst['headdim']} "
                    f"causal={worst['causal']} s{worst['seqlen_q']} at {worst[key]:.3f}x"
                )
            if args.dobench_turn:
                key = f"{cand.name}@dbturn/fa3"
                windowed = geomean([r[key] for r in rows])
                print(f"{cand.name} by do_bench in turn: geomean {windowed:.3f}x FA3")
    # A/A: one kernel's two do_bench medians in this run (a source given twice, --aa-peers).
    for name in names:
        base = name.split("#")[0]
        if "#" in name and "@" not in name and base in names:
            print("A/A do_bench: " + agreement(rows, name, base))
    for name in entries if args.dobench_turn else []:
        print("do_bench in turn: " + agreement(rows, f"{name}@dbturn", name))
    if args.json:
        args.json.write_text(
            json.dumps(
                {"gpu": gpu, "pause_s": args.pause_s, "rows": rows, "geomean": summary}, indent=1
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
