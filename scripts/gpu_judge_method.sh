#!/usr/bin/env bash
# Call 2 (2026-12-04): the judge's timing code against do_bench, candidate and peers, in one
# process; the judge on the bench set; d128 BLOCK_N 128 against 176; the judge's GPU tests.
set -uo pipefail
source scripts/gpu_env.sh || exit 1
cp .variants/v21.cu .variants/v21n.cu . && : "make them first: the file and the file with -DSM90_D128_BLOCK_N=128 in front"
date -u
timeout 280 python3 benchmarks/fa_bench.py --source v21.cu --judge-method --graph-peers \
  --json $OUT/fbj.json > $OUT/fbj.txt 2>&1; echo "fa_bench judge-method: exit $?"
tail -3 $OUT/fbj.txt
timeout 150 python3 -m kernelseek_tui eval kernels/flash_fwd --source v21.cu --set bench \
  --json > $OUT/e21.json 2> $OUT/e21.err; echo "eval bench: exit $?"
python3 benchmarks/judge_vs_dobench.py $OUT/e21.json $OUT/fbj.json --candidate v21 | tail -6
date -u
timeout 90 python3 benchmarks/fa_bench.py --source v21.cu --source v21n.cu --only d128 \
  --json $OUT/fbn.json > $OUT/fbn.txt 2>&1; echo "fa_bench d128: exit $?"
tail -4 $OUT/fbn.txt
date -u
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_paired_gpu.py \
  tests/test_perturb_gpu.py tests/test_evaluate_gpu.py -x 2>&1 | tail -15
date -u
