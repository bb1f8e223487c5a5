"""The judge the engine calls: any callable with the ``Evaluator`` signature.

The real one, ``TaskEvaluator``, runs ``kernelseek_tui.evaluate.api.evaluate`` with the Task
loaded from the *original* task directory when the session started, so an agent that edits
``task.toml`` or the reference in its workspace changes nothing the judge uses: only the
candidate source (and its ``knobs.json``) are read from the workspace. The original task's
files and the judge's own are fingerprinted when it is made and checked around every
evaluation (session/judge_files.py: the agent's shell can reach them). Tests pass stand-ins.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.paired import PairedKernel
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.history.session import git_blob_sha
from kernelseek_tui.session.judge_files import JudgeFiles, JudgeFilesChanged, judge_paths
from kernelseek_tui.task import Task


class Evaluator(Protocol):
    """Judge ``source``: ``sets`` None is the task's objective; ``knobs`` the -D values."""

    def __call__(
        self, source: Path, sets: list[str] | None, *, knobs: dict[str, int] | None = None
    ) -> EvalResult: ...


class PairingEvaluator(Protocol):
    """An Evaluator that can also time ``pair_with`` interleaved with the candidate
    (evaluate/paired.py). TaskEvaluator is one; the engine asks for it only where
    ``pairs_with_best`` says the evaluator pairs, so every other evaluator keeps the plain
    signature."""

    def __call__(
        self,
        source: Path,
        sets: list[str] | None,
        *,
        knobs: dict[str, int] | None = None,
        pair_with: PairedKernel | None = None,
    ) -> EvalResult: ...


class TaskEvaluator:
    """The real evaluator for one task (imports the evaluator only when first called)."""

    # It takes ``pair_with`` (a PairingEvaluator): a session pairs with it by default.
    pairs_with_best = True

    def __init__(
        self,
        task: Task,
        *,
        device: int | str | None = None,
        compare: bool = True,
        timeout_s: float | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        prestart_next: bool = False,
        guard_files: bool = True,
        judge_files: JudgeFiles | None = None,
    ) -> None:
        """``guard_files``: refuse (or void) every evaluation while the judge's files differ
        from ``judge_files`` (session/judge_files.py; a session takes them when its engine
        starts), or where none are given, from what they are now."""
        self.task = task
        self.judge_files = None
        if guard_files:
            self.judge_files = judge_files or JudgeFiles.take(judge_paths(task))
        self.device = device
        self.compare = compare
        self.timeout_s = timeout_s
        self.progress = progress
        # True where this evaluator is called in a loop: each evaluation leaves a spare worker
        # ready for the next (evaluate.spare); a single evaluation leaves nothing behind.
        self.prestart_next = prestart_next

    def __call__(
        self,
        source: Path,
        sets: list[str] | None,
        *,
        knobs: dict[str, int] | None = None,
        pair_with: PairedKernel | None = None,
    ) -> EvalResult:
        from kernelseek_tui.evaluate.api import evaluate

        self._check_files("found before this evaluation, which was not made")
        result = evaluate(
            self.task,
            source,
            sets=sets,
            knobs=knobs,
            device=self.device,
            compare=self.compare,
            timeout_s=self.timeout_s,
            progress=self.progress,
            prestart_next=self.prestart_next,
            pair_with=pair_with,
        )
        # A change made while it ran (a process of the agent's left running) voids it.
        self._check_files("found after this evaluation: its result is void")
        return result

    def _check_files(self, when: str) -> None:
        if self.judge_files is None:
            return
        try:
            self.judge_files.check(when)
        except JudgeFilesChanged as error:
            raise KernelseekError(str(error)) from None


EvaluatorFactory = Callable[..., Evaluator]


def pairs_with_best(evaluator: object, paired_timing: bool | None) -> bool:
    """Whether a session's objective evaluations go to ``evaluator`` paired with the best so far:
    as ``paired_timing`` says, or where it is None (the default), where the evaluator says it
    pairs (``TaskEvaluator``; a stand-in that takes ``pair_with`` may say so too)."""
    if paired_timing is not None:
        return paired_timing
    return getattr(evaluator, "pairs_with_best", False) is True


def load_evaluator_factory(spec: str) -> EvaluatorFactory:
    """``module:function`` -> the function, which is called as ``function(task, **options)``
    and returns an Evaluator (for tests and demos that stand in for the GPU)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise KernelseekError(f"--evaluator wants MODULE:FUNCTION, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise KernelseekError(f"cannot import evaluator module {module_name!r}: {error}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise KernelseekError(f"{module_name!r} has no callable {attr!r}")
    return factory


def candidate_sha(source: bytes, knobs: dict[str, int] | None) -> str:
    """What identifies a candidate: the source's git blob sha, or with knobs a sha over both."""
    blob = git_blob_sha(source)
    if not knobs:
        return blob
    items = ",".join(f"{k}={v}" for k, v in sorted(knobs.items()))
    return hashlib.sha1(f"{blob}\n{items}".encode()).hexdigest()
