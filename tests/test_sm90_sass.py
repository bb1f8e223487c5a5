"""What ptxas scheduled in the Hopper kernel's steady loop, read from its SASS on the CPU: the
softmax of S_j must run while P_{j-1} V_{j-1} is still on the tensor cores.

The source always asked for that order (wait for S_j, softmax, then wait for P V), but ptxas
moves a wgmma wait up to the start of its basic block, and until v20 that put the wait for P V
ahead of every exponential in every head dim (kernels/flash_fwd/NOTES.md, v20). The loop's
only `wgmma.wait_group 1` (SASS `WARPGROUP.DEPBAR.LE gsb0, 0x1`) is the wait for S_j; the
exponentials between it and the next wait are the ones that overlap P V.

Needs nvcc, cuobjdump and nvdisasm (the CUDA toolkit, or the nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm wheels of the dev extra).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelseek_tui.evaluate.build import BASE_FLAGS
from kernelseek_tui.task import load_task

TASK_DIR = Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd"
FUNCTION = re.compile(r"Function : (\S+)")
INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+([^;]*);")
# (head dim, key-tile width, consumer warpgroups) of each instantiation, whether it is the
# dynamic scheduler's (SM90_DYNAMIC_CAUSAL), and whether its unmasked steps skip the row
# maximum (SM90_STALE_MAX).
INSTANCE = re.compile(r"flash_fwd_sm90ILi(\d+)ELi(\d+)ELi(\d+)ELb([01])ELb([01])E")


def cuobjdump() -> str | None:
    """cuobjdump on PATH, or the one the nvidia-cuda-cuobjdump wheel put beside this Python."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    for site in map(Path, sys.path):
        for candidate in site.glob("nvidia/cu*/bin/cuobjdump"):
            return str(candidate)
    return None


pytestmark = [
    pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH"),
    pytest.mark.skipif(cuobjdump() is None, reason="no cuobjdump (CUDA toolkit or wheel)"),
]


def sass_by_kernel(
    tmp_path: Path, defines: dict[str, int], *, dynamic: bool = False, stale: bool = False
) -> dict[tuple[int, int, int], list[str]]:
    """The kernel built as the judge builds it (sm_90a), disassembled: instructions per
    (head dim, key-tile width, consumers) instantiation; with ``dynamic``, the dynamic
    scheduler's instantiations instead of the others; with ``stale``, those whose unmasked
    steps skip the row maximum instead of the exact ones."""
    task = load_task(TASK_DIR, "sm90.cu")
    tmp_path.mkdir(parents=True, exist_ok=True)
    cubin = tmp_path / "k.cubin"
    flags = [f"-D{name}={value}" for name, value in defines.items()]
    judge_flags = [f for f in BASE_FLAGS if f not in ("-shared", "-Xcompiler", "-fPIC")]
    command = ["nvcc", *judge_flags, *task.nvcc_flags, *flags, "-cubin", "-o", str(cubin)]
    built = subprocess.run(
        [*command, str(task.source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    tool = cuobjdump()
    assert tool is not None
    # cuobjdump runs nvdisasm, found on PATH: the wheel puts it beside cuobjdump.
    env = {**os.environ, "PATH": f"{Path(tool).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    listing = subprocess.run(
        [tool, "-sass", str(cubin)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=env,
    ).stdout
    kernels: dict[tuple[int, int, int], list[str]] = {}
    current: list[str] | None = None
    for line in listing.splitlines():
        function = FUNCTION.search(line)
        if function:
            dims = INSTANCE.search(function.group(1))
            wanted = dims is not None and (dims[4] == "1") == dynamic and (dims[5] == "1") == stale
            key = (int(dims[1]), int(dims[2]), int(dims[3])) if dims and wanted else None
            current = kernels.setdefault(key, []) if key else None
            continue
        instruction = INSTRUCTION.search(line)
        if instruction and current is not None:
            current.append(instruction.group(1))
    return kernels


def exponentials_under_pv(instructions: list[str]) -> int:
    """Exponentials between a steady loop's wait for S_j and the wait that follows it, in the
    loop that has fewest (since v24 the default build has two steady loops, SM90_SPLIT_MASKED_LOOP:
    the unmasked key tiles' and the masked ones')."""
    each = exponentials_under_pv_per_loop(instructions)
    assert len(each) in (1, 2), each
    return min(each)


def exponentials_under_pv_per_loop(instructions: list[str]) -> list[int]:
    """The same, for every wait for S_j (one per steady loop) in address order."""
    waits = [i for i, text in enumerate(instructions) if "WARPGROUP.DEPBAR" in text]
    found = []
    for wait_for_s in (i for i in waits if text_ends(instructions[i], "0x1")):
        following = [i for i in waits if i > wait_for_s]
        assert following, "no wait after the wait for S_j"
        between = instructions[wait_for_s + 1 : following[0]]
        found.append(sum("MUFU.EX2" in text for text in between))
    return found


def text_ends(text: str, value: str) -> bool:
    return text.replace(" ", "").endswith(f"gsb0,{value}")


def test_the_softmax_runs_under_pv_in_every_head_dim(tmp_path: Path) -> None:
    kernels = sass_by_kernel(tmp_path, {})
    assert {d for d, _, _ in kernels} == {64, 128, 256}
    for (headdim, block_n, consumers), instructions in kernels.items():
        # A consumer thread holds two rows of BLOCK_N / 4 scores each: all their exponentials.
        assert exponentials_under_pv(instructions) >= block_n // 2, (headdim, block_n, consumers)


def test_two_d64_consumers_for_short_causal_grids_keep_it(tmp_path: Path) -> None:
    kernels = sass_by_kernel(tmp_path, {"SM90_D64_CONSUMERS": 0})
    assert {(d, c) for d, _, c in kernels if d == 64} == {(64, 2), (64, 3)}
    for (headdim, block_n, consumers), instructions in kernels.items():
        assert exponentials_under_pv(instructions) >= block_n // 2, (headdim, block_n, consumers)


def test_with_k_released_before_the_mask_the_wait_for_pv_comes_first(tmp_path: Path) -> None:
    """v19's placement (SM90_SOFTMAX_UNDER_PV=0): the check above would have failed."""
    for key, instructions in sass_by_kernel(tmp_path, {"SM90_SOFTMAX_UNDER_PV": 0}).items():
        assert max(exponentials_under_pv_per_loop(instructions)) == 0, key


def test_knob_value_2_keeps_d64_as_v19(tmp_path: Path) -> None:
    kernels = sass_by_kernel(tmp_path, {"SM90_SOFTMAX_UNDER_PV": 2})
    for (headdim, block_n, _), instructions in kernels.items():
        under = exponentials_under_pv(instructions)
        if headdim == 64:
            assert max(exponentials_under_pv_per_loop(instructions)) == 0, (headdim, block_n)
        else:
            assert under >= block_n // 2, (headdim, block_n)


def uniform_instructions(instructions: list[str]) -> int:
    """Instructions on the uniform datapath (U...: addresses, descriptors, loop counters)."""
    return sum(re.sub(r"^@!?U?P\w+\s+", "", text).startswith("U") for text in instructions)


def test_skipping_unseen_tiles_keeps_the_uniform_datapath(tmp_path: Path) -> None:
    """SM90_SKIP_UNSEEN gives each warpgroup its own key-tile count. Taken as it is computed
    (from the warpgroup index), the loops' trip counts looked thread-dependent to ptxas and
    every kernel lost about half its uniform-datapath instructions (the steady loop's went from
    129 to 2 at d256, the cost v9 measured); taken from lane 0 by a shuffle, none is lost."""
    plain = sass_by_kernel(tmp_path / "plain", {"SM90_SKIP_UNSEEN": 0})
    skipping = sass_by_kernel(tmp_path / "skipping", {})  # the default since v21
    assert plain.keys() == skipping.keys()
    for key, instructions in skipping.items():
        assert uniform_instructions(instructions) >= 0.9 * uniform_instructions(plain[key]), key
        assert exponentials_under_pv(instructions) >= key[1] // 2, key


def test_a_loop_for_unmasked_and_one_for_masked_tiles_keep_the_overlap_and_the_datapath(
    tmp_path: Path,
) -> None:
    """SM90_SPLIT_MASKED_LOOP (the default since v24): two steady loops, each with its wait for
    S_j and the softmax under P V, and the uniform datapath of the single loop (its bound from
    lane 0: computed from the warpgroup index it cost both loops every uniform instruction, as
    v9's branch)."""
    single = sass_by_kernel(tmp_path / "single", {"SM90_SPLIT_MASKED_LOOP": 0})
    for instructions in single.values():
        assert len(exponentials_under_pv_per_loop(instructions)) == 1
    split = sass_by_kernel(tmp_path / "split", {})
    assert single.keys() == split.keys()
    for key, instructions in split.items():
        each = exponentials_under_pv_per_loop(instructions)
        assert len(each) == 2 and min(each) >= key[1] // 2, (key, each)
        assert uniform_instructions(instructions) >= 0.9 * uniform_instructions(single[key]), key


def test_the_dynamic_scheduler_keeps_the_steady_loop(tmp_path: Path) -> None:
    """SM90_DYNAMIC_CAUSAL adds kernels that take their tiles from a counter (causal launches);
    their steady loop is the static kernels' own: the softmax under P V, and the uniform
    datapath (the tile index read from shared memory is taken from lane 0)."""
    static = sass_by_kernel(tmp_path / "static", {})
    dynamic = sass_by_kernel(tmp_path / "dynamic", {"SM90_DYNAMIC_CAUSAL": 1}, dynamic=True)
    assert dynamic.keys() == static.keys()
    for key, instructions in dynamic.items():
        assert exponentials_under_pv(instructions) >= key[1] // 2, key
        assert "ATOMG" in " ".join(instructions) or "RED" in " ".join(instructions), key
    for key, instructions in dynamic.items():
        # Without the __syncwarp after the slot's read: 2 of d128 causal's 58 were left.
        assert steady_uniform(instructions) >= 0.9 * steady_uniform(static[key]), key


def steady_uniform(instructions: list[str]) -> int:
    """Uniform-datapath instructions from the wait for S_j back to the step's first wgmma
    arrive: the part of the steady loop every step runs."""
    wait = next(i for i, t in enumerate(instructions) if text_ends(t, "0x1"))
    start = max(i for i, t in enumerate(instructions[:wait]) if "WARPGROUP.ARRIVE" in t)
    start = max(i for i, t in enumerate(instructions[:start]) if "WARPGROUP.ARRIVE" in t)
    return uniform_instructions(instructions[start:wait])


def test_two_q_buffers_keep_the_steady_loop(tmp_path: Path) -> None:
    """SM90_Q_STAGES=2 (a second Q buffer where it fits; the default since v24) changes where Q
    is loaded and which buffer a tile reads, not the step: the softmax stays under P V and the
    uniform datapath stays, against one buffer."""
    one = sass_by_kernel(tmp_path / "one", {"SM90_Q_STAGES": 1})
    two = sass_by_kernel(tmp_path / "two", {})
    assert one.keys() == two.keys()
    for key, instructions in two.items():
        assert exponentials_under_pv(instructions) >= key[1] // 2, key
        assert steady_uniform(instructions) >= 0.9 * steady_uniform(one[key]), key


SETMAXREG = re.compile(
    r"USETMAXREG\.(TRY_ALLOC|DEALLOC)\.CTAPOOL\s+(?:UP\d+,\s*)?(0x[0-9a-f]+|\d+)"
)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_the_consumers_ask_for_no_more_registers_than_the_producer_gives_back(
    tmp_path: Path, dynamic: bool
) -> None:
    """setmaxnreg.inc (SASS `USETMAXREG.TRY_ALLOC.CTAPOOL`) takes registers only from the CTA's
    pool, which holds what setmaxnreg.dec gave back, and waits until it has them: the consumers'
    rise above the launch's per-thread count, times their number, must not exceed the
    producer's fall below it. The dynamic scheduler's kernels broke this (producer 32, two
    consumers 240: 1024 registers short) and hung on their first launch (H100, 2026-12-05)."""
    defines = {"SM90_DYNAMIC_CAUSAL": 1} if dynamic else {}
    kernels = list(sass_by_kernel(tmp_path / "exact", defines, dynamic=dynamic).items())
    kernels += sass_by_kernel(tmp_path / "stale", defines, dynamic=dynamic, stale=True).items()
    assert len(kernels) == 9  # five exact kernels, and the stale twins of d64's two and d128's two
    for (headdim, block_n, consumers), instructions in kernels:
        found = {m[1]: int(m[2], 0) for t in instructions if (m := SETMAXREG.search(t))}
        assert set(found) == {"TRY_ALLOC", "DEALLOC"}, (headdim, block_n, consumers, found)
        entry = 65536 // ((consumers + 1) * 128) // 8 * 8
        rise = (found["TRY_ALLOC"] - entry) * consumers
        assert rise <= entry - found["DEALLOC"], (headdim, block_n, consumers, found, entry)


def stale_step(instructions: list[str]) -> list[str]:
    """The first steady loop's softmax as every step runs it: from the wait for S_j to the
    warp's vote on the sums (the exact path lies past the vote's branch)."""
    wait = next(i for i, t in enumerate(instructions) if text_ends(t, "0x1"))
    vote = next(i for i, t in enumerate(instructions) if i > wait and "VOTE.ALL" in t)
    return instructions[wait + 1 : vote]


def test_the_stale_kernels_skip_the_maximum_and_keep_the_overlap(tmp_path: Path) -> None:
    """SM90_STALE_MAX=3 (the default since v31; 2, d128 only, since v28): d128's and d64's
    kernels get a twin whose unmasked steps take every exponential against the row's base
    without a maximum (no FMNMX, no shuffle before the vote; no local memory there beside two
    consumers), and keep the softmax under P V and the uniform datapath of the exact twin.
    Without the knob (0) there are no twins."""
    exact = sass_by_kernel(tmp_path / "exact", {})
    stale = sass_by_kernel(tmp_path / "stale", {}, stale=True)
    assert set(stale) == {(128, 176, 2), (128, 128, 2), (64, 128, 3), (64, 128, 2)}
    for key, instructions in stale.items():
        step = stale_step(instructions)
        assert sum("MUFU.EX2" in t for t in step) == key[1] // 2, key
        # Beside three consumers (128 registers) ptxas reloads a few spilled values in the
        # loop (four, CUDA 13.0, 2026-12-05); it stores none there.
        banned = ("FMNMX", "SHFL", "STL") if key[2] == 3 else ("FMNMX", "SHFL", "LDL", "STL")
        for opcode in banned:
            assert not any(opcode in t for t in step), (key, opcode)
        assert exponentials_under_pv(instructions) >= key[1] // 2, key
        assert steady_uniform(instructions) >= 0.9 * steady_uniform(exact[key]), key
        # The exact twin's step finds the maximum: the check above can fail.
        wait = next(i for i, t in enumerate(exact[key]) if text_ends(t, "0x1"))
        assert any("FMNMX" in t for t in exact[key][wait : wait + 200]), key
    assert not sass_by_kernel(tmp_path / "none", {"SM90_STALE_MAX": 0}, stale=True)


def test_the_stale_step_s_exact_path_can_leave_the_loop(tmp_path: Path) -> None:
    """SM90_STALE_COLD=1 (the default, 2, at d64 only): d128's stale kernels' first steady
    loop holds only the path every step runs, its exact path (the exponentials' maximum, the
    recomputation from shared memory, a whole exact softmax) outside, so the loop is shorter
    than with the path inline (0), holds one vote and BN / 2 exponentials, and no local
    memory."""
    inline = sass_by_kernel(
        tmp_path / "inline", {"SM90_STALE_MAX": 2, "SM90_STALE_COLD": 0}, stale=True
    )
    cold = sass_by_kernel(
        tmp_path / "cold", {"SM90_STALE_MAX": 2, "SM90_STALE_COLD": 1}, stale=True
    )
    assert set(cold) == set(inline) == {(128, 176, 2), (128, 128, 2)}
    for key, instructions in cold.items():
        first, inline_first = first_steady_loop(instructions), first_steady_loop(inline[key])
        assert len(first) < 0.6 * len(inline_first), (key, len(first), len(inline_first))
        assert sum("VOTE.ALL" in t for t in first) == 1, key
        assert sum("MUFU.EX2" in t for t in first) == key[1] // 2, key
        assert not any("LDL" in t or "STL" in t for t in first), key
        assert exponentials_under_pv(instructions) >= key[1] // 2, key


def first_steady_loop(instructions: list[str]) -> list[str]:
    """The innermost loop around the first wait for S_j: from a backward branch's target to
    the branch (the listing has every instruction, 16 bytes apart, from address 0)."""
    wait = next(i for i, t in enumerate(instructions) if text_ends(t, "0x1"))
    loops = []
    for i, text in enumerate(instructions):
        branch = re.search(r"\bBRA\s+(?:`\(\S+\)\s*)?0x([0-9a-f]+)", text)
        if branch and int(branch.group(1), 16) // 16 <= wait < i:
            loops.append(instructions[int(branch.group(1), 16) // 16 : i + 1])
    assert loops, "no loop around the wait for S_j"
    return min(loops, key=len)


def test_every_head_dim_can_take_the_stale_step(tmp_path: Path) -> None:
    """SM90_STALE_MAX=1 with SM90_STALE_THREE=1 and SM90_STALE_COLD=1 (d256 measured -2.5%
    with it, so not the default): every kernel, d64's three-consumer one included, has a stale
    twin whose first steady loop takes its exponentials without a maximum and is shorter than
    the exact twin's (d64 is bound by issue, so the step's length is what it is for)."""
    defines = {"SM90_STALE_MAX": 1, "SM90_STALE_COLD": 1, "SM90_STALE_THREE": 1}
    exact = sass_by_kernel(tmp_path / "exact", defines)
    stale = sass_by_kernel(tmp_path / "stale", defines, stale=True)
    assert set(stale) == set(exact) and (64, 128, 3) in stale
    for key, instructions in stale.items():
        loop = first_steady_loop(instructions)
        assert sum("VOTE.ALL" in t for t in loop) == 1, key
        assert sum("MUFU.EX2" in t for t in loop) == key[1] // 2, key
        assert not any("FMNMX" in t for t in stale_step(instructions)), key
        assert len(loop) < len(first_steady_loop(exact[key])), key


@pytest.mark.parametrize("stale", [False, True], ids=["exact", "stale"])
def test_the_next_tile_s_first_softmax_runs_under_the_last_p_v(tmp_path: Path, stale) -> None:
    """SM90_CROSS_TILE=1 (built 2026-12-05; correct on the GPU since, its test in
    tests/test_sm90_gpu.py passed on an H200 and an H100 on 2026-12-06; not yet timed): where it
    applies (two Q buffers: d64, and d128's 128-key tiles) the build has a third wait for an S
    alone, in the turn that issues a tile's last P V with the next tile's first S, and that S's
    softmax runs before the wait for the P V, as a steady step's does (ptxas hoists the wait
    above the exponentials unless a branch ends their block: sm90.cu releases K there). Most of
    them under it: 58 of 64 at d128 (CUDA 13.0). Not d64's exact three-consumer kernel, which the
    default launch never uses (d64 takes the stale kernels from 0 keys): there ptxas puts the
    wait first. The kernels it does not apply to keep their two steady loops."""
    kernels = sass_by_kernel(tmp_path, {"SM90_CROSS_TILE": 1}, stale=stale)
    assert kernels
    for (headdim, block_n, consumers), instructions in kernels.items():
        each = exponentials_under_pv_per_loop(instructions)
        applies = headdim == 64 or block_n == 128
        assert len(each) == (3 if applies else 2), ((headdim, block_n), each)
        assert min(each[:2]) >= block_n // 2, ((headdim, block_n), each)
        if applies and (stale or consumers == 2):
            assert each[2] >= 3 * (block_n // 2) // 4, ((headdim, block_n, consumers), each)
