"""One measured call, chosen at random, judged on its own outputs; fresh inputs before each.

After timing, the judge used to look only at the last output of each input set, and every
measured call on a set saw the same inputs: a candidate could do the work on one call in many
(the skipped calls leave outputs that are still right for unchanged inputs) or memoize outputs
by the inputs' content. Now, during the measured calls of a timed run:

- before every sample (outside its events), the inputs of each set it runs on get a fresh
  random perturbation (perturb.py: sign flips), so no two measured calls see the same content
  and outputs left from an earlier call are wrong;
- one measured call, drawn when the number of calls is known, has its outputs copied aside
  right after its end event; after timing they are judged against the reference for the
  inputs it saw (the inputs themselves are checked after timing against the replay below;
  until 2026-12-07 noon they were copied too, four times the memory traffic on flash_fwd);
- every other sample ends with the same copy, into buffers that are never read: the copy
  holds back the next sample's start by its own duration, and copied after the judged call
  alone, that gap told a kernel reading the GPU's
  clock (``%globaltimer``) that the judged call was past, after which it could do part of the
  work on every call, the cross-check calls that follow the measured ones excepted (a review,
  2026-12-07, reasoned and simulated: about 1.18x unpaired over bench, not run on a GPU).

Where the task perturbs only some of its inputs (flash_fwd: q), a secret share of the samples
(``every_share``, drawn sample by sample) has every floating-point input perturbed instead, so
that work done on the other inputs once and kept (a layout of k and v, say) costs its time
again there; kept_work.py compares those samples' times with the others'.

The judge knows what each call saw without copying the inputs before it (which would make the
chosen call the one with extra work in front of it, a difference a candidate could time): the
perturbations are logged, and replayed on the judge's own copy of the inputs (``replay``).

Everything here is plain logic, driven through callbacks, so the tests run it on numpy.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernelseek_tui.evaluate.timing import MeasuredCall


@dataclass(frozen=True, slots=True)
class Perturbation:
    ordinal: int  # the first measured call that sees it
    set_index: int
    key: int  # perturb.SignFlipper's key
    every: bool = False  # every floating-point input perturbed, not only the task's listed ones


def choose_judged_call(calls: int, calls_per_sample: int, rng: random.Random) -> int:
    """The ordinal of the measured call to judge, uniform over the calls that end a sample.

    For "flushed" every call is a sample of its own. For "batched" only a batch's last call can
    be copied aside: its outputs are complete only once the batch's end event is enqueued, and a
    copy after any earlier call of the batch would run inside the events.
    """
    if calls_per_sample < 1 or calls < calls_per_sample:
        raise ValueError(f"{calls} measured calls cannot hold samples of {calls_per_sample}")
    samples = calls // calls_per_sample
    return (rng.randrange(samples) + 1) * calls_per_sample - 1


def replay(
    log: Sequence[Perturbation],
    judged: MeasuredCall,
    apply: Callable[[int, int], None],
    capture: Callable[[int], None],
    apply_every: Callable[[int, int], None] | None = None,
) -> None:
    """Apply every logged perturbation, in order, with ``apply(set_index, key)`` (to the judge's
    copy of that set; ``apply_every`` for those that perturbed every input), and call
    ``capture(set_index)`` once, for the judged call's set, when that copy holds what the
    judged call saw: every perturbation of its set up to its own."""
    captured = False
    for step in log:
        if not captured and step.set_index == judged.set_index and step.ordinal > judged.ordinal:
            capture(judged.set_index)
            captured = True
        if step.every:
            if apply_every is None:
                raise ValueError("a perturbation of every input, and nothing to replay it with")
            apply_every(step.set_index, step.key)
        else:
            apply(step.set_index, step.key)
    if not captured:
        capture(judged.set_index)


@dataclass(slots=True)
class MeasuredCallWatch:
    """The hooks (timing.MeasuredCallHooks) of one timed run.

    ``perturb(set_index, key)`` changes that set's inputs on the stream; ``copy_aside(set_index,
    keep)`` enqueues copies of that set's outputs (or of its whole set) into buffers of their
    own and returns them: with ``keep`` the buffers judged after timing, without it buffers of the
    same size that nothing reads (the copy after every other sample). ``label`` goes into the
    judged call's name ("timed after the peers"). With ``perturb_every`` (the task perturbs
    only some inputs), each sample has, with probability ``every_share``, every floating-point
    input perturbed through it instead; ``every_sample`` says which samples did.
    """

    n_sets: int
    rng: random.Random
    perturb: Callable[[int, int], None]
    copy_aside: Callable[[int, bool], dict[str, Any]]
    label: str = ""
    perturb_every: Callable[[int, int], None] | None = None
    every_share: float = 0.0
    calls: int = 0
    judged: MeasuredCall | None = None
    log: list[Perturbation] = field(default_factory=list)
    aside: dict[str, Any] | None = None  # the judged call's tensors, once copied
    every_sample: list[bool] = field(default_factory=list)  # per measured sample, in order

    def plan(self, calls: int, calls_per_sample: int) -> None:
        ordinal = choose_judged_call(calls, calls_per_sample, self.rng)
        self.calls = calls
        self.judged = MeasuredCall(ordinal, ordinal % self.n_sets)
        self.log.clear()
        self.aside = None
        self.every_sample.clear()

    def before_sample(self, calls: Sequence[MeasuredCall]) -> None:
        # Each set the sample runs on, once: a batch runs each set several times back to back,
        # and nothing can change its inputs between those calls without being timed. One draw
        # per sample says whether every input changes: the draws come from the run's secret
        # generator, so a kernel learns only after the fact (by looking at its inputs).
        every = self.perturb_every is not None and self.rng.random() < self.every_share
        self.every_sample.append(every)
        for set_index in dict.fromkeys(call.set_index for call in calls):
            key = self.rng.getrandbits(64)
            if every and self.perturb_every is not None:
                self.perturb_every(set_index, key)
            else:
                self.perturb(set_index, key)
            self.log.append(Perturbation(calls[0].ordinal, set_index, key, every))

    def after_sample(self, calls: Sequence[MeasuredCall]) -> None:
        # The same copy after every sample, kept only for the judged call: nothing between two
        # samples tells a kernel which call was judged.
        last = calls[-1]
        judged = self.judged is not None and last == self.judged
        copied = self.copy_aside(last.set_index, judged)
        if judged:
            self.aside = copied

    def describe(self) -> str:
        """The judged call as a reason names it: 1-based, among the run's measured calls."""
        if self.judged is None:
            return "no measured call"
        label = f" {self.label}" if self.label else ""
        return (
            f"measured call {self.judged.ordinal + 1} of {self.calls}{label} "
            f"(input set {self.judged.set_index})"
        )
