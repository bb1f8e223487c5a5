"""The experiments under a traces root, for the store: their sessions' directories (so those
sessions join the root's ``events`` view) and the ``experiments`` view, one row per planned
session.

An experiment is a directory holding ``experiment.json`` with its sessions one level down
(``<root>/<experiment>/<session_id>/``; see ``experiment/record.py``, which writes it). The
trace sits below ``experiment`` in the layers, so the file is read here as plain JSON: only
``name`` and ``sessions[].session_id/arm`` are used, and a session's ``session.json`` gives its
questions mode, agent and model.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pyarrow as pa

from kernelseek_tui.paths import EXPERIMENT_FILE, SessionPaths

log = logging.getLogger("kernelseek_tui.trace")

EXPERIMENT_SESSIONS_SCHEMA = pa.schema(
    [
        ("experiment", pa.string()),
        ("arm", pa.string()),
        ("session_id", pa.string()),
        ("questions_mode", pa.string()),
        ("agent", pa.string()),
        ("model", pa.string()),
        ("dir", pa.string()),
    ]
)

# One row per planned session, numbers read the way `kernelseek compare` reads them: the best
# speedup of the verified objective evaluations (1.0, the starting kernel, when none beat it):
# the engine's own record of it where the trace has one (`best_speedup`; judged paired, the
# candidate it kept, not the highest unpaired figure), else the highest; that best's own vs FA3,
# tool calls that ran (a skipped call is not one), new commits (not an evaluation attached to
# the commit it re-measured), dollars and the wall time of the trace. A planned session not
# started yet has its row with no numbers.
EXPERIMENTS_VIEW = """
CREATE VIEW _experiment_events AS
SELECT e.*,
       e.kind = 'eval' AND e.verdict = 'pass' AND isfinite(e.speedup)
         AND coalesce(TRY_CAST(json_extract(e.attrs, '$.objective') AS BOOLEAN), true)
         AND coalesce(TRY_CAST(json_extract(e.attrs, '$.verified') AS BOOLEAN), true)
         AS verified_objective
FROM events AS e
WHERE e.session_id IN (SELECT session_id FROM _experiment_sessions);

-- Per session: the engine's last recorded best, whether any evaluation was judged paired (then
-- no record means no candidate kept yet, not a trace without records), and the fastest.
CREATE VIEW _experiment_best AS
SELECT session_id,
       arg_max(best_speedup, seq) FILTER (
           WHERE verified_objective AND isfinite(best_speedup)) AS recorded,
       coalesce(bool_or(verified_objective AND TRY_CAST(
           json_extract_string(attrs, '$.summary.paired_speedup') AS DOUBLE) IS NOT NULL),
           false) AS paired,
       max(speedup) FILTER (WHERE verified_objective) AS fastest
FROM _experiment_events
GROUP BY session_id;

CREATE VIEW experiments AS
SELECT x.experiment, x.arm, x.session_id, x.questions_mode, s.status,
       CASE WHEN count(e.seq) > 0 THEN greatest(1.0, coalesce(
           any_value(b.recorded), CASE WHEN any_value(b.paired) THEN 1.0 END,
           any_value(b.fastest), 1.0)) END AS best_speedup,
       -- that best's own vs FA3, the first of equals (not the highest ratio any evaluation
       -- gave: that would pick whichever timed FA3 slowest); where recorded, of the
       -- evaluation that set the record
       CASE WHEN any_value(b.recorded) IS NOT NULL THEN arg_min(e.vs_fa3, e.seq) FILTER (
                WHERE e.verified_objective AND isfinite(e.vs_fa3)
                  AND e.speedup = e.best_speedup AND e.speedup = b.recorded)
            WHEN NOT coalesce(any_value(b.paired), false) THEN arg_max(
                e.vs_fa3, (e.speedup, -e.seq)) FILTER (WHERE e.verified_objective
                AND isfinite(e.vs_fa3) AND isfinite(e.speedup))
       END AS vs_fa3,
       count(*) FILTER (WHERE e.kind = 'tool_call' AND NOT coalesce(
           TRY_CAST(json_extract(e.attrs, '$.skipped') AS BOOLEAN), false)) AS tool_calls,
       count(*) FILTER (WHERE e.kind = 'eval') AS evals,
       count(*) FILTER (WHERE e.kind = 'question') AS questions,
       count(*) FILTER (WHERE e.kind = 'commit' AND NOT coalesce(
           TRY_CAST(json_extract(e.attrs, '$.attached') AS BOOLEAN), false)) AS commits,
       sum(e.cost_usd) FILTER (WHERE e.kind = 'message') AS cost_usd,
       (epoch_us(max(e.ts)) - epoch_us(min(e.ts))) / 1e6 AS wall_s,
       min(e.ts) AS started,
       x.agent, x.model, x.dir
FROM _experiment_sessions AS x
LEFT JOIN _experiment_events AS e ON e.session_id = x.session_id
LEFT JOIN sessions AS s ON s.dir = x.dir
LEFT JOIN _experiment_best AS b ON b.session_id = x.session_id
GROUP BY ALL
ORDER BY x.experiment, x.arm, x.session_id
"""


def experiment_dirs(root: Path) -> list[Path]:
    """The experiment directories directly under ``root`` (none when it is no directory)."""
    if not Path(root).is_dir():
        return []
    return sorted(child for child in Path(root).iterdir() if (child / EXPERIMENT_FILE).is_file())


def session_dirs(root: Path) -> list[Path]:
    """Every directory that may hold a session: those under ``root`` and, one level down,
    those of its experiments (an experiment's own directory holds no events)."""
    found = [p for p in Path(root).iterdir() if p.is_dir()]
    for experiment_dir in experiment_dirs(root):
        found.extend(p for p in experiment_dir.iterdir() if p.is_dir())
    return sorted(found)


def experiment_sessions(root: Path) -> pa.Table:
    """One row per session each experiment under ``root`` (or ``root`` itself, when it is
    one) plans (``EXPERIMENT_SESSIONS_SCHEMA``).

    An unreadable ``experiment.json`` (being written, damaged) is skipped with a warning."""
    rows: list[dict[str, Any]] = []
    # A root that is itself an experiment (`--traces traces/ab`, as its runner writes it)
    # holds its sessions directly.
    own = [Path(root)] if (Path(root) / EXPERIMENT_FILE).is_file() else []
    for experiment_dir in own + experiment_dirs(root):
        record = _read_json(experiment_dir / EXPERIMENT_FILE)
        planned = record.get("sessions") if record else None
        if record is None or not isinstance(planned, list):
            log.warning(
                "skipping experiment %s: its %s is unreadable", experiment_dir, EXPERIMENT_FILE
            )
            continue
        for entry in planned:
            if not isinstance(entry, dict) or not entry.get("session_id"):
                continue
            session_dir = experiment_dir / str(entry["session_id"])
            meta = _read_json(SessionPaths(session_dir).meta) or {}
            config = meta.get("config")
            config = config if isinstance(config, dict) else {}
            mode = meta.get("questions_mode") or config.get("questions_mode")
            if mode is None and meta:
                mode = "repertoire"  # sessions from before the mode existed asked questions
            rows.append(
                {
                    "experiment": str(record.get("name") or experiment_dir.name),
                    "arm": _text(entry.get("arm")),
                    "session_id": session_dir.name,
                    "questions_mode": _text(mode),
                    "agent": _text(meta.get("agent")),
                    "model": _text(meta.get("model")),
                    "dir": str(session_dir),
                }
            )
    return pa.Table.from_pylist(rows, schema=EXPERIMENT_SESSIONS_SCHEMA)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
