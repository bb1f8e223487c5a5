"""kernels/flash_fwd/reference.py against a dense softmax written here from its definition, on
the CPU (numpy standing in for CuPy): causal scenarios are computed in blocks of query rows over
only the keys each block sees, and must give what the whole score matrix gives."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from kernelseek_tui.evaluate.comparators import load_module
from kernelseek_tui.evaluate.dtypes import round_to

TASK_DIR = Path(__file__).resolve().parents[1] / "kernels" / "flash_fwd"


@pytest.fixture
def reference_module(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    # The reference imports cupy inside the function; numpy has the same API for what it uses.
    monkeypatch.setitem(sys.modules, "cupy", np)
    module = load_module(TASK_DIR / "reference.py", "flash_reference_blocks_test")
    # Small blocks, so that small shapes (fast in numpy) cross many block boundaries.
    monkeypatch.setattr(module, "_CAUSAL_BLOCK_ROWS", 16)
    return module


def dense(q, k, v, scale: float, causal: bool) -> dict[str, np.ndarray]:
    """out and lse from the whole score matrix in float64, -inf where masked; rows that see no
    key: out 0, lse +inf."""
    batch, seqlen_q, nheads, _ = q.shape
    seqlen_k, nheads_kv = k.shape[1], k.shape[2]
    group = nheads // nheads_kv
    out = np.zeros(q.shape)
    lse = np.full((batch, nheads, seqlen_q), np.inf)
    for b in range(batch):
        for h in range(nheads):
            scores = q[b, :, h, :].astype(np.float64) @ k[b, :, h // group, :].T * scale
            if causal:
                rows = np.arange(seqlen_q)[:, None]
                cols = np.arange(seqlen_k)[None, :]
                scores[cols > rows + seqlen_k - seqlen_q] = -np.inf
            for r in range(seqlen_q):
                seen = np.isfinite(scores[r])
                if not seen.any():
                    continue
                top = scores[r, seen].max()
                weights = np.where(seen, np.exp(scores[r] - top), 0.0)
                out[b, r, h] = weights @ v[b, :, h // group, :] / weights.sum()
                lse[b, h, r] = top + np.log(weights.sum())
    return {"out": out, "lse": lse}


def run(module: ModuleType, q, k, v, scale: float, causal: bool) -> dict[str, Any]:
    return module.reference(
        {"q": q, "k": k, "v": v},
        {"causal": int(causal)},
        {"softmax_scale": scale},
        lambda x: round_to(np, x, "bfloat16"),
    )


@pytest.mark.parametrize(
    ("seqlen_q", "seqlen_k", "nheads", "nheads_kv", "causal"),
    [
        (70, 70, 2, 2, True),  # square: blocks over a growing key range
        (90, 40, 4, 2, True),  # more queries than keys: the first 50 rows see no key
        (33, 100, 2, 1, True),  # more keys than queries: every row sees at least 68
        (17, 17, 1, 1, True),  # one block and a row
        (50, 61, 3, 1, False),  # non-causal: one block of every row and key
    ],
)
def test_the_blocked_reference_matches_the_dense_softmax(
    reference_module, seqlen_q, seqlen_k, nheads, nheads_kv, causal
) -> None:
    rng = np.random.default_rng(seqlen_q * 1000 + seqlen_k)
    headdim, batch, scale = 16, 2, 0.25
    q = rng.standard_normal((batch, seqlen_q, nheads, headdim)).astype(np.float32)
    k = rng.standard_normal((batch, seqlen_k, nheads_kv, headdim)).astype(np.float32)
    v = rng.standard_normal((batch, seqlen_k, nheads_kv, headdim)).astype(np.float32)
    got = run(reference_module, q, k, v, scale, causal)
    want = dense(q, k, v, scale, causal)
    np.testing.assert_allclose(got["out"], want["out"], rtol=0, atol=2e-6)
    finite = np.isfinite(want["lse"])
    assert (np.isfinite(got["lse"]) == finite).all()
    np.testing.assert_allclose(got["lse"][finite], want["lse"][finite], rtol=2e-6)
    assert (got["out"][:, ~finite.any(axis=(0, 1))] == 0).all()
    # The low-precision twin rounds P before P V and so stays within bf16's step of out.
    assert np.abs(got["out:lowp"] - got["out"]).max() < 1e-2


def test_causal_blocks_skip_the_keys_no_row_of_theirs_sees(reference_module) -> None:
    blocks = reference_module._row_blocks(64, 64, True)
    assert blocks == [(0, 16, 16), (16, 32, 32), (32, 48, 48), (48, 64, 64)]
    # Rows 0-29 of 60 queries over 30 keys see nothing: no block for 0-15, 16-31 sees 2 keys.
    assert reference_module._row_blocks(60, 30, True) == [(16, 32, 2), (32, 48, 18), (48, 60, 30)]
    assert reference_module._row_blocks(60, 30, False) == [(0, 60, 30)]


def test_a_task_module_is_compiled_from_its_source_never_from_a_pyc_beside_it(
    tmp_path: Path,
) -> None:
    """A review (2026-12-07, late): a ``.pyc`` whose stamp matches the source's size and time
    was run in the source's place, so a reference could be swapped with its (fingerprinted)
    source unchanged."""
    import os
    import py_compile
    from importlib.util import cache_from_source

    module = tmp_path / "rigged_reference.py"
    module.write_text("VALUE = 2\n")
    stamp = module.stat().st_mtime_ns
    py_compile.compile(str(module), cfile=cache_from_source(str(module)), doraise=True)
    module.write_text("VALUE = 1\n")  # the same size
    os.utime(module, ns=(stamp, stamp))  # and the same time: the pyc's stamp matches
    assert load_module(module, "rigged_reference_under_test").VALUE == 1
