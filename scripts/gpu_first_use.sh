#!/usr/bin/env bash
# What the first use of a held-out shape costs on a machine whose CuPy cache is empty, and
# what takes it away (kernels/flash_fwd/NOTES.md: three tiny held-out shapes took 3.7-8.9 s in
# the judge's own work on fresh H100s, 2026-12-07; their repeats milliseconds):
#
#   OUT=$OUT scripts/gpu_first_use.sh 2>&1 | tee $OUT/log
#
# 1. The slow draws (benchmarks/slow_heldout.toml, each twice) through `eval`, each time with
#    an empty CuPy cache of its own: CuPy's reductions as installed ("as-is"), then with CUB
#    off (CUPY_ACCELERATORS empty), then as installed with NVRTC's precompiled headers
#    (CUPY_NVRTC_USE_PCH=1). Each scenario prints the kernels its judging compiled
#    (evaluate/compile_watch.py). Predicted: as-is, seconds of CUB builds in the first of each
#    pair ("(cub)" in the names), none in the repeat; without CUB, tenths of a second.
# 2. The reference alone on three large shapes, with and without CUB (warm caches): what CUB
#    is worth to the judge's own time.
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
source_file=kernels/flash_fwd/sm90.cu
for mode in as-is no-cub pch; do
    cache=$(mktemp -d)
    case $mode in
    as-is) settings=() ;;
    no-cub) settings=(CUPY_ACCELERATORS=) ;;
    pch) settings=(CUPY_NVRTC_USE_PCH=1) ;;
    esac
    began=$(date +%s.%N)
    env CUPY_CACHE_DIR="$cache" "${settings[@]}" timeout 200 python3 -m kernelseek_tui eval \
        kernels/flash_fwd --source "$source_file" --scenarios benchmarks/slow_heldout.toml \
        --no-compare --json > "$OUT/first-$mode.json" 2> "$OUT/first-$mode.err"
    status=$?
    echo "== $mode: exit $status, $(python3 -c "import time; print(round(time.time() - $began, 1))") s, $(find "$cache" -type f | wc -l) files in its CuPy cache"
    python3 -c "
import json, sys
for s in json.load(open(sys.argv[1]))['scenarios']:
    print(' ', s['name'], s.get('passed'), 'wall', s.get('wall_s'), s.get('phase_s'))
    print('    compiled', s.get('compiles'), 'in', s.get('compile_s'), 's:', s.get('compiled'))
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
