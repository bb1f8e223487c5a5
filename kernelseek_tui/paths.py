"""Where things live on disk: the traces root and the files of one session under it.

A session's directory, ``<traces>/<session_id>/``, holds:
  session.json      what the session is (task, agent, model, branch, worktree, pid, status)
  wal.jsonl         the write-ahead log of events not yet in Parquet
  segments/         finished Parquet segments (``*.parquet``; ``*.tmp`` while being written)
  events.parquet    the compacted trace, sorted by seq
  blobs/            content-addressed large payloads the trace rows point to
  inbox.jsonl       the control inbox: human questions, pause, resume, stop
  evals/            the full EvalResult of each ``eval`` event (gzipped JSON), and the results
                    of a batch that finished but are not recorded yet (``pending-<seq>``)
  attached          touched by the app while a person watches (its mtime is the heartbeat)
  engine.log        stdout and stderr of a detached engine
  launch.json       what a detached engine is to do (transient)
  writer.lock       held by the one TraceWriter of the session

Every module names these files through :class:`SessionPaths`, never by their names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kernelseek_tui.errors import KernelseekError

TRACES_ENV = "KERNELSEEK_TRACES"
EXPERIMENT_FILE = "experiment.json"  # marks <traces>/<experiment>/ (see experiment/record.py)
DEFAULT_TRACES = Path("traces")
# Files shipped inside the package: in a checkout, links to the top of the source tree (so the
# recorder writes where git sees it); in an installed wheel, copies (pip install . has no tree).
SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"
DEMO_DIR = (SHIPPED_DIR / "demo").resolve()  # the recorded demo sessions (trace + bundle each)
SHIPPED_REPERTOIRE = (SHIPPED_DIR / "repertoire.toml").resolve()


def traces_root(explicit: str | os.PathLike[str] | None = None, *, must_exist: bool = True) -> Path:
    """The traces root: ``--traces``, else ``$KERNELSEEK_TRACES``, else ``./traces``."""
    raw = explicit if explicit is not None else os.environ.get(TRACES_ENV) or DEFAULT_TRACES
    root = Path(raw).expanduser()
    if must_exist and not root.is_dir():
        raise KernelseekError(f"traces root {str(root)!r} does not exist or is not a directory")
    return root


def reading_root(explicit: str | os.PathLike[str] | None = None) -> tuple[Path, bool]:
    """The traces root of a command that only reads, and whether it is the recorded demo.

    As :func:`traces_root`, except that when no root was named (no ``--traces``, no
    ``$KERNELSEEK_TRACES``) and ``./traces`` holds no session, the demo sessions stand in: the
    README's examples then answer from a fresh clone (or any folder, once installed) instead of
    finding nothing, and a user's own sessions replace them as soon as there is one.
    """
    if explicit is not None or os.environ.get(TRACES_ENV):
        return traces_root(explicit), False
    if has_sessions(DEFAULT_TRACES) or not DEMO_DIR.is_dir():
        return traces_root(), False
    return DEMO_DIR, True


def has_sessions(root: Path) -> bool:
    """Whether ``root`` holds at least one session directory (meta, trace or WAL)."""
    if not root.is_dir():
        return False
    for child in root.iterdir():
        paths = SessionPaths(child)
        if child.is_dir() and (
            paths.meta.is_file() or paths.events.is_file() or paths.wal.is_file()
        ):
            return True
        if (child / EXPERIMENT_FILE).is_file():  # an experiment's sessions lie one level down
            return True
    return False


@dataclass(frozen=True, slots=True)
class SessionPaths:
    """The files of one session directory (see the module docstring)."""

    dir: Path

    @property
    def session_id(self) -> str:
        return self.dir.name

    @property
    def meta(self) -> Path:
        return self.dir / "session.json"

    @property
    def wal(self) -> Path:
        return self.dir / "wal.jsonl"

    @property
    def segments(self) -> Path:
        return self.dir / "segments"

    @property
    def events(self) -> Path:
        return self.dir / "events.parquet"

    @property
    def blobs(self) -> Path:
        return self.dir / "blobs"

    @property
    def inbox(self) -> Path:
        return self.dir / "inbox.jsonl"

    @property
    def evals(self) -> Path:
        return self.dir / "evals"

    def eval_result(self, name: str) -> Path:
        """Where the full result of one ``eval`` event is kept (``name``: ``<seq>-<eval_id>``)."""
        return self.evals / f"{name}.json.gz"

    def pending_result(self, call_seq: int) -> Path:
        """Where a batch's finished result waits until it is recorded."""
        return self.evals / f"pending-{call_seq}.json.gz"

    @property
    def attached(self) -> Path:
        return self.dir / "attached"

    @property
    def engine_log(self) -> Path:
        return self.dir / "engine.log"

    @property
    def launch(self) -> Path:
        return self.dir / "launch.json"

    @property
    def writer_lock(self) -> Path:
        return self.dir / "writer.lock"
