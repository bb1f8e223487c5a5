"""Refusing a bisect whose good revision is not good under the bisect's own rule.

A binary search takes its endpoints as given. When the rule makes the good one bad (``--metric
speedup --threshold 1.5`` from the start commit, which is the starting kernel at 1.0x), every
answer it then gives is wrong while looking right. So the good revision is checked first: by
what the session recorded (free, no GPU) and then by judging it the way the candidates will be.

A search for the first candidate that *meets* the rule (``first_good``: a climb, "which version
first beat FA3?") checks the opposite: its older end must fall short of the rule.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.history.bisect import IsGood, verdict_of

if TYPE_CHECKING:
    from kernelseek_tui.history.session import SessionHistory


def recorded_metric(history: SessionHistory, sha: str, metric: str) -> float | None:
    """What the session recorded for ``metric`` at commit ``sha``, when it recorded one.

    The start commit holds the starting kernel, whose speedup over itself is 1.0 by definition;
    a candidate's figures are in its commit trailers.
    """
    if sha == history.base_sha:
        return 1.0 if metric == "speedup" else None
    candidate = history.candidate_at(sha)
    if candidate is None:
        return None
    return {"speedup": candidate.speedup, "vs_fa3": candidate.vs_fa3}.get(metric)


def check_recorded_good(
    history: SessionHistory,
    good: str,
    *,
    metric: str | None,
    threshold: float | None,
    first_good: bool = False,
) -> None:
    """Raise :class:`KernelseekError` when what the session recorded at ``good`` already
    fails the metric rule, or with ``first_good`` already meets it (nothing is evaluated:
    this works on any machine)."""
    if metric is None or threshold is None:
        return
    sha = history.resolve(good)
    value = recorded_metric(history, sha, metric)
    if value is None:
        return
    if first_good and value >= threshold:
        raise KernelseekError(
            f"the older revision ({_label(history, sha)}) recorded {metric} {value:.3f}, "
            f"already at the threshold {threshold:g}: there is no climb to it from there; give "
            "--good a revision that falls short of it"
        )
    if not first_good and value < threshold:
        raise KernelseekError(
            f"the good revision ({_label(history, sha)}) recorded {metric} {value:.3f}, below "
            f"the threshold {threshold:g}: it is bad under this rule; give --good a revision "
            "that meets it"
        )


def confirm_good(
    history: SessionHistory,
    good: str,
    is_good: IsGood,
    say: Callable[[str], None] | None = None,
    *,
    first_good: bool = False,
) -> None:
    """Judge ``good`` the way the candidates will be; raise :class:`KernelseekError` unless it
    is good (a skip is refused too: a search from an unknown start proves nothing). With
    ``first_good``, ``is_good`` is the search's inverted rule (:func:`inverted`): good there
    means short of the user's rule, and the messages say so."""
    sha = history.resolve(good)
    label = _label(history, sha)
    end = "the older revision" if first_good else "the good revision"
    if say is not None:
        say(f"bisect: judging {end} ({label}) first")
    with tempfile.TemporaryDirectory(prefix="kernelseek-bisect-") as tmp:
        verdict, reason = verdict_of(is_good(sha, history.export_task(sha, Path(tmp))))
    if verdict == "bad":
        if first_good:
            raise KernelseekError(
                f"{end} ({label}) already meets the rule when judged again: there is no climb "
                "to it from there; give --good a revision that falls short of it"
            )
        raise KernelseekError(
            f"{end} ({label}) is bad when judged under this rule; give --good a "
            "revision that passes it"
        )
    if verdict == "skip":
        raise KernelseekError(f"{end} ({label}) could not be judged: {reason or 'no reason given'}")


def _label(history: SessionHistory, sha: str) -> str:
    if sha == history.base_sha:
        return f"the start {sha[:10]}"
    candidate = history.candidate_at(sha)
    return f"candidate {candidate.n} {sha[:10]}" if candidate else sha[:10]
