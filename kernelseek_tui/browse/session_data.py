"""A session loaded for browsing: its meta, its events, its git history, its evaluations."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kernelseek_tui.browse.timeline import commit_link
from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.history import SessionHistory
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.session.eval_files import load_result
from kernelseek_tui.session.meta import SessionMeta, effective_status, read_meta
from kernelseek_tui.trace.reader import read_session_snapshot, table_to_events


@dataclass(slots=True)
class SessionData:
    session_dir: Path
    session_id: str
    meta: SessionMeta | None  # None: a trace without session.json (an imported transcript)
    table: pa.Table
    wal_offset: int
    history: SessionHistory | None
    history_problem: str | None  # why there is no history, in words

    @property
    def status(self) -> str:
        return effective_status(self.meta) if self.meta else "imported"


def resolve_session_dir(path: Path) -> tuple[Path, Path]:
    """``path`` is a session directory or a traces root; returns (session_dir, traces_root).
    A root opens its newest session."""
    path = Path(path).expanduser().resolve()
    if not path.is_dir():
        raise KernelseekError(f"{path} is not a directory")
    if _is_session(path):
        return path, path.parent
    sessions = [p for p in path.iterdir() if p.is_dir() and _is_session(p)]
    if not sessions:
        raise KernelseekError(
            f"{path} holds no session (no events.parquet, wal.jsonl or session.json)"
        )
    newest = max(sessions, key=_created_key)
    return newest, path


def load_session(session_dir: Path) -> SessionData:
    """Read everything the app shows first. Git problems are reported, never raised: a trace
    whose repository is gone still browses."""
    session_dir = Path(session_dir)
    meta = read_meta(session_dir) if SessionPaths(session_dir).meta.is_file() else None
    snapshot = read_session_snapshot(session_dir)
    history: SessionHistory | None = None
    problem: str | None = None
    if meta is None:
        problem = "no session.json: a trace without a git history"
    elif not meta.repo:
        problem = "no git repository recorded for this session"
    else:
        try:
            history = SessionHistory.open(Path(meta.repo), meta.session_id)
        except (KernelseekError, OSError) as error:
            problem = f"git history unavailable: {error}"
    session_id = meta.session_id if meta else session_dir.name
    return SessionData(
        session_dir=session_dir,
        session_id=session_id,
        meta=meta,
        table=snapshot.table,
        wal_offset=snapshot.wal_offset,
        history=history,
        history_problem=problem,
    )


def eval_result_at(session_dir: Path, table: pa.Table, seq: int) -> EvalResult | None:
    """The full EvalResult of the ``eval`` event with this ``seq`` (from evals/), or None."""
    rows = table.filter(pc.equal(table["seq"], seq))
    if rows.num_rows == 0:
        return None
    event = table_to_events(rows)[0]
    if event.kind != "eval":
        return None
    return load_result(session_dir, event)


def result_from_note(history: SessionHistory, sha: str) -> EvalResult | None:
    """The evaluation stored with a commit in refs/notes/kernelseek, or None."""
    try:
        note = history.note(sha)
    except (KernelseekError, OSError):
        return None
    try:
        return EvalResult.from_dict(note) if note else None
    except (TypeError, ValueError, KeyError):
        return None


def _is_session(path: Path) -> bool:
    paths = SessionPaths(path)
    return paths.meta.is_file() or paths.events.is_file() or paths.wal.is_file()


def _created_key(path: Path) -> tuple[str, float]:
    meta = SessionPaths(path).meta
    try:
        created = str(json.loads(meta.read_text()).get("created", ""))
    except (OSError, ValueError):
        created = ""
    return created, path.stat().st_mtime


def elapsed_s(table: pa.Table, *, live: bool) -> float:
    """Wall time from the first event to the last (to now while live)."""
    if table.num_rows == 0:
        return 0.0
    first = table["ts"][0].as_py().timestamp()
    last = time.time() if live else table["ts"][-1].as_py().timestamp()
    return max(0.0, last - first)


def counts(table: pa.Table) -> dict[str, Any]:
    """Numbers for the header: tool calls, evals, questions, best speedup, tokens, cost."""
    kinds = table["kind"]
    out: dict[str, Any] = {
        "tool_calls": pc.sum(pc.equal(kinds, "tool_call")).as_py() or 0,
        "evals": pc.sum(pc.equal(kinds, "eval")).as_py() or 0,
        "questions": pc.sum(pc.equal(kinds, "question")).as_py() or 0,
    }
    # An evaluation attached to a commit that already held its code made no commit.
    commit_attrs = table.filter(pc.equal(kinds, "commit"))["attrs"].to_pylist()
    out["commits"] = sum(1 for attrs in commit_attrs if not commit_link(attrs)[1])
    best = pc.max(table["best_speedup"]).as_py() if table.num_rows else None
    out["best_speedup"] = best
    tokens = 0
    for column in (
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ):
        tokens += pc.sum(table[column]).as_py() or 0
    out["tokens"] = tokens
    out["cost_usd"] = pc.sum(table["cost_usd"]).as_py() if table.num_rows else None
    return out
