"""The fp32 reference for flash_fwd, in CuPy, plus the FLOP count used for TFLOP/s.

The harness hands over the inputs upcast to float32 (exactly: they are bf16 values) and, for
the low-precision variant, a function that rounds an array to the task's low precision; FA3's
tolerance rule compares the candidate's error with that variant's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Bound the score matrix a chunk of heads may hold, so the largest scenario fits comfortably.
_CHUNK_BYTES = 1 << 30
# Causal scenarios are computed in blocks of this many query rows, each over the keys its rows
# can see: at 16k keys a square causal score matrix is then computed to 53% instead of 100%
# (the quick and bench sets' longest reference), in blocks big enough to keep the GPU busy.
_CAUSAL_BLOCK_ROWS = 1024


def reference(
    inputs: dict[str, Any],
    ints: dict[str, int],
    floats: dict[str, float],
    lowp: Callable[[Any], Any] | None,
) -> dict[str, Any]:
    """out (batch, seqlen_q, nheads, headdim) and lse (batch, nheads, seqlen_q), in float32.

    With ``lowp`` set, also "out:lowp": the same computation with P rounded by ``lowp`` before
    P @ V, as a bf16 kernel does (the row sums stay in float32).
    """
    import cupy as cp

    q, k, v = inputs["q"], inputs["k"], inputs["v"]
    batch, seqlen_q, nheads, headdim = q.shape
    seqlen_k, nheads_kv = k.shape[1], k.shape[2]
    group = nheads // nheads_kv
    scale = floats["softmax_scale"]
    out = cp.zeros((batch, seqlen_q, nheads, headdim), dtype=cp.float32)
    lse = cp.full((batch, nheads, seqlen_q), cp.inf, dtype=cp.float32)
    out_lowp = cp.zeros_like(out) if lowp is not None else None
    results = {"out": out, "lse": lse}
    if out_lowp is not None:
        results["out:lowp"] = out_lowp
    if seqlen_q == 0 or seqlen_k == 0:
        return results

    offset = seqlen_k - seqlen_q  # causal: query row r sees keys 0 .. r + offset
    for r0, r1, keys in _row_blocks(seqlen_q, seqlen_k, bool(ints["causal"])):
        masked = None
        if ints["causal"]:
            rows = cp.arange(r0, r1)[:, None]
            cols = cp.arange(keys)[None, :]
            masked = cols > rows + offset  # bottom-right aligned
        heads_per_chunk = max(1, _CHUNK_BYTES // (4 * (r1 - r0) * keys * 3))
        for b in range(batch):
            for h0 in range(0, nheads, heads_per_chunk):
                heads = range(h0, min(nheads, h0 + heads_per_chunk))
                kv_heads = [h // group for h in heads]
                qh = cp.ascontiguousarray(q[b, r0:r1, h0 : heads.stop, :].transpose(1, 0, 2))
                kh = cp.ascontiguousarray(k[b, :keys][:, kv_heads, :].transpose(1, 2, 0))
                vh = cp.ascontiguousarray(v[b, :keys][:, kv_heads, :].transpose(1, 0, 2))
                scores = cp.matmul(qh, kh) * cp.float32(scale)
                if masked is not None:
                    scores = cp.where(masked[None], cp.float32(-cp.inf), scores)
                row_max = scores.max(axis=2, keepdims=True)
                finite_max = cp.where(cp.isfinite(row_max), row_max, 0)
                probs = cp.exp(scores - finite_max)
                del scores
                row_sum = probs.sum(axis=2, keepdims=True)
                empty = row_sum == 0
                safe_sum = cp.where(empty, 1, row_sum)
                block = (cp.matmul(probs, vh) / safe_sum).transpose(1, 0, 2)
                out[b, r0:r1, h0 : heads.stop, :] = block
                if out_lowp is not None:
                    rounded = cp.matmul(lowp(probs), vh) / safe_sum
                    out_lowp[b, r0:r1, h0 : heads.stop, :] = rounded.transpose(1, 0, 2)
                del probs
                lse[b, h0 : heads.stop, r0:r1] = cp.where(
                    empty[..., 0], cp.inf, finite_max[..., 0] + cp.log(safe_sum[..., 0])
                )
    return results


def _row_blocks(seqlen_q: int, seqlen_k: int, causal: bool) -> list[tuple[int, int, int]]:
    """(first row, end row, keys) for each block of query rows the reference computes at once:
    one block of every row where all see every key; causal, blocks of at most
    _CAUSAL_BLOCK_ROWS rows, each over the keys its last row sees, so that the keys no row of
    a block sees are never computed (the masked half of a square causal score matrix). A block
    whose rows see no key is left out: its rows keep out = 0 and lse = +inf. Keys past a row's
    own are masked inside its block, and contribute exact zeros to its sums."""
    if not causal:
        return [(0, seqlen_q, seqlen_k)]
    blocks = []
    for r0 in range(0, seqlen_q, _CAUSAL_BLOCK_ROWS):
        r1 = min(seqlen_q, r0 + _CAUSAL_BLOCK_ROWS)
        keys = min(seqlen_k, r1 + seqlen_k - seqlen_q)
        if keys > 0:
            blocks.append((r0, r1, keys))
    return blocks


def flops(fields: dict[str, int]) -> float:
    """4 * headdim per visible (query, key) pair (two matmuls), per batch and head."""
    sq, sk = fields["seqlen_q"], fields["seqlen_k"]
    if fields["causal"]:
        # Query i sees keys 0 .. i + sk - sq (clipped to [0, sk)): sum the visible counts.
        offset = sk - sq
        lo = max(0, -offset)  # first query row that sees any key
        full_from = max(lo, sk - offset)  # rows from here on see all sk keys
        partial = sum(range(lo + offset + 1, full_from + offset + 1)) if full_from > lo else 0
        pairs = partial + (sq - full_from) * sk
    else:
        pairs = sq * sk
    return 4.0 * fields["batch"] * fields["nheads"] * fields["headdim"] * pairs
