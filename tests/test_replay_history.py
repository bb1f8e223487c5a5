"""A kernel's git history replayed: each ``sm90 vN:`` commit written and evaluated in order, and
each question NOTES.md records as drawn asked after the version it follows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.repertoire import load_repertoire
from kernelseek_tui.report_page import session_facts
from kernelseek_tui.session.agents.history_plan import noted_questions, plan_history_replay
from tests.test_session_support import ROOT, TASK_SUBDIR, git, make_task_repo, read_events

KERNEL_IN_REPO = f"{TASK_SUBDIR}/sm90.cu"
STAND_IN = "tests.test_session_support:source_evaluator"  # speed from a `// speed X` line
REPERTOIRE = load_repertoire(ROOT / "repertoire.toml")

NOTES = """\
# NOTES

## baseline.cu

## sm90 v1: the first
Measured.

## sm90 v2: the second
Nothing over v1.

Question: `measured-or-assumed` (drawn with `kernelseek repertoire next --trigger plateau
--notes NOTES.md`, after v1 and v2).

## sm90 v3 and v4 together; v5 prepared, never committed
Question: `work-to-machine` (drawn with `kernelseek repertoire next --notes NOTES.md
--trigger limit_claim`, after v3-v4).
"""


def commit_file(root: Path, relative: str, content: str, subject: str) -> str:
    path = root / relative
    path.write_text(content)
    git(root, "add", relative)
    git(root, "commit", "--quiet", "-m", subject)
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture()
def history(tmp_path: Path) -> dict[str, Any]:
    """A task repository whose sm90.cu has three versions among commits that are not versions."""
    task_dir = make_task_repo(tmp_path / "user")
    root = tmp_path / "user"
    kernel = KERNEL_IN_REPO
    contents = ["// v1\n// speed 1.1\n", "// v2\n// speed 1.3\n", "// v3-v4\n// speed 1.6\n"]
    commits = [commit_file(root, kernel, contents[0], "sm90 v1: the first")]
    commit_file(root, kernel, contents[0] + "// fixed\n", "sm90: a fix, not a version")
    commit_file(root, "README.txt", "unrelated\n", "docs: a commit beside the kernel")
    commits.append(commit_file(root, kernel, contents[1], "sm90 v2: the second"))
    commit_file(root, f"{TASK_SUBDIR}/NOTES.md", NOTES, "sm90 v5: NOTES only, not the kernel")
    commits.append(commit_file(root, kernel, contents[2], "sm90 v3-v4 measured: the third"))
    # The session starts from this file, unlike every version: each one is new code.
    commit_file(root, kernel, "// after the versions\n", "sm90: after the last version")
    return {"root": root, "task_dir": task_dir, "commits": commits, "contents": contents}


def plan(history: dict[str, Any], **changes: Any) -> list[Any]:
    return plan_history_replay(history["root"], repertoire=REPERTOIRE, **changes)


def test_the_plan_writes_and_evaluates_each_version_in_commit_order(
    history: dict[str, Any],
) -> None:
    steps = plan(history, kernel_in_repo=KERNEL_IN_REPO)
    assert [s.index for s in steps] == list(range(len(steps)))
    shape = [s.tool or f"question {s.question_id}" for s in steps]
    assert shape == [
        "write_file", "evaluate",
        "write_file", "evaluate", "question measured-or-assumed",
        "write_file", "evaluate", "question work-to-machine",
    ]  # fmt: skip
    writes = [s for s in steps if s.tool == "write_file"]
    assert [s.tool_input for s in writes] == [
        {"path": "sm90.cu", "content": content} for content in history["contents"]
    ]
    assert [(s.commit, s.version) for s in writes] == list(
        zip(history["commits"], ["v1", "v2", "v3-v4"], strict=True)
    )
    evaluations = [s for s in steps if s.tool == "evaluate"]
    assert [s.tool_input for s in evaluations] == [{}, {}, {}]  # the whole objective
    assert [s.commit for s in evaluations] == history["commits"]


def test_each_question_follows_the_version_its_notes_section_names(
    history: dict[str, Any],
) -> None:
    questions = [s for s in plan(history) if s.tool is None]
    assert [(q.question_id, q.source, q.trigger, q.version) for q in questions] == [
        ("measured-or-assumed", "repertoire", "plateau", "v2"),
        # The heading names v5, never committed: the last version at or below it is v3-v4.
        ("work-to-machine", "repertoire", "limit_claim", "v3-v4"),
    ]
    assert questions[0].text == "What did you measure, and what did you only assume?"
    assert [q.text for q in questions] == [
        REPERTOIRE.get(q.question_id).text  # type: ignore[union-attr]
        for q in questions
    ]


def test_the_notes_rule_reads_the_headings_above_each_question() -> None:
    notes = (
        "Question: `early` (drawn before any version)\n\n"
        "## sm90 v2-v6 measured\n## Next session\n"
        "Question: `later` (drawn with `kernelseek repertoire next --trigger failure_streak`)\n"
    )
    found = noted_questions(notes)
    assert [(q.question_id, q.after_version, q.trigger, q.line) for q in found] == [
        ("early", 0, "plateau", 1),
        ("later", 6, "failure_streak", 5),
    ]


def test_the_session_may_edit_another_file_and_replay_an_older_history(
    history: dict[str, Any],
) -> None:
    older = plan(history, session_kernel="baseline.cu", rev=history["commits"][1])
    writes = [s for s in older if s.tool == "write_file"]
    assert [(s.tool_input["path"], s.version) for s in writes] == [
        ("baseline.cu", "v1"),
        ("baseline.cu", "v2"),
    ]
    # The NOTES are the working tree's: a question noted past the history's last version
    # (work-to-machine, under v3-v5) comes after that last version.
    assert [(s.question_id, s.version) for s in older if s.tool is None] == [
        ("measured-or-assumed", "v2"),
        ("work-to-machine", "v2"),
    ]


def test_what_cannot_be_replayed_is_a_clear_error(history: dict[str, Any], tmp_path: Path) -> None:
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    with pytest.raises(KernelseekError, match="not in a git repository"):
        plan_history_replay(outside, repertoire=REPERTOIRE)
    with pytest.raises(KernelseekError, match=r"no versions of kernels/flash_fwd/baseline\.cu"):
        plan(history, kernel_in_repo=f"{TASK_SUBDIR}/baseline.cu")
    stray = tmp_path / "NOTES.md"
    stray.write_text("## sm90 v1\n\nQuestion: `no-such-question` (drawn at a plateau)\n")
    with pytest.raises(KernelseekError, match=r"NOTES.md:3: question 'no-such-question' is not"):
        plan(history, notes=stray)


def kernelseek(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # No API key, no traces root from the caller's shell; this checkout importable.
    env = {
        k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "KERNELSEEK_TRACES")
    }
    return subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", *args],
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_replayed_history_session_judges_each_version_and_asks_the_questions(
    history: dict[str, Any], tmp_path: Path
) -> None:
    run = kernelseek(
        tmp_path, "run", str(history["task_dir"]), "--source", "sm90.cu", "--agent", "replay",
        "--replay-history", "--session-id", "climb", "--traces", "tr", "--evaluator", STAND_IN,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    events = read_events(tmp_path / "tr" / "climb")
    assert [e.speedup for e in events if e.kind == "eval"] == [1.1, 1.3, 1.6]
    asked = [(e.question_id, e.source, e.trigger) for e in events if e.kind == "question"]
    assert asked == [
        ("measured-or-assumed", "repertoire", "plateau"),
        ("work-to-machine", "repertoire", "limit_claim"),
    ]
    kinds = [e.kind for e in events if e.kind in ("eval", "question")]
    assert kinds == ["eval", "eval", "question", "eval", "question"]
    calls = [json.loads(e.attrs) for e in events if e.kind == "tool_call"]
    assert [(a["replayed_commit"], a["replayed_version"]) for a in calls[::2]] == list(
        zip(history["commits"], ["v1", "v2", "v3-v4"], strict=True)
    )
    assert not [e for e in events if e.kind == "decision"]  # the recorded questions only
    assert "3 evaluations, 3 commits" in run.stdout
    facts = session_facts(tmp_path / "tr" / "climb", [])
    assert facts.caveat is not None
    assert "a replay of kernels/flash_fwd/sm90.cu's git history" in facts.caveat
    # What the GPU box's script prints of it (scripts/session_summary.py): each version judged,
    # each question where it came, the session's own commits only.
    summary = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "session_summary.py"), str(tmp_path / "tr"),
         "climb", str(history["root"]), "HEAD..kernelseek/climb"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert summary.returncode == 0, summary.stderr
    judged = [line.split("] ", 1)[1].split(" (")[0] for line in summary.stdout.splitlines()
              if " -> pass " in line]  # fmt: skip
    assert judged == ["v1", "v2", "v3-v4"]
    assert "question measured-or-assumed (repertoire, plateau)" in summary.stdout
    assert "sm90 v1: the first" not in summary.stdout  # the history's commits are not listed


def test_a_history_that_cannot_be_replayed_is_refused_before_the_session(
    history: dict[str, Any], tmp_path: Path
) -> None:
    common = ["--agent", "replay", "--replay-history", "--traces", "tr", "--evaluator", STAND_IN]
    no_versions = kernelseek(tmp_path, "run", str(history["task_dir"]), *common)
    assert no_versions.returncode == 2
    assert "no versions of kernels/flash_fwd/baseline.cu" in no_versions.stderr
    copy = tmp_path / "copy"
    shutil.copytree(history["task_dir"], copy)
    outside = kernelseek(tmp_path, "run", str(copy), "--source", "sm90.cu", *common)
    assert outside.returncode == 2 and "is not in a git repository" in outside.stderr
    assert not (copy / ".git").exists()  # refused before the session's `git init`
    tuner = kernelseek(tmp_path, "run", str(history["task_dir"]), "--agent", "tuner",
                       "--replay-history", "--evaluator", STAND_IN)  # fmt: skip
    assert tuner.returncode == 2 and "go with --agent replay" in tuner.stderr
    assert not (tmp_path / "tr").exists() or not list((tmp_path / "tr").iterdir())
