#!/usr/bin/env python3
"""How evenly three ways of handing causal tiles to the SMs spread the work: a count, not a
timing. Each tile (a query block of one head) costs its key tiles plus one (the tile's fixed
work: Q, the first S, the last P V, the epilogue), in units of one steady step; a CTA's work is
the sum of its tiles'; a kernel ends with its busiest CTA. Printed: that busiest CTA over the
ideal (all the work spread evenly on every SM), for

- `whole groups`: sm90.cu's static deal (grid_for, decode_tile, tile_of_round): a grid of
  whole head groups (`sms // m_blocks` heads of `m_blocks` query blocks each, longest first),
  rounds dealt left to right then right to left, where that leaves at most 1 SM in 20 idle;
- `all SMs, static`: the same order dealt over every SM (the v22f variant);
- `dynamic`: every SM, each CTA's first tile its own, then each next tile in that order to the
  CTA that frees first (SM90_DYNAMIC_CAUSAL), with its head groups as grid_for sizes them (K
  and V of a group about 32 MiB), and, for comparison, with groups of one grid's worth of query
  blocks (`sms // m_blocks` heads, the static deal's).

    python3 scripts/causal_deal.py [--sms 132] [--group-mib 32]

The bench set's causal shapes: batch 16384 / seqlen, heads 2048 / headdim, as FA3's benchmark.
"""

from __future__ import annotations

import argparse
import heapq


def decode(index: int, m_blocks: int, heads: int, per_group: int) -> int:
    """The query block of tile ``index`` (sm90.cu's decode_tile, causal)."""
    group = index // (per_group * m_blocks)
    first = group * per_group
    here = min(per_group, heads - first)
    r = index - first * m_blocks
    return m_blocks - 1 - r // here


def static_deal(grid: int, m_blocks: int, heads: int, per_group: int, cost) -> float:
    tiles = m_blocks * heads
    work = [0.0] * grid
    for cta in range(grid):
        round_ = 0
        while (index := round_ * grid + (grid - 1 - cta if round_ & 1 else cta)) < tiles:
            work[cta] += cost(decode(index, m_blocks, heads, per_group))
            round_ += 1
    return max(work)


def dynamic_deal(sms: int, m_blocks: int, heads: int, per_group: int, cost) -> float:
    tiles = m_blocks * heads
    grid = min(tiles, sms)
    loads = [cost(decode(cta, m_blocks, heads, per_group)) for cta in range(grid)]
    heapq.heapify(loads)
    for index in range(grid, tiles):
        heapq.heappush(
            loads, heapq.heappop(loads) + cost(decode(index, m_blocks, heads, per_group))
        )
    return max(loads)


GROUP_MIB = 32  # sm90.cu's SM90_DYNAMIC_GROUP_MIB default


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sms", type=int, default=132)
    parser.add_argument(
        "--group-mib", type=int, default=GROUP_MIB, help="the dynamic deal's SM90_DYNAMIC_GROUP_MIB"
    )
    args = parser.parse_args()
    sms = args.sms
    print("shape            m_blocks heads  whole groups  all SMs, static  dynamic  "
          "dynamic, one-grid groups")  # fmt: skip
    for headdim, block_m, block_n in ((64, 192, 128), (128, 128, 128), (256, 128, 80)):
        for seqlen in (512, 1024, 2048, 4096, 8192, 16384):
            if headdim == 64 and seqlen <= 1024:
                block_m = 128  # two consumers there (SM90_D64_CONSUMERS=0)
            elif headdim == 64:
                block_m = 192
            m_blocks = -(-seqlen // block_m)
            heads = (16384 // seqlen) * (2048 // headdim)

            def cost(m: int, bm: int = block_m, bn: int = block_n, s: int = seqlen) -> float:
                return -(-min((m + 1) * bm, s) // bn) + 1.0

            ideal = sum(cost(m) for m in range(m_blocks)) * heads / sms
            per_group = sms // m_blocks
            whole = per_group * m_blocks
            if per_group and (sms - whole) * 20 <= sms:
                grouped = f"{static_deal(whole, m_blocks, heads, per_group, cost) / ideal:.3f}"
                spread = static_deal(sms, m_blocks, heads, per_group, cost) / ideal
                everywhere = f"{spread:.3f}"
            else:
                grouped = everywhere = "(per tile)"
            group_bytes = args.group_mib << 20
            by_bytes = max(1, min(heads, group_bytes // (2 * seqlen * headdim * 2)))
            dynamic = dynamic_deal(sms, m_blocks, heads, by_bytes, cost) / ideal
            one_grid = dynamic_deal(sms, m_blocks, heads, max(1, per_group), cost) / ideal
            print(f"d{headdim} causal {seqlen:>5}  {m_blocks:8d} {heads:5d}  {grouped:>12}"
                  f"  {everywhere:>15}  {dynamic:7.3f}  {one_grid:7.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
