"""What the host compiler hands the assembler for a candidate: its own C++ code, nothing written
in assembly, and no assembler directive that reads files or writes directives.

The assembler (GNU as) is a second language inside the build, past the preprocessor and its
include rule: ``.incbin "file"`` copies any file on the machine into the object at build time
(another library's fat binary, say), ``.include`` reads assembly from a file, and ``.macro``,
``.irp`` and ``.irpc`` compose a directive's name from pieces (``.irp d,incbin`` then ``.\\d``),
so no name is ever spelled out. Directive names are case-insensitive and ``;`` separates two
on a line.

The check reads the assembly itself (``kernel.s``, which ``-save-temps`` leaves beside the
object), not the source: after preprocessing, string literals are still to be joined and their
escapes decoded (``".inc" "bin"``, ``"\\x2eincbin"``), and the host compiler copies some strings
into the assembly verbatim, newlines included, with no ``asm`` statement in the source: section
names (``__attribute__((section(...)))``), assembler labels and symbol versions. Two rules:

- Every block of inline assembly (gcc marks each between ``#APP`` and ``#NO_APP``) is nvcc's one
  embedded fat binary (``.section .nv_fatbin``, ``fatbinData:``, ``.quad`` words). A candidate's
  own ``asm(...)`` in host code, at top level or in a function, is refused whatever it holds.
  Device code's inline PTX never reaches this file: it goes to ptxas, through the PTX.
- None of the directives above anywhere in the file, for text smuggled in through a name.
"""

from __future__ import annotations

import re
from pathlib import Path

# gcc's markers around the text of each asm statement it copies into its output.
_APP_ON = "#APP"
_APP_OFF = "#NO_APP"
# nvcc's fatbin.c: the device code as 64-bit words in a section of its own, under the label the
# registration's wrapper points to. A second block like it would define the label twice, which
# the assembler refuses.
_NVCC_FAT_BINARY = re.compile(
    r'\.section\s+\.nv_fatbin\s*,\s*"a"\n'
    r"\.align\s+\d+\n"
    r"fatbinData:\n"
    r"(?:\.quad\s+0x[0-9a-fA-F]+(?:\s*,\s*0x[0-9a-fA-F]+)*\n)*"
    r"\.text\n"
)
# Directives that read a file, or that build a directive out of pieces: wherever they stand on
# a line (after a label, a ';' or anything else that is not part of a name), in any case.
_FORBIDDEN_DIRECTIVE = re.compile(
    r"(?<![\w.$])\.(incbin|include|macro|irp|irpc)(?![\w.$])", re.IGNORECASE
)


def inline_assembly_blocks(assembly: str) -> list[str]:
    """The text of each #APP ... #NO_APP block, its lines stripped and blank ones left out."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line in assembly.splitlines():
        text = line.strip()
        if text == _APP_ON and current is None:
            current = []
        elif text == _APP_OFF and current is not None:
            blocks.append("".join(f"{part}\n" for part in current))
            current = None
        elif current is not None and text:
            current.append(text)
    if current is not None:
        blocks.append("".join(f"{part}\n" for part in current))
    return blocks


def host_assembly_check(assembly_file: Path) -> list[str]:
    """Reasons the host assembly of the candidate breaks the rules above; empty when clean."""
    if not assembly_file.is_file():
        # Without the file nothing above can be checked: refuse rather than pass unchecked.
        return [f"harness: the host compiler left no assembly ({assembly_file.name}) to check"]
    assembly = assembly_file.read_text(errors="replace")
    reasons = []
    fat_binaries = 0
    for block in inline_assembly_blocks(assembly):
        if _NVCC_FAT_BINARY.fullmatch(block) and fat_binaries == 0:
            fat_binaries += 1
            continue
        first = block.splitlines()[0] if block else "(empty)"
        reasons.append(
            f"has assembly of its own in host code (an asm statement outside device code, "
            f"starting {first[:80]!r}): host code must be C++, and inline PTX belongs in "
            "device code"
        )
    directives = sorted({m.group(1).lower() for m in _FORBIDDEN_DIRECTIVE.finditer(assembly)})
    for directive in directives:
        reasons.append(
            f"its host assembly holds the assembler directive '.{directive}' (through an asm "
            "statement, or a section name, assembler label or symbol version the compiler "
            "copies verbatim): the assembler must read no file and compose no directive"
        )
    return reasons
