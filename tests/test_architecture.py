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
    "kernelseek_tui.trace.wal",
    "kernelseek_tui.trace.blobs",
    "kernelseek_tui.trace.durable",
    "kernelseek_tui.trace.layout",
    "kernelseek_tui.trace.reader",
    "kernelseek_tui.trace.writer",
    "kernelseek_tui.trace.store",
    "kernelseek_tui.trace.queries",
    "kernelseek_tui.trace.tabular",
    "kernelseek_tui.trace.logs",
    "kernelseek_tui.trace.pricing",
    "kernelseek_tui.trace.importers.claude_code",
    "kernelseek_tui.commands.query",
    "kernelseek_tui.commands.import_",
    "kernelseek_tui.evaluate.result",
]
EVALUATOR_MODULES = ["kernelseek_tui.evaluate.result"]


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
