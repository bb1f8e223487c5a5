"""SessionHistory against real git repositories in temporary directories."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate.result import EvalResult, EvalSummary, ScenarioResult
from kernelseek_tui.history import (
    NOTES_REF,
    SessionHistory,
    UnverifiedCandidateError,
    bisect_candidates,
)

TASK = "kernels/k"


def sh(cwd: Path, *args: str, input: str | None = None) -> str:
    """Run git as a user would (their identity given inline, so tests need no global config)."""
    proc = subprocess.run(
        ["git", "-c", "user.name=User", "-c", "user.email=user@example.com", *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def make_result(
    speedup: float | None = 1.5,
    *,
    vs_fa3: float | None = None,
    passed: int = 3,
    total: int = 3,
    verdict: str = "pass",
    eval_id: str = "ev-1",
) -> EvalResult:
    scenarios = [
        ScenarioResult(
            name=f"s{i}", set="grid", fields={"seqlen": 128 * (i + 1)}, passed=i < passed
        )
        for i in range(total)
    ]
    peers = {} if vs_fa3 is None else {"fa3": vs_fa3}
    summary = EvalSummary(passed=passed, total=total, geomean_speedup=speedup, vs_peers=peers)
    return EvalResult(eval_id=eval_id, verdict=verdict, scenarios=scenarios, summary=summary)  # type: ignore[arg-type]


def make_user_repo(root: Path) -> Path:
    """A user's repository with a task directory, as it would look before any session."""
    (root / TASK).mkdir(parents=True)
    (root / TASK / "task.toml").write_text('name = "k"\n')
    (root / TASK / "kernel.cu").write_text("// speed 1.0\n")
    (root / "README.md").write_text("readme\n")
    (root / ".gitignore").write_text("*.o\n")
    sh(root, "init", "-q", "-b", "main")
    sh(root, "add", "-A")
    sh(root, "commit", "-q", "-m", "initial")
    return root


def write(history: SessionHistory, text: str, name: str = "kernel.cu") -> Path:
    path = history.task_dir / name
    path.write_text(text)
    return path


def tree_digest(root: Path) -> dict[str, str]:
    """Every file of the user's checkout (not .git, not the session worktrees) by content hash."""
    digest = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in (".git", ".kernelseek") or not path.is_file():
            continue
        digest[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def user_state(root: Path) -> dict[str, object]:
    return {
        "status": sh(root, "status", "--porcelain", "--untracked-files=all"),
        "head": sh(root, "rev-parse", "HEAD"),
        "branch": sh(root, "symbolic-ref", "HEAD"),
        "index": (root / ".git" / "index").read_bytes(),
        "files": tree_digest(root),
        "staged": sh(root, "diff", "--cached"),
        "unstaged": sh(root, "diff"),
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_user_repo(tmp_path / "user")


@pytest.fixture
def history(repo: Path) -> SessionHistory:
    return SessionHistory.create(repo / TASK, "s1")


def test_user_checkout_index_and_branch_stay_byte_identical(repo: Path) -> None:
    # A user mid-work: on a feature branch, one change staged, one not, one file untracked.
    sh(repo, "checkout", "-q", "-b", "feature")
    (repo / "README.md").write_text("readme, edited and staged\n")
    sh(repo, "add", "README.md")
    (repo / TASK / "task.toml").write_text('name = "k"  # unstaged edit\n')
    (repo / "notes.txt").write_text("untracked\n")
    before = user_state(repo)
    gitignore = (repo / ".gitignore").read_bytes()

    history = SessionHistory.create(repo / TASK, "s1")
    first = history.commit_candidate(
        [write(history, "// a\n")], make_result(1.2), seq=5, question=None
    )
    second = history.commit_candidate(
        [write(history, "// b\n")], make_result(1.4), seq=9, question="Why?"
    )
    history.candidates()
    history.diff(first, second)
    history.note(second)
    history.export_task(first, repo.parent / "export")
    bisect_candidates(history, history.base_sha, second, lambda sha, d: sha != second)
    history.remove_worktree()
    SessionHistory.open(repo, "s1")

    assert user_state(repo) == before
    assert (repo / ".gitignore").read_bytes() == gitignore
    assert "/.kernelseek/" in (repo / ".git" / "info" / "exclude").read_text().splitlines()


def test_create_makes_branch_worktree_and_start_commit(repo: Path) -> None:
    user_head = sh(repo, "rev-parse", "HEAD").strip()
    history = SessionHistory.create(repo / TASK, "s1")

    assert history.repo == repo.resolve()
    assert history.branch == "kernelseek/s1"
    assert history.worktree == repo.resolve() / ".kernelseek" / "worktrees" / "s1"
    assert history.task_subdir == TASK
    assert history.task_dir == history.worktree / TASK
    assert (history.task_dir / "kernel.cu").read_text() == "// speed 1.0\n"
    assert sh(history.worktree, "symbolic-ref", "HEAD").strip() == "refs/heads/kernelseek/s1"
    assert history.head_sha() == history.base_sha
    assert sh(repo, "rev-parse", f"{history.base_sha}^").strip() == user_head
    # No uncommitted task files: the start commit only marks the start.
    assert sh(repo, "diff", user_head, history.base_sha) == ""
    assert history.candidates() == []


def test_start_commit_snapshots_uncommitted_task_files(repo: Path) -> None:
    (repo / TASK / "kernel.cu").write_text("// edited, not committed\n")
    (repo / TASK / "extra.cuh").write_text("// new, untracked\n")
    (repo / "README.md").write_text("edited outside the task\n")

    history = SessionHistory.create(repo / TASK, "s1")

    assert (history.task_dir / "kernel.cu").read_text() == "// edited, not committed\n"
    assert (history.task_dir / "extra.cuh").read_text() == "// new, untracked\n"
    # Only the task directory is snapshotted; the user's other edits stay theirs.
    assert (history.worktree / "README.md").read_text() == "readme\n"
    changed = sh(repo, "diff", "--name-only", "HEAD", history.base_sha).split()
    assert changed == [f"{TASK}/extra.cuh", f"{TASK}/kernel.cu"]
    assert sh(repo, "status", "--porcelain").splitlines() == [
        " M README.md",
        f" M {TASK}/kernel.cu",
        f"?? {TASK}/extra.cuh",
    ]


def test_task_outside_any_repository_gets_one_in_place(tmp_path: Path) -> None:
    task = tmp_path / "loose_task"
    task.mkdir()
    (task / "task.toml").write_text('name = "loose"\n')
    (task / "kernel.cu").write_text("// k\n")

    history = SessionHistory.create(task, "s1")

    assert history.repo == task.resolve()
    assert history.task_subdir == "."
    assert history.task_dir.resolve() == history.worktree.resolve()
    assert sh(task, "ls-files").split() == ["kernel.cu", "task.toml"]
    assert sh(task, "status", "--porcelain") == ""
    assert (history.worktree / "kernel.cu").read_text() == "// k\n"
    sha = history.commit_candidate(
        [write(history, "// k2\n")], make_result(2.0), seq=1, question=None
    )
    assert history.candidates()[0].sha == sha


def test_candidate_commit_message_trailers_and_note(history: SessionHistory) -> None:
    result = make_result(1.23456789, vs_fa3=0.87, passed=3, total=3)
    sha = history.commit_candidate(
        [write(history, "// faster\n")],
        result,
        seq=42,
        question="What does the\n  profiler say?",
        new_best=True,
    )

    body = sh(history.repo, "log", "-1", "--format=%B", sha)
    assert body.splitlines()[0] == "candidate 1: 1.23x (3/3)"
    trailers = sh(history.repo, "interpret-trailers", "--parse", input=body).splitlines()
    assert trailers == [
        "Kernelseek-Session: s1",
        "Kernelseek-Seq: 42",
        "Speedup: 1.23457",
        "Vs-FA3: 0.87",
        "Scenarios: 3/3",
        "New-Best: yes",
        "Question: What does the profiler say?",
    ]
    assert sh(history.repo, "log", "-1", "--format=%an <%ae>", sha).strip() == (
        "KernelSeek <kernelseek@localhost>"
    )
    assert history.note(sha) == json.loads(result.to_json())
    assert EvalResult.from_dict(history.note(sha)) == result
    assert sh(history.repo, "notes", f"--ref={NOTES_REF}", "list", sha).strip()
    assert history.candidates()[0].new_best is True


def test_no_question_no_speed_and_the_number_counts_up(history: SessionHistory) -> None:
    history.commit_candidate([write(history, "// 1\n")], make_result(1.1), seq=1, question=None)
    sha = history.commit_candidate(
        [write(history, "// 2\n")], make_result(None), seq=2, question=""
    )

    body = sh(history.repo, "log", "-1", "--format=%B", sha)
    assert body.splitlines()[0] == "candidate 2: untimed (3/3)"
    assert "Question:" not in body
    assert "Speedup: none" in body and "Vs-FA3: none" in body
    newest = history.candidates()[0]
    assert (newest.n, newest.speedup, newest.vs_fa3, newest.question) == (2, None, None, None)


@pytest.mark.parametrize(
    "result",
    [
        make_result(verdict="fail", passed=2, total=3),
        make_result(verdict="error", passed=0, total=3),
        make_result(passed=2, total=3),  # "pass" that does not add up
        make_result(passed=0, total=0),  # nothing was checked
    ],
)
def test_unverified_candidate_is_refused_and_nothing_changes(
    history: SessionHistory, result: EvalResult
) -> None:
    path = write(history, "// wrong\n")
    with pytest.raises(UnverifiedCandidateError, match="refusing to commit seq 7"):
        history.commit_candidate([path], result, seq=7, question=None)
    assert history.head_sha() == history.base_sha
    assert sh(history.worktree, "diff", "--cached") == ""
    assert sh(history.repo, "notes", f"--ref={NOTES_REF}", "list") == ""


def test_verified_means_every_scenario_ran_and_passed() -> None:
    assert make_result().verified
    unrun = make_result()
    unrun.scenarios[0].passed = None  # the summary adds up, but one scenario never ran
    assert unrun.passed and not unrun.verified
    assert not make_result(passed=2, total=3).verified
    assert not make_result(passed=0, total=0).verified
    assert not make_result(verdict="fail").verified


def test_only_the_given_paths_are_committed(history: SessionHistory) -> None:
    kernel = write(history, "// committed\n")
    write(history, 'name = "k"  # agent scratch\n', "task.toml")
    new = write(history, "// new header\n", "tile.cuh")
    sha = history.commit_candidate(
        [kernel, Path(TASK) / "tile.cuh"], make_result(), seq=3, question=None
    )

    files = sh(history.repo, "show", "--name-status", "--format=", sha).splitlines()
    assert files == [f"M\t{TASK}/kernel.cu", f"A\t{TASK}/tile.cuh"]
    assert sh(history.worktree, "status", "--porcelain").splitlines() == [f" M {TASK}/task.toml"]

    new.unlink()
    sha = history.commit_candidate([new], make_result(), seq=4, question=None)
    assert sh(history.repo, "show", "--name-status", "--format=", sha).splitlines() == [
        f"D\t{TASK}/tile.cuh"
    ]
    # Nothing changed (the same code evaluated again): no empty commit, the tip is returned.
    assert history.commit_candidate([kernel], make_result(), seq=5, question=None) == sha
    assert history.commit_candidate([], make_result(), seq=6, question=None) == sha
    assert [c.n for c in history.candidates()] == [2, 1]


def test_a_path_outside_the_worktree_is_refused(history: SessionHistory, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.cu"
    outside.write_text("x")
    with pytest.raises(KernelseekError, match="not inside the session worktree"):
        history.commit_candidate([outside], make_result(), seq=1, question=None)


def test_candidates_newest_first_with_every_field(history: SessionHistory) -> None:
    started = datetime.now(UTC) - timedelta(seconds=2)
    shas = [
        history.commit_candidate(
            [write(history, f"// v{i}\n")],
            make_result(1.0 + i / 10, vs_fa3=0.5 + i / 10, passed=4, total=4),
            seq=10 * i,
            question=f"question {i}" if i % 2 else None,
        )
        for i in range(1, 4)
    ]

    found = history.candidates()
    assert [c.sha for c in found] == shas[::-1]
    assert [(c.n, c.seq, c.speedup, c.vs_fa3, c.passed, c.total, c.question) for c in found] == [
        (3, 30, 1.3, 0.8, 4, 4, "question 3"),
        (2, 20, 1.2, 0.7, 4, 4, None),
        (1, 10, 1.1, 0.6, 4, 4, "question 1"),
    ]
    assert found[0].subject == "candidate 3: 1.30x (4/4)"
    assert all(started <= c.timestamp <= datetime.now(UTC) + timedelta(seconds=2) for c in found)

    assert history.candidate_at("HEAD~1") == found[1]
    assert history.candidate_at(shas[0][:8]) == found[2]
    assert history.candidate_at(history.base_sha) is None
    with pytest.raises(KernelseekError, match="names no commit"):
        history.candidate_at("no-such-rev")


def test_diff_of_two_candidates_ignores_user_diff_config(history: SessionHistory) -> None:
    first = history.commit_candidate(
        [write(history, "// old line\n")], make_result(), seq=1, question=None
    )
    second = history.commit_candidate(
        [write(history, "// new line\n")], make_result(), seq=2, question=None
    )
    sh(history.repo, "config", "color.ui", "always")
    sh(history.repo, "config", "diff.noprefix", "true")

    text = history.diff(first, second)
    assert f"--- a/{TASK}/kernel.cu" in text and f"+++ b/{TASK}/kernel.cu" in text
    assert "-// old line" in text and "+// new line" in text
    assert "\x1b[" not in text
    assert history.diff(second, second) == ""
    assert history.diff(history.base_sha, second, paths=["README.md"]) == ""


def test_a_crash_before_the_note_is_recovered_by_committing_again(history: SessionHistory) -> None:
    result = make_result(1.7)
    sha = history.commit_candidate([write(history, "// x\n")], result, seq=11, question=None)
    sh(history.repo, "notes", f"--ref={NOTES_REF}", "remove", sha)  # the crash
    assert not history.has_note(sha)
    assert history.find_commit_for_seq(11) == sha
    assert history.find_commit_for_seq(1) is None  # a prefix of 11 is not 11

    assert history.commit_candidate([], result, seq=11, question=None) == sha
    assert history.note(sha)["summary"]["geomean_speedup"] == 1.7
    assert len(history.candidates()) == 1


def test_the_same_code_again_is_attached_to_its_commit_not_committed_empty(
    history: SessionHistory,
) -> None:
    kernel = write(history, "// v1\n")
    first = history.commit_candidate([kernel], make_result(1.30), seq=3, question=None)
    # Evaluated again, unchanged: a different speedup, but no new candidate.
    again = history.commit_candidate(
        [kernel], make_result(1.34, eval_id="ev-2"), seq=8, question=None
    )
    assert again == first == history.head_sha()
    assert [c.seq for c in history.candidates()] == [3]
    attached = history.attached(first)
    assert [(a["seq"], a["eval_id"], a["speedup"]) for a in attached] == [(8, "ev-2", 1.34)]
    assert history.note(first)["summary"]["geomean_speedup"] == 1.30  # its own evaluation
    assert history.find_commit_for_seq(8) == first and history.find_commit_for_seq(3) == first
    # After a crash, the same seq again finds its place and attaches nothing twice.
    assert history.commit_candidate([kernel], make_result(1.34), seq=8, question=None) == first
    assert len(history.attached(first)) == 1
    # A change makes a candidate again, numbered on from the last one.
    second = history.commit_candidate(
        [write(history, "// v2\n")], make_result(), seq=9, question=None
    )
    assert second != first and history.candidates()[0].n == 2
    assert history.find_commit_for_seq(8) == first


def test_the_starting_kernel_evaluated_is_attached_to_the_start_commit(
    history: SessionHistory,
) -> None:
    unchanged = history.task_dir / "kernel.cu"
    sha = history.commit_candidate([unchanged], make_result(1.0), seq=2, question=None)
    assert sha == history.base_sha and history.candidates() == []
    assert [a["seq"] for a in history.attached(sha)] == [2]
    assert history.find_commit_for_seq(2) == history.base_sha
    assert history.find_commit_for_seq(20) is None


def test_note_of_a_commit_without_one_is_a_clear_error(history: SessionHistory) -> None:
    with pytest.raises(KernelseekError, match="has no kernelseek evaluation note"):
        history.note(history.base_sha)


def test_open_resumes_a_session(history: SessionHistory, repo: Path) -> None:
    first = history.commit_candidate(
        [write(history, "// 1\n")], make_result(), seq=1, question=None
    )
    write(history, "// uncommitted work in progress\n")

    again = SessionHistory.open(repo, "s1")
    assert (again.worktree, again.base_sha, again.task_subdir) == (
        history.worktree,
        history.base_sha,
        TASK,
    )
    assert [c.sha for c in again.candidates()] == [first]
    assert (again.task_dir / "kernel.cu").read_text() == "// uncommitted work in progress\n"
    from_worktree = SessionHistory.open(history.worktree / TASK, "s1")
    assert from_worktree.repo == history.repo

    second = again.commit_candidate(
        [again.task_dir / "kernel.cu"], make_result(), seq=2, question=None
    )
    assert again.candidates()[0].n == 2 and again.candidate_at(second) is not None


@pytest.mark.parametrize("how", ["remove_worktree", "deleted by hand"])
def test_open_puts_back_a_missing_worktree(history: SessionHistory, repo: Path, how: str) -> None:
    sha = history.commit_candidate(
        [write(history, "// kept\n")], make_result(), seq=1, question=None
    )
    if how == "remove_worktree":
        history.remove_worktree()
        assert not (repo / ".kernelseek").exists()
    else:
        subprocess.run(["rm", "-rf", str(history.worktree)], check=True)
    assert sh(repo, "rev-parse", "kernelseek/s1").strip() == sha

    again = SessionHistory.open(repo, "s1")
    assert again.worktree == history.worktree
    assert (again.task_dir / "kernel.cu").read_text() == "// kept\n"
    changed = write(again, "// changed after reopening\n")
    assert again.commit_candidate([changed], make_result(), seq=2, question=None) != sha


def test_user_hooks_and_signing_config_cannot_break_a_session(repo: Path) -> None:
    hooks = repo / ".git" / "hooks"
    marker = repo.parent / "hook-ran"
    for name in ("pre-commit", "commit-msg", "post-checkout", "post-commit"):
        (hooks / name).write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
        (hooks / name).chmod(0o755)
    sh(repo, "config", "commit.gpgSign", "true")
    sh(repo, "config", "gpg.program", "false")

    history = SessionHistory.create(repo / TASK, "s1")
    history.commit_candidate([write(history, "// y\n")], make_result(), seq=1, question=None)
    assert len(history.candidates()) == 1
    assert not marker.exists()


def test_commits_work_with_no_git_identity_anywhere(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.delenv(f"GIT_{role}_NAME", raising=False)
        monkeypatch.delenv(f"GIT_{role}_EMAIL", raising=False)
    history = SessionHistory.create(repo / TASK, "s1")
    sha = history.commit_candidate([write(history, "// z\n")], make_result(), seq=1, question=None)
    assert sh(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>", sha).strip() == (
        "KernelSeek <kernelseek@localhost>|KernelSeek <kernelseek@localhost>"
    )

    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ada")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "ada@example.com")
    sha = history.commit_candidate([write(history, "// w\n")], make_result(), seq=2, question=None)
    assert sh(repo, "log", "-1", "--format=%an <%ae>", sha).strip() == "Ada <ada@example.com>"


def test_inherited_git_dir_does_not_redirect_commits(
    history: SessionHistory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As inside a hook or `git bisect run` of another repository.
    other = make_user_repo(tmp_path / "other")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    history.commit_candidate([write(history, "// v\n")], make_result(), seq=1, question=None)
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert len(history.candidates()) == 1
    assert sh(other, "rev-list", "--count", "--all").strip() == "1"


def test_an_ignored_task_directory_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    repo = make_user_repo(tmp_path / "user")
    (repo / "build" / "task").mkdir(parents=True)
    (repo / "build" / "task" / "kernel.cu").write_text("// ignored\n")
    (repo / ".gitignore").write_text("build/\n")
    sh(repo, "commit", "-qam", "ignore build")

    with pytest.raises(KernelseekError, match="is it ignored"):
        SessionHistory.create(repo / "build" / "task", "s1")
    assert sh(repo, "branch", "--list", "kernelseek/*") == ""
    assert not (repo / ".kernelseek").exists()


def test_errors_are_one_line(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    SessionHistory.create(repo / TASK, "s1")
    cases = [
        (lambda: SessionHistory.create(repo / TASK, "s1"), "already exists"),
        (lambda: SessionHistory.create(repo / "missing", "s2"), "does not exist"),
        (lambda: SessionHistory.create(repo / TASK, "bad/id"), "not usable as a branch name"),
        (lambda: SessionHistory.create(repo / TASK, "x.lock"), "not usable as a branch name"),
        (lambda: SessionHistory.open(tmp_path, "s1"), "not inside a git repository"),
        (lambda: SessionHistory.open(repo, "nope"), "no session branch kernelseek/nope"),
    ]
    plain = tmp_path / "plain"
    plain.mkdir()
    sh(repo, "branch", "kernelseek/manual")
    cases.append((lambda: SessionHistory.open(repo, "manual"), "was not made by kernelseek"))
    for call, expected in cases:
        with pytest.raises(KernelseekError, match=expected) as info:
            call()
        assert "\n" not in str(info.value)

    monkeypatch.setenv("PATH", str(plain))
    with pytest.raises(KernelseekError, match="git is not installed or not on PATH"):
        SessionHistory.open(repo, "s1")


def test_export_task_writes_the_commit_not_the_worktree(
    history: SessionHistory, tmp_path: Path
) -> None:
    (history.task_dir / "run.sh").write_text("#!/bin/sh\n")
    (history.task_dir / "run.sh").chmod(0o755)
    (history.task_dir / "link.cu").symlink_to("kernel.cu")
    sha = history.commit_candidate(
        [
            write(history, "// committed\n"),
            history.task_dir / "run.sh",
            history.task_dir / "link.cu",
        ],
        make_result(),
        seq=1,
        question=None,
    )
    write(history, "// later, uncommitted\n")

    task = history.export_task(sha, tmp_path / "out")
    assert task == tmp_path / "out" / TASK
    assert sorted(p.name for p in task.iterdir()) == ["kernel.cu", "link.cu", "run.sh", "task.toml"]
    assert (task / "kernel.cu").read_text() == "// committed\n"
    assert os.access(task / "run.sh", os.X_OK) and not os.access(task / "task.toml", os.X_OK)
    assert (task / "link.cu").is_symlink() and (task / "link.cu").read_text() == "// committed\n"
    assert not (tmp_path / "out" / "README.md").exists()  # only the task directory


def test_two_sessions_of_one_repository_keep_apart(repo: Path) -> None:
    one = SessionHistory.create(repo / TASK, "one")
    two = SessionHistory.create(repo / TASK, "two")
    a = one.commit_candidate([write(one, "// one\n")], make_result(1.1), seq=1, question=None)
    b = two.commit_candidate([write(two, "// two\n")], make_result(2.2), seq=1, question=None)

    assert [c.sha for c in one.candidates()] == [a]
    assert [c.sha for c in two.candidates()] == [b]
    assert one.find_commit_for_seq(1) == a and two.find_commit_for_seq(1) == b
    assert one.note(a)["summary"]["geomean_speedup"] == 1.1
    assert two.note(b)["summary"]["geomean_speedup"] == 2.2
    assert (one.task_dir / "kernel.cu").read_text() == "// one\n"


def test_a_commit_made_by_hand_on_the_branch_is_not_a_candidate(history: SessionHistory) -> None:
    history.commit_candidate([write(history, "// 1\n")], make_result(), seq=1, question=None)
    write(history, "// by hand\n")
    sh(history.worktree, "commit", "-qam", "tweak by hand")
    sha = history.commit_candidate([write(history, "// 2\n")], make_result(), seq=2, question=None)

    found = history.candidates()
    assert [(c.n, c.seq) for c in found] == [(2, 2), (1, 1)]
    assert found[0].sha == sha
    assert history.candidate_at("HEAD~1") is None


def test_a_repository_with_no_commits_yet(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    (repo / TASK).mkdir(parents=True)
    (repo / TASK / "kernel.cu").write_text("// first\n")
    sh(repo, "init", "-q", "-b", "main")
    before = sh(repo, "status", "--porcelain", "--untracked-files=all")

    history = SessionHistory.create(repo / TASK, "s1")

    assert sh(repo, "rev-list", "--parents", "-n1", history.base_sha).split() == [history.base_sha]
    assert (history.task_dir / "kernel.cu").read_text() == "// first\n"
    assert sh(repo, "status", "--porcelain", "--untracked-files=all") == before
    assert SessionHistory.open(repo, "s1").base_sha == history.base_sha
