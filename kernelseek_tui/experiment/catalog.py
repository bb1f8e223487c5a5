"""What can be compared under a traces root, as `ls` lists it: each experiment followed by its
sessions (with their arm), then the sessions on their own. The app's compare screen offers
these; every entry's ``ref`` is what ``comparison.resolve_targets`` takes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelseek_tui.experiment.record import list_experiments
from kernelseek_tui.session.meta import SessionListing, list_sessions


@dataclass(frozen=True, slots=True)
class Comparable:
    """One line of the list: an experiment, or a session (inside one when ``experiment``)."""

    ref: str  # the directory, as resolve_targets takes it
    kind: str  # "experiment" | "session"
    name: str
    arm: str | None  # a session's arm (its experiment's, else its questions mode)
    status: str
    best_speedup: float | None
    experiment: str | None = None
    sessions: int = 0  # an experiment's planned sessions

    @property
    def key(self) -> str:
        """Unique among the entries of one root (an id may recur in two experiments)."""
        return self.ref


def comparables(root: Path) -> list[Comparable]:
    """Experiments first (each followed by its sessions), then the sessions on their own."""
    entries: list[Comparable] = []
    for experiment_dir, record, status in list_experiments(root):
        entries.append(
            Comparable(str(experiment_dir), "experiment", record.name, None, status, None,
                       sessions=len(record.sessions))
        )  # fmt: skip
        arm_of = record.arm_of()
        for listing in list_sessions(experiment_dir):
            entries.append(_session(listing, arm_of.get(listing.meta.session_id), record.name))
    for listing in list_sessions(root):
        entries.append(_session(listing, None, None))
    return entries


def _session(listing: SessionListing, arm: str | None, experiment: str | None) -> Comparable:
    meta = listing.meta
    best = meta.stats.get("best_speedup")
    mode = str(meta.config.get("questions_mode", "repertoire"))
    return Comparable(
        ref=str(listing.dir),
        kind="session",
        name=meta.session_id,
        arm=arm if arm is not None else mode,
        status=listing.status,
        best_speedup=float(best) if isinstance(best, int | float) else None,
        experiment=experiment,
    )


def comparison_root(path: Path) -> Path:
    """The traces root to list from a session's root: an experiment's directory stands for the
    root above it (a session opened inside an experiment should see its neighbours' arms)."""
    from kernelseek_tui.experiment.record import is_experiment_dir

    return path.parent if is_experiment_dir(path) else path


def picked_refs(root: Path, refs: list[str]) -> list[str]:
    """The catalog entries ``refs`` name (experiment names or directories, session ids,
    prefixes or directories), as their ``ref``: what a list of ``comparables(root)`` ticks."""
    from kernelseek_tui.experiment.record import is_experiment_dir
    from kernelseek_tui.session.meta import find_session

    picked = []
    for ref in refs:
        as_path = Path(ref).expanduser()
        experiment_dir = as_path if is_experiment_dir(as_path) else root / ref
        if is_experiment_dir(experiment_dir):
            picked.append(str(experiment_dir.resolve()))
        else:
            picked.append(str(find_session(root, ref)))
    return picked
