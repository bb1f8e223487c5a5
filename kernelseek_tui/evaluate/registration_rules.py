"""Calls that register GPU code with the CUDA runtime: allowed only from nvcc's own registration
code, never from the candidate's.

The task's allow-list admits ``__cuda*`` for nvcc's glue, and that glue includes the functions
that hand a fat binary and its kernels to the runtime (``__cudaRegisterFatBinary``,
``__cudaRegisterFunction``, ``__cudaRegisterFatBinaryEnd``, ...). Called from the candidate's own
code (``ks_launch``), they register GPU code that is not the candidate's: another library's fat
binary, embedded as data, whose kernels the candidate then launches through a stub of its own.

nvcc puts every call of the family in code it writes itself (the stub it appends to the
source): the load-time constructor ``__sti____cudaRegisterAll`` (the fat binary, then, through
the callback ``__nv_cudaEntityRegisterCallback``, each kernel and device variable) and
``__cudaUnregisterBinaryUtil``, which the constructor registers to run at exit. So every
relocation against a ``__cudaRegister*`` or ``__cudaUnregister*`` symbol must lie inside one of
those: the constructor is found by structure (the function ``.init_array`` points to; the
constructor rule allows nvcc's one only), the two helpers by their names as gcc writes nvcc's
static functions (gcc inlines the callback into the constructor at -O3, not at -O0), or parts
gcc split off either (``name.cold``, ``name.part.0``). A relocation is a call or a taken address
alike: a pointer to ``__cudaRegisterFatBinary`` kept in data is refused too. A count alone would
not do: nvcc registers each kernel and device variable with a call of its own.

A name can be borrowed: where gcc has inlined nvcc's callback away, a function of the
candidate's could take its name (an assembler label). So the calls that make a whole fat binary
known or forgotten are also counted wherever they are: nvcc makes one reference to each, and a
second fat binary needs another. Kernels or variables registered by hand into nvcc's own fat
binary would reach only the candidate's own device code.

Not seen here: code that finds a registration function's address with no relocation to it
(arithmetic from an address the library knows); that is the in-process hole, closed only by
isolation (docs/RELIABILITY.md).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from kernelseek_tui.evaluate.object_rules import run_tool

_REGISTRATION = re.compile(r"^__cuda(Register|Unregister)")
# Each is referenced once by nvcc's registration code, however many kernels the source has.
FAT_BINARY_CALLS = (
    "__cudaRegisterFatBinary",
    "__cudaRegisterFatBinaryEnd",
    "__cudaUnregisterFatBinary",
)
# nvcc's static helpers in the stub, mangled as gcc names them (internal linkage: "_ZL").
NVCC_REGISTRATION_HELPERS = (
    "_ZL31__nv_cudaEntityRegisterCallbackPPv",
    "_ZL26__cudaUnregisterBinaryUtilv",
)
# gcc's names for the parts of a function it splits off or specialises: name.part.0, name.cold.
_CLONE_SUFFIX = re.compile(r"(?:\.(?:cold|part|constprop|isra|lto_priv|localalias)(?:\.\d+)?)+$")
_CONSTRUCTOR_SECTION = re.compile(r"^\.(init_array|preinit_array|ctors)")
# A line of `readelf -SW`: index, name, type, address, offset, size, entry size, flags (maybe
# none), link, info, alignment.
_SECTION_LINE = re.compile(
    r"^\s*\[\s*(\d+)\]\s+(\S*)\s+(\S+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+[0-9a-f]+"
    r"\s+\S*?\s*\d+\s+(\d+)\s+\d+\s*$"
)
_RELOCATION_HEADER = re.compile(r"^Relocation section '([^']*)' at offset 0x([0-9a-f]+)")


class Function(NamedTuple):
    name: str
    section: int
    start: int
    size: int
    local: bool


class Reference(NamedTuple):
    symbol: str  # what the relocation refers to: a symbol's name, or a section's
    addend: int
    section: int  # the section the relocation patches, -1 when not known
    offset: int


class ObjectListing(NamedTuple):
    section_names: dict[int, str]
    functions: list[Function]
    symbols: dict[str, tuple[int, int]]  # defined symbol -> (section, value)
    references: list[Reference]


def read_listing(obj: Path) -> ObjectListing:
    """Sections, functions, defined symbols and every relocation of ``obj``, from readelf."""
    section_names: dict[int, str] = {}
    target_by_offset: dict[int, int] = {}
    for line in run_tool(["readelf", "-SW", str(obj)], 60).stdout.splitlines():
        match = _SECTION_LINE.match(line)
        if match is None:
            continue
        index, name, kind, offset, info = match.groups()
        section_names[int(index)] = name
        if kind in ("RELA", "REL"):
            target_by_offset[int(offset, 16)] = int(info)
    functions: list[Function] = []
    symbols: dict[str, tuple[int, int]] = {}
    for line in run_tool(["readelf", "-sW", str(obj)], 60).stdout.splitlines():
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[0].endswith(":") or not fields[6].isdigit():
            continue
        # readelf writes a size in decimal, or in hex past 99999.
        value, size = int(fields[1], 16), int(fields[2], 16 if fields[2].startswith("0x") else 10)
        symbols.setdefault(fields[7], (int(fields[6]), value))
        if fields[3] == "FUNC":
            functions.append(Function(fields[7], int(fields[6]), value, size, fields[4] == "LOCAL"))
    references = []
    patched = -1
    for line in run_tool(["readelf", "-rW", str(obj)], 60).stdout.splitlines():
        header = _RELOCATION_HEADER.match(line)
        if header is not None:
            patched = target_by_offset.get(int(header.group(2), 16), -1)
            continue
        fields = line.split()
        if len(fields) < 5 or not re.fullmatch(r"[0-9a-f]+", fields[0]):
            continue
        addend = 0
        if len(fields) >= 7 and fields[5] in "+-":
            addend = int(fields[6], 16) * (-1 if fields[5] == "-" else 1)
        name = fields[4].split("@", 1)[0]
        references.append(Reference(name, addend, patched, int(fields[0], 16)))
    return ObjectListing(section_names, functions, symbols, references)


def function_at(listing: ObjectListing, section: int, offset: int) -> Function | None:
    """The function whose code holds ``offset`` of ``section``; None for data, or code under no
    function symbol (assembly that declared none)."""
    for function in listing.functions:
        inside = function.start <= offset < function.start + function.size
        if function.section == section and inside:
            return function
    return None


def constructors(listing: ObjectListing) -> set[Function]:
    """The functions the loader's constructor tables point to."""
    found = set()
    indices_by_name: dict[str, list[int]] = {}
    for index, name in listing.section_names.items():
        indices_by_name.setdefault(name, []).append(index)
    for ref in listing.references:
        if not _CONSTRUCTOR_SECTION.match(listing.section_names.get(ref.section, "")):
            continue
        # A section's symbol (".text.startup + 0") or a function's own.
        places = [(index, ref.addend) for index in indices_by_name.get(ref.symbol, [])]
        if ref.symbol in listing.symbols:
            section, value = listing.symbols[ref.symbol]
            places.append((section, value + ref.addend))
        for section, address in places:
            function = function_at(listing, section, address)
            if function is not None:
                found.add(function)
    return found


def is_nvcc_registration(function: Function, nvcc_constructors: set[Function]) -> bool:
    """Whether ``function`` is nvcc's constructor, a part gcc split off it, or one of nvcc's
    static helpers (local symbols, by name)."""
    if function in nvcc_constructors:
        return True
    names = {_CLONE_SUFFIX.sub("", f.name) for f in nvcc_constructors}
    names.update(NVCC_REGISTRATION_HELPERS)
    return function.local and _CLONE_SUFFIX.sub("", function.name) in names


def registration_check(obj: Path) -> list[str]:
    """Reasons the object registers GPU code outside nvcc's registration code (see the module
    docstring); empty when clean."""
    listing = read_listing(obj)
    registering = [r for r in listing.references if _REGISTRATION.match(r.symbol)]
    if not registering:
        return []
    nvcc_constructors = constructors(listing)
    reasons = []
    for ref in registering:
        function = function_at(listing, ref.section, ref.offset)
        if function is not None and is_nvcc_registration(function, nvcc_constructors):
            continue
        section = listing.section_names.get(ref.section, "?")
        where = f"{function.name!r}" if function else "outside any function"
        reasons.append(
            f"references {ref.symbol!r} from {where} ({section}+{ref.offset:#x}), outside nvcc's "
            "registration code: GPU code registered by hand need not be the candidate's own"
        )
    for name in FAT_BINARY_CALLS:
        count = sum(1 for ref in registering if ref.symbol == name)
        if count > 1:
            reasons.append(
                f"references {name!r} {count} times, where nvcc's registration code does once: "
                "a second fat binary, registered by hand, need not be the candidate's own"
            )
    return reasons
