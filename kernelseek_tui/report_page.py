"""The report's HTML page: one file that works offline (the figure inlined as SVG, the heat map
as HTML cells, no script, font or style fetched), to share as it is.

It shows the session's model, cost, tokens and duration; a caveat when the numbers are not
measurements (a scripted or replayed session, a stand-in evaluator); the figure; the
per-scenario heat map of the final candidate against the first and against FA3; the jumps and
the question each followed; every evaluation and question.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelseek_tui.experiment.metrics import SessionMetrics
from kernelseek_tui.paths import SessionPaths


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """What the page's header says of a session."""

    agent: str | None
    model: str | None
    cost_usd: float | None
    input_tokens: int
    output_tokens: int
    active_s: float | None
    end_reason: str | None
    caveat: str | None
    recorded: str | None = None  # what the recording says it is (session.json), shown as is


def session_facts(session_dir: Path, rows: list[dict[str, Any]]) -> SessionFacts:
    meta: dict[str, Any] = {}
    if SessionPaths(session_dir).meta.is_file():
        meta = json.loads(SessionPaths(session_dir).meta.read_text())
    config = meta.get("config") or {}
    caveats = []
    recorded = str(meta.get("recorded") or "")
    if recorded and not recorded.startswith("measured"):  # a measured recording needs none
        caveats.append(recorded)
    if meta.get("agent") == "replay":
        history = (config.get("agent_options") or {}).get("replay_history")
        if isinstance(history, dict):
            caveats.append(
                f"a replay of {history.get('kernel')}'s git history: each committed version "
                "judged again, not an agent at work"
            )
        else:
            caveats.append(
                "a replay: a recorded session's edits judged again, not an agent at work"
            )
    if config.get("evaluator"):
        caveats.append(
            f"judged by a stand-in evaluator ({config['evaluator']}): the speeds are not "
            "measurements"
        )
    messages = [r for r in rows if r["kind"] == "message" and r.get("model")]
    costs = [r["cost_usd"] for r in messages if r.get("cost_usd") is not None]
    return SessionFacts(
        agent=meta.get("agent"),
        model=meta.get("model") or (messages[0]["model"] if messages else None),
        cost_usd=sum(costs) if costs else None,
        input_tokens=sum(
            (r.get("input_tokens") or 0) + (r.get("cache_read_input_tokens") or 0) for r in messages
        ),
        output_tokens=sum(r.get("output_tokens") or 0 for r in messages),
        active_s=(meta.get("stats") or {}).get("active_s"),
        end_reason=meta.get("end_reason"),
        caveat="; ".join(caveats) or None,
        recorded=recorded or None,
    )


def _who(facts: SessionFacts, cost: str) -> str:
    """The agent, and its model, cost and tokens where a model was at work (a tuner or a replay
    calls none: "model -, $0 at list prices" would suggest a free model)."""
    if facts.model is None and not (facts.input_tokens or facts.output_tokens):
        return f"Agent {_cell(facts.agent)}, no model (no tokens, no cost)"
    return (
        f"Agent {_cell(facts.agent)}, model {_cell(facts.model)}; {cost} at list prices; "
        f"{facts.input_tokens} input and {facts.output_tokens} output tokens"
    )


def _heat_cell(value: float | None) -> str:
    """A cell coloured by how far ``value`` (a ratio) is above or below 1."""
    if value is None or not math.isfinite(value) or value <= 0:
        return "<td class=na>-</td>"
    strength = min(1.0, abs(math.log(value)) / math.log(4))
    hue = 130 if value >= 1 else 0
    return f'<td style="background:hsl({hue},60%,{95 - 45 * strength:.0f}%)">{value:.2f}x</td>'


def heat_map(session_dir: Path, metrics: SessionMetrics) -> str:
    """Per scenario: the final candidate's time against the first evaluation's and against
    FA3's, for the scenarios both timed; empty when the results are not stored."""
    from kernelseek_tui.session.eval_files import load_result
    from kernelseek_tui.trace.reader import read_session, table_to_events

    passing = [p.seq for p in metrics.curve if p.passed]
    if len(passing) < 1:
        return ""
    events = {e.seq: e for e in table_to_events(read_session(session_dir)) if e.kind == "eval"}
    first = load_result(session_dir, events[passing[0]]) if passing[0] in events else None
    best_seq = max((p for p in metrics.curve if p.passed), key=lambda p: p.speedup or 0).seq
    final = load_result(session_dir, events[best_seq]) if best_seq in events else None
    if first is None or final is None:
        return ""
    before = {s.name: s for s in first.scenarios}
    rows = []
    for scenario in final.scenarios:
        old = before.get(scenario.name)
        if scenario.ms is None:
            continue
        vs_first = old.ms / scenario.ms if old is not None and old.ms else None
        fa3 = scenario.peers.get("fa3") if scenario.peers else None
        vs_fa3 = fa3.ms / scenario.ms if fa3 is not None and fa3.ms else None
        rows.append(
            f"<tr><td>{html.escape(scenario.name)}</td>{_heat_cell(vs_first)}"
            f"{_heat_cell(vs_fa3)}</tr>"
        )
    if not rows:
        return ""
    return (
        f"<h2>Per scenario: the best candidate (seq {best_seq}) against the first evaluation "
        f"(seq {passing[0]}) and against FA3</h2><table class=heat><tr><th>scenario</th>"
        "<th>vs first</th><th>vs FA3</th></tr>" + "".join(rows) + "</table>"
    )


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return html.escape("" if value is None else str(value))


def page_html(
    session_dir: Path,
    series: Any,
    metrics: SessionMetrics,
    facts: SessionFacts,
    svg: str,
    n_events: int,
) -> str:
    session = html.escape(session_dir.name)
    duration = "-" if facts.active_s is None else f"{facts.active_s / 60:.1f} min"
    cost = "-" if facts.cost_usd is None else f"${facts.cost_usd:.4f}"
    caveat = f"<p class=caveat>Caveat: {html.escape(facts.caveat)}.</p>" if facts.caveat else ""
    if facts.recorded:
        caveat += f"<p>Recorded: {html.escape(facts.recorded)}.</p>"
    fa3 = metrics.final_vs_fa3
    jumps = "".join(
        f"<tr><td>{j.seq}</td><td>{j.tool_calls}</td><td>{j.before:.3f}x</td>"
        f"<td>{j.after:.3f}x</td><td>"
        + (
            f"{_cell(j.question.question_id or j.question.source)}: {_cell(j.question.text)}"
            if j.question is not None
            else "none within the window"
        )
        + "</td></tr>"
        for j in metrics.jump_list
    )
    rows = []
    for row in series.rows:
        if row["kind"] == "eval":
            detail = (
                f"{_cell(row.get('verdict'))} {_cell(row.get('scenarios_passed'))}/"
                f"{_cell(row.get('scenarios_total'))}, speedup {_cell(row.get('speedup'))}, "
                f"vs FA3 {_cell(row.get('vs_fa3'))}"
            )
        else:
            detail = (
                f"<b>{_cell(row.get('question_text'))}</b> [{_cell(row.get('question_id'))}] "
                f"({_cell(row.get('trigger'))}, {_cell(row.get('source'))})"
            )
        rows.append(
            f"<tr><td>{row['seq']}</td><td>{row['tool_calls']}</td>"
            f"<td>{row['kind']}</td><td>{detail}</td></tr>"
        )
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>KernelSeek session {session}</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}}
td,th{{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}}
.caveat{{background:#fff3cd;padding:.5em 1em;border-left:4px solid #e0a800}}
.heat td{{text-align:right}} .na{{color:#999}} svg{{max-width:100%;height:auto}}</style>
</head><body>
<h1>Session {session}</h1>
{caveat}
<p>{_who(facts, cost)}; {duration} of engine time; ended: {_cell(facts.end_reason)}.</p>
<p>{n_events} events, {len(series.eval_calls)} evaluations, {len(series.question_calls)}
questions; best verified speedup {metrics.final_best:.3f}x{
        "" if fa3 is None else f", best vs FA3 {fa3:.3f}x"
    }; {metrics.tool_calls} tool calls.</p>
{svg[svg.find("<svg") :]}
<p>Markers: ▼ a question (its id; the text on hover), ○ a commit, × a failed evaluation.</p>
{heat_map(session_dir, metrics)}
<h2>Jumps and the question before them</h2>
<table><tr><th>eval seq</th><th>tool calls</th><th>before</th><th>after</th>
<th>question within the window</th></tr>{jumps}</table>
<h2>Evaluations and questions</h2>
<table><tr><th>seq</th><th>tool calls</th><th>kind</th><th>what</th></tr>
{"".join(rows)}
</table></body></html>
"""
