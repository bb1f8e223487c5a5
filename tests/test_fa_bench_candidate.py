"""fa_bench's (and fa_smoke's) Candidate launches a built library through the judge's own
ks_launch binding, on torch tensors' device pointers. The benchmarks sit outside mypy's gate, so
when a review dropped the pointer form of `worker.Kernel.bind` as having no other caller, every
GPU benchmark broke and only the device found out (2026-12-05): this runs the same path on the
CPU against a stand-in library that records what it was called with."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks.fa_bench import Candidate

STAND_IN = r"""
#include <stdint.h>
void* seen_tensors[5]; int64_t seen_ints[7]; double seen_scale; void* seen_stream; int calls;
int ks_launch(void* const* tensors, const int64_t* ints, const double* floats, void* stream) {
    for (int i = 0; i < 5; ++i) seen_tensors[i] = tensors[i];
    for (int i = 0; i < 7; ++i) seen_ints[i] = ints[i];
    seen_scale = floats[0]; seen_stream = stream; ++calls;
    return ints[6] == 9 ? 3 : 0;  /* causal = 9: a failing launch */
}
"""


class FakeTensor:
    def __init__(self, address: int) -> None:
        self.address = address

    def data_ptr(self) -> int:
        return self.address


@pytest.fixture
def library(tmp_path: Path) -> Path:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    source = tmp_path / "stand_in.c"
    source.write_text(STAND_IN)
    built = tmp_path / "libstand_in.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(built), str(source)], check=True)
    return built


SHAPE = {
    "batch": 2,
    "seqlen_q": 300,
    "seqlen_k": 517,
    "nheads": 4,
    "nheads_kv": 2,
    "headdim": 64,
    "causal": 1,
}


def test_a_candidate_passes_pointers_scalars_and_stream_in_the_abi_order(library: Path) -> None:
    tensors = [FakeTensor(0x1000 * (i + 1)) for i in range(5)]
    Candidate("stand_in", library).bind(tensors, SHAPE, 0.125, 0xBEEF)()
    seen = ctypes.CDLL(str(library))
    pointers = (ctypes.c_void_p * 5).in_dll(seen, "seen_tensors")
    assert list(pointers) == [t.address for t in tensors]
    assert list((ctypes.c_int64 * 7).in_dll(seen, "seen_ints")) == [2, 300, 517, 4, 2, 64, 1]
    assert ctypes.c_double.in_dll(seen, "seen_scale").value == 0.125
    assert ctypes.c_void_p.in_dll(seen, "seen_stream").value == 0xBEEF
    assert ctypes.c_int.in_dll(seen, "calls").value == 1


def test_a_nonzero_return_is_an_error_that_names_the_candidate(library: Path) -> None:
    call = Candidate("stand_in", library).bind(
        [FakeTensor(0x10)] * 5, {**SHAPE, "causal": 9}, 1.0, 0
    )
    with pytest.raises(RuntimeError, match="stand_in: ks_launch returned 3"):
        call()
