"""The rule that holds the architecture together: the core never imports Textual, and the
evaluator never imports Textual, anthropic or duckdb. Modules are discovered, not listed, so a
new module is covered the day it is added."""

from __future__ import annotations

import ast
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import kernelseek_tui

PACKAGE_DIR = Path(kernelseek_tui.__file__).parent


def _modules() -> list[str]:
    found = ["kernelseek_tui"]
    for info in pkgutil.walk_packages([str(PACKAGE_DIR)], prefix="kernelseek_tui."):
        if not info.name.endswith("__main__"):  # importing it would run the CLI
            found.append(info.name)
    return sorted(found)


ALL_MODULES = _modules()
CORE_MODULES = [m for m in ALL_MODULES if not m.startswith("kernelseek_tui.tui")]
EVALUATOR_MODULES = [m for m in ALL_MODULES if m.startswith("kernelseek_tui.evaluate")]
# The engine and its agents run on the GPU box, which has no textual, anthropic or duckdb: the
# claude agent loads the SDK only when it runs, the engine DuckDB only for question stats.
SESSION_MODULES = [m for m in ALL_MODULES if m.startswith("kernelseek_tui.session")] + [
    f"kernelseek_tui.commands.{name}" for name in ("run", "ls", "attach", "bisect")
]


def _import_with_blocked(
    modules: list[str], blocked: list[str]
) -> subprocess.CompletedProcess[str]:
    # A module set to None in sys.modules raises ImportError on import: any reach for it fails.
    lines = ["import sys", *[f"sys.modules[{name!r}] = None" for name in blocked]]
    lines += [f"import {module}" for module in modules]
    return subprocess.run([sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True)


def test_discovery_sees_the_parts() -> None:
    for expected in (
        "kernelseek_tui.evaluate.worker",
        "kernelseek_tui.trace.schema",
        "kernelseek_tui.history",
        "kernelseek_tui.cli",
    ):
        assert expected in ALL_MODULES


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_imports_without_textual(module: str) -> None:
    result = _import_with_blocked([module], ["textual"])
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("module", EVALUATOR_MODULES)
def test_evaluator_imports_without_ui_agent_or_database(module: str) -> None:
    result = _import_with_blocked([module], ["textual", "anthropic", "duckdb"])
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("module", SESSION_MODULES)
def test_engine_and_agents_import_without_ui_sdk_or_database(module: str) -> None:
    result = _import_with_blocked([module], ["textual", "anthropic", "duckdb"])
    assert result.returncode == 0, result.stderr


def test_cli_help_lists_every_subcommand() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", "--help"], capture_output=True, text=True
    )
    assert result.returncode == 0
    for name in [
        "demo",
        "run",
        "attach",
        "open",
        "ls",
        "eval",
        "query",
        "bisect",
        "import",
        "report",
        "repertoire",
    ]:
        assert f"    {name}" in result.stdout


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for imported in graph[module]:
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def test_cycle_finder_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_import_graph_has_no_cycle() -> None:
    # Every import counts, those inside functions and under TYPE_CHECKING too (grimp's graph,
    # the one the import-linter contracts in pyproject.toml are checked on).
    import grimp  # with import-linter, in the dev extra

    graph = grimp.build_graph("kernelseek_tui")
    imports = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(imports) == []


def test_the_import_contracts_of_pyproject_hold() -> None:
    # import-linter (dev extra) reads [tool.importlinter] from the repository's pyproject.toml.
    run = (
        "import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(no_cache=True, no_logo=True))"
    )
    result = subprocess.run(
        [sys.executable, "-c", run], cwd=PACKAGE_DIR.parent, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 kept, 0 broken" in result.stdout


# The distinctive names of a session directory's files; the generic ones (blobs, segments,
# evals, attached) are also words of the trace, so a literal of them proves nothing.
SESSION_FILE_NAMES = (
    "session.json",
    "wal.jsonl",
    "events.parquet",
    "inbox.jsonl",
    "engine.log",
    "launch.json",
    "writer.lock",
)


def _session_file_literals(source: str) -> list[tuple[int, str]]:
    """String literals (not docstrings) that name a session file: the name itself, a path or a
    glob ending in it. Messages that mention a file in passing do not count."""
    tree = ast.parse(source)
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    ending = re.compile(r"(^|[/*])(" + "|".join(map(re.escape, SESSION_FILE_NAMES)) + r")$")
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
        and ending.search(node.value)
    ]


def test_the_literal_finder_sees_a_session_file_name() -> None:
    source = 'x = root.glob("*/session.json")\nlog = d / "engine.log"\nsay(f"no {d}/wal.jsonl?")\n'
    assert _session_file_literals(source) == [(1, "*/session.json"), (2, "engine.log")]


def test_only_paths_names_the_session_files() -> None:
    # Every module reaches a session directory's files through paths.SessionPaths.
    found = {
        str(path.relative_to(PACKAGE_DIR)): hits
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
        if path != PACKAGE_DIR / "paths.py"
        for hits in [_session_file_literals(path.read_text())]
        if hits
    }
    assert found == {}
