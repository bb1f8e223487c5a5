"""A recorded experiment for the compare tests (no tests here): the demo's scripted claude
session (questions asked) as one arm and its measured tuner session (none) as the other, two
copies each, under ``<root>/ab/``, plus the tuner session on its own at the root. Traces and
session.json only: comparing reads no git."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernelseek_tui.paths import DEMO_DIR, EXPERIMENT_FILE, SessionPaths

SCRIPTED = "scripted-claude"
TUNER = "gpu-tuner-20261202-171357"
ARMS = {"questions": SCRIPTED, "off": TUNER}


def copy_session(source: str, dest: Path, *, mode: str | None = None) -> Path:
    shutil.copytree(DEMO_DIR / source, dest, ignore=shutil.ignore_patterns("*.bundle"))
    meta_path = SessionPaths(dest).meta
    meta = json.loads(meta_path.read_text())
    meta["session_id"] = dest.name
    if mode is not None:
        meta.setdefault("config", {})["questions_mode"] = mode
    meta_path.write_text(json.dumps(meta))
    return dest


def recorded_experiment(root: Path, *, per_arm: int = 2) -> Path:
    """``root`` with the experiment ``ab`` (arms ``questions`` and ``off``) and ``solo``."""
    experiment_dir = root / "ab"
    planned = []
    for number in range(1, per_arm + 1):
        for arm, source in ARMS.items():
            session_id = f"ab-{arm}-{number}"
            mode = "off" if arm == "off" else "repertoire"
            copy_session(source, experiment_dir / session_id, mode=mode)
            planned.append({"session_id": session_id, "arm": arm})
    record = {"name": "ab", "spec": {}, "sessions": planned, "status": "finished",
              "end_reason": "done"}  # fmt: skip
    (experiment_dir / EXPERIMENT_FILE).write_text(json.dumps(record))
    copy_session(TUNER, root / "solo")
    return root
