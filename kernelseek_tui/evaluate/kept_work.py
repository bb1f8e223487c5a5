"""Work kept from earlier calls: samples after every input changed against the others.

flash_fwd perturbs only q before each measured call (task.toml, `[timing] perturb`: flipping
k and v too put memory-bound work before every call and moved the figures). A kernel that can
tell when k and v changed (a hash of a few of their elements) could do the work that depends on
them alone once (a layout, per-tile maxima) and reuse it on every call after: the slow calls
would be a few among hundreds, which the median passes over. So on a secret share of the samples
the judge perturbs every input (judged_call.py, ``every_share``). An honest kernel takes as long
on those samples as on the others; a kernel that keeps work takes its full time again on each.

The verdict needs both a gap above ``bound`` between the two groups' medians and a one-sided
rank test (Mann-Whitney U, normal approximation) past ``z_limit``: a large gap on a handful of
noisy samples, or a tiny one on many, is not enough. Below ``min_group`` samples in either
group nothing is decided (a short quick-set scenario), and the result says so.

A verdict on the groups can be gamed: a kernel that knows each sample's group (it hashes k
anyway) can make just under half of its other samples as slow as its every-input ones, so that
the rank test sees little while the median stays fast (a review's simulation, 2026-12-07: 10%
of the work kept, named in 1-9% of runs under 100 samples). So the figure itself is held to
the every-input samples (``held_ms``, ``held_speedups``): a run reports the larger of its
median and theirs, and its paired speedups are scaled down to theirs where those are lower.
Keeping work then gains nothing, named or not. An honest kernel pays the noise of a median of a
quarter of its samples where that happens to be the higher (about 0.4 of the spread between the
two medians: a tenth or two of a percent on a bench shape of 48 samples or more).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelseek_tui.task import Timing

# Above this, the samples after every input changed are slower than the others by more than
# any honest spread of a median seen on this project's GPUs (sm90.cu's p10-p90 spread of a
# bench shape is a few percent of a sample, and a median of 16 samples or more is tighter).
BOUND = 0.05
# One-sided z of the rank test: about 1 in 30,000 for exchangeable groups (honest kernels).
Z_LIMIT = 4.0
MIN_GROUP = 8
# The fewest measured samples of a timed run the rule applies to, whatever the probe of the
# candidate's first calls says. The judge sizes a run from that probe, and a kernel slow only
# there (it can tell the probe's calls apart) cut a run to 10-12 samples in a review's
# simulation (2026-12-07), too few for two groups of MIN_GROUP: the rule never decided. At 48,
# the quarter drawn averages 12 samples, and a complete separation reads z 5.1.
MIN_SAMPLES = 48
# Where the held figure rises above the run's median by more than this, the result says so:
# a few tenths of a percent is the noise of a quarter's median, more is worth a reader's look.
HELD_NOTE_ABOVE = 0.02


@dataclass(frozen=True, slots=True)
class KeptWorkCheck:
    every_ms: float  # median of the samples after every input changed
    others_ms: float  # median of the samples after only the listed inputs changed
    every_count: int
    others_count: int
    z: float  # rank test: how far the every-input samples sit above the others

    @property
    def ratio(self) -> float:
        return self.every_ms / self.others_ms

    def kept_work(self, bound: float = BOUND, z_limit: float = Z_LIMIT) -> bool:
        return self.ratio > 1.0 + bound and self.z > z_limit

    def reason(self, listed: Sequence[str]) -> str:
        only = ", ".join(repr(name) for name in listed)
        return (
            f"the {self.every_count} measured samples after every input changed took "
            f"{self.ratio:.3f} of the time of the {self.others_count} after only {only} changed "
            f"(median {self.every_ms * 1000:.1f} us against {self.others_ms * 1000:.1f} us; "
            f"rank test z {self.z:.1f}): work done on the other inputs once and kept, as a "
            "kernel that caches across calls does"
        )


def compare_groups(
    samples_ms: Sequence[float], every_sample: Sequence[bool], min_group: int = MIN_GROUP
) -> KeptWorkCheck | None:
    """The two groups of a timed run's samples (``every_sample[i]``: sample ``i`` came after
    every input changed), or None where either holds fewer than ``min_group`` samples."""
    if len(samples_ms) != len(every_sample):
        raise ValueError(f"{len(samples_ms)} samples and {len(every_sample)} perturbation draws")
    every = [ms for ms, flag in zip(samples_ms, every_sample, strict=True) if flag]
    others = [ms for ms, flag in zip(samples_ms, every_sample, strict=True) if not flag]
    if len(every) < min_group or len(others) < min_group:
        return None
    return KeptWorkCheck(
        every_ms=statistics.median(every),
        others_ms=statistics.median(others),
        every_count=len(every),
        others_count=len(others),
        z=rank_z(every, others),
    )


def held_ms(median_ms: float, check: KeptWorkCheck | None) -> float:
    """A timed run's figure: its median, or the every-input samples' median where that is
    higher (the module's docstring says why); the median alone where the groups were too small
    to compare."""
    if check is None:
        return median_ms
    return max(median_ms, check.every_ms)


def held_speedups(
    speedups: Sequence[float], every_sample: Sequence[bool], min_group: int = MIN_GROUP
) -> list[float]:
    """A timed run's per-round paired speedups (best-so-far over candidate; ``every_sample[i]``:
    the candidate's sample of round ``i`` came after every input changed), scaled so that their
    median is no higher than the every-input rounds' own; as given where either group holds
    fewer than ``min_group`` rounds. The scale keeps the rounds' scatter, which the paired
    figure's spread is made of."""
    if len(speedups) != len(every_sample):
        raise ValueError(f"{len(speedups)} rounds and {len(every_sample)} perturbation draws")
    every = [r for r, flag in zip(speedups, every_sample, strict=True) if flag]
    if len(every) < min_group or len(speedups) - len(every) < min_group:
        return list(speedups)
    whole, theirs = statistics.median(speedups), statistics.median(every)
    if not (whole > 0 and theirs < whole):
        return list(speedups)
    scale = theirs / whole
    return [r * scale for r in speedups]


def rank_z(higher: Sequence[float], lower: Sequence[float]) -> float:
    """Mann-Whitney U of ``higher`` over ``lower`` as a z score (normal approximation, ties
    counted half, the variance corrected for ties): large when ``higher``'s values tend to sit
    above ``lower``'s."""
    n, m = len(higher), len(lower)
    pooled = sorted([(v, 0) for v in higher] + [(v, 1) for v in lower])
    ranks = [0.0] * len(pooled)
    tie_term = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2.0 + 1.0
        tied = j - i + 1
        tie_term += tied**3 - tied
        i = j + 1
    rank_sum = sum(rank for rank, (_, group) in zip(ranks, pooled, strict=True) if group == 0)
    u = rank_sum - n * (n + 1) / 2.0
    total = n + m
    variance = n * m / 12.0 * ((total + 1) - tie_term / (total * (total - 1)))
    if variance <= 0:
        return 0.0
    return (u - n * m / 2.0) / math.sqrt(variance)


def with_sample_floor(timing: Timing) -> Timing:
    """``timing`` with at least MIN_SAMPLES measured samples (its ``min_reps`` raised)."""
    if timing.min_reps >= MIN_SAMPLES:
        return timing
    return dataclasses.replace(
        timing, min_reps=MIN_SAMPLES, max_reps=max(timing.max_reps, MIN_SAMPLES)
    )
