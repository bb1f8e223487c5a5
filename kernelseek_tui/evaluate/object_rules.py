"""What a candidate's own object file may contain, read with binutils (no GPU, no loading).

The object is compiled but not yet linked, so its undefined symbols are exactly what the
candidate's code calls. Rules: every such symbol on the task's allow-list (when it has one) and
none on its forbidden list; CUDA driver functions (``cu*``) only those the task names; no code
the loader or the exit runs of its own accord, since it runs inside the judge's process outside
any check: no constructor (nvcc's fat-binary registration is the one allowed), no destructor,
no function registered to run at exit (nvcc's one aside), nothing in the ``.init`` or ``.fini``
sections, no GNU indirect function (its resolver runs at load); no system-call instruction,
whether disassembled as one or hidden as two bytes inside another instruction for a jump to
land on.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import NamedTuple

from kernelseek_tui.task import DependencyRule

_DRIVER_FUNCTION = re.compile(r"^cu[A-Z]")
# nvcc's own static constructor registers the fat binary: one entry in .init_array.
NVCC_CONSTRUCTORS = 1
# ... and registers its unregistration with one call to atexit.
NVCC_EXIT_HANDLERS = 1
_EXIT_REGISTRATION = (
    "atexit",
    "__cxa_atexit",
    "__cxa_thread_atexit",
    "__cxa_thread_atexit_impl",
    "at_quick_exit",
    "on_exit",
)
_SYSCALL = re.compile(r"\s(syscall|sysenter|int\s+\$0x80)\b")
# The same instructions as bytes (syscall, sysenter, int $0x80), found at any offset of code.
_SYSCALL_BYTES = (b"\x0f\x05", b"\x0f\x34", b"\xcd\x80")
_SECTION = re.compile(
    r"^\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+\S+\s*(\S*)"
)


def run_tool(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """A binutils (or nvcc) command's output, as text."""
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


# The CUDA runtime exports most functions a second time for the per-thread default stream
# (``cudaLaunchHostFunc_ptsz``, ``cudaMemset_ptds``), and some again in later revisions
# (``_v2``): each is the same function, and a source declaring that name by hand called a
# forbidden one under a name the list did not hold (a review, 2026-12-07).
_RUNTIME_VARIANT = re.compile(r"(?:_v\d+)?(?:_pts[zd])?$")


def matches(symbol: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``symbol`` (version suffix ignored) is one of ``patterns`` ("name*": a prefix),
    under its own name or as a variant of a runtime function (``_ptsz``, ``_ptds``, ``_v2``)."""
    name = symbol.split("@", 1)[0]
    names = {name, _RUNTIME_VARIANT.sub("", name)}
    for pattern in patterns:
        if pattern.endswith("*"):
            if any(n.startswith(pattern[:-1]) for n in names):
                return True
        elif pattern in names:
            return True
    return False


# What an honest source most often does to call a symbol it never wrote.
_HINTS = {
    # nvcc gives every __device__ function with external linkage a host copy that calls
    # exit(1) (it is never run); found by a review, 2026-12-07, on a plain helper function.
    "exit": (
        " (nvcc's host copy of a __device__ function that is not static calls exit: declare "
        "device functions static, or __forceinline__)"
    ),
}


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
                reasons.append(
                    f"calls {name!r}, outside the task's allowed_symbols" + _HINTS.get(name, "")
                )
    # One relocation listing serves both counts below.
    relocations = run_tool(["readelf", "-rW", str(obj)], 60).stdout
    constructors, destructors = loader_entries(relocations)
    if constructors > NVCC_CONSTRUCTORS:
        reasons.append(
            f"has {constructors - NVCC_CONSTRUCTORS} load-time constructor(s) of its own "
            "(static initialisers or __attribute__((constructor))): code must run only in ks_launch"
        )
    if destructors:
        reasons.append(
            f"has {destructors} unload-time destructor(s) (__attribute__((destructor)) or "
            ".fini_array entries): code must run only in ks_launch"
        )
    handlers = exit_registrations(relocations)
    if handlers > NVCC_EXIT_HANDLERS:
        reasons.append(
            f"registers {handlers - NVCC_EXIT_HANDLERS} function(s) to run at exit beyond nvcc's "
            "own (atexit, a function-local static or thread_local with a destructor): code must "
            "run only in ks_launch"
        )
    sections = read_sections(obj)
    for name in sorted({s.name for s in sections if s.name in (".init", ".fini")}):
        reasons.append(
            f"has code in the {name} section, which the loader runs on its own: code must run "
            "only in ks_launch"
        )
    resolvers = indirect_functions(obj)
    if resolvers:
        reasons.append(
            f"defines GNU indirect function(s) {', '.join(resolvers)}, whose resolvers the loader "
            "runs at load: code must run only in ks_launch"
        )
    if raw_syscalls(obj):
        reasons.append("contains a raw system-call instruction")
    else:
        hidden = syscall_bytes(obj, sections)
        if hidden:
            where = ", ".join(hidden[:3])
            reasons.append(
                f"contains a raw system-call instruction, as bytes inside other code ({where}), "
                "which a jump into the middle of an instruction would run (honest host code can "
                "hold these bytes by accident, in a constant or a jump's distance: a small change "
                "to the host code there moves them)"
            )
    return reasons


def loader_entries(relocations: str) -> tuple[int, int]:
    """Functions the loader runs on its own, from ``readelf -rW``'s listing: relocations in
    .init_array, .preinit_array and .ctors (constructors), and in .fini_array and .dtors
    (destructors), priority suffixes included."""
    constructors = destructors = 0
    for section in re.split(r"\nRelocation section '", relocations):
        name = section.split("'", 1)[0]
        found = re.search(r"contains (\d+) entr", section)
        entries = int(found.group(1)) if found else 0
        if re.match(r"\.rela?\.(init_array|preinit_array|ctors)", name):
            constructors += entries
        elif re.match(r"\.rela?\.(fini_array|dtors)", name):
            destructors += entries
    return constructors, destructors


def exit_registrations(relocations: str) -> int:
    """References to the functions that register code to run at exit, from ``readelf -rW``'s
    listing (each call site or taken address is one relocation): nvcc's glue makes one."""
    count = 0
    for line in relocations.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[4].split("@", 1)[0] in _EXIT_REGISTRATION:
            count += 1
    return count


class Section(NamedTuple):
    name: str
    offset: int  # in the file
    size: int
    code: bool  # executable, with bytes in the file


def read_sections(obj: Path) -> list[Section]:
    listing = run_tool(["readelf", "-SW", str(obj)], 60).stdout
    sections = []
    for line in listing.splitlines():
        match = _SECTION.match(line)
        if match is None:
            continue
        name, kind, offset, size, flags = match.groups()
        code = "X" in flags and kind != "NOBITS"
        sections.append(Section(name, int(offset, 16), int(size, 16), code))
    return sections


def indirect_functions(obj: Path) -> list[str]:
    """Symbols of type IFUNC the object defines."""
    listing = run_tool(["readelf", "-sW", str(obj)], 60).stdout
    names = []
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[3] == "IFUNC" and fields[6] != "UND":
            names.append(fields[7])
    return sorted(set(names))


def syscall_bytes(obj: Path, sections: list[Section]) -> list[str]:
    """Where the bytes of a system-call instruction sit in executable sections (section+offset):
    a disassembly reads code from the start, so two bytes inside another instruction's operand
    look harmless to it, and a jump to them runs them."""
    data = obj.read_bytes()
    found = []
    for name, offset, size, is_code in sections:
        if not is_code:
            continue
        code = data[offset : offset + size]
        for pattern in _SYSCALL_BYTES:
            at = code.find(pattern)
            while at >= 0:
                found.append(f"{name}+{at:#x}")
                at = code.find(pattern, at + 1)
    return sorted(found)


def raw_syscalls(obj: Path) -> bool:
    disassembly = run_tool(["objdump", "-d", "--no-show-raw-insn", str(obj)], 120).stdout
    return _SYSCALL.search(disassembly) is not None
