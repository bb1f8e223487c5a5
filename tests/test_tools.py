"""The agent's workspace tools: confinement to the workspace, exact edits, a shell without
secrets, a time limit and an output cap."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from kernelseek_tui.session.tools import (
    TOOL_NAMES,
    ToolError,
    Workspace,
    cap_output,
    run_shell,
    scrubbed_env,
)


@pytest.fixture()
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "kernel.cu").write_text("int a = 1;\nint b = 2;\nint a2 = 1;\n")
    (root / "sub").mkdir()
    (root / "sub" / "notes.txt").write_text("hello\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    return Workspace(root)


@pytest.mark.parametrize(
    "path",
    ["../secret.txt", "sub/../../secret.txt", "./../secret.txt", "..", "../workspace2/x"],
)
def test_dot_dot_out_of_the_workspace_is_refused(ws: Workspace, path: str) -> None:
    for call in (
        lambda: ws.read_file(path),
        lambda: ws.write_file(path, "x"),
        lambda: ws.edit_file(path, "outside", "inside"),
        lambda: ws.list_files(path),
    ):
        with pytest.raises(ToolError, match="outside the workspace"):
            call()
    assert (ws.root.parent / "secret.txt").read_text() == "outside\n"


def test_absolute_paths_outside_are_refused_inside_are_fine(ws: Workspace) -> None:
    outside = ws.root.parent / "secret.txt"
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.read_file(str(outside))
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.write_file("/etc/kernelseek-should-not-exist", "x")
    assert not Path("/etc/kernelseek-should-not-exist").exists()
    assert ws.read_file(str(ws.root / "kernel.cu")).text.startswith("int a = 1;")


def test_symlinks_pointing_out_are_refused(ws: Workspace) -> None:
    outside = ws.root.parent / "secret.txt"
    (ws.root / "link.txt").symlink_to(outside)
    (ws.root / "linkdir").symlink_to(ws.root.parent)
    (ws.root / "dangling").symlink_to(ws.root.parent / "not-yet.txt")
    for path in ("link.txt", "linkdir/secret.txt", "dangling"):
        with pytest.raises(ToolError, match="outside the workspace"):
            ws.read_file(path)
        with pytest.raises(ToolError, match="outside the workspace"):
            ws.write_file(path, "overwritten")
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.edit_file("link.txt", "outside", "pwned")
    assert outside.read_text() == "outside\n"
    assert not (ws.root.parent / "not-yet.txt").exists()
    # A symlink that stays inside the workspace is fine, and listing shows links unfollowed.
    (ws.root / "inner").symlink_to(ws.root / "sub" / "notes.txt")
    assert ws.read_file("inner").text == "hello\n"
    listing = ws.list_files().text
    assert "link.txt -> " in listing and "linkdir -> " in listing
    assert "linkdir/secret.txt" not in listing  # a linked directory is not walked


def test_git_metadata_is_off_limits(ws: Workspace) -> None:
    (ws.root / ".git").write_text("gitdir: /somewhere\n")
    with pytest.raises(ToolError, match=r"\.git"):
        ws.write_file(".git", "gitdir: /elsewhere\n")
    with pytest.raises(ToolError, match=r"\.git"):
        ws.read_file(".git")


def test_write_read_and_line_ranges(ws: Workspace) -> None:
    assert (
        "wrote 6 bytes to deep/new/file.cu" in ws.write_file("deep/new/file.cu", "a\nb\nc\n").text
    )
    assert ws.read_file("deep/new/file.cu", offset=2, limit=1).text == "b\n"
    with pytest.raises(ToolError, match="does not exist"):
        ws.read_file("missing.cu")
    with pytest.raises(ToolError, match="directory"):
        ws.read_file("sub")
    with pytest.raises(ToolError, match="positive integer"):
        ws.read_file("kernel.cu", offset=0)
    (ws.root / "blob.bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ToolError, match="not a UTF-8 text file"):
        ws.read_file("blob.bin")


def test_edit_needs_exactly_one_match(ws: Workspace) -> None:
    with pytest.raises(ToolError, match="occurs 2 times"):
        ws.edit_file("kernel.cu", "= 1;", "= 3;")
    with pytest.raises(ToolError, match="does not occur"):
        ws.edit_file("kernel.cu", "int c", "int d")
    with pytest.raises(ToolError, match="non-empty"):
        ws.edit_file("kernel.cu", "", "x")
    before = (ws.root / "kernel.cu").read_text()
    assert ws.edit_file("kernel.cu", "int b = 2;", "int b = 20;").text.endswith("line 2")
    assert (ws.root / "kernel.cu").read_text() == before.replace("int b = 2;", "int b = 20;")


def test_list_files_is_relative_with_sizes(ws: Workspace) -> None:
    rows = ws.list_files().text.splitlines()
    assert "kernel.cu\t34" in rows and "sub/notes.txt\t6" in rows
    assert ws.list_files("sub").text == "sub/notes.txt\t6"


def test_shell_environment_has_no_keys_or_tokens(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-2")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret3")
    monkeypatch.setenv("HF_TOKEN_PATH", "secret4")
    monkeypatch.setenv("KS_PLAIN_SETTING", "visible")
    outcome = run_shell("env", ws.root)
    assert not outcome.is_error
    for secret in ("sk-ant-secret-1", "sk-secret-2", "ghp_secret3", "secret4"):
        assert secret not in outcome.text
    assert "KS_PLAIN_SETTING=visible" in outcome.text
    assert "ANTHROPIC_API_KEY" not in scrubbed_env()
    assert "PATH" in scrubbed_env()


def test_shell_runs_in_the_workspace_and_reports_the_exit_code(ws: Workspace) -> None:
    outcome = run_shell("pwd; ls; exit 3", ws.root)
    assert outcome.is_error and outcome.text.endswith("[exit code 3]")
    assert str(ws.root) in outcome.text and "kernel.cu" in outcome.text
    assert run_shell("true", ws.root).text == "[exit code 0]"
    with pytest.raises(ToolError):
        run_shell("  ", ws.root)


def test_shell_timeout_kills_the_whole_process_group(ws: Workspace, tmp_path: Path) -> None:
    marker = tmp_path / "survivor"
    started = time.monotonic()
    outcome = run_shell(f"(sleep 1; touch {marker}) & sleep 30", ws.root, timeout_s=0.3)
    assert time.monotonic() - started < 5
    assert outcome.is_error and "timed out after 0.3 s" in outcome.text
    time.sleep(1.4)
    assert not marker.exists(), "a child of the command outlived the timeout"


def test_what_a_command_leaves_running_in_the_background_ends_with_it(
    ws: Workspace, tmp_path: Path
) -> None:
    """A process left behind could change the workspace while the judge reads it (a review,
    2026-12-07 late): the command's whole group is killed when it returns."""
    marker = tmp_path / "left-behind"
    outcome = run_shell(f"(sleep 1; touch {marker}) & echo started", ws.root)
    assert not outcome.is_error and "started" in outcome.text
    time.sleep(1.4)
    assert not marker.exists(), "a background child outlived its command"


def test_shell_output_is_capped_keeping_head_and_tail(ws: Workspace) -> None:
    outcome = run_shell("seq 1 100000", ws.root, output_chars=1000)
    assert len(outcome.text) < 1200
    assert outcome.text.startswith("1\n2\n3\n")
    assert "100000" in outcome.text and " cut ...]" in outcome.text
    assert cap_output("short", 100) == "short"


def test_every_tool_the_issue_names_is_offered() -> None:
    assert set(TOOL_NAMES) == {
        "read_file",
        "write_file",
        "edit_file",
        "list_files",
        "run_shell",
        "evaluate",
        "draw_question",
        "finish",
    }


def test_a_flood_of_output_stays_bounded(ws: Workspace) -> None:
    outcome = run_shell("yes 0123456789 | head -c 50000000; echo; echo the-end", ws.root)
    assert len(outcome.text) < 31_000 and "bytes cut" in outcome.text
    assert outcome.text.startswith("0123456789\n") and "the-end" in outcome.text
