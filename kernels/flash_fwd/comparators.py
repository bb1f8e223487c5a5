"""Peers for flash_fwd, timed by the harness in the same process and run as the candidate.

``prepare(name, tensors, fields, floats)`` gets the inputs as torch tensors (shared with the
candidate's buffers through DLPack) and returns either a callable that runs the peer once and
returns its outputs by name, or a string saying why the peer is absent for this scenario.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any


def prepare(
    name: str, tensors: dict[str, Any], fields: dict[str, int], floats: dict[str, float]
) -> Callable[[], dict[str, Any]] | str:
    if name == "fa3":
        return _fa3(tensors, fields, floats)
    if name == "cudnn":
        return _cudnn(tensors, fields, floats)
    return f"unknown comparator {name!r}"


def preload() -> None:
    """Import the peers' libraries before any request (the harness calls this in a worker
    started ahead of its evaluation): FA3's library is large to load. Nothing runs on the GPU;
    a failure is left for ``prepare``, which reports it."""
    with contextlib.suppress(Exception):
        _import_fa3()
    with contextlib.suppress(Exception):
        import torch.nn.attention  # noqa: F401
        import torch.nn.functional  # noqa: F401


# The warm-up's inputs: (batch, seqlen, heads) at every head dim the task's scenarios use, a
# grid of 64-256 query blocks, as the bench shapes' (a much smaller grid could make FA3 pick
# its split-KV kernels, which no scenario's first call would then find loaded).
WARM_UP_SHAPE = (2, 512, 16)
WARM_UP_HEADDIMS = (64, 128, 256)


def warm_up() -> list[str]:
    """Each peer once per head dim, causal and not, on small random inputs, before any request
    (the harness calls this in a worker started ahead of its evaluation, on the evaluation's
    stream): the first calls load FA3's kernels, cuDNN and its handle, which otherwise lands
    in the first timed scenario (4.9 s of the quick set's 19.2 s on the H200, 2026-12-02,
    docs/BENCHMARKS.md).
    Nothing is timed or judged here; a failure is left for the peer's first real call.
    Returns the calls that ran, as "name d<headdim> c<causal>"."""
    import torch

    ran = []
    batch, seqlen, heads = WARM_UP_SHAPE
    for headdim in WARM_UP_HEADDIMS:
        shape = (batch, seqlen, heads, headdim)
        tensors = {n: torch.randn(shape, device="cuda", dtype=torch.bfloat16) for n in "qkv"}
        floats = {"softmax_scale": headdim**-0.5}
        for causal in (0, 1):
            fields = {"causal": causal, "seqlen_q": seqlen, "seqlen_k": seqlen,
                      "nheads": heads, "nheads_kv": heads}  # fmt: skip
            for name in ("fa3", "cudnn"):
                run = prepare(name, tensors, fields, floats)
                if callable(run):
                    with contextlib.suppress(Exception):
                        run()
                        ran.append(f"{name} d{headdim} c{causal}")
    torch.cuda.synchronize()
    return ran


def _import_fa3() -> Callable[..., Any]:
    import fa3_fwd_config

    # The wheel's interface module imports its config under the upstream name.
    sys.modules.setdefault("flash_attn_config", fa3_fwd_config)
    from fa3_fwd_interface import flash_attn_func

    return flash_attn_func


def _fa3(tensors: dict[str, Any], fields: dict[str, int], floats: dict[str, float]):
    try:
        flash_attn_func = _import_fa3()
    except Exception as error:  # an absent or broken wheel: report it, never guess a number
        return f"fa3_fwd not importable ({type(error).__name__}: {error})"
    q, k, v = tensors["q"], tensors["k"], tensors["v"]
    scale = floats["softmax_scale"]
    causal = bool(fields["causal"])

    def run() -> dict[str, Any]:
        result = flash_attn_func(
            q, k, v, softmax_scale=scale, causal=causal, return_attn_probs=True
        )
        out, lse = (result[0], result[1]) if isinstance(result, tuple) else (result, None)
        return {"out": out, "lse": lse} if lse is not None else {"out": out}

    return run


def _cudnn(tensors: dict[str, Any], fields: dict[str, int], floats: dict[str, float]):
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        from torch.nn.functional import scaled_dot_product_attention
    except Exception as error:
        return f"torch SDPA not importable ({type(error).__name__}: {error})"
    if fields["causal"] and fields["seqlen_q"] != fields["seqlen_k"]:
        return "cuDNN's causal mask is top-left aligned; compared only where seqlen_q == seqlen_k"
    if fields["nheads"] != fields["nheads_kv"]:
        return "compared on MHA shapes only (GQA through SDPA would time a K/V expansion)"
    # SDPA wants (batch, heads, seqlen, headdim): transposed views, no copies.
    q = tensors["q"].transpose(1, 2)
    k = tensors["k"].transpose(1, 2)
    v = tensors["v"].transpose(1, 2)
    scale = floats["softmax_scale"]
    causal = bool(fields["causal"])

    def run() -> dict[str, Any]:
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            out = scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
        return {"out": out.transpose(1, 2)}

    return run
