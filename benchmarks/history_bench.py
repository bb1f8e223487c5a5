"""How fast the git history of a long session reads and writes.

Builds a session branch with N candidate commits (default 3,000) and their evaluation notes in
one `git fast-import` stream, in the same message format `commit_candidate` writes, then times
the reads the TUI and the engine make. Run from the repository root:

    python benchmarks/history_bench.py [--commits 3000] [--repeat 5]

It prints a Markdown table for docs/BENCHMARKS.md ("## Git history").
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelseek_tui.evaluate.result import EvalResult, EvalSummary, ScenarioResult
from kernelseek_tui.history import SessionHistory, bisect_candidates
from kernelseek_tui.history.git import git_env
from kernelseek_tui.history.message import candidate_message

TASK = "kernels/flash_fwd"
SESSION = "bench"
SCENARIOS = 48


def make_result(i: int) -> EvalResult:
    """A realistic evaluation: 48 scenarios, each with timings, so notes have their real size."""
    scenarios = [
        ScenarioResult(
            name=f"grid-{j}",
            set="grid",
            fields={"batch": 2, "seqlen_q": 128 << (j % 6), "headdim": 128, "causal": j % 2},
            passed=True,
            max_error=1e-3,
            tolerance=2e-2,
            ms=0.1 + j / 100,
            baseline_ms=0.2 + j / 100,
            speedup=1.0 + i / 1000,
        )
        for j in range(SCENARIOS)
    ]
    summary = EvalSummary(
        passed=SCENARIOS,
        total=SCENARIOS,
        geomean_speedup=1.0 + i / 1000,
        vs_peers={"fa3": 0.5 + i / 5000},
    )
    return EvalResult(eval_id=f"ev-{i}", verdict="pass", scenarios=scenarios, summary=summary)


def data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def fast_import(history: SessionHistory, count: int) -> None:
    """Append ``count`` candidate commits and their notes to the session branch."""
    stamp = int(time.time()) - count
    who = b"KernelSeek <kernelseek@localhost>"
    parts: list[bytes] = []
    for i in range(1, count + 1):
        result = make_result(i)
        question = f"question {i}?" if i % 7 == 0 else None
        text = candidate_message(result, n=i, session_id=SESSION, seq=10 * i, question=question)
        parts += [
            f"commit refs/heads/{history.branch}\nmark :{i}\n".encode(),
            b"author %s %d +0000\ncommitter %s %d +0000\n" % (who, stamp + i, who, stamp + i),
            data(text.encode()),
        ]
        if i == 1:
            parts.append(f"from {history.base_sha}\n".encode())
        parts += [
            f"M 100644 inline {TASK}/kernel.cu\n".encode(),
            data(f"// candidate {i}\n__global__ void k() {{ /* variant {i} */ }}\n".encode()),
        ]
    parts += [
        b"commit refs/notes/kernelseek\n",
        b"committer %s %d +0000\n" % (who, stamp + count),
        data(b"kernelseek evaluations"),
    ]
    for i in range(1, count + 1):
        parts += [f"N inline :{i}\n".encode(), data(make_result(i).to_json().encode())]
    subprocess.run(
        ["git", "fast-import", "--quiet"],
        cwd=history.repo,
        input=b"".join(parts),
        check=True,
        env=git_env(),
    )
    subprocess.run(["git", "reset", "--hard", "-q"], cwd=history.worktree, check=True)


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Median wall time in ms over ``repeat`` runs, and the last run's value."""
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="kernelseek-history-bench-") as tmp:
        repo = Path(tmp) / "repo"
        (repo / TASK).mkdir(parents=True)
        (repo / TASK / "kernel.cu").write_text("// baseline\n")
        (repo / TASK / "task.toml").write_text('name = "flash_fwd"\n')
        env = git_env()
        for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "initial"]):
            subprocess.run(["git", *cmd], cwd=repo, check=True, env=env)
        history = SessionHistory.create(repo / TASK, SESSION)

        start = time.perf_counter()
        fast_import(history, args.commits)
        setup_s = time.perf_counter() - start

        rows: list[tuple[str, float, str]] = []
        ms, found = timed(history.candidates, args.repeat)
        assert isinstance(found, list) and len(found) == args.commits, "set-up went wrong"
        rows.append(("candidates()", ms, f"{len(found)} candidates, one git log"))
        newest, oldest = found[0], found[-1]
        ms, _ = timed(lambda: history.candidate_at("HEAD"), args.repeat)
        rows.append(("candidate_at('HEAD')", ms, ""))
        ms, hit = timed(lambda: history.find_commit_for_seq(10), args.repeat)
        assert hit == oldest.sha
        rows.append(("find_commit_for_seq (oldest)", ms, "walks the whole branch"))
        ms, note = timed(lambda: history.note(newest.sha), args.repeat)
        rows.append(("note(sha)", ms, f"{len(str(note))} chars of JSON"))
        ms, _ = timed(lambda: history.diff(oldest.sha, newest.sha), args.repeat)
        rows.append(("diff(first, last)", ms, ""))
        ms, _ = timed(lambda: SessionHistory.open(repo, SESSION), args.repeat)
        rows.append(("SessionHistory.open", ms, "finds the start commit below every candidate"))

        commit_times = []
        for i in range(args.repeat * 4):
            (history.task_dir / "kernel.cu").write_text(f"// live commit {i}\n")
            seq = 10 * (args.commits + 1 + i)
            start = time.perf_counter()
            history.commit_candidate(
                [history.task_dir / "kernel.cu"], make_result(i), seq=seq, question=None
            )
            commit_times.append((time.perf_counter() - start) * 1000)
        rows.append(
            ("commit_candidate", statistics.median(commit_times), "commit + note, on top of them")
        )

        found = history.candidates()
        cut = found[len(found) // 3].sha
        cut_n = found[len(found) // 3].n
        calls = []

        def is_good(sha: str, task_dir: Path) -> bool:
            calls.append(sha)
            return history.candidate_at(sha).n < cut_n  # type: ignore[union-attr]

        start = time.perf_counter()
        outcome = bisect_candidates(history, history.base_sha, "HEAD", is_good)
        bisect_ms = (time.perf_counter() - start) * 1000
        assert outcome.first_bad is not None and outcome.first_bad.sha == cut
        rows.append(("bisect_candidates", bisect_ms, f"{len(calls)} steps, stub is_good"))

    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    print(
        f"date: {datetime.now(UTC):%Y-%m-%d}; machine: {platform.node() or '?'}, "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; "
        f"{git_version.strip()}; Python {platform.python_version()}"
    )
    print(
        f"command: python benchmarks/history_bench.py --commits {args.commits} "
        f"--repeat {args.repeat}"
    )
    print(f"set-up: {args.commits} commits + notes by git fast-import in {setup_s:.2f} s\n")
    print("| operation | median ms | note |")
    print("| --- | ---: | --- |")
    for name, ms, note_text in rows:
        print(f"| {name} | {ms:.1f} | {note_text} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
