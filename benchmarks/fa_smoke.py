"""A fast first look at a flash_fwd candidate on the GPU box, before the judge: a dozen shapes
(ragged, GQA, causal with seqlen_q > seqlen_k, one row, one key) against a float32 torch
reference. Prints one line per shape and exits 1 on the first launch error or large error.
Not the judge (`kernelseek eval` is): a smoke test that fails fast, e.g. on a hang under
`timeout`.

    python3 benchmarks/fa_smoke.py kernels/flash_fwd/sm90.cu
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from benchmarks.fa_bench import Candidate
from kernelseek_tui.evaluate.build import build
from kernelseek_tui.task import load_task

SHAPES = [  # batch, seqlen_q, seqlen_k, nheads, nheads_kv, causal
    (1, 128, 128, 1, 1, 0),
    (2, 300, 517, 4, 2, 0),
    (2, 300, 517, 4, 2, 1),
    (1, 517, 300, 3, 1, 1),  # seqlen_q > seqlen_k: the first rows see no key
    (1, 1, 1, 1, 1, 0),
    (1, 1, 1, 1, 1, 1),
    (1, 200, 50, 2, 2, 1),
    (3, 64, 1000, 2, 1, 1),
    (2, 1024, 1024, 8, 8, 1),
]
# Inputs that push a row's maximum up after its first key tile, for kernels that take the
# exponentials against a stale maximum (sm90's SM90_STALE_MAX, from SM90_STALE_MIN_KEYS = 2048
# keys): "rising" scales the keys up along the sequence, so maxima climb tile after tile; "jump"
# gives one key, at 400, a score far enough above the rest that its exponential against an
# earlier base overflows float32.
HARD_SHAPES = [  # ... as SHAPES, then the inputs
    (2, 300, 2100, 2, 2, 0, "rising"),
    (2, 300, 2100, 2, 1, 0, "jump"),
    (1, 2100, 2100, 2, 1, 1, "jump"),
]


def inputs(b, sq, sk, h, hkv, headdim, kind):
    """q, k, v in bf16 on the GPU: standard normal, or shaped as HARD_SHAPES says."""
    import torch

    q = torch.randn(b, sq, h, headdim, device="cuda")
    k = torch.randn(b, sk, hkv, headdim, device="cuda")
    v = torch.randn(b, sk, hkv, headdim, device="cuda")
    if kind == "rising":
        k *= torch.linspace(1.0, 4.0, sk, device="cuda")[None, :, None, None]
    elif kind == "jump":
        # Every query's score with key 400 is about 200 (base 2) above the others at any head
        # dim (|q| sums to about 0.8 * headdim; the scale is about 1 / sqrt(headdim)).
        q = q.abs()
        k[:, 400] = 192.0 / headdim**0.5
    bf = torch.bfloat16
    return q.to(bf), k.to(bf), v.to(bf)


def reference(q, k, v, scale, causal):
    import torch

    _, sq, h, _ = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    kk = k.float().repeat_interleave(h // hkv, dim=2)
    vv = v.float().repeat_interleave(h // hkv, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", q.float(), kk) * scale
    if causal:
        rows = torch.arange(sq, device=q.device)[:, None]
        cols = torch.arange(sk, device=q.device)[None, :]
        s = s.masked_fill(cols > rows + sk - sq, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.exp(s - torch.where(torch.isinf(lse), 0, lse)[..., None])
    out = torch.einsum("bhqk,bkhd->bqhd", p, vv)
    return out, torch.where(torch.isinf(lse), float("inf"), lse)


def main() -> int:
    import torch

    source = Path(sys.argv[1])
    task = load_task(Path("kernels/flash_fwd"))
    built = build(source.read_text(), rule=task.dependency_rule, extra_flags=task.nvcc_flags)
    if not built.ok or built.library is None:
        print("build failed:", built.reasons)
        return 1
    cand = Candidate(source.stem, built.library)
    stream = torch.cuda.current_stream().cuda_stream
    worst = 0.0
    for headdim in (64, 128, 256):
        for b, sq, sk, h, hkv, causal, kind in [(*s, "randn") for s in SHAPES] + HARD_SHAPES:
            torch.manual_seed(sq * 7 + sk)
            q, k, v = inputs(b, sq, sk, h, hkv, headdim, kind)
            out = torch.full_like(q, float("nan"))
            lse = torch.full((b, h, sq), float("nan"), device="cuda", dtype=torch.float32)
            scale = 0.9 / math.sqrt(headdim)
            shape = dict(
                batch=b,
                seqlen_q=sq,
                seqlen_k=sk,
                nheads=h,
                nheads_kv=hkv,
                headdim=headdim,
                causal=causal,
            )
            cand.bind([q, k, v, out, lse], shape, scale, stream)()
            torch.cuda.synchronize()
            ref_out, ref_lse = reference(q, k, v, scale, causal)
            out_err = (out.float() - ref_out).abs().max().item()
            finite = torch.isfinite(ref_lse)
            lse_err = (lse[finite] - ref_lse[finite]).abs().max().item() if finite.any() else 0.0
            inf_ok = bool((lse[~finite] == float("inf")).all())
            bad = not (out_err < 0.03 and lse_err < 2e-3 and inf_ok) or math.isnan(out_err)
            worst = max(worst, out_err)
            print(
                f"d{headdim} b{b} sq{sq} sk{sk} h{h}/{hkv} c{causal} {kind}: "
                f"max|out-ref| {out_err:.4f} "
                f"max|lse-ref| {lse_err:.2e} inf rows ok {inf_ok}{'  <-- BAD' if bad else ''}",
                flush=True,
            )
            if bad:
                return 1
    print(f"smoke: all shapes within bounds, worst |out-ref| {worst:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
