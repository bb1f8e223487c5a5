"""What a session recorded on the GPU box did, printed for the note that brings it back: its
trace's events by kind, each evaluation (the version or knobs it judged, verdict, speedup, x FA3,
seconds), its commits and errors, then its branch's log and the evaluation note of each commit.

    python3 scripts/session_summary.py TRACES_DIR SESSION_ID REPO BRANCH

BRANCH may be a range (``BASE..BRANCH``): the log and notes then show the session's own commits
only, where its branch grew from a long history.

Used by scripts/gpu_tuner_session.sh and scripts/gpu_history_session.sh. Needs pyarrow and git
only (no textual, duckdb or anthropic).
"""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kernelseek_tui.trace.reader import read_session, table_to_events  # noqa: E402
from kernelseek_tui.trace.schema import Event  # noqa: E402


def what_was_judged(call: Event | None) -> str:
    """The replayed version (a history replay) or the knobs (a tuner) an evaluation judged."""
    if call is None:
        return "?"
    attrs = call.attrs_dict()
    if attrs.get("replayed_version"):
        commit = str(attrs.get("replayed_commit") or "")[:10]
        return f"{attrs['replayed_version']} ({commit})"
    return json.dumps(call.tool_input_dict().get("knobs"))


def print_trace(session_dir: Path) -> None:
    events = table_to_events(read_session(session_dir))
    if not events:
        print("no events")
        return
    seqs = [e.seq for e in events]
    print(f"{len(events)} events; seq 0..{seqs[-1]}; contiguous: {seqs == list(range(len(seqs)))}")
    for kind, count in sorted(collections.Counter(e.kind for e in events).items()):
        print(f"  {kind:12s} {count}")
    calls = {e.event_id: e for e in events if e.kind == "tool_call"}
    results = {e.tool_call_id: e for e in events if e.kind == "tool_result"}
    print("evaluations: what was judged -> verdict passed/total, speedup, vs fa3, seconds")
    for e in events:
        if e.kind == "question":
            print(f"  [{e.seq}] question {e.question_id} ({e.source}, {e.trigger})")
        if e.kind != "eval":
            continue
        call = calls.get(e.parent_event_id)
        result = results.get(call.tool_call_id) if call else None
        seconds = f"{result.duration_ms / 1000:.1f}" if result and result.duration_ms else "?"
        speed = "n/a" if e.speedup is None else f"{e.speedup:.3f}x"
        fa3 = "n/a" if e.vs_fa3 is None else f"{e.vs_fa3:.3f}x"
        print(
            f"  [{e.seq}] {what_was_judged(call)} -> {e.verdict} {e.scenarios_passed}/"
            f"{e.scenarios_total}, speedup {speed}, vs fa3 {fa3}, {seconds} s"
        )
        attrs = e.attrs_dict()
        for reason in attrs.get("reasons", [])[:3]:
            print(f"        {reason}")
        summary = attrs.get("summary") or {}
        peers = summary.get("absent_peers") or {}
        if peers:
            print(f"        peers absent: {peers}")
        # Timed beside the session's best so far (paired timing): that gain and its spread.
        if summary.get("paired_speedup") is not None:
            spread, handover = summary.get("paired_spread"), summary.get("paired_handover")
            spread_text = f"{spread:.4f}" if isinstance(spread, float) else str(spread)
            of_it = f" (hand-overs {handover:.4f})" if isinstance(handover, float) else ""
            print(
                f"        paired with the best so far: {summary['paired_speedup']:.4f}x, "
                f"spread {spread_text}{of_it}; new best: {attrs.get('new_best')}"
            )
    for e in events:
        if e.kind == "commit":
            print(f"  commit {e.git_sha[:10]} {e.text}")
        elif e.kind == "error":
            print(f"  error [{e.seq}]: {(e.text or '').strip().splitlines()[-1][:300]}")
    print("end:", events[-1].text)


def git(repo: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)


def print_branch(repo: str, branch: str) -> None:
    print(f"== git log {branch} (first parent, with trailers)")
    log_format = "--format=%h %s%n%(trailers:only,unfold)"
    print(git(repo, "log", "--first-parent", log_format, branch).stdout)
    print("== notes (evaluation summaries) under refs/notes/kernelseek")
    for sha in git(repo, "rev-list", "--first-parent", branch).stdout.split():
        note = git(repo, "notes", "--ref=refs/notes/kernelseek", "show", sha)
        if note.returncode != 0:
            continue
        data = json.loads(note.stdout)
        s = data["summary"]
        print(
            f"{sha[:10]} {data['verdict']} {s['passed']}/{s['total']} speedup "
            f"{s['geomean_speedup']} peers {s.get('vs_peers')} baseline "
            f"{s.get('baseline_timing')} device {data.get('device', {}).get('name')}"
        )


def main() -> int:
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    traces, session, repo, branch = sys.argv[1:]
    print("== trace summary")
    print_trace(Path(traces) / session)
    print()
    print_branch(repo, branch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
