"""A verified commit holds the bytes the judge read, or no commit is made (session/engine/
judging.py: ``_judged_copy``, ``_judged_check``; history ``commit_candidate(check_staged=)``).

Found by a review (2026-12-07, late): git's clean filters (a ``.gitattributes`` line with
``ident``, which the agent's own file tools can write) stored other bytes than the judged file,
and a process the agent's shell left running could swap the kernel or ``knobs.json`` between
the judge's read and the engine's ``git add``; either way the branch held, marked verified and
a new best, code that was never judged. CPU only, stand-in evaluators."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelseek_tui.history.session import git_blob_sha
from kernelseek_tui.session.engine import Engine
from tests.test_session_support import (
    ScriptedAgent,
    git,
    make_result,
    make_task_repo,
    read_events,
    session_config,
)

EVALUATE = ("tool", "evaluate", {})
TAGGED = 'static const char ks_tag[] = "$Id: judged $";\n'


def _session(tmp_path: Path, steps: list, evaluator: Any) -> tuple[Engine, ScriptedAgent]:
    task_dir = make_task_repo(tmp_path / "user")
    engine = Engine.start(session_config(task_dir, tmp_path / "traces"), evaluator=evaluator)
    agent = ScriptedAgent(steps)
    engine.run(agent)
    return engine, agent


def _refusals(engine: Engine) -> list[str]:
    return [
        e.text or ""
        for e in read_events(engine.session_dir)
        if e.kind == "error" and "not the candidate the evaluation judged" in (e.text or "")
    ]


class Recording:
    """Passes every candidate at 1.5x and keeps the bytes it was given to judge."""

    def __init__(self) -> None:
        self.judged: list[bytes] = []

    def __call__(self, source: Path, sets: Any, *, knobs: Any = None) -> Any:
        self.judged.append(source.read_bytes())
        return make_result(1.5)


def test_a_gitattributes_filter_cannot_commit_other_bytes_than_the_judged(tmp_path: Path) -> None:
    evaluator = Recording()
    original = (Path(__file__).parents[1] / "kernels" / "flash_fwd" / "baseline.cu").read_text()
    steps = [
        ("tool", "write_file", {"path": ".gitattributes", "content": "baseline.cu ident\n"}),
        ("tool", "write_file", {"path": "baseline.cu", "content": TAGGED + original}),
        EVALUATE,
    ]
    engine, agent = _session(tmp_path, steps, evaluator)
    assert evaluator.judged[0].startswith(TAGGED.encode())  # what the judge read
    assert engine.history.candidates() == []  # nothing committed as verified
    assert _refusals(engine), read_events(engine.session_dir)
    assert all("a new best" not in (o.text or "") for o in agent.outcomes)


class Swapping(Recording):
    """Changes the workspace's kernel while it judges, as a process left running by the
    agent's shell could: the judge must read the bytes of the call, the commit must refuse."""

    def __init__(self, workspace: list[Path]) -> None:
        super().__init__()
        self.workspace = workspace

    def __call__(self, source: Path, sets: Any, *, knobs: Any = None) -> Any:
        result = super().__call__(source, sets, knobs=knobs)
        kernel = self.workspace[0] / "baseline.cu"
        kernel.write_text("// never judged: a wrong kernel\n")
        return result


def test_a_kernel_swapped_while_it_is_judged_is_not_committed(tmp_path: Path) -> None:
    workspace: list[Path] = []
    evaluator = Swapping(workspace)
    task_dir = make_task_repo(tmp_path / "user")
    engine = Engine.start(session_config(task_dir, tmp_path / "traces"), evaluator=evaluator)
    workspace.append(engine.workspace)
    honest = (engine.workspace / "baseline.cu").read_text() + "// an honest change\n"
    agent = ScriptedAgent([("tool", "write_file", {"path": "baseline.cu", "content": honest}),
                           EVALUATE])  # fmt: skip
    engine.run(agent)
    assert evaluator.judged == [honest.encode()]
    assert engine.history.candidates() == []
    assert _refusals(engine)
    tip = git(engine.history.repo, "show", f"{engine.history.branch}:kernels/flash_fwd/baseline.cu")
    assert "never judged" not in tip


def test_an_honest_candidate_is_committed_byte_for_byte(tmp_path: Path) -> None:
    evaluator = Recording()
    original = (Path(__file__).parents[1] / "kernels" / "flash_fwd" / "baseline.cu").read_text()
    changed = original + "// a change\n"
    steps = [("tool", "write_file", {"path": "baseline.cu", "content": changed}), EVALUATE]
    engine, _ = _session(tmp_path, steps, evaluator)
    [candidate] = engine.history.candidates()
    blob = git(engine.history.repo, "rev-parse", f"{candidate.sha}:kernels/flash_fwd/baseline.cu")
    assert blob.strip() == git_blob_sha(changed.encode())
    assert not _refusals(engine)
