"""Bringing a session killed mid-flight back to a consistent state before its agent goes on.

The engine records a ``tool_call`` before running a tool and its ``tool_result`` after, an
``eval`` before committing and the ``commit`` after. A crash between two of those leaves one of
these states, each repaired here, in this order, with new events only (nothing is rewritten):

1. an eval that was to be committed without its ``commit`` event: when the branch has the
   commit (``find_commit_for_seq``) only the event is added; when it has not and the workspace
   still holds that very candidate it is committed now; otherwise an ``error`` event says so.
2. an ``evaluate`` call of a batch (``session.engine.batch``) whose evaluation finished but was not
   recorded (its result waits in ``evals/pending-<seq>.json.gz``): it is recorded now, eval,
   commit and result, as it would have been.
3. a ``tool_call`` without a ``tool_result``: it is *not* run again (it may have done its work)
   but answered with an error result saying the harness restarted; for an evaluation that
   finished, the result carries its summary.
4. a ``decision`` without the question that answers it: the repertoire answers it now.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.session.engine.batch import record_result
from kernelseek_tui.session.engine.public import PublicEngine
from kernelseek_tui.session.eval_files import drop_pending, load_pending, load_result
from kernelseek_tui.session.evaluator import candidate_sha
from kernelseek_tui.session.knobs import read_knobs
from kernelseek_tui.session.slots import SlotRun
from kernelseek_tui.session.tools import ToolError, ToolOutcome
from kernelseek_tui.trace.schema import Event

RESTARTED = (
    "The harness restarted while this call was running, so it has no result and was not run "
    "again. Its effects, if any, are in the workspace: check before relying on them."
)


def reconcile(engine: PublicEngine) -> dict[str, int]:
    """Repair what a crash left (see the module docstring); returns what was done."""
    events = list(engine.past_events)
    done = {
        "commits_recorded": 0,
        "commits_made": 0,
        "evals_recorded": 0,
        "calls_answered": 0,
        "decisions_answered": 0,
    }

    committed_seqs = {e.attrs_dict().get("eval_seq") for e in events if e.kind == "commit"}
    last_question: str | None = None
    for event in events:
        if event.kind == "question" and event.question_text:
            last_question = event.question_text
        if event.kind != "eval":
            continue
        attrs = event.attrs_dict()
        if not attrs.get("will_commit") or event.seq in committed_seqs:
            continue
        new_best = bool(attrs.get("new_best"))
        sha = engine.history.find_commit_for_seq(event.seq)
        if sha is not None:
            candidate = engine.history.candidate_at(sha)
            engine.record_commit(event, sha, candidate, new_best=new_best, recovered=True)
            done["commits_recorded"] += 1
            continue
        result = load_result(engine.session_dir, event)
        if result is not None and _workspace_holds(engine, event, attrs):
            if engine.commit_eval(
                event,
                result,
                attrs.get("knobs") is not None,
                question=last_question,
                new_best=new_best,
            ):
                done["commits_made"] += 1
            continue
        engine.record_error(
            f"the verified candidate of eval seq {event.seq} was not committed before the "
            "harness stopped, and the workspace no longer holds it",
            attrs={"eval_seq": event.seq, "where": "resume"},
        )

    answered = {e.tool_call_id for e in events if e.kind == "tool_result"}
    evals_of_call = {e.parent_event_id: e for e in events if e.kind == "eval"}
    for call in events:
        if call.kind != "tool_call" or call.tool_call_id in answered:
            continue
        if call.event_id not in evals_of_call and _record_pending(engine, call):
            answered.add(call.tool_call_id)
            done["evals_recorded"] += 1

    for call in events:
        if call.kind != "tool_call" or call.tool_call_id in answered:
            continue
        text = RESTARTED
        finished = evals_of_call.get(call.event_id)
        if finished is not None and finished.text:
            text += "\nThe evaluation itself had finished:\n" + finished.text
        engine.record_tool_result(call, ToolOutcome(text, is_error=True), attrs={"restarted": True})
        done["calls_answered"] += 1

    answered_decisions = {
        e.attrs_dict().get("decision_event_id") for e in events if e.kind == "question"
    }
    for decision in events:
        if decision.kind != "decision" or decision.event_id in answered_decisions:
            continue
        ranked = engine.desk.rank(decision.trigger or "manual", engine.state.question_ids)
        if ranked:
            question = ranked[0]
            engine.ask(
                question.text,
                question_id=question.id,
                source="repertoire",
                trigger=decision.trigger,
                decision=decision,
                deliver=False,  # the agent reads it from the trace with everything else
                attrs={"level": question.level, "recovered": True},
            )
            done["decisions_answered"] += 1

    if any(done.values()):
        engine.record(
            "control",
            flush=True,
            role="harness",
            source="harness",
            text="repaired what the crash left: "
            + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in done.items() if v),
            attrs={"action": "reconcile", **done},
        )
    return done


def _record_pending(engine: PublicEngine, call: Event) -> bool:
    """Record a batch call's finished but unrecorded evaluation; False when there is none."""
    if call.tool_name != "evaluate" or not call.attrs_dict().get("batch"):
        return False
    pending = load_pending(engine.session_dir, call.seq)
    if pending is None:
        return False
    try:
        request = engine.prepare_evaluation(call.tool_input_dict())
    except (ToolError, KernelseekError):
        return False
    request = dataclasses.replace(request, identity=pending.identity)
    # A decision moment it might raise is not acted on: the agent was not there to hear it.
    outcome, _ = record_result(
        engine,
        call,
        request,
        pending.result,
        run=SlotRun(device=pending.device),
        batch=call.attrs_dict().get("batch"),
        extra={"recovered": True},
    )
    engine.record_tool_result(call, outcome, attrs={"recovered": True, "device": pending.device})
    drop_pending(engine.session_dir, call.seq)
    return True


def _workspace_holds(engine: PublicEngine, event: Event, attrs: dict[str, Any]) -> bool:
    source = engine.workspace / engine.kernel_path
    try:
        knobs = read_knobs(engine.workspace, engine.task)
        return candidate_sha(source.read_bytes(), knobs) == event.candidate_sha
    except Exception:
        return False
