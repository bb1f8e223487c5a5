#!/usr/bin/env bash
# What an agent does at its shell on the GPU box, run under the confined shell's launcher
# (session/confined_shell.cpp; docs/RELIABILITY.md, "The agent's shell and the judge's files"),
# each step said pass or FAIL with its output's tail. Written 2026-12-07 late, not yet run on a
# GPU (CPU-tested only: tests/test_shell_confinement.py):
#
#   OUT=$OUT scripts/gpu_confined_shell.sh 2>&1 | tee $OUT/log
#
# Steps: nvcc builds a small CUDA program in the workspace; it runs on the GPU; cuobjdump reads
# it; ncu profiles it (--clock-control none); CuPy runs a kernel; Python imports the judge; and
# writes outside (the task's baseline.cu) are refused. Prints what it saw; decides nothing.
set -uo pipefail
: "${OUT:?OUT names the folder for the results}"
source scripts/gpu_env.sh || exit 1
work=$(mktemp -d)
mkdir -p "$work/workspace" "$work/scratch"
launcher=$(python3 -c "from kernelseek_tui.session.shell_confinement import launcher; print(launcher())") || exit 1
echo "launcher: $launcher"
cat > "$work/workspace/probe.cu" <<'CU'
#include <cstdio>
__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }
int main() {
    float* x; cudaMalloc(&x, 256 * sizeof(float)); cudaMemset(x, 0, 256 * sizeof(float));
    twice<<<1, 256>>>(x); cudaError_t e = cudaDeviceSynchronize();
    printf("kernel: %s\n", cudaGetErrorString(e)); return e == cudaSuccess ? 0 : 1;
}
CU
step() {
    local name=$1; shift
    local log="$OUT/confined-$name.log"
    if (cd "$work/workspace" && env TMPDIR="$work/scratch" CUDA_CACHE_PATH="$work/scratch/nv" \
        "$launcher" "$work/workspace" "$work/scratch" -- bash -c "$*") >"$log" 2>&1; then
        echo "pass  $name"
    else
        echo "FAIL  $name (exit $?): $(tail -3 "$log" | tr '\n' ' ')"
    fi
}
step nvcc "nvcc -arch=sm_90a -o probe probe.cu"
step run "./probe"
step cuobjdump "cuobjdump --dump-sass probe | head -5"
step ncu "ncu --clock-control none --metrics gpu__time_duration.sum ./probe"
step cupy "python3 -c 'import cupy; print(float((cupy.arange(10) * 2).sum()))'"
step judge_import "python3 -c 'import kernelseek_tui.evaluate.api'"
step refused "! echo '// spin' >> $PWD/kernels/flash_fwd/baseline.cu"
git diff --quiet -- kernels/flash_fwd/baseline.cu && echo "pass  baseline.cu unchanged" || echo "FAIL  baseline.cu changed"
rm -rf "$work"
