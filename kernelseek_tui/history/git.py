"""Running plain `git` as a subprocess, insulated from the user's hooks, signing and identity.

Every call goes through :func:`git`, which:
- turns a missing binary or a failed command into a one-line :class:`KernelseekError`;
- disables hooks and commit signing, so a user's pre-commit hook or gpg agent cannot break a
  session;
- gives commits an explicit identity (``KernelSeek <kernelseek@localhost>`` unless the
  environment names one), so it works on a machine with no ``user.name`` configured;
- scrubs ``GIT_DIR``-style variables inherited from a parent git (a hook, ``git bisect run``) so
  that the working directory alone decides which repository a call acts on;
- sets ``GIT_OPTIONAL_LOCKS=0`` so read-only calls never refresh the user's index file.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from kernelseek_tui.errors import KernelseekError

DEFAULT_NAME = "KernelSeek"
DEFAULT_EMAIL = "kernelseek@localhost"

# Passed to every call: a user's config may not run code or prompt for a passphrase in a session.
SAFE_CONFIG = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "tag.gpgSign=false",
    "-c",
    "core.quotePath=false",
    # Programs git would run on a status or an add (a file-system monitor) or a diff (an
    # external diff): none, whatever a configuration says.
    "-c",
    "core.fsmonitor=false",
    "-c",
    "diff.external=",
)

# Variables that would point git somewhere other than the working directory we pass.
_SCRUBBED = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a git call: the caller's, scrubbed, with an identity and no prompts."""
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    for role in ("AUTHOR", "COMMITTER"):
        env.setdefault(f"GIT_{role}_NAME", DEFAULT_NAME)
        env.setdefault(f"GIT_{role}_EMAIL", DEFAULT_EMAIL)
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    if extra:
        env.update(extra)
    return env


def git(
    args: Sequence[str],
    cwd: Path,
    *,
    input: str | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``git <args>`` in ``cwd`` and return the completed process (text, UTF-8).

    With ``check`` (the default) a nonzero exit raises :class:`KernelseekError` naming the git
    subcommand and git's own last line of complaint.
    """
    try:
        proc = subprocess.run(
            ["git", *SAFE_CONFIG, *args],
            cwd=cwd,
            input=input,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="surrogateescape",
            env=git_env(env),
        )
    except FileNotFoundError as exc:
        if not Path(cwd).is_dir():
            raise KernelseekError(f"directory {str(cwd)!r} does not exist") from exc
        raise KernelseekError("git is not installed or not on PATH") from exc
    if check and proc.returncode != 0:
        raise KernelseekError(f"git {args[0]} failed in {cwd}: {last_line(proc.stderr)}")
    return proc


def git_out(
    args: Sequence[str], cwd: Path, *, input: str | None = None, env: dict[str, str] | None = None
) -> str:
    """Run git and return its stdout with the trailing newline removed."""
    return git(args, cwd, input=input, env=env).stdout.rstrip("\n")


def last_line(text: str) -> str:
    """The line of git's stderr that states the problem: the last ``fatal:``/``error:`` line,
    else the last non-hint line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for prefix in ("fatal:", "error:"):
        marked = [line for line in lines if line.startswith(prefix)]
        if marked:
            return marked[-1]
    plain = [line for line in lines if not line.startswith("hint:")]
    return (plain or lines or ["(no message)"])[-1]


def toplevel(path: Path) -> Path | None:
    """The root of the working tree that contains ``path``, or None outside any repository."""
    if not path.is_dir():
        raise KernelseekError(f"{str(path)!r} is not a directory")
    proc = git(["rev-parse", "--show-toplevel"], path, check=False)
    if proc.returncode != 0:
        return None
    return Path(proc.stdout.strip()).resolve()


def resolve_commit(rev: str, cwd: Path, *, env: dict[str, str] | None = None) -> str | None:
    """The full sha of the commit ``rev`` names, or None when it names none."""
    # A leading dash would be read as an option; no rev a user means starts with one.
    if not rev or rev.startswith("-"):
        return None
    verify = ["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"]
    proc = git(verify, cwd, check=False, env=env)
    return proc.stdout.strip() if proc.returncode == 0 else None


def ref_exists(ref: str, cwd: Path) -> bool:
    """Whether the fully qualified ``ref`` exists."""
    proc = git(["show-ref", "--verify", "--quiet", ref], cwd, check=False)
    return proc.returncode == 0


def git_bytes(
    args: Sequence[str],
    cwd: Path,
    *,
    input: bytes | None = None,
    env: dict[str, str] | None = None,
) -> bytes:
    """Run git for raw bytes (file contents), raising like :func:`git` on failure."""
    try:
        proc = subprocess.run(
            ["git", *SAFE_CONFIG, *args],
            cwd=cwd,
            input=input,
            capture_output=True,
            env=git_env(env),
        )
    except FileNotFoundError as exc:
        raise KernelseekError("git is not installed or not on PATH") from exc
    if proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", "replace")
        raise KernelseekError(f"git {args[0]} failed in {cwd}: {last_line(stderr)}")
    return proc.stdout
