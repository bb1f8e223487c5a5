"""Timing on the stream the kernel is given: CUDA events, warm-up, rotated inputs, a median.

Two methods (the task's `[timing] method`). "flushed", the default, is the method of FA3's and
Triton's own benchmarks (`do_bench`): every call alone between two events, the L2 cache flushed
by a large memset just before it, the median over calls; warm-up and measured calls go out as
one stream of work, held back first where the host enqueues more slowly than the GPU runs, so
that neither host launch time nor an idle (and so faster-clocked) GPU enters the figure.
"batched" times back-to-back calls between two events; measured on the H200
(docs/BENCHMARKS.md) it timed FA3 13-43% low on short sequences, where FA3's Python-side launch
outlasts its kernel, and up to 10% high on long ones, where a warm L2 and overlapping tails help.

Work that the events cannot see (a kernel launched on another stream) is looked for twice: every
measured run ends with the device's tail, how long the device stays busy once the stream is done
(``_run_tail_ms``), and a second, device-synchronised wall-clock measurement of the same calls
follows the samples (``_cross_check``).

Two kernels can also be timed against each other in one run (``time_interleaved``): the
"flushed" method, one sample of each in turn, so that the ratio of two adjacent samples is free
of the drift (clocks, temperature, a neighbour's load) that separates two runs.

The evaluator may hook the measured calls (``MeasuredCallHooks``): its work runs on the same
stream just before a sample's flush and just after its end event, never between a pair of
events, so it adds wall time but no timed time.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from kernelseek_tui.task import Timing

# A batch of calls between two events should last at least this long, so that event
# resolution and launch gaps are small beside it.
_MIN_BATCH_MS = 0.5

# A measured run's tail (``_run_tail_ms``) above max(_MIN_TAIL_LIMIT_MS, _TAIL_LIMIT_SHARE x the
# median call) is work outside the stream. An honest tail is a device synchronize with nothing left
# to wait for (about 10 us) and, for a kernel in a process of its own, the idle device synchronize
# there that `settle` reports (the pipe's round trip around it is not counted; the whole round trip
# measured 0.27-0.36 ms under MPS, once 0.99: docs/RELIABILITY.md). Neither grows with the kernel,
# and the garbage collector is kept out of the window; 1 ms stands well above both and above the
# scheduling jitter of a host thread on a machine that is not oversubscribed. The share of the
# median adds a margin that grows with the kernel, against any honest latency that scales with the
# problem and that this reckoning missed. It costs little: hidden work that the stream's own work
# between samples cannot absorb builds a backlog that adds its excess once per sample, so at 0.5 x
# the median over the 5 samples of the smallest run a backlog is still caught from a tenth of a call
# per sample, and the 1 ms floor rules only where calls are short and the samples many (100 ms of
# samples by default).
_MIN_TAIL_LIMIT_MS = 1.0
_TAIL_LIMIT_SHARE = 0.5


@dataclass(slots=True)
class TimingStats:
    median_ms: float
    samples_ms: list[float] = field(default_factory=list)
    calls_per_sample: int = 1
    wall_ms_per_call: float | None = None
    event_ms_per_call: float | None = None
    # The cross-check's wall clock ran well past its events (``_cross_check``), on every one
    # of its attempts; how many attempts it took (more than one: the first ran past them).
    hidden_by_cross_check: bool = False
    cross_check_attempts: int = 0
    # The longest tail of a measured run charged to these samples (``_run_tail_ms``; None: none
    # was), and the limit it is held to.
    max_tail_ms: float | None = None
    tail_limit_ms: float | None = None

    @property
    def hidden_by_tail(self) -> bool:
        """The device stayed busy past a measured run's end longer than an honest kernel can."""
        if self.max_tail_ms is None or self.tail_limit_ms is None:
            return False
        return self.max_tail_ms > self.tail_limit_ms

    @property
    def hidden_work(self) -> bool:
        """Work the stream's events did not see, by either check."""
        return self.hidden_by_cross_check or self.hidden_by_tail

    @property
    def fastest(self) -> float | None:
        """The fastest sample over the median (None without samples): a call that skipped its
        work reads far below 1 (docs/RELIABILITY.md, "Skipped calls and the paired figure"),
        where an honest kernel's fastest call is close to its median."""
        if not self.samples_ms or self.median_ms <= 0:
            return None
        return min(self.samples_ms) / self.median_ms

    @property
    def spread(self) -> float:
        """(p90 - p10) / median over the samples: how noisy the number is."""
        if len(self.samples_ms) < 3 or self.median_ms <= 0:
            return 0.0
        ordered = sorted(self.samples_ms)
        low = ordered[int(0.1 * (len(ordered) - 1))]
        high = ordered[math.ceil(0.9 * (len(ordered) - 1))]
        return (high - low) / self.median_ms


class MeasuredCall(NamedTuple):
    ordinal: int  # 0-based, among the measured calls of one `time_calls`
    set_index: int  # the input set it runs on


class Gate(Protocol):
    """Holds the stream just before a sample's start event until the sample is enqueued up to
    its end event (evaluate/gate.py): for calls whose host is slower than the GPU."""

    def hold(self) -> None: ...

    def release(self) -> None: ...


class MeasuredCallHooks(Protocol):
    """The evaluator's work around the measured calls (not the probe, warm-up or cross-check).

    A sample is what one pair of events brackets: one call for "flushed", a batch of
    back-to-back calls for "batched". Measured call ``k`` always runs on set ``k % n_sets``.
    """

    def plan(self, calls: int, calls_per_sample: int) -> None:
        """Called once, after ``after_warmup`` and before the first measured call: ``calls``
        measured calls follow, ``calls_per_sample`` of them between each pair of events."""

    def before_sample(self, calls: Sequence[MeasuredCall]) -> None:
        """Before the sample's flush (or its start event, for "batched")."""

    def after_sample(self, calls: Sequence[MeasuredCall]) -> None:
        """After the sample's end event is enqueued."""


def time_calls(
    cp: Any,
    stream: Any,
    call: Callable[[int], None],
    n_sets: int,
    timing: Timing,
    after_warmup: Callable[[], None] | None = None,
    hooks: MeasuredCallHooks | None = None,
    settle: Callable[[], float | None] | None = None,
    gate: Gate | None = None,
) -> TimingStats:
    """Median milliseconds per call of ``call(set_index)``, rotating through ``n_sets`` sets.

    ``after_warmup`` runs between the warm-up and the measured calls (on the same stream): the
    evaluator changes the inputs there, so that the measured calls must really compute.
    ``hooks`` run around every measured sample, outside its events (see MeasuredCallHooks).
    ``settle`` waits for work this process's device synchronize cannot see (a kernel in a
    process of its own) and may return how long that wait took there, in milliseconds; the
    cross-check's wall clock runs until it returns, and every measured run's tail counts the
    wait it reports (``_run_tail_ms``). ``gate`` holds the stream before every start event
    until the sample is enqueued (see Gate).
    """
    if timing.method == "flushed":
        return _time_flushed(cp, stream, call, n_sets, timing, after_warmup, hooks, settle, gate)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    tails_ms: list[float] = []

    def run_batch(calls: int, first_ordinal: int | None = None) -> float:
        """``calls`` back-to-back calls from set 0; ``first_ordinal``: the ordinal of the
        batch's first call when the batch is measured (and so hooked, and its tail taken)."""
        measured: list[MeasuredCall] = []
        if hooks is not None and first_ordinal is not None:
            measured = [MeasuredCall(first_ordinal + i, i % n_sets) for i in range(calls)]
            hooks.before_sample(measured)
        if gate is not None:
            gate.hold()
        start.record(stream)
        for i in range(calls):
            call(i % n_sets)
        end.record(stream)
        if gate is not None:
            gate.release()
        if hooks is not None and measured:
            hooks.after_sample(measured)
        end.synchronize()
        if first_ordinal is not None:
            # Every measured batch, not one: a candidate cannot keep its hidden work to the
            # batches that go unchecked.
            tails_ms.append(_run_tail_ms(cp, stream, settle))
        return cp.cuda.get_elapsed_time(start, end)

    first = run_batch(1)
    estimate = max(first, 1e-3)
    calls = _batch_calls(n_sets, estimate)
    warmup_batches = max(1, math.ceil(timing.warmup_ms / (estimate * calls)))
    for _ in range(warmup_batches):
        estimate = max(run_batch(calls) / calls, 1e-3)
    if after_warmup is not None:
        after_warmup()
    reps = int(min(timing.max_reps, max(timing.min_reps, timing.rep_ms / (estimate * calls))))
    if hooks is not None:
        hooks.plan(reps * calls, calls)
    samples = [run_batch(calls, first_ordinal=rep * calls) / calls for rep in range(reps)]
    stats = TimingStats(
        median_ms=statistics.median(samples), samples_ms=samples, calls_per_sample=calls
    )
    _charge_tail(stats, max(tails_ms))
    _cross_check(cp, stream, call, n_sets, calls, start, end, stats, settle)
    return stats


def _batch_calls(n_sets: int, call_ms: float) -> int:
    """Back-to-back calls for one batch: at least _MIN_BATCH_MS of them, a whole number of
    rotations through the input sets."""
    calls = max(n_sets, math.ceil(_MIN_BATCH_MS / call_ms))
    return n_sets * math.ceil(calls / n_sets)


_flush_buffers: dict[tuple[int, int], Any] = {}
_MAX_HEAD_START_MS = 250.0

# Spins on the GPU's global timer: the stream does nothing else until it returns.
_HOLD_SOURCE = r"""
extern "C" __global__ void ks_hold(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        __nanosleep(2000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
"""
_hold_kernels: dict[int, Any] = {}


def _hold_stream(cp: Any, stream: Any, ms: float) -> None:
    """Enqueue a kernel that keeps ``stream`` busy for ``ms`` milliseconds."""
    device = cp.cuda.Device().id
    kernel = _hold_kernels.get(device)
    if kernel is None:
        kernel = cp.RawKernel(_HOLD_SOURCE, "ks_hold")
        _hold_kernels[device] = kernel
    kernel((1,), (1,), (cp.uint64(int(ms * 1e6)),), stream=stream)


def l2_flush_bytes(l2_bytes: int) -> int:
    """The size of the judge's L2 flush for a device with ``l2_bytes`` of L2: twice it, at
    least 64 MiB."""
    return max(2 * l2_bytes, 64 << 20)


def _l2_flush_buffer(cp: Any, flush_mb: float | None = None) -> Any:
    """The flush buffer of the current device, allocated once per device and size:
    ``flush_mb`` MB, or l2_flush_bytes of the device's L2 when None."""
    device = cp.cuda.Device()
    if flush_mb is None:
        size = l2_flush_bytes(int(device.attributes.get("L2CacheSize", 0)))
    else:
        size = int(flush_mb * 1e6)
    buffer = _flush_buffers.get((device.id, size))
    if buffer is None:
        buffer = cp.empty(size, dtype=cp.uint8)
        _flush_buffers[(device.id, size)] = buffer
    return buffer


def _l2_flusher(cp: Any, stream: Any, flush_mb: float | None = None) -> Callable[[], None]:
    """A function that enqueues the L2 flush (a memset of the flush buffer) on ``stream``."""
    flush = _l2_flush_buffer(cp, flush_mb)

    def flush_l2() -> None:
        cp.cuda.runtime.memsetAsync(flush.data.ptr, 0, flush.nbytes, stream.ptr)

    return flush_l2


class _FlushedSample(NamedTuple):
    """One sample to enqueue: ``call`` on ``measured.set_index``, between its own events."""

    call: Callable[[int], None]
    measured: MeasuredCall
    hooks: MeasuredCallHooks | None


def _enqueue_flushed(
    cp: Any,
    stream: Any,
    flush_l2: Callable[[], None],
    samples: Sequence[_FlushedSample],
    gate: Gate | None = None,
) -> list[tuple[Any, Any]]:
    """Enqueue each sample alone after a flush, between a pair of events; its hooks just outside.
    The events are all made first, so no event creation sits between two samples."""
    events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in samples]
    for (start, end), (call, measured, hooks) in zip(events, samples, strict=True):
        # The hooks' work goes before the flush, so the flush leaves the call a cold L2
        # whatever they read or wrote.
        if hooks is not None:
            hooks.before_sample((measured,))
        flush_l2()
        if gate is not None:
            gate.hold()
        start.record(stream)
        call(measured.set_index)
        end.record(stream)
        if gate is not None:
            gate.release()
        if hooks is not None:
            hooks.after_sample((measured,))
    return events


def _elapsed(cp: Any, events: list[tuple[Any, Any]]) -> list[float]:
    events[-1][1].synchronize()
    return [cp.cuda.get_elapsed_time(start, end) for start, end in events]


class _FlushedPlan(NamedTuple):
    warmup: int  # rounds of warm-up samples (a round: one sample of each callable)
    reps: int  # rounds of measured samples
    deficit_ms: float  # how far the host would fall behind the GPU over all the rounds


def _ungated_first_calls(stream: Any, calls: Sequence[Callable[[int], None]]) -> None:
    """One call of each callable, ungated, waited for, before its first gated sample.

    Why: a kernel's process loads a kernel's module at its first launch (CUDA's lazy loading),
    and that load waited for the process's stream; behind a gate, that stream waits for the
    judge's, which waits for the gate's release, which comes after the call returns. The two
    waited on each other until the gate let go by itself (5 s): on an H100 (2026-12-06) every
    hand-over measure took 5.0-5.9 s, and the starting kernel's first timed scenario 5.1 s."""
    for call in calls:
        call(0)
    stream.synchronize()


def _plan_flushed(
    cp: Any,
    stream: Any,
    flush_l2: Callable[[], None],
    calls: Sequence[Callable[[int], None]],
    n_sets: int,
    timing: Timing,
    gate: Gate | None = None,
) -> _FlushedPlan:
    """A short probe: what one round costs the GPU (the flushes included) and the host; from it
    the warm-up and measured rounds, sized so that each callable gets about the samples it would
    get timed alone."""
    if gate is not None:
        _ungated_first_calls(stream, calls)
    probe = max(3, n_sets)
    rounds = [
        _FlushedSample(call, MeasuredCall(i, i % n_sets), None)
        for i in range(probe)
        for call in calls
    ]
    began = time.perf_counter()
    probe_events = _enqueue_flushed(cp, stream, flush_l2, rounds, gate)
    host_ms = (time.perf_counter() - began) * 1000.0 / probe
    probed = _elapsed(cp, probe_events)
    kernel_ms = [statistics.median(probed[k :: len(calls)]) for k in range(len(calls))]
    began = time.perf_counter()
    flush_l2()
    stream.synchronize()
    flush_ms = (time.perf_counter() - began) * 1000.0
    gpu_ms = sum(max(ms, 1e-3) + flush_ms for ms in kernel_ms)
    warmup = max(n_sets, math.ceil(timing.warmup_ms / gpu_ms))
    per_sample_ms = gpu_ms / len(calls)
    reps = int(min(timing.max_reps, max(timing.min_reps, timing.rep_ms / per_sample_ms)))
    return _FlushedPlan(warmup, reps, max(0.0, (host_ms - gpu_ms) * (warmup + reps)))


def _time_flushed(
    cp: Any,
    stream: Any,
    call: Callable[[int], None],
    n_sets: int,
    timing: Timing,
    after_warmup: Callable[[], None] | None,
    hooks: MeasuredCallHooks | None,
    settle: Callable[[], float | None] | None = None,
    gate: Gate | None = None,
) -> TimingStats:
    flush_l2 = _l2_flusher(cp, stream, timing.flush_mb)

    def samples(count: int, hooked: MeasuredCallHooks | None = None) -> list[_FlushedSample]:
        return [_FlushedSample(call, MeasuredCall(i, i % n_sets), hooked) for i in range(count)]

    warmup, reps, deficit = _plan_flushed(cp, stream, flush_l2, (call,), n_sets, timing, gate)
    # Warm-up and measured calls go out in one stream of work, so the GPU reaches its steady
    # clocks before the measured ones and never idles between them. Where the host enqueues a
    # sample more slowly than the GPU runs it (a peer with a long Python-side launch on a short
    # kernel), the stream is held for the difference first; otherwise the host's launch time
    # would sit between a start event and its kernel.
    # A gate makes a slow host harmless sample by sample: no head start then.
    if deficit > 0 and gate is None:
        _hold_stream(cp, stream, min(_MAX_HEAD_START_MS, 1.2 * deficit + 1.0))
    # The hooks' host time is not in the probe above, so no hold is sized for it: the evaluator's
    # hooks launch one small kernel per sample, estimated (not measured) to cost the host less
    # than the flush of at least 64 MiB costs the GPU in the same sample.
    _enqueue_flushed(cp, stream, flush_l2, samples(warmup), gate)
    if after_warmup is not None:
        after_warmup()
    if hooks is not None:
        hooks.plan(reps, 1)
    measured = _elapsed(cp, _enqueue_flushed(cp, stream, flush_l2, samples(reps, hooks), gate))
    tail_ms = _run_tail_ms(cp, stream, settle)
    median = statistics.median(measured)
    stats = TimingStats(median_ms=median, samples_ms=measured, calls_per_sample=1)
    _charge_tail(stats, tail_ms)
    # The cross-check needs enough back-to-back calls for its wall clock to mean something.
    batch = _batch_calls(n_sets, max(median, 1e-3))
    _cross_check(cp, stream, call, n_sets, batch, cp.cuda.Event(), cp.cuda.Event(), stats, settle)
    return stats


@dataclass(slots=True)
class InterleavedTimings:
    """Several callables timed in one run, sample by sample in turn (``time_interleaved``)."""

    stats: list[TimingStats]  # one per callable, in the order given

    def ratios(self, numerator: int = 0, denominator: int = 1) -> list[float]:
        """Per round, the ``numerator`` callable's sample over the ``denominator``'s: the two
        samples of a round ran next to each other, under the same clocks and the same drift."""
        return [
            a / b
            for a, b in zip(
                self.stats[numerator].samples_ms, self.stats[denominator].samples_ms, strict=True
            )
            if a > 0 and b > 0
        ]


def round_order(count: int, round_index: int) -> list[int]:
    """The callables' order in one round: forward on even rounds, reversed on odd ones.

    A B, B A, A B, ... rather than A B, A B: each callable comes first in half the rounds, so
    whatever the position in a round favours (the other's hook work and its flush just before,
    a clock stepping between the two) favours both alike, and a drift that is linear over two
    rounds cancels in the ratios taken over an A B B A block.
    """
    order = list(range(count))
    return order if round_index % 2 == 0 else order[::-1]


def time_interleaved(
    cp: Any,
    stream: Any,
    calls: Sequence[Callable[[int], None]],
    n_sets: int,
    timing: Timing,
    after_warmup: Callable[[], None] | None = None,
    hooks: Sequence[MeasuredCallHooks | None] | None = None,
    settle: Callable[[], float | None] | None = None,
    gate: Gate | None = None,
) -> InterleavedTimings:
    """Time ``calls`` (two or more) in turn, one sample of each per round, with the "flushed"
    method of ``time_calls``: an L2 flush before every sample, each callable's hooks around its
    own measured samples outside the events, warm-up and measured rounds in one stream of work
    (held first where the host is slower than the GPU), then each callable's cross-check.

    Each callable rotates through ``n_sets`` sets of its own; ``hooks[k]`` (if any) sees
    callable ``k``'s measured calls alone, numbered 0, 1, ... as ``time_calls`` numbers them.
    The rounds are even in number, so each callable leads in as many rounds as the other.
    With ``timing.turn_run`` above 1 a callable takes that many samples in a row in each round
    (A A A B B B, B B B A A A, ...); sample ``r`` of one is still paired with sample ``r`` of
    another in ``ratios``. ``settle`` and ``gate`` as in ``time_calls``.
    """
    if len(calls) < 2:
        raise ValueError("time_interleaved needs two callables or more")
    if timing.method != "flushed":
        raise ValueError(f"interleaved timing supports the 'flushed' method, not {timing.method!r}")
    hooked = list(hooks) if hooks is not None else [None] * len(calls)
    if len(hooked) != len(calls):
        raise ValueError("one hooks (or None) per callable")
    flush_l2 = _l2_flusher(cp, stream, timing.flush_mb)

    run = max(1, timing.turn_run)

    def rounds(count: int, measured: bool) -> list[_FlushedSample]:
        """``count`` samples of each callable: rounds of one run of ``run`` samples each."""
        return [
            _FlushedSample(calls[k], MeasuredCall(r, r % n_sets), hooked[k] if measured else None)
            for block in range(count // run)
            for k in round_order(len(calls), block)
            for r in range(block * run, (block + 1) * run)
        ]

    warmup, reps, deficit = _plan_flushed(cp, stream, flush_l2, calls, n_sets, timing, gate)
    # Whole rounds, even in number, so each callable leads in as many rounds as the others.
    warmup = run * math.ceil(warmup / run)
    reps = max(2 * run, reps - reps % (2 * run))
    # A gate makes a slow host harmless sample by sample: no head start then.
    if deficit > 0 and gate is None:
        _hold_stream(cp, stream, min(_MAX_HEAD_START_MS, 1.2 * deficit + 1.0))
    _enqueue_flushed(cp, stream, flush_l2, rounds(warmup, measured=False), gate)
    if after_warmup is not None:
        after_warmup()
    for callable_hooks in hooked:
        if callable_hooks is not None:
            callable_hooks.plan(reps, 1)
    elapsed = _elapsed(
        cp, _enqueue_flushed(cp, stream, flush_l2, rounds(reps, measured=True), gate)
    )
    tail_ms = _run_tail_ms(cp, stream, settle)
    samples: list[list[float]] = [[] for _ in calls]
    owner = 0
    for position, ms in enumerate(elapsed):
        block, within = divmod(position, run * len(calls))
        owner = round_order(len(calls), block)[within // run]
        samples[owner].append(ms)
    result = InterleavedTimings(
        [TimingStats(statistics.median(s), s, calls_per_sample=1) for s in samples]
    )
    # The run has one tail, charged to the callable whose sample ends the run (``owner``: the
    # rounds are even in number, so the last one is reversed and ends with the first callable,
    # the worker's candidate). Hidden work outliving the run is that last sample's, or a backlog
    # built over the run by a callable hiding more per round than the stream runs, which could
    # be any callable's; flagging every callable would not tell them apart either. The worker
    # fails the candidate on its own `hidden_work` only (of the best-so-far and the peers it
    # takes the times), so nothing charged elsewhere could fail it; the one case that charges
    # the candidate wrongly is a peer (FA3, cuDNN through torch, on the given stream) leaving
    # a backlog outside the stream, a library bug that would also write its outputs late.
    _charge_tail(result.stats[owner], tail_ms)
    for call, stats in zip(calls, result.stats, strict=True):
        batch = _batch_calls(n_sets, max(stats.median_ms, 1e-3))
        _cross_check(
            cp, stream, call, n_sets, batch, cp.cuda.Event(), cp.cuda.Event(), stats, settle
        )
    return result


def _run_tail_ms(cp: Any, stream: Any, settle: Callable[[], float | None] | None) -> float:
    """A measured run's tail, once its work is enqueued: how long the device stays busy after
    the given stream is done, in milliseconds.

    With ``settle`` (kernels in processes of their own), the tail is this process's device
    synchronize plus the time those processes' own device synchronizes report having waited,
    never more than the whole round trip: the pipe messages around their waits are the
    judge's plumbing, whose scheduling stalls (one of 0.7 ms beside 0.3 ms typical, measured on
    an H100 under MPS) would otherwise fail an honest kernel. What the processes report is
    trusted as far as their replies already are: a candidate able to forge the one could forge
    the other (docs/RELIABILITY.md).

    Without hidden work, the time a device synchronize takes to find nothing to wait for.
    Hidden work (on another stream, or in a kernel's own process: ``settle`` waits for that)
    that outlives the stream's shows here, in the run itself: the cross-check's extra batch
    comes after a device-wide synchronize that the measured samples never follow, and a
    candidate can keep its hidden work out of that one batch. Hidden work that ends before the
    stream's does (run during the flushes, hooks and other callables' samples between this
    callable's samples) does not show; see docs/RELIABILITY.md.
    """
    # The whole stream, not only the run's last end event: the evaluator's own work after it
    # (the judged call's copies) is on the stream, and no part of the tail.
    stream.synchronize()
    # A collection pause here would read as a tail: none during the few microseconds.
    collecting = gc.isenabled()
    gc.disable()
    try:
        began = time.perf_counter()
        cp.cuda.runtime.deviceSynchronize()
        own_ms = (time.perf_counter() - began) * 1000.0
        waited_ms = settle() if settle is not None else None
        round_trip_ms = (time.perf_counter() - began) * 1000.0
        if waited_ms is None:
            return round_trip_ms
        return min(round_trip_ms, own_ms + waited_ms)
    finally:
        if collecting:
            gc.enable()


def _charge_tail(stats: TimingStats, tail_ms: float) -> None:
    """Charge a measured run's tail to ``stats`` (whose median is known) and set its limit."""
    if stats.max_tail_ms is None or tail_ms > stats.max_tail_ms:
        stats.max_tail_ms = tail_ms
    stats.tail_limit_ms = max(_MIN_TAIL_LIMIT_MS, _TAIL_LIMIT_SHARE * stats.median_ms)


def _cross_check(
    cp: Any,
    stream: Any,
    call: Callable[[int], None],
    n_sets: int,
    calls: int,
    start: Any,
    end: Any,
    stats: TimingStats,
    settle: Callable[[], float | None] | None = None,
) -> None:
    """Time ``calls`` back-to-back calls by the wall clock, device-synchronised, against their
    events; flag the run where the wall clock runs well past them on every attempt.

    A batch lasts a few milliseconds, so one stall of the host (a page fault storm, a process
    scheduled out) past a millisecond or so flags an honest kernel: sm90.cu on an H100 (2026-12-07
    19:09, bench s4096 d128, in a run without peers) read 3.643 ms wall per call against 0.805
    on the stream, and the same shape passed in the run beside it. A kernel doing work the
    events cannot see does it on every attempt, so a flagged batch is timed again, up to
    _CROSS_CHECK_ATTEMPTS in all; a run is flagged only when every attempt ran past its events,
    with the figures of the one that ran least past them."""

    def once() -> tuple[float, float]:
        """One device-synchronised batch: its wall-clock and event milliseconds."""
        # cudaDeviceSynchronize waits for every stream; the events see only the one handed over.
        cp.cuda.runtime.deviceSynchronize()
        if settle is not None:
            settle()
        began = time.perf_counter()
        start.record(stream)
        for i in range(calls):
            call(i % n_sets)
        end.record(stream)
        cp.cuda.runtime.deviceSynchronize()
        if settle is not None:
            settle()
        return (time.perf_counter() - began) * 1000.0, cp.cuda.get_elapsed_time(start, end)

    attempts: list[tuple[float, float]] = []
    for _ in range(_CROSS_CHECK_ATTEMPTS):
        attempts.append(once())
        if not _ran_past(*attempts[-1]):
            break
    # The last attempt if it passed; else the one whose wall clock ran least past its events.
    wall_ms, event_ms = attempts[-1]
    if _ran_past(wall_ms, event_ms):
        wall_ms, event_ms = min(attempts, key=lambda a: a[0] - 1.5 * a[1])
    stats.wall_ms_per_call = wall_ms / calls
    stats.event_ms_per_call = event_ms / calls
    stats.cross_check_attempts = len(attempts)
    stats.hidden_by_cross_check = _ran_past(wall_ms, event_ms)


# How many times a cross-check that ran past its events is timed before its run is flagged.
_CROSS_CHECK_ATTEMPTS = 3


def _ran_past(wall_ms: float, event_ms: float) -> bool:
    """The wall clock well past the events: half as long again, plus a millisecond."""
    return wall_ms > 1.5 * event_ms + 1.0
