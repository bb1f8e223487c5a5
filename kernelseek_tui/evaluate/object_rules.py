"""What a candidate's own object file may contain, read with binutils (no GPU, no loading).

The object is compiled but not yet linked, so its undefined symbols are exactly what the
candidate's code calls. Rules: every such symbol on the task's allow-list (when it has one) and
none on its forbidden list; CUDA driver functions (``cu*``) only those the task names; no
constructor of its own (nvcc's fat-binary registration is the one allowed), since load-time code
runs inside the judge's process before any check; no raw system-call instruction.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from kernelseek_tui.task import DependencyRule

_DRIVER_FUNCTION = re.compile(r"^cu[A-Z]")
# nvcc's own static constructor registers the fat binary: one entry in .init_array.
NVCC_CONSTRUCTORS = 1
_SYSCALL = re.compile(r"\s(syscall|sysenter|int\s+\$0x80)\b")


def run_tool(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """A binutils (or nvcc) command's output, as text."""
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def matches(symbol: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``symbol`` (version suffix ignored) is one of ``patterns`` ("name*": a prefix)."""
    name = symbol.split("@", 1)[0]
    for pattern in patterns:
        if pattern.endswith("*"):
            if name.startswith(pattern[:-1]):
                return True
        elif name == pattern:
            return True
    return False


def undefined_symbols(obj: Path) -> list[str]:
    """What the object calls from outside itself, without symbol versions."""
    result = run_tool(["nm", "--undefined-only", "--format=posix", str(obj)], 60)
    return [line.split()[0].split("@", 1)[0] for line in result.stdout.splitlines() if line.strip()]


def driver_calls(symbols: list[str]) -> list[str]:
    return sorted({s for s in symbols if _DRIVER_FUNCTION.match(s)})


def object_check(obj: Path, rule: DependencyRule, symbols: list[str] | None = None) -> list[str]:
    """Reasons the candidate's object breaks the rule (see the module docstring); ``symbols``:
    its undefined symbols, when the caller has read them already."""
    symbols = undefined_symbols(obj) if symbols is None else symbols
    bad = sorted({s for s in symbols if matches(s, rule.forbidden_symbols)})
    reasons = [f"calls forbidden symbol {s!r}" for s in bad]
    driver = driver_calls(symbols)
    for name in driver:
        if name not in rule.driver_functions and name not in bad:
            reasons.append(f"calls driver function {name!r}, outside the task's driver_functions")
    if rule.allowed_symbols:
        for name in sorted(set(symbols) - set(bad) - set(driver)):
            if not matches(name, rule.allowed_symbols):
                reasons.append(f"calls {name!r}, outside the task's allowed_symbols")
    constructors = constructor_entries(obj)
    if constructors > NVCC_CONSTRUCTORS:
        reasons.append(
            f"has {constructors - NVCC_CONSTRUCTORS} load-time constructor(s) of its own "
            "(static initialisers or __attribute__((constructor))): code must run only in ks_launch"
        )
    if raw_syscalls(obj):
        reasons.append("contains a raw system-call instruction")
    return reasons


def constructor_entries(obj: Path) -> int:
    """Functions the loader runs before anything else: relocations in .init_array/.ctors."""
    listing = run_tool(["readelf", "-rW", str(obj)], 60).stdout
    sections = re.split(r"\nRelocation section '", listing)
    count = 0
    for section in sections:
        name = section.split("'", 1)[0]
        if re.match(r"\.rela?\.(init_array|preinit_array|ctors)", name):
            found = re.search(r"contains (\d+) entr", section)
            count += int(found.group(1)) if found else 0
    return count


def raw_syscalls(obj: Path) -> bool:
    disassembly = run_tool(["objdump", "-d", "--no-show-raw-insn", str(obj)], 120).stdout
    return _SYSCALL.search(disassembly) is not None
