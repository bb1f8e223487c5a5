"""The rule that holds the architecture together: the core never imports Textual, and the
evaluator never imports Textual, anthropic or duckdb."""

from __future__ import annotations

import subprocess
import sys

import pytest

CORE_MODULES = [
    "kernelseek_tui.cli",
    "kernelseek_tui.paths",
    "kernelseek_tui.trace.schema",
    "kernelseek_tui.evaluate.result",
    "kernelseek_tui.history",
    "kernelseek_tui.history.bisect",
    "kernelseek_tui.history.git",
    "kernelseek_tui.history.message",
    "kernelseek_tui.history.session",
    "kernelseek_tui.task",
    "kernelseek_tui.scenarios",
    "kernelseek_tui.expr",
]
EVALUATOR_MODULES = [
    "kernelseek_tui.evaluate.result",
    "kernelseek_tui.evaluate.api",
    "kernelseek_tui.evaluate.build",
    "kernelseek_tui.evaluate.check",
    "kernelseek_tui.evaluate.worker",
    "kernelseek_tui.evaluate.pool",
    "kernelseek_tui.evaluate.display",
    "kernelseek_tui.evaluate.comparators",
    "kernelseek_tui.evaluate.timing",
    "kernelseek_tui.evaluate.buffers",
    "kernelseek_tui.evaluate.baseline_cache",
    "kernelseek_tui.evaluate.dtypes",
]


def _import_with_blocked(
    modules: list[str], blocked: list[str]
) -> subprocess.CompletedProcess[str]:
    # A module set to None in sys.modules raises ImportError on import: any reach for it fails.
    code = "\n".join(
        ["import sys", *[f"sys.modules[{name!r}] = None" for name in blocked]]
        + [f"import {module}" for module in modules]
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)


@pytest.mark.parametrize("module", CORE_MODULES)
def test_core_imports_without_textual(module: str) -> None:
    result = _import_with_blocked([module], ["textual"])
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("module", EVALUATOR_MODULES)
def test_evaluator_imports_without_ui_agent_or_database(module: str) -> None:
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
