"""The engine's git calls in the session worktree name its git directory instead of finding it
through the worktree's ``.git`` file (history/session.py, ``_in_worktree``).

Found by a review (2026-12-07, late): where the task directory is its repository's root (what a
task outside any repository gets), the workspace is the worktree's root and holds that ``.git``
file; the agent's shell pointed it at a git directory of its own making whose configuration
named a ``core.fsmonitor`` program, and the engine's next ``git add`` ran that program outside
the shell's confinement. CPU only."""

from __future__ import annotations

import shutil
from pathlib import Path

from kernelseek_tui.session.engine import Engine
from tests.test_session_support import (
    FLASH,
    ScriptedAgent,
    SequenceEvaluator,
    read_events,
    session_config,
)


def test_a_git_directory_of_the_agents_making_is_never_used(tmp_path: Path) -> None:
    task_dir = tmp_path / "task"
    shutil.copytree(FLASH, task_dir, ignore=shutil.ignore_patterns("NOTES.md", "__pycache__"))
    engine = Engine.start(
        session_config(task_dir, tmp_path / "traces"), evaluator=SequenceEvaluator([1.5])
    )
    assert engine.history.task_subdir == "."  # the workspace is the worktree's root
    assert (engine.workspace / ".git").is_file()
    marker = tmp_path / "ran-outside"
    redirect = f"""
set -e
real=$(sed -n 's/^gitdir: //p' .git)
common=$(cd "$real" && cd "$(cat commondir)" && pwd)
git init --quiet --bare fake
echo "$common/objects" > fake/objects/info/alternates
tip=$(git --git-dir="$real" rev-parse HEAD)
git --git-dir=fake update-ref refs/heads/{engine.history.branch} "$tip"
git --git-dir=fake symbolic-ref HEAD refs/heads/{engine.history.branch}
git --git-dir=fake config core.bare false
git --git-dir=fake config core.worktree "$PWD"
printf '#!/bin/sh\\necho ran > {marker}\\nexit 1\\n' > "$TMPDIR/fsm.sh"
chmod +x "$TMPDIR/fsm.sh"
git --git-dir=fake config core.fsmonitor "$TMPDIR/fsm.sh"
git --git-dir=fake read-tree HEAD
echo "gitdir: $PWD/fake" > .git
"""
    steps = [
        ("tool", "run_shell", {"command": redirect}),
        ("tool", "run_shell", {"command": "echo '// a candidate' >> baseline.cu"}),
        ("tool", "evaluate", {}),
    ]
    agent = ScriptedAgent(steps)
    engine.run(agent)
    assert not agent.outcomes[0].is_error, agent.outcomes[0].text
    assert not marker.exists(), "git ran a program the agent named"
    commits = [e for e in read_events(engine.session_dir) if e.kind == "commit"]
    assert len(commits) == 1  # committed on the real branch, through the real git directory
    [candidate] = engine.history.candidates()
    assert candidate.sha == commits[0].git_sha
