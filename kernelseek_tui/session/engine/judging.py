"""The ``evaluate`` tool: the candidate judged by the original task, the ``eval`` event, and
the commit of a verified candidate followed by its ``commit`` event."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from kernelseek_tui.decisions import DecisionMoment
from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.noise import is_new_best
from kernelseek_tui.evaluate.paired import PairedKernel, is_new_best_paired
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.history import Candidate
from kernelseek_tui.session.engine import evaluation
from kernelseek_tui.session.engine.core import EngineCore
from kernelseek_tui.session.engine.evaluation import Committed
from kernelseek_tui.session.eval_files import save_result
from kernelseek_tui.session.evaluator import PairingEvaluator, candidate_sha, pairs_with_best
from kernelseek_tui.session.knobs import (
    KNOBS_FILE,
    check_knobs,
    parse_knobs,
    read_knobs,
    write_knobs,
)
from kernelseek_tui.session.state import best_after
from kernelseek_tui.session.tools import ToolError, ToolOutcome
from kernelseek_tui.task import Task
from kernelseek_tui.trace.schema import Event


@dataclass(frozen=True, slots=True)
class EvalRequest:
    """One ``evaluate`` call, checked: what to judge, on which sets, how to tell it."""

    source: Path
    sets: list[str] | None
    set_name: str | None  # the set the call named, None for the objective
    objective: bool
    what: str
    knobs: dict[str, int] | None  # None: no knobs.json and none given (the task's defaults)
    knobs_given: bool  # the call named its knobs: they are written to knobs.json
    identity: str  # the eval event's candidate_sha


class JudgingMixin(EngineCore):
    """Evaluations and commits."""

    def _evaluate(
        self, args: dict[str, Any], call: Event
    ) -> tuple[ToolOutcome, DecisionMoment | None]:
        request = self.prepare_evaluation(args)
        if request.knobs_given:
            write_knobs(self._workspace.root, request.knobs or {})
        pair_with = self.paired_best() if request.objective else None
        try:
            if pair_with is None:
                result = self.evaluator(request.source, request.sets, knobs=request.knobs or None)
            else:
                # Paired only where the evaluator pairs (TaskEvaluator does) or paired_timing
                # promised it does (a stand-in must then take pair_with).
                pairing = cast(PairingEvaluator, self.evaluator)
                result = pairing(
                    request.source, request.sets, knobs=request.knobs or None, pair_with=pair_with
                )
        except KernelseekError as error:
            raise ToolError(f"the evaluation could not be made: {error}") from None
        if self.gpus:
            self.note_gpu(result)
        extra = {"slot_device": self.gpus[0]} if self.gpus else None
        return self.record_evaluation(
            call, request, result, extra=extra, paired_with_best=pair_with is not None
        )

    def paired_best(self) -> PairedKernel | None:
        """Where the session pairs (``pairs_with_best``: by default wherever its evaluator
        can), the session's best so far (its last new best; before there is one, the session's
        starting point) as files of its own under the session directory; None otherwise, or
        where its commit cannot be read (the evaluation then goes unpaired).

        The starting point too: its figures otherwise come from a cache timed in another run
        (measured on an H100, 2026-12-06: the starting kernel's own knobs read 1.038x faster
        than itself that way, the drift between runs and the hand-overs of two processes), and
        a first candidate is a new best only by what it gains on it in the same run."""
        sha = self.state.best_commit or self.history.base_sha
        # Not with GPU slots: their evaluations run side by side, the best may change under
        # one, and their evaluator (session/slots.py) does not pair.
        if self.gpus:
            return None
        if not pairs_with_best(self.evaluator, self.config.paired_timing):
            return None
        dest = self.paths.dir / "paired-best" / sha
        # A commit's files never change: exported once per best, not once per evaluation (and
        # a second export into the same place would trip over the links the first wrote).
        exported = dest / ".exported"  # written once the export is whole
        try:
            if exported.is_file():
                changed = self.history.export_changed(sha, dest)
                if changed:
                    # The session directory is the agent's shell's to write, as is any file of
                    # the user's: a best made slower on disk would make the next candidate a
                    # paired new best. Exported afresh from its commit, and said.
                    self.record_error(
                        f"the best so far ({sha[:10]}), exported for pairing, had changed on "
                        f"disk ({', '.join(changed[:3])}): exported again from its commit",
                        attrs={"changed": changed},
                    )
                    shutil.rmtree(dest)
            if exported.is_file():
                # Where export_task puts it, not where the marker says (a file anyone can edit).
                task_dir = dest / self.history.task_subdir
            else:
                task_dir = self.history.export_task(sha, dest)
                exported.write_text(task_dir.relative_to(dest).as_posix())
            knobs = read_knobs(task_dir, self._task)
        except KernelseekError as error:
            self.record_error(f"could not pair with the best ({sha[:10]}): {error}")
            return None
        source = task_dir / self._kernel_path
        if not source.is_file():
            # A starting point without the kernel (the agent is to write it): nothing to pair.
            return None
        return PairedKernel(source, knobs)

    def prepare_evaluation(self, args: dict[str, Any]) -> EvalRequest:
        """What an ``evaluate`` call asks for, checked; raises ToolError for a bad request."""
        task = self._task
        set_name = args.get("set")
        if set_name is not None and (not isinstance(set_name, str) or set_name not in task.sets):
            known = ", ".join(sorted(task.sets))
            raise ToolError(f"unknown scenario set {set_name!r}; the sets are {known}")
        root = self._workspace.root
        explicit = args.get("knobs") is not None
        try:
            knobs = check_knobs(task, args["knobs"]) if explicit else read_knobs(root, task)
        except KernelseekError as error:
            raise ToolError(str(error)) from None
        source = root / self._kernel_path
        if not source.is_file():
            raise ToolError(f"the kernel {self._kernel_path!r} is missing from the workspace")
        text = source.read_bytes()
        identity = candidate_sha(text, knobs)
        override = self.objective_sets
        if set_name is None:
            sets, objective = override, True
        else:
            sets, objective = [set_name], override == [set_name]
        return EvalRequest(
            source=self._judged_copy(text, identity),
            sets=sets,
            set_name=set_name,
            objective=objective,
            what=_describe_sets(task, sets) if objective else f"set {set_name!r}",
            knobs=knobs,
            knobs_given=explicit,
            identity=identity,
        )

    def _judged_copy(self, text: bytes, identity: str) -> Path:
        """The kernel's bytes as read for this evaluation, in a file of the session's own
        (``judged/<identity>/``, outside the workspace): the judge reads exactly the bytes the
        identity names, however the workspace's file changes while it runs."""
        copy = self.paths.dir / "judged" / identity / Path(self._kernel_path).name
        if not copy.is_file() or copy.read_bytes() != text:
            copy.parent.mkdir(parents=True, exist_ok=True)
            partial = copy.with_name(copy.name + ".partial")
            partial.write_bytes(text)
            partial.replace(copy)
        return copy

    def record_evaluation(
        self,
        call: Event,
        request: EvalRequest,
        result: EvalResult,
        *,
        duration_ms: float | None = None,
        extra: dict[str, Any] | None = None,
        paired_with_best: bool = False,
    ) -> tuple[ToolOutcome, DecisionMoment | None]:
        """The ``eval`` event of ``call``'s result, the commit it earns, the agent's text.
        ``paired_with_best``: the evaluation was asked to pair with the session's best; only
        then is a paired figure the verdict's (one over anything else, the starting kernel
        timed in turn, say, is not over the best)."""
        knobs, objective, what = request.knobs, request.objective, request.what
        verified = result.verified
        speedup = evaluation.finite_or_none(result.summary.geomean_speedup)
        vs_fa3 = evaluation.finite_or_none(result.summary.vs_fa3)
        previous_best = self.state.best_speedup
        # Every verified evaluation of the objective is kept in git; faster than the starting
        # kernel (1.0x by definition) and every verified candidate before it is a new best.
        will_commit = objective and verified
        margin = self.decision_config.new_best_margin  # without measured noise only
        # Timed interleaved with the best so far, the candidate is judged against it directly
        # (the gain outside the spread of that same run); otherwise against the best's figure.
        paired_speedup = paired_spread = None
        if paired_with_best:
            paired_speedup = evaluation.finite_or_none(result.summary.paired_speedup)
            paired_spread = evaluation.finite_or_none(result.summary.paired_spread)
        paired_verdict: bool | None = None  # the new-best verdict where judged paired
        if paired_speedup is not None and paired_spread is not None:
            new_best = will_commit and is_new_best_paired(paired_speedup, paired_spread)
            paired_verdict = new_best
        else:
            new_best = will_commit and is_new_best(
                speedup,
                previous_best,
                margin,
                noise=result.summary.noise,
                previous_noise=self.state.best_noise,
            )
        best = previous_best
        if will_commit:
            best = best_after(
                previous_best,
                speedup,
                paired_new_best=paired_verdict,
            )
        result_file = save_result(self.paths.dir, f"{call.seq}-{result.eval_id}", result)
        eval_event = self._append(
            "eval",
            flush=True,
            eval_id=result.eval_id,
            candidate_sha=request.identity,
            verdict=result.verdict,
            scenarios_passed=result.summary.passed,
            scenarios_total=result.summary.total,
            speedup=speedup,
            best_speedup=best,
            vs_fa3=vs_fa3,
            text=evaluation.summary_text(result, what=what, best=best),
            parent_event_id=call.event_id,
            turn=call.turn,
            duration_ms=duration_ms,
            attrs={
                **evaluation.summary_attrs(result),
                "objective": objective,
                "verified": verified,
                "requested_set": request.set_name,
                "knobs": knobs,
                "will_commit": will_commit,
                "new_best": new_best,
                # Whether the verdict was the paired rule's (a paired figure over the best):
                # a reader replaying the session must not take one over anything else for it.
                "judged_paired": paired_verdict is not None,
                "result_file": result_file,
                "tool_call_id": call.tool_call_id,
                **(extra or {}),
            },
        )
        committed: Committed | None = None
        not_committed = None
        if will_commit:
            committed = self.commit_eval(eval_event, result, knobs is not None, new_best=new_best)
        elif verified:
            not_committed = "not committed: only an evaluation of the objective verifies"
        self._touch_meta(force=True)
        text = evaluation.summary_text(
            result, what=what, best=best, committed=committed, not_committed=not_committed
        )
        moment = None
        if objective and self._decisions_enabled:
            moment = self.detector.observe_eval(
                result.verdict,
                speedup,
                result.summary.noise,
                paired_new_best=paired_verdict,
            )
        return ToolOutcome(text, data={"result": result, "committed": committed}), moment

    def commit_eval(
        self,
        eval_event: Event,
        result: Any,
        with_knobs: bool,
        *,
        question: str | None = None,
        new_best: bool = False,
    ) -> Committed | None:
        """Commit the workspace candidate of ``eval_event`` (or attach the evaluation to the
        commit that already holds the same code) and record the ``commit`` event."""
        root = self._workspace.root
        paths = [root / self._kernel_path]
        if with_knobs or (root / KNOBS_FILE).exists():
            paths.append(root / KNOBS_FILE)
        try:
            sha = self.history.commit_candidate(
                paths,
                result,
                seq=eval_event.seq,
                question=question if question is not None else self.state.last_question,
                new_best=new_best,
                check_staged=self._judged_check(eval_event, paths),
            )
            candidate = self.history.candidate_at(sha)
        except KernelseekError as error:
            self.record_error(
                f"could not commit the candidate of eval seq {eval_event.seq}: {error}",
                attrs={"eval_seq": eval_event.seq},
            )
            return None
        attrs = self.record_commit(eval_event, sha, candidate, new_best=new_best).attrs_dict()
        return Committed(attrs["n"], sha, attrs["attached"], attrs["new_best"])

    def _judged_check(
        self, eval_event: Event, paths: list[Path]
    ) -> Callable[[dict[Path, bytes | None]], str | None] | None:
        """What a commit of ``eval_event``'s candidate must hold: the kernel and knobs whose
        identity the evaluation recorded (``candidate_sha``), as git staged them. A file changed
        after the judge read it (a process the agent left running), or changed by git's own
        filters on the way in (a ``.gitattributes`` of the agent's: ``ident``, ``filter``,
        ``eol``), would otherwise be committed as verified without ever being judged."""
        kernel, knobs_path = paths[0], self._workspace.root / KNOBS_FILE
        judged = eval_event.candidate_sha
        if not judged:
            return None  # an evaluation recorded before identities were: nothing to check by

        refused = (
            f"the workspace's {self._kernel_path} (and knobs) as git would commit them are "
            f"not the candidate the evaluation judged ({judged[:10]}): changed since the "
            "judge read it, or changed by git's filters (.gitattributes)"
        )

        def check(staged: dict[Path, bytes | None]) -> str | None:
            source = staged.get(kernel)
            knobs_bytes = staged.get(knobs_path)
            try:
                knobs = None if knobs_bytes is None else parse_knobs(knobs_bytes, self._task)
            except KernelseekError:
                return refused  # no knobs it could have been judged with
            if source is not None and candidate_sha(source, knobs) == judged:
                return None
            return refused

        return check

    def record_commit(
        self,
        eval_event: Event,
        sha: str,
        candidate: Candidate | None,
        *,
        new_best: bool = False,
        **extra: Any,
    ) -> Event:
        """The ``commit`` event of ``eval_event``: the ``candidate`` committed from it, or one
        that already held the same code (or the start commit: None), which the evaluation was
        attached to. Only a new candidate is a new best: the same code timed again is not."""
        number = candidate.n if candidate else None
        attached = candidate is None or candidate.seq != eval_event.seq
        new_best = new_best and not attached
        what = f"candidate {number}" if number else "the start commit"
        if attached:
            what += " evaluated again, code unchanged"
        text = f"{what}: {evaluation.fmt_ratio(eval_event.speedup)} ({sha[:10]})"
        if new_best:
            text += ", a new best"
        return self._append(
            "commit",
            flush=True,
            git_sha=sha,
            branch=self.history.branch,
            candidate_sha=eval_event.candidate_sha,
            eval_id=eval_event.eval_id,
            speedup=eval_event.speedup,
            vs_fa3=eval_event.vs_fa3,
            scenarios_passed=eval_event.scenarios_passed,
            scenarios_total=eval_event.scenarios_total,
            parent_event_id=eval_event.event_id,
            text=text,
            attrs={
                "eval_seq": eval_event.seq,
                "n": number,
                "speedup": eval_event.speedup,
                "attached": attached,
                "new_best": new_best,
                **extra,
            },
        )


def _describe_sets(task: Task, sets: list[str] | None) -> str:
    if sets is None:
        names = ", ".join(task.objective_sets)
        extra = f" + {task.objective_random} fresh random" if task.objective_random else ""
        return f"the objective ({names}{extra})"
    return f"the objective ({', '.join(sets)})"
