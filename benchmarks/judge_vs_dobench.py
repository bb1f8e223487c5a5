"""The judge's per-shape TFLOP/s against `benchmarks/fa_bench.py`'s do_bench figures, for the
candidate and each peer: the check that the judge times as the peers' own benchmarks do.

    python3 benchmarks/judge_vs_dobench.py eval.json fa_bench.json --candidate sm90_v6

`eval.json` from `kernelseek eval ... --set bench --json`, `fa_bench.json` from
`fa_bench.py --json` (the candidate's column is its source file's stem). Prints one row per
bench shape (judge / do_bench for each), how many are within the tolerance, and exits 1 when
any is not.

Where fa_bench ran with `--in-turn`, also the judge against fa_bench's figures from the judge's
own interleaved method (`judge/turn`, each entry's GPU time with no host launch time in it) and
the per-shape "x FA3" of both (the judge's candidate over FA3, fa_bench's median per-round
ratio); `--against turn` makes those the verdict (absolute figures and the x FA3 ratio).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

KEYS = ("headdim", "causal", "seqlen_q")


def shape_key(fields: dict) -> tuple[int, ...]:
    return tuple(int(fields[k]) for k in KEYS)


def judge_figures(result: dict) -> dict[tuple[int, ...], dict[str, float]]:
    figures = {}
    for scenario in result["scenarios"]:
        if scenario["set"] != "bench" or scenario.get("tflops") is None:
            continue
        row = {"candidate": scenario["tflops"]}
        for name, peer in (scenario.get("peers") or {}).items():
            if peer.get("tflops"):
                row[name] = peer["tflops"]
        if row.get("fa3"):
            row["x fa3"] = scenario["tflops"] / row["fa3"]
        figures[shape_key(scenario["fields"])] = row
    return figures


def dobench_figures(bench: dict, candidate: str) -> dict[tuple[int, ...], dict[str, float]]:
    figures = {}
    for row in bench["rows"]:
        picked = {"candidate": row.get(candidate)}
        picked.update({name: row[name] for name in ("fa3", "cudnn") if row.get(name)})
        # A peer replayed from its CUDA graph (fa_bench --graph-peers): its GPU time without the
        # host's launch time, which do_bench counts where the host is slower than the kernel.
        picked.update(
            {f"{name} graph": row[f"{name}_graph"] for name in ("fa3", "cudnn")
             if row.get(f"{name}_graph")}
        )  # fmt: skip
        # fa_bench --in-turn: every entry timed in turn by the judge's own interleaved method.
        picked.update(
            {f"{name} turn": row[f"{column}@turn"] for name, column in
             (("candidate", candidate), ("fa3", "fa3"), ("cudnn", "cudnn"))
             if row.get(f"{column}@turn")}
        )  # fmt: skip
        if row.get(f"{candidate}@turn/fa3"):
            picked["x fa3 turn"] = row[f"{candidate}@turn/fa3"]
        figures[shape_key(row)] = {k: v for k, v in picked.items() if v}
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("eval_json", type=Path)
    parser.add_argument("fa_bench_json", type=Path)
    parser.add_argument("--candidate", required=True, help="the candidate's fa_bench column")
    parser.add_argument("--tolerance", type=float, default=0.03)
    parser.add_argument(
        "--against",
        choices=("do_bench", "turn"),
        default="do_bench",
        help="the verdict's reference: do_bench's figures, or fa_bench --in-turn's",
    )
    args = parser.parse_args()
    judged = judge_figures(json.loads(args.eval_json.read_text()))
    timed = dobench_figures(json.loads(args.fa_bench_json.read_text()), args.candidate)
    names = ["candidate", "fa3", "cudnn"]
    # Judge against graph too, where fa_bench measured it; counted apart, never in the verdict.
    graphs = [n for n in ("fa3", "cudnn") if any(f"{n} graph" in row for row in timed.values())]
    turns = [
        f"{n} turn" for n in [*names, "x fa3"] if any(f"{n} turn" in row for row in timed.values())
    ]
    print(
        "d | causal | seqlen | "
        + " | ".join(
            [f"{n} judge/do_bench" for n in names]
            + [f"{n} judge/graph" for n in graphs]
            + [f"{n.removesuffix(' turn')} judge/turn" for n in turns]
        )
    )
    # (the judge's figure, fa_bench's figure it is read against)
    columns = [(n, n) for n in names] + [(n, f"{n} graph") for n in graphs]
    columns += [(n.removesuffix(" turn"), n) for n in turns]
    within = {label: 0 for _, label in columns}
    counted = {label: 0 for _, label in columns}
    logs: dict[str, list[float]] = {label: [] for _, label in columns}
    for key in sorted(set(judged) & set(timed)):
        cells = [str(k) for k in key]
        for name, label in columns:
            a, b = judged[key].get(name), timed[key].get(label)
            if not a or not b:
                cells.append("-")
                continue
            ratio = a / b
            counted[label] += 1
            within[label] += abs(ratio - 1) <= args.tolerance
            logs[label].append(math.log(ratio))
            cells.append(f"{ratio:.3f}")
        print(" | ".join(cells))
    ok = True
    for name, label in columns:
        if counted[label]:
            geo = math.exp(sum(logs[label]) / len(logs[label]))
            is_turn = label.endswith(" turn")
            if is_turn:
                against = "fa_bench in turn"
            else:
                against = "do_bench" if label == name else "its CUDA graph"
            print(
                f"{name} against {against}: {within[label]}/{counted[label]} shapes within "
                f"{args.tolerance:.0%}; geomean ratio {geo:.3f}"
            )
            if is_turn if args.against == "turn" else label == name:
                ok = ok and within[label] == counted[label]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
