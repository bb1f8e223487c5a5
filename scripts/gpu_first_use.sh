#!/usr/bin/env bash
# What the first use of a held-out shape costs on a machine whose CuPy cache is empty, and
# what takes it away (kernels/flash_fwd/NOTES.md: three tiny held-out shapes took 3.7-8.9 s in
# the judge's own work on fresh H100s, 2026-12-07; their repeats milliseconds):
#
#   OUT=$OUT scripts/gpu_first_use.sh 2>&1 | tee $OUT/log
#
# What it showed (H100, 19:06; docs/BENCHMARKS.md, "First use with empty caches"): CuPy's CUB
# builds, one per reduced length's block size, seconds each; with both caches empty the judge
# failed an honest kernel as hung. Since `086aee4` the worker turns CuPy's accelerators off
# (unless CUPY_ACCELERATORS is set). The script's parts, to run again against that judge:
# 1. Each step of the judge's own work on the three slow shapes, first use and repeat, with
#    empty caches, CUB on (CuPy's default outside the worker) and off.
# 2. The slow draws through `eval` with empty caches: "default" (the worker's choice, CUB off),
#    then "cub" (CUPY_ACCELERATORS=cub: the user's choice, kept). Predicted: default passes,
#    its first scenario under 6 s, each scenario's `compiles` counted; cub as at 19:06.
# 3. The reference alone on three large shapes, with and without CUB (warm caches): what CUB
#    is worth to the judge's own time.
# 4. sm90.cu against itself on the bench set without peers, and paired.
# Prints what it measured; decides nothing.
set -uo pipefail
: "${OUT:?OUT names the folder for the results}"
source scripts/gpu_env.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
date -u
python3 -c "
import cupy
from cupy._core import _accelerator
print('cupy', cupy.__version__, 'reduction accelerators:',
      _accelerator.get_reduction_accelerators(), 'routine accelerators:',
      _accelerator.get_routine_accelerators())
"
# 1. Where the seconds go: each step of the judge's own work on the three slow shapes, first
#    use and repeat, with empty caches (CuPy's and the driver's JIT cache), as installed and
#    with CuPy's accelerators off.
for mode in as-is no-cub; do
    flag=; [ "$mode" = no-cub ] && flag=--no-cub
    echo "== steps, $mode"
    CUPY_CACHE_DIR=$(mktemp -d) CUDA_CACHE_PATH=$(mktemp -d) timeout 150 \
        python3 benchmarks/first_use_steps.py $flag
done
# What CuPy's CUB library carries for this GPU: SASS, or PTX the driver compiles on first use.
library=$(python3 -c "import cupy.cuda.cub as c; print(c.__file__)" 2> /dev/null)
echo "CuPy's CUB library: $library"
[ -n "$library" ] && {
    echo "  SASS: $(cuobjdump --list-elf "$library" 2> /dev/null | grep -o 'sm_[0-9a-z]*' | sort | uniq -c | tr '\n' ' ')"
    echo "  PTX: $(cuobjdump --list-ptx "$library" 2> /dev/null | grep -o 'sm_[0-9a-z]*' | sort | uniq -c | tr '\n' ' ')"
}
# 2. The slow draws through `eval`, each mode with empty caches.
source_file=kernels/flash_fwd/sm90.cu
for mode in default cub; do
    settings=(CUPY_CACHE_DIR="$(mktemp -d)" CUDA_CACHE_PATH="$(mktemp -d)")
    [ "$mode" = cub ] && settings+=(CUPY_ACCELERATORS=cub)
    began=$(date +%s.%N)
    env "${settings[@]}" timeout 150 python3 -m kernelseek_tui eval \
        kernels/flash_fwd --source "$source_file" --scenarios benchmarks/slow_heldout.toml \
        --no-compare --json > "$OUT/first-$mode.json" 2> "$OUT/first-$mode.err"
    status=$?
    echo "== eval, $mode: exit $status, $(python3 -c "import time; print(round(time.time() - $began, 1))") s"
    python3 -c "
import json, sys
for s in json.load(open(sys.argv[1]))['scenarios']:
    print(' ', s['name'], s.get('passed'), 'wall', s.get('wall_s'), s.get('phase_s'))
    print('    compiled', s.get('compiles'))
" "$OUT/first-$mode.json" || tail -5 "$OUT/first-$mode.err"
done
date -u
timeout 150 python3 - << 'PYTHON'
import time

import cupy as cp
from cupy._core import _accelerator

from kernelseek_tui.evaluate.dtypes import round_to
import importlib.util

spec = importlib.util.spec_from_file_location("reference", "kernels/flash_fwd/reference.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
shapes = [  # batch, seqlen_q, seqlen_k, heads, kv heads, headdim, causal
    (1, 16384, 16384, 16, 16, 128, 1),
    (4, 4096, 4096, 16, 16, 64, 0),
    (2, 2048, 2048, 16, 16, 256, 1),
]
generator = cp.random.default_rng(1)
saved = _accelerator.get_reduction_accelerators()
for b, sq, sk, h, hk, d, causal in shapes:
    inputs = {
        "q": generator.standard_normal((b, sq, h, d), dtype=cp.float32),
        "k": generator.standard_normal((b, sk, hk, d), dtype=cp.float32),
        "v": generator.standard_normal((b, sk, hk, d), dtype=cp.float32),
    }
    ints = {"causal": causal}
    floats = {"softmax_scale": d**-0.5}
    lowp = lambda x: round_to(cp, x, "bfloat16")  # noqa: E731
    line = []
    for name, accelerators in (("as-is", saved), ("no-cub", [])):
        _accelerator.set_reduction_accelerators(accelerators)
        module.reference(inputs, ints, floats, lowp)  # compiles, if anything
        cp.cuda.Device().synchronize()
        times = []
        for _ in range(3):
            began = time.perf_counter()
            module.reference(inputs, ints, floats, lowp)
            cp.cuda.Device().synchronize()
            times.append(time.perf_counter() - began)
        line.append(f"{name} {min(times) * 1000:.1f} ms")
    _accelerator.set_reduction_accelerators(saved)
    print(f"reference b{b} {sq}x{sk} h{h}kv{hk} d{d} c{causal}: " + ", ".join(line))
PYTHON
date -u
# 4. sm90.cu against itself on the bench set: without peers, paired, and with the starting
#    kernel timed in turn (`--start-in-turn`). At 19:08-19:10 (H100): 1.026 without peers,
#    1.023 unpaired and 1.001 paired. Predicted for --start-in-turn: 1.00 +- 0.01.
if [ -z "${SKIP_BIAS:-}" ]; then
    SETS=bench TAG=alone EVAL_ARGS=--no-compare timeout 150 scripts/gpu_start_bias.sh
    SETS=bench TAG=paired EVAL_ARGS="--pair-with $PWD/kernels/flash_fwd/sm90.cu" \
        timeout 200 scripts/gpu_start_bias.sh
    SETS=bench TAG=start-in-turn EVAL_ARGS=--start-in-turn timeout 200 scripts/gpu_start_bias.sh
fi
date -u
