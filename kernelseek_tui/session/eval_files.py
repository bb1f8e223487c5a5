"""The full evaluation results kept beside a session's trace, under ``evals/``.

An ``eval`` event carries the summary; the whole ``EvalResult`` (every scenario, hundreds per
evaluation, thousands of evaluations per session) is one gzipped JSON file the event names in
its attrs ``result_file``. A batch (``session.engine.batch``) also keeps each result that
finished while an earlier call still ran as ``pending-<call seq>`` until it is recorded, so a
crash loses nothing that was judged.

The engine writes these files and the readers (the app, ``bisect``) read them: this module sits
below both, so that a reader never imports the engine.
"""

from __future__ import annotations

import contextlib
import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.paths import SessionPaths
from kernelseek_tui.trace.schema import Event


@dataclass(frozen=True, slots=True)
class PendingResult:
    """A batch call's result that finished but was not recorded yet."""

    result: EvalResult
    identity: str  # the candidate_sha its eval event will carry
    device: str | None  # the GPU of the slot that judged it


def save_result(session_dir: Path, name: str, result: EvalResult) -> str:
    """Write the full result of one eval event; returns its path relative to the session
    directory, for the event's attrs ``result_file``."""
    paths = SessionPaths(Path(session_dir))
    path = paths.eval_result(name)
    path.parent.mkdir(exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(result.to_json())
    return path.relative_to(paths.dir).as_posix()


def load_result(session_dir: Path, event: Event) -> EvalResult | None:
    """The full EvalResult an ``eval`` event points to (attrs ``result_file``), or None."""
    name = event.attrs_dict().get("result_file")
    if not name:
        return None
    path = Path(session_dir) / name
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as handle:
            return EvalResult.from_json(handle.read())
    except (OSError, ValueError, TypeError):
        return None


def save_pending(session_dir: Path, call_seq: int, pending: PendingResult) -> None:
    """Keep a batch call's finished result until it is recorded."""
    path = SessionPaths(Path(session_dir)).pending_result(call_seq)
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_suffix(".tmp")
    payload = {
        "identity": pending.identity,
        "device": pending.device,
        "result": pending.result.to_dict(),
    }
    with gzip.open(tmp, "wt", encoding="utf-8") as handle:
        json.dump(payload, handle)
    tmp.replace(path)  # whole or absent: a crash mid-write leaves no half file behind


def load_pending(session_dir: Path, call_seq: int) -> PendingResult | None:
    """The kept result of a batch call, or None when there is none (or it is unreadable)."""
    path = SessionPaths(Path(session_dir)).pending_result(call_seq)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
        return PendingResult(
            EvalResult.from_dict(data["result"]), str(data["identity"]), data.get("device")
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def drop_pending(session_dir: Path, call_seq: int) -> None:
    """Forget a batch call's kept result once its events are in the trace."""
    with contextlib.suppress(OSError):
        SessionPaths(Path(session_dir)).pending_result(call_seq).unlink(missing_ok=True)
