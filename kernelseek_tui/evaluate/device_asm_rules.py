"""How much inline assembly the candidate's own device code holds, read from the preprocessor.

Device inline PTX is allowed: honest Hopper kernels need it (sm90.cu's wgmma, bulk copies and
barrier waits: 29 `asm` statements holding 46 PTX statements). But nothing bounded it, so PTX
compiled elsewhere from a library the dependency rule forbids (CUTLASS, CuTe) could be pasted
in as `asm` blocks with its names changed, past every include, symbol and word check (a
review, 2026-12-07). Such code runs to thousands of statements; the task's rule caps what the
candidate may write (`max_device_asm`), far above what hand-written kernels need.

What is counted: the PTX statements (each ends in ``;``) in the templates of the `asm`
statements of the candidate's own file, in nvcc's device pass after preprocessing, so macros
are expanded and the line markers say which text is the candidate's (headers' inline assembly,
``cuda_bf16.hpp``'s among them, is the toolkit's, not counted). Host-side `asm` is refused
already (assembly_rules.py). A template is written once however often it is instantiated or
unrolled, so the count is of code written, not of code run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A line marker of the preprocessor: `# 12 "kernel.cu" 2`.
_LINE_MARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"([^"]*)"[^\n]*$', re.MULTILINE)
_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b(?:\s*(?:volatile|__volatile__|inline|goto)\b)*\s*\(")
_STRING = re.compile(r'"((?:\\.|[^"\\\n])*)"')


@dataclass(frozen=True, slots=True)
class AsmStatement:
    line: int  # in the candidate's own file, from the preprocessor's line markers
    statements: int  # PTX statements in its template


def own_text(preprocessed: str, source_name: str) -> list[tuple[int, str]]:
    """The runs of the preprocessed text that come from ``source_name``, each with the line it
    starts on in that file."""
    runs = []
    markers = list(_LINE_MARKER.finditer(preprocessed))
    for i, marker in enumerate(markers):
        if marker.group(2).rsplit("/", 1)[-1] != source_name:
            continue
        start = marker.end() + 1
        end = markers[i + 1].start() if i + 1 < len(markers) else len(preprocessed)
        runs.append((int(marker.group(1)), preprocessed[start:end]))
    return runs


def _template(text: str, start: int) -> tuple[str, int]:
    """The string literals of the `asm` statement whose opening parenthesis ends at ``start``,
    up to its first top-level colon (the template), and where the statement ends."""
    depth, i, template, in_template = 1, start, [], True
    while i < len(text) and depth:
        char = text[i]
        if char == '"':
            literal = _STRING.match(text, i)
            if literal is None:
                break
            if in_template:
                template.append(literal.group(1))
            i = literal.end()
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == ":" and depth == 1:
            in_template = False
        i += 1
    return "".join(template), i


def asm_statements(preprocessed: str, source_name: str) -> list[AsmStatement]:
    """Every `asm` statement of the candidate's own file, with its count of PTX statements."""
    found = []
    for first_line, run in own_text(preprocessed, source_name):
        position = 0
        while (match := _ASM.search(run, position)) is not None:
            template, position = _template(run, match.end())
            line = first_line + run.count("\n", 0, match.start())
            found.append(AsmStatement(line, template.count(";")))
    return found


def device_asm_check(preprocessed: str, source_name: str, limit: int | None) -> list[str]:
    """The reason the candidate's device code holds more inline PTX than ``limit`` statements;
    empty when it does not, or when the task sets no limit."""
    if limit is None:
        return []
    statements = asm_statements(preprocessed, source_name)
    total = sum(s.statements for s in statements)
    if total <= limit:
        return []
    largest = max(statements, key=lambda s: s.statements)
    return [
        f"holds {total} PTX statements of inline assembly in device code, over the task's "
        f"limit of {limit} (the largest `asm` at line {largest.line}: {largest.statements}): "
        "library code compiled elsewhere must not come in as PTX"
    ]
