"""Static checks and the nvcc build of one candidate, cached by what determines the binary.

Order matters: the source checks run first and need no compiler; the build compiles to an object
whose undefined symbols are exactly what the candidate calls (the static CUDA runtime linked
afterwards brings its own dlopen, which says nothing about the candidate), checked with where it
registers GPU code (registration_rules.py) and with the host compiler's assembly, which the
compile leaves beside it (assembly_rules.py); the linked library is then checked for what it
exports and which shared libraries it needs.

CUDA driver functions (``cu*``, e.g. ``cuTensorMapEncodeTiled`` for TMA tensor maps) are an
allow-list of the task's (``[dependencies] driver_functions``): a candidate whose object calls
one gets libcuda linked in, one that calls any other is refused. Driver functions fetched at run
time would bypass that list, so the getters themselves are forbidden symbols.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from kernelseek_tui.evaluate.assembly_rules import host_assembly_check
from kernelseek_tui.evaluate.device_asm_rules import device_asm_check
from kernelseek_tui.evaluate.include_rules import include_check, preprocessor_view
from kernelseek_tui.evaluate.object_rules import (
    driver_calls,
    object_check,
    run_tool,
    undefined_symbols,
)
from kernelseek_tui.evaluate.registration_rules import registration_check
from kernelseek_tui.task import DependencyRule

# Bump when the build recipe or the checks a build must pass change, so that no cache entry
# built and checked under the old ones is reused (2: destructors, .init/.fini code, indirect
# functions and system calls hidden inside other instructions refused; 3: memory both writable
# and executable refused; 4: functions registered to run at exit refused; 5: registration of GPU
# code outside nvcc's stub, assembly in host code and file-reading assembler directives refused,
# includes matched by path, forbidden words read across line splices; 6: forbidden runtime
# functions under their _ptsz/_ptds/_v2 names, forbidden words in mangled names and past "//"
# inside strings, the candidate's inline PTX counted, line directives refused).
BUILD_VERSION = "6"
BASE_FLAGS = (
    "-O3",
    "-shared",
    "-Xcompiler",
    "-fPIC",
    "-gencode=arch=compute_90a,code=sm_90a",
)
CACHE_ENV = "KERNELSEEK_CACHE"
_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)
# Comments, and the string and character literals that must be read past whole: a "//" or
# "/*" inside a string starts no comment (stripped as one, the rest of its line hid a forbidden
# word or a mangled name from the word check; a review, 2026-12-07). A quote right after a
# letter or digit is a digit separator (1'000) or a prefix's (L'a'), not a literal's start.
_COMMENTS = re.compile(
    r'"(?:\\.|[^"\\\n])*"|(?<![A-Za-z0-9_])\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/',
    re.DOTALL,
)
# A backslash ending a line (GCC also allows blanks after it): the preprocessor joins the two
# lines before it reads anything else.
_SPLICE_AT_END = re.compile(r"\\[ \t\f\v]*\r?$")
# The host compiler's assembly (kernel.s) and its preprocessed input (kernel.ii), left beside
# the object for the host-assembly check (assembly_rules.py).
KEEP_HOST_ASSEMBLY = ("-Xcompiler", "-save-temps=obj")
# Exported names that would interpose on the CUDA runtime/driver, the loader or libc's timers.
_INTERPOSING = re.compile(r"^(cuda|cu[A-Z]|__cuda|nv|dl|clock_gettime|gettimeofday)")
LIBCUDA_ENV = "KERNELSEEK_LIBCUDA"


@dataclass(slots=True)
class BuildResult:
    ok: bool
    library: Path | None = None
    reasons: list[str] = field(default_factory=list)
    cache_hit: bool = False
    seconds: float = 0.0
    key: str = ""
    log: str = ""

    def info(self) -> dict[str, object]:
        return {"cache_hit": self.cache_hit, "seconds": round(self.seconds, 3), "key": self.key}


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "kernelseek")) / "build"


def strip_comments(source: str) -> str:
    """The source without comments, lines kept, so words in comments never count; string and
    character literals are kept whole, comment markers inside them included."""

    def blank(match: re.Match[str]) -> str:
        text = match.group(0)
        return text if text[0] in "\"'" else "\n" * text.count("\n")

    return _COMMENTS.sub(blank, source)


def splice_lines(source: str) -> str:
    """The source with its line splices joined, as the preprocessor reads it: ``thr\\`` at a
    line's end and ``ust`` on the next are one word. The newlines a splice removed follow the
    joined line, so a line number still counts the source's lines (the joined line's first)."""
    lines: list[str] = []
    pieces: list[str] = []
    for physical in source.split("\n"):
        splice = _SPLICE_AT_END.search(physical)
        if splice is not None:
            pieces.append(physical[: splice.start()])
            continue
        lines.append("".join(pieces) + physical)
        lines.extend([""] * len(pieces))
        pieces = []
    if pieces:  # the source ends in a splice
        lines.append("".join(pieces))
        lines.extend([""] * (len(pieces) - 1))
    return "\n".join(lines)


def static_check(source: str, rule: DependencyRule) -> list[str]:
    """Reasons the source breaks the dependency rule, with line numbers; empty when clean.

    The include lines are read as written (the preprocessor's view, include_rules.py, is the
    rule for includes, splices and macros included); the forbidden words across line splices,
    which the preprocessor joins before anything else (splices first, then comments, as the
    compiler does them)."""
    reasons = []
    code = strip_comments(source)
    for match in _INCLUDE.finditer(code):
        header = match.group(2).strip()
        line = code.count("\n", 0, match.start()) + 1
        if header not in rule.allowed_includes:
            reasons.append(f"line {line}: include {header!r} is outside the dependency rule")
    spliced = strip_comments(splice_lines(source))
    for match in _LINE_DIRECTIVE.finditer(spliced):
        line = spliced.count("\n", 0, match.start()) + 1
        reasons.append(
            f"line {line}: a line directive (#line, or a GNU line marker): it renames where the "
            "code after it comes from, which the count of inline assembly reads"
        )
        break
    for word in rule.forbidden_words:
        pattern = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9])", re.IGNORECASE)
        found = pattern.search(spliced) or _mangled_name_holding(spliced, word)
        if found is not None:
            line = spliced.count("\n", 0, found.start()) + 1
            reasons.append(f"line {line}: forbidden dependency {word!r}")
    return reasons


# `#line 7 "cuda_bf16.hpp"`, or GCC's own marker `# 7 "cuda_bf16.hpp"` (also accepted in a
# source), `%:` being `#` spelled as a digraph: the preprocessor would then say the code after it
# came from a header, and device_asm_rules.py counts only the candidate's own file.
_LINE_DIRECTIVE = re.compile(r"^[ \t]*(?:#|%:)[ \t]*(?:line\b|\d)", re.MULTILINE)
_MANGLED = re.compile(r"(?<![A-Za-z0-9_])_Z[A-Za-z0-9_]+")


def _mangled_name_holding(code: str, word: str) -> re.Match[str] | None:
    """A C++ mangled name (``_ZN7cutlass4gemm...``, as inline assembly calling compiled library
    code would spell it) with ``word`` as one of its parts: the part's length, then the part.
    The word check above misses it, a digit standing right before the word (a review,
    2026-12-07)."""
    part = re.compile(rf"(?<!\d){len(word)}{re.escape(word)}", re.IGNORECASE)
    for name in _MANGLED.finditer(code):
        if part.search(name.group()):
            return name
    return None


def find_libcuda(nvcc: str | None = None) -> Path | None:
    """The CUDA driver library to link against: $KERNELSEEK_LIBCUDA, the installed driver, or
    the toolkit's link stub (same soname, so the library runs against the real driver)."""
    override = os.environ.get(LIBCUDA_ENV)
    if override:
        return Path(override) if Path(override).exists() else None
    try:
        cache = run_tool(["ldconfig", "-p"], 30).stdout
    except (OSError, subprocess.TimeoutExpired):
        cache = ""
    found = re.search(r"libcuda\.so\.1 \(libc6,x86-64\) => (\S+)", cache)
    if found and Path(found.group(1)).exists():
        return Path(found.group(1))
    candidates = [Path(d) / "libcuda.so.1" for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64")]
    if nvcc:
        toolkit = Path(nvcc).resolve().parent.parent
        candidates += [toolkit / "lib64" / "stubs" / "libcuda.so"]
        candidates += sorted(toolkit.glob("targets/*/lib/stubs/libcuda.so"))
    return next((path for path in candidates if path.exists()), None)


def library_check(library: Path, rule: DependencyRule, entry: str) -> list[str]:
    """Reasons from the linked library: interposing exports and needed libraries."""
    reasons = []
    exported = run_tool(["nm", "-D", "--defined-only", "--format=posix", str(library)], 60)
    names = [line.split()[0] for line in exported.stdout.splitlines() if line.strip()]
    if entry not in names:
        reasons.append(f"the library does not export {entry!r} with C linkage")
    for name in names:
        if _INTERPOSING.match(name):
            reasons.append(f"the library exports {name!r}, which would interpose on the runtime")
    reasons += writable_code(library)
    dynamic = run_tool(["readelf", "-d", str(library)], 60)
    for needed in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic.stdout):
        stem = needed.split(".so", 1)[0]
        # "ld-linux" allows "ld-linux-x86-64"; "libc" must not allow "libcublas".
        if not any(stem == ok or stem.startswith(ok + "-") for ok in rule.allowed_libraries):
            reasons.append(f"the library links {needed!r}, outside the dependency rule")
    return reasons


# A program header line of `readelf -lW`: its type, then its flags (e.g. "R E", "RWE").
_SEGMENT = re.compile(r"^\s*(\S+)(?:\s+0x[0-9a-f]+){5}\s+([RWE ]+?)\s+0x[0-9a-f]+\s*$")


def writable_code(library: Path) -> list[str]:
    """Reasons from memory the library would have both writable and executable: a candidate
    could write instructions there at run time (a system call among them) and run them, which
    no check of its object's bytes can see."""
    reasons = []
    listing = run_tool(["readelf", "-lW", str(library)], 60).stdout
    for line in listing.splitlines():
        match = _SEGMENT.match(line)
        if match is None or not {"W", "E"} <= set(match.group(2)):
            continue
        if match.group(1) == "GNU_STACK":
            reasons.append(
                "the library asks for an executable stack (.note.GNU-stack): code could be "
                "written on the stack at run time and run"
            )
        else:
            reasons.append(
                f"the library has a writable and executable {match.group(1)} segment (a section "
                "marked both): code could be written into it at run time and run"
            )
    return reasons


@cache
def nvcc_version(nvcc: str = "nvcc") -> str:
    try:
        return run_tool([nvcc, "--version"], 60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def find_nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    default = Path("/usr/local/cuda/bin/nvcc")
    return str(default) if default.exists() else None


def build_key(source: str, flags: list[str], version: str, checks: str = "") -> str:
    """The cache key of a build: what determines the binary, and ``checks``, what it was checked
    against (the task's dependency rule and entry point), since a library in the cache is
    trusted without checking it again: one built for a task that allows more must not pass for
    one that allows less."""
    digest = hashlib.sha256()
    for part in (BUILD_VERSION, version, "\0".join(flags), source, checks):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def build(
    source: str,
    *,
    rule: DependencyRule,
    extra_flags: tuple[str, ...] = (),
    defines: dict[str, int] | None = None,
    timeout_s: float = 300.0,
    entry: str = "ks_launch",
) -> BuildResult:
    """Check and compile ``source`` into a shared library; cached by source, flags, nvcc and
    the rule it was checked against."""
    started = time.monotonic()
    reasons = static_check(source, rule)
    if reasons:
        return BuildResult(ok=False, reasons=reasons, seconds=time.monotonic() - started)
    nvcc = find_nvcc()
    if nvcc is None:
        return BuildResult(ok=False, reasons=["harness: nvcc not found on PATH"])
    flags = [*extra_flags, *(f"-D{k}={v}" for k, v in sorted((defines or {}).items()))]
    key = build_key(source, flags, nvcc_version(nvcc), f"{entry}\0{rule!r}")
    target_dir = cache_root() / key
    library = target_dir / "kernel.so"
    if library.exists():
        return BuildResult(
            ok=True, library=library, cache_hit=True, key=key, seconds=time.monotonic() - started
        )
    cache_root().mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=cache_root(), prefix="tmp-"))
    try:
        outcome = _compile(nvcc, source, flags, work, rule, entry, timeout_s)
        if outcome is not None:
            outcome.key = key
            outcome.seconds = time.monotonic() - started
            return outcome
        # A rename that fails means another process built the same key first: equally good.
        with contextlib.suppress(OSError):
            work.rename(target_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return BuildResult(ok=True, library=library, key=key, seconds=time.monotonic() - started)


def _compile(
    nvcc: str,
    source: str,
    flags: list[str],
    work: Path,
    rule: DependencyRule,
    entry: str,
    timeout_s: float,
) -> BuildResult | None:
    """Compile, check the object, link, check the library, in ``work``; None when all pass."""
    (work / "kernel.cu").write_text(source)
    compile_flags = [f for f in BASE_FLAGS if f != "-shared"]
    steps = [
        [nvcc, *compile_flags, *flags, *KEEP_HOST_ASSEMBLY, "-c", "kernel.cu", "-o", "kernel.o"],
        [nvcc, *BASE_FLAGS, *flags, "kernel.o", "-o", "kernel.so"],
    ]
    view = preprocessor_view(nvcc, work / "kernel.cu", [*compile_flags, *flags], timeout_s)
    reasons = include_check(view, work / "kernel.cu", rule)
    reasons += device_asm_check(view.device_text, "kernel.cu", rule.max_device_asm)
    if reasons:
        return BuildResult(ok=False, reasons=reasons)
    log = []
    # The host assembly's reasons wait for the link: what an asm statement did to the library
    # (an executable stack, say) is still named by the library's own checks.
    assembly_reasons: list[str] = []
    for step, cmd in enumerate(steps):
        try:
            result = subprocess.run(
                cmd, cwd=work, capture_output=True, text=True, timeout=timeout_s
            )
        except subprocess.TimeoutExpired:
            return BuildResult(ok=False, reasons=[f"build timed out after {timeout_s:.0f} s"])
        log.append(result.stdout + result.stderr)
        if result.returncode != 0:
            reason = "build failed: " + _first_errors(result.stderr + result.stdout)
            return BuildResult(ok=False, reasons=[reason], log="\n".join(log))
        if step == 0:
            symbols = undefined_symbols(work / "kernel.o")
            reasons = object_check(work / "kernel.o", rule, symbols)
            reasons += registration_check(work / "kernel.o")
            assembly_reasons = host_assembly_check(work / "kernel.s")
            if reasons:
                reasons += assembly_reasons
                return BuildResult(ok=False, reasons=reasons, log="\n".join(log))
            driver = driver_calls(symbols)
            if driver:
                libcuda = find_libcuda(nvcc)
                if libcuda is None:
                    reason = (
                        f"harness: the candidate calls the CUDA driver ({', '.join(driver)}) and "
                        f"no libcuda was found to link it (no driver, no toolkit stub; set "
                        f"{LIBCUDA_ENV})"
                    )
                    return BuildResult(ok=False, reasons=[reason], log="\n".join(log))
                steps[1] += ["-Xlinker", str(libcuda)]
    reasons = assembly_reasons + library_check(work / "kernel.so", rule, entry)
    if reasons:
        return BuildResult(ok=False, reasons=reasons, log="\n".join(log))
    (work / "build.log").write_text("\n".join(log))
    for intermediate in ("kernel.o", "kernel.s", "kernel.ii"):
        (work / intermediate).unlink(missing_ok=True)
    return None


def _first_errors(output: str, limit: int = 5) -> str:
    lines = [line.strip() for line in output.splitlines() if "error" in line.lower()]
    if not lines:
        lines = [line.strip() for line in output.splitlines() if line.strip()]
    text = " | ".join(lines[:limit])
    return text[:800] if text else "nvcc exited nonzero with no output"
