"""The agent's workspace tools: files confined to the workspace, and a shell without secrets.

Every path an agent gives is resolved (symlinks followed, ``..`` collapsed) and must land inside
the workspace; anything else is refused with a message the agent can act on. ``.git`` is off
limits too, so the session branch cannot be rewritten through the file tools. The shell runs in
the workspace with the API keys and tokens of the engine's environment removed, a time limit,
and its output cut to a size that fits in a conversation.

The harness tools (``evaluate``, ``draw_question``, ``finish``) live in the engine; this module
describes all of them (``TOOL_SPECS``) so every agent sees the same list.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

READ_LIMIT_CHARS: Final = 200_000
LIST_LIMIT: Final = 1000
DEFAULT_SHELL_TIMEOUT_S: Final = 300.0
DEFAULT_SHELL_OUTPUT_CHARS: Final = 30_000

# Environment variables the shell must not see: API keys, tokens, secrets, passwords.
SECRET_NAME: Final = re.compile(
    r"API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE_KEY", re.IGNORECASE
)


class ToolError(Exception):
    """A tool call that could not be done; its message goes back to the agent as an error."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool call returns: ``text`` for the agent, ``data`` for the caller only."""

    text: str
    is_error: bool = False
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the agent sees it: a name, what it does, and a JSON schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def to_api(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_PATH = {"type": "string", "description": "a path relative to the workspace"}

TOOL_SPECS: Final = (
    ToolSpec(
        "read_file",
        "Read a text file of the workspace. Optional 1-based start line and line count.",
        _schema(
            {
                "path": _PATH,
                "offset": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1},
            },
            ["path"],
        ),
    ),
    ToolSpec(
        "write_file",
        "Create or overwrite a text file of the workspace with the given content.",
        _schema({"path": _PATH, "content": {"type": "string"}}, ["path", "content"]),
    ),
    ToolSpec(
        "edit_file",
        "Replace one exact occurrence of old_text with new_text in a workspace file. old_text "
        "must occur exactly once; include enough surrounding lines to make it unique.",
        _schema(
            {"path": _PATH, "old_text": {"type": "string"}, "new_text": {"type": "string"}},
            ["path", "old_text", "new_text"],
        ),
    ),
    ToolSpec(
        "list_files",
        "List the files under a workspace directory (default: the whole workspace), with sizes.",
        _schema({"path": _PATH}, []),
    ),
    ToolSpec(
        "run_shell",
        "Run a bash command in the workspace. It has a time limit and its output is cut to a "
        "maximum size; no API keys or tokens are in its environment; what it starts in the "
        "background ends with it. Where the machine allows, it may write only in the workspace "
        "and in $TMPDIR, and has no network.",
        _schema(
            {
                "command": {"type": "string"},
                "timeout_s": {"type": "number", "minimum": 1},
            },
            ["command"],
        ),
    ),
    ToolSpec(
        "evaluate",
        "Judge the kernel as it is now in the workspace: build it, check every scenario against "
        "the reference, and time it against the starting kernel and the task's peers. Without "
        "'set' it runs the objective (what verifies a candidate; a verified candidate is "
        "committed); with 'set' only that scenario set. 'knobs' sets the task's tunable knobs.",
        _schema(
            {
                "set": {"type": "string", "description": "one scenario set of the task"},
                "knobs": {
                    "type": "object",
                    "additionalProperties": {"type": "integer"},
                    "description": "knob name -> value, among the values task.toml declares",
                },
            },
            [],
        ),
    ),
    ToolSpec(
        "draw_question",
        "Draw one question from the harness's repertoire of questions, to think with.",
        _schema({}, []),
    ),
    ToolSpec(
        "finish",
        "Say that you are done, and why. The harness may answer with a question first.",
        _schema({"reason": {"type": "string"}}, ["reason"]),
    ),
)
TOOL_NAMES: Final = tuple(spec.name for spec in TOOL_SPECS)
FILE_TOOLS: Final = frozenset({"read_file", "write_file", "edit_file", "list_files"})


class Workspace:
    """The directory an agent may touch, and the file tools over it."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()

    # -- confinement ----------------------------------------------------------------------

    def resolve(self, path: object) -> Path:
        """The real path ``path`` names, or ToolError when it leaves the workspace."""
        if not isinstance(path, str) or not path.strip():
            raise ToolError("a path must be a non-empty string")
        if "\x00" in path:
            raise ToolError("a path may not contain NUL")
        given = Path(path).expanduser() if path.startswith("~") else Path(path)
        full = given if given.is_absolute() else self.root / given
        # resolve() follows every symlink, dangling ones included, so a link that points out
        # of the workspace resolves out of it and is refused below.
        real = Path(os.path.realpath(full))
        if real != self.root and not real.is_relative_to(self.root):
            raise ToolError(f"{path!r} is outside the workspace; use paths inside {self.root}")
        relative = real.relative_to(self.root)
        if relative.parts and relative.parts[0] == ".git":
            raise ToolError(f"{path!r} is inside .git, which the tools do not touch")
        return real

    def relative(self, real: Path) -> str:
        rel = real.relative_to(self.root).as_posix()
        return rel if rel else "."

    # -- the file tools -------------------------------------------------------------------

    def read_file(self, path: object, offset: object = None, limit: object = None) -> ToolOutcome:
        real = self.resolve(path)
        if real.is_dir():
            raise ToolError(f"{path!r} is a directory; use list_files")
        try:
            text = real.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ToolError(f"{path!r} does not exist") from None
        except UnicodeDecodeError:
            raise ToolError(f"{path!r} is not a UTF-8 text file") from None
        except OSError as error:
            raise ToolError(f"cannot read {path!r}: {error.strerror}") from None
        if offset is not None or limit is not None:
            start = _positive_int(offset, "offset", 1) - 1
            count = _positive_int(limit, "limit", None)
            lines = text.splitlines(keepends=True)
            text = "".join(lines[start : start + count if count else None])
        if len(text) > READ_LIMIT_CHARS:
            cut = len(text) - READ_LIMIT_CHARS
            text = text[:READ_LIMIT_CHARS] + f"\n[... {cut} more characters; use offset/limit]"
        return ToolOutcome(text)

    def write_file(self, path: object, content: object) -> ToolOutcome:
        if not isinstance(content, str):
            raise ToolError("content must be a string")
        real = self.resolve(path)
        if real.is_dir():
            raise ToolError(f"{path!r} is a directory")
        real.parent.mkdir(parents=True, exist_ok=True)
        _write_text(real, content)
        return ToolOutcome(f"wrote {len(content.encode())} bytes to {self.relative(real)}")

    def edit_file(self, path: object, old_text: object, new_text: object) -> ToolOutcome:
        if not isinstance(old_text, str) or not old_text:
            raise ToolError("old_text must be a non-empty string")
        if not isinstance(new_text, str):
            raise ToolError("new_text must be a string")
        real = self.resolve(path)
        try:
            text = real.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ToolError(f"{path!r} does not exist") from None
        except (UnicodeDecodeError, IsADirectoryError):
            raise ToolError(f"{path!r} is not a UTF-8 text file") from None
        count = text.count(old_text)
        if count == 0:
            raise ToolError(
                f"old_text does not occur in {path!r}; read the file and copy it exactly"
            )
        if count > 1:
            raise ToolError(
                f"old_text occurs {count} times in {path!r}; include more context to make it unique"
            )
        _write_text(real, text.replace(old_text, new_text, 1))
        line = text[: text.index(old_text)].count("\n") + 1
        return ToolOutcome(f"edited {self.relative(real)} at line {line}")

    def list_files(self, path: object = None) -> ToolOutcome:
        real = self.resolve("." if path in (None, "") else path)
        if not real.exists():
            raise ToolError(f"{path!r} does not exist")
        if not real.is_dir():
            return ToolOutcome(f"{self.relative(real)}\t{real.stat().st_size}")
        rows: list[str] = []
        for directory, dirnames, filenames in os.walk(real):
            dirnames[:] = sorted(d for d in dirnames if d != ".git")
            base = Path(directory)
            for name in sorted(filenames) + [d for d in dirnames if (base / d).is_symlink()]:
                entry = base / name
                rel = entry.relative_to(self.root).as_posix()
                if entry.is_symlink():
                    rows.append(f"{rel} -> {os.readlink(entry)}")
                else:
                    with contextlib.suppress(OSError):
                        rows.append(f"{rel}\t{entry.stat().st_size}")
                if len(rows) >= LIST_LIMIT:
                    rows.append(f"[... stopped at {LIST_LIMIT} entries]")
                    return ToolOutcome("\n".join(rows))
        return ToolOutcome("\n".join(rows) if rows else "(empty)")


def _positive_int(value: object, name: str, default: int | None) -> Any:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolError(f"{name} must be a positive integer")
    return value


def _write_text(path: Path, content: str) -> None:
    # O_NOFOLLOW: the last component was checked by resolve(); never write through a link that
    # appeared since.
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        raise ToolError(f"cannot write {path.name!r}: {error.strerror}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(content)


# -- the shell ------------------------------------------------------------------------------


def scrubbed_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment without API keys, tokens, secrets or passwords."""
    source = os.environ if environ is None else environ
    return {k: v for k, v in source.items() if not SECRET_NAME.search(k)}


def cap_output(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its head and its tail."""
    if len(text) <= limit:
        return text
    head = int(limit * 0.6)
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:]}"


def run_shell(
    command: object,
    cwd: Path,
    *,
    timeout_s: float = DEFAULT_SHELL_TIMEOUT_S,
    output_chars: int = DEFAULT_SHELL_OUTPUT_CHARS,
    env: Mapping[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> ToolOutcome:
    """Run ``command`` with bash in ``cwd``; stdout and stderr together, then the exit code.
    ``prefix``: the program bash runs under (session/shell_confinement.py's launcher).

    The command gets its own process group, so a timeout kills what it started as well. Its
    output goes to a temporary file rather than a pipe: memory stays bounded however much it
    prints, and a process that escaped the group cannot keep the tool waiting on the pipe.
    """
    if not isinstance(command, str) or not command.strip():
        raise ToolError("command must be a non-empty string")
    started = time.monotonic()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(
            [*prefix, "bash", "-c", command],
            cwd=cwd,
            env=dict(env) if env is not None else scrubbed_env(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        timed_out = False
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
        # What the command left running in its group ends with it (a timeout's whole group
        # too): a process left behind could change the workspace while the judge reads it, or
        # put work on the GPU while the judge times (a review, 2026-12-07 late). One that left
        # the group (setsid) is not reached.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        text = _read_capped(out, output_chars)
    seconds = time.monotonic() - started
    if timed_out:
        return ToolOutcome(
            f"{text}\n[timed out after {timeout_s:g} s; the command was killed]",
            is_error=True,
            data={"exit_code": None, "seconds": seconds},
        )
    code = process.returncode
    return ToolOutcome(
        f"{text}\n[exit code {code}]" if text else f"[exit code {code}]",
        is_error=code != 0,
        data={"exit_code": code, "seconds": seconds},
    )


def _read_capped(handle: Any, limit: int) -> str:
    """The head and tail of what was written to ``handle``, about ``limit`` characters."""
    size = handle.seek(0, os.SEEK_END)
    handle.seek(0)
    # Four bytes a character at most: read enough of each end, decode, then cut to size.
    if size <= limit * 4:
        return cap_output(handle.read().decode("utf-8", errors="replace"), limit)
    head = handle.read(limit * 4).decode("utf-8", errors="replace")[: int(limit * 0.6)]
    handle.seek(size - limit * 4)
    tail = handle.read().decode("utf-8", errors="replace")[-(limit - len(head)) :]
    return f"{head}\n[... about {size - len(head) - len(tail)} bytes cut ...]\n{tail}"
