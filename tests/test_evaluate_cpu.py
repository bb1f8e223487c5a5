"""The evaluator's parts that need no GPU: static checks, the nvcc build, the tolerance rules,
the reference itself, and the watchdog around the worker process."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.evaluate import api
from kernelseek_tui.evaluate.build import build, static_check
from kernelseek_tui.evaluate.check import check_output
from kernelseek_tui.evaluate.display import format_summary
from kernelseek_tui.evaluate.dtypes import from_float32, round_to, to_float32
from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.task import load_task

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "kernels" / "flash_fwd"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
HEADER = "#include <cuda_runtime.h>\n#include <stdint.h>\n"
ENTRY = (
    'extern "C" int ks_launch(void* const* t, const int64_t* i, const double* f, '
    "cudaStream_t s) { %s }\n"
)


@pytest.fixture(scope="module")
def task():
    return load_task(TASK_DIR)


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("#include <cutlass/gemm.h>\n", "include 'cutlass/gemm.h'"),
        ("#include <cublas_v2.h>\n", "forbidden dependency 'cublas'"),
        ('#include "thrust/sort.h"\n', "include 'thrust/sort.h'"),
        ("#include <cub/cub.cuh>\n", "include 'cub/cub.cuh'"),
        ("using namespace cute;\n", "forbidden dependency 'cute'"),
        ("#include <dlfcn.h>\n", "include 'dlfcn.h'"),
    ],
)
def test_static_check_rejects_forbidden_dependencies(task, source: str, expected: str) -> None:
    reasons = static_check(HEADER + source, task.dependency_rule)
    assert any(expected in r for r in reasons), reasons
    assert any(r.startswith("line 3") for r in reasons), reasons


def test_static_check_ignores_comments_and_allows_the_baseline(task) -> None:
    source = HEADER + "// this kernel uses no CUTLASS, no cute, no cublas\n/* nor thrust */\n"
    assert static_check(source, task.dependency_rule) == []
    assert static_check(task.source.read_text(), task.dependency_rule) == []


@needs_nvcc
def test_baseline_builds_and_the_cache_hits_the_second_time(task) -> None:
    first = build(task.source.read_text(), rule=task.dependency_rule, extra_flags=task.nvcc_flags)
    assert first.ok, first.reasons
    assert first.library is not None and first.library.exists()
    second = build(task.source.read_text(), rule=task.dependency_rule, extra_flags=task.nvcc_flags)
    assert second.cache_hit and second.library == first.library
    knobbed = build(
        task.source.read_text(),
        rule=task.dependency_rule,
        extra_flags=task.nvcc_flags,
        defines={"BLOCK_N": 32},
    )
    assert knobbed.ok and knobbed.key != first.key


@needs_nvcc
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            'extern "C" void* dlopen(const char*, int);\n' + ENTRY % 'return dlopen("x", 1) != 0;',
            "forbidden symbol 'dlopen'",
        ),
        (ENTRY % "void* p; cudaMalloc(&p, 16); return 0;", "forbidden symbol 'cudaMalloc'"),
        (
            ENTRY % "cudaStream_t x; cudaStreamCreate(&x); return 0;",
            "forbidden symbol 'cudaStreamCreate'",
        ),
        (
            'extern "C" int cudaFakeTimer(void) { return 0; }\n' + ENTRY % "return 0;",
            "would interpose",
        ),
        (
            "int ks_launch(void* const* t, const int64_t* i, const double* f, cudaStream_t s)"
            " { return 0; }\n",
            "does not export 'ks_launch'",
        ),
        (ENTRY % "return undefined_thing;", "build failed"),
    ],
)
def test_build_rejects_what_the_rule_forbids(task, body: str, expected: str) -> None:
    result = build(HEADER + body, rule=task.dependency_rule)
    assert not result.ok
    assert any(expected in r for r in result.reasons), result.reasons


def test_forbidden_include_fails_without_any_gpu(task, tmp_path: Path) -> None:
    source = tmp_path / "bad.cu"
    source.write_text(HEADER + "#include <cudnn.h>\n" + ENTRY % "return 0;")
    result = api.evaluate(task, source, sets=["quick"])
    assert result.verdict == "fail"
    assert any("cudnn" in r for r in result.reasons)
    assert all(s.passed is None for s in result.scenarios)


# -- the tolerance rules, on numpy ---------------------------------------------------------


def _bf16(values: np.ndarray) -> np.ndarray:
    return from_float32(np, values.astype(np.float32), "bfloat16")


def test_bf16_round_trip_is_round_to_nearest_even() -> None:
    values = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-9, -0.0, np.inf, np.nan], dtype=np.float32)
    back = to_float32(np, _bf16(values), "bfloat16")
    assert back[0] == 1.0 and back[1] == 1.0 and back[2] == 1 + 2**-7
    assert np.isinf(back[4]) and np.isnan(back[5])


@pytest.mark.parametrize("per", ["tensor", "row"])
def test_lowp_rule_accepts_bf16_rounding_and_rejects_a_real_error(task, per: str) -> None:
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((64, 32)).astype(np.float32)
    lowp = ref + rng.standard_normal(ref.shape).astype(np.float32) * 4e-3
    rule = dataclasses.replace(task.tolerances["out"], per=per)
    good = check_output(np, "out", "bfloat16", _bf16(lowp), ref, lowp, rule)
    assert good.passed, good.reasons
    wrong = lowp.copy()
    wrong[3, 3] += 0.1
    bad = check_output(np, "out", "bfloat16", _bf16(wrong), ref, lowp, rule)
    assert not bad.passed and "exceed" in bad.reasons[0] and "max error" in bad.reasons[0]


def test_unwritten_nan_and_inf_are_named(task) -> None:
    ref = np.ones((4, 4), dtype=np.float32)
    out = _bf16(ref.copy())
    out[0, 0] = 0x7FC0  # the poison, never overwritten
    result = check_output(np, "out", "bfloat16", out, ref, ref, task.tolerances["out"])
    assert not result.passed and "1 of 16 elements are NaN" in result.reasons[0]
    lse_ref = np.array([1.0, np.inf], dtype=np.float32)
    lse = np.array([1.0, 5.0], dtype=np.float32)
    result = check_output(np, "lse", "float32", lse, lse_ref, None, task.tolerances["lse"])
    assert not result.passed and "reference is infinite" in result.reasons[0]
    lse = np.array([np.inf, np.inf], dtype=np.float32)
    result = check_output(np, "lse", "float32", lse, lse_ref, None, task.tolerances["lse"])
    assert not result.passed and "inf where the reference is finite" in result.reasons[0]


# -- the reference, checked against a direct computation (numpy standing in for cupy) -------


def _direct_attention(q, k, v, scale, causal):
    b, sq, h, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    out = np.zeros((b, sq, h, d))
    lse = np.full((b, h, sq), np.inf)
    for bi in range(b):
        for hi in range(h):
            kh = hi // (h // hkv)
            for i in range(sq):
                visible = [j for j in range(sk) if not causal or j <= i + sk - sq]
                if not visible:
                    continue
                s = np.array([q[bi, i, hi] @ k[bi, j, kh] for j in visible], dtype=np.float64)
                s *= scale
                m = s.max()
                p = np.exp(s - m)
                out[bi, i, hi] = (p[:, None] * v[bi, visible, kh]).sum(0) / p.sum()
                lse[bi, hi, i] = m + np.log(p.sum())
    return out, lse


@pytest.mark.parametrize("causal", [0, 1])
@pytest.mark.parametrize(("sq", "sk"), [(1, 1), (5, 3), (3, 7), (6, 6)])
def test_reference_matches_a_direct_computation(monkeypatch, causal, sq, sk) -> None:
    monkeypatch.setitem(sys.modules, "cupy", np)
    from kernelseek_tui.evaluate.comparators import load_module

    reference = load_module(TASK_DIR / "reference.py", "flash_reference_under_test").reference
    rng = np.random.default_rng(sq * 10 + sk)
    q = rng.standard_normal((2, sq, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, sk, 2, 8)).astype(np.float32)
    v = rng.standard_normal((2, sk, 2, 8)).astype(np.float32)
    ints = {"causal": causal}
    got = reference(
        {"q": q, "k": k, "v": v},
        ints,
        {"softmax_scale": 0.3},
        lambda x: round_to(np, x, "bfloat16"),
    )
    out, lse = _direct_attention(q, k, v, 0.3, causal)
    np.testing.assert_allclose(got["out"], out, atol=1e-5)
    np.testing.assert_allclose(got["lse"], lse, rtol=1e-5)
    assert np.abs(got["out:lowp"] - out).max() < 3e-2
    if causal and sq > sk:
        assert np.isinf(got["lse"][:, :, 0]).all() and (got["out"][:, 0] == 0).all()


# -- the watchdog around the worker, with scripted stand-in workers ---------------------------


def _scripted_worker(monkeypatch, tmp_path: Path, body: str) -> None:
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent(body))
    monkeypatch.setattr(api, "WORKER_COMMAND", [sys.executable, str(script)])


def _source(tmp_path: Path) -> Path:
    source = tmp_path / "k.cu"
    source.write_text((TASK_DIR / "baseline.cu").read_text())
    return source


PREAMBLE = """
import json, os, sys, time
req = json.loads(sys.stdin.read())
from kernelseek_tui.evaluate.protocol_seal import Sealer
seal = Sealer.from_request(req)  # the judge reads only lines sealed with its key
def emit(m): print(seal.line(m), flush=True)
emit({"type": "device", "name": "stand-in", "index": "0"})
"""


@needs_nvcc
def test_worker_that_hangs_is_killed_with_a_named_reason(task, monkeypatch, tmp_path) -> None:
    _scripted_worker(
        monkeypatch,
        tmp_path,
        PREAMBLE
        + """
emit({"type": "progress", "index": 0, "total": 1, "scenario": req["scenarios"][0]["name"],
      "phase": "check"})
time.sleep(60)
""",
    )
    result = api.evaluate(task, _source(tmp_path), sets=["quick"], stall_timeout_s=1.5)
    assert result.verdict == "fail"
    assert "no progress for 2 s" in result.reasons[0]
    assert "s1x1-d64-h6kv6-c0 (check)" in result.reasons[0]
    assert result.scenarios[0].passed is False and result.scenarios[1].passed is None


@needs_nvcc
def test_worker_that_crashes_is_named(task, monkeypatch, tmp_path) -> None:
    _scripted_worker(
        monkeypatch,
        tmp_path,
        PREAMBLE
        + """
import signal
emit({"type": "progress", "index": 0, "total": 1, "scenario": req["scenarios"][0]["name"],
      "phase": "check"})
os.kill(os.getpid(), signal.SIGSEGV)
""",
    )
    result = api.evaluate(task, _source(tmp_path), sets=["quick"])
    assert result.verdict == "fail"
    assert "the worker died (SIGSEGV)" in result.reasons[0]


@needs_nvcc
def test_worker_results_become_the_evaluation(task, monkeypatch, tmp_path) -> None:
    _scripted_worker(
        monkeypatch,
        tmp_path,
        PREAMBLE
        + """
for i, s in enumerate(req["scenarios"]):
    emit({"type": "progress", "index": i, "total": 1, "scenario": s["name"], "phase": "start"})
    result = {"name": s["name"], "set": s["set"], "fields": s["fields"], "passed": True,
              "reasons": [], "ms": 2.0, "tflops": 10.0,
              "peers": {"fa3": {"name": "fa3", "ms": 1.0, "tflops": 20.0}}}
    emit({"type": "scenario", "result": result, "baseline_ms": 4.0})
emit({"type": "done"})
""",
    )
    source = _source(tmp_path)
    source.write_text(source.read_text() + "\n// a changed candidate\n")
    result = api.evaluate(task, source, sets=["quick"])
    assert result.verdict == "pass", result.reasons
    assert result.summary.passed == 12
    assert result.summary.geomean_speedup == pytest.approx(2.0)
    assert result.summary.vs_fa3 == pytest.approx(0.5)
    # Every milestone but the sharing check (no nvidia-smi that can see this worker), in order.
    assert_timeline(result, missing={"sharing_checked"})


@needs_nvcc
@pytest.mark.parametrize("how", ["unsealed", "sealed with another key"])
def test_a_line_the_worker_did_not_seal_fails_the_evaluation(
    task, monkeypatch, tmp_path, how: str
) -> None:
    """What a candidate in the worker's process could write into the judge's pipe (its FILE's
    descriptor pointed at the protocol's): perfect results for every scenario, then done."""
    forged_key = "00" * 32 if how != "unsealed" else ""
    _scripted_worker(
        monkeypatch,
        tmp_path,
        PREAMBLE
        + f"""
forger = Sealer({forged_key!r} or None)
for s in req["scenarios"]:
    result = {{"name": s["name"], "set": s["set"], "fields": s["fields"], "passed": True,
              "reasons": [], "ms": 0.001, "tflops": 1e6}}
    print(forger.line({{"type": "scenario", "result": result, "baseline_ms": 4.0}}), flush=True)
print(forger.line({{"type": "done"}}), flush=True)
""",
    )
    source = _source(tmp_path)
    source.write_text(source.read_text() + f"\n// forged: {how}\n")
    result = api.evaluate(task, source, sets=["quick"])
    assert result.verdict == "fail"
    why = "without the worker's seal" if how == "unsealed" else "whose seal does not match"
    assert f"the worker's protocol carried a line {why}" in result.reasons[0]
    assert not any(s.passed for s in result.scenarios)  # not one forged result was taken


def assert_timeline(result, missing: set[str]) -> None:
    """``result.timeline`` holds TIMELINE's milestones but ``missing``, in TIMELINE's order,
    and ends at the evaluation's duration."""
    expected = [name for name in api.TIMELINE if name not in missing]
    assert list(result.timeline) == [n for n in expected if n in result.timeline]
    assert set(result.timeline) == set(expected), result.timeline
    times = [result.timeline[name] for name in expected]
    assert times == sorted(times) and times[0] >= 0
    assert result.timeline["finished"] == result.duration_s


def test_a_rate_above_the_device_peak_fails_the_scenario(task) -> None:
    from kernelseek_tui.evaluate.result import ScenarioResult
    from kernelseek_tui.evaluate.worker import beyond_peak

    assert task.timing.max_tflops is not None
    honest = ScenarioResult(name="s", set="bench", fields={}, passed=True, tflops=650.0)
    assert not beyond_peak(honest, task.timing.max_tflops) and honest.passed
    memoized = ScenarioResult(name="s", set="bench", fields={}, passed=True, tflops=7400.0)
    assert beyond_peak(memoized, task.timing.max_tflops)
    assert memoized.passed is False
    assert "above the device's peak of 1000" in memoized.reasons[0]


@needs_nvcc
def test_the_isolation_reaches_the_worker_and_keys_the_starting_kernels_times(
    task, monkeypatch, tmp_path
) -> None:
    # The stand-in worker reports what the request said, as the device's name.
    _scripted_worker(
        monkeypatch,
        tmp_path,
        """
import json, os, sys
req = json.loads(sys.stdin.read())
host, probe = req["sandbox_host"], req["handover_probe"]
built = "none" if host is None else ("built" if os.access(host, os.X_OK) else "missing")
if probe is not None:
    built += "+probe" if os.path.isfile(probe) else "+no probe"
name = req["isolation"] + "|" + req["baseline_key"] + "|" + built
from kernelseek_tui.evaluate.protocol_seal import Sealer
seal = Sealer.from_request(req)
print(seal.line({"type": "device", "name": name, "index": "0"}), flush=True)
print(seal.line({"type": "done"}), flush=True)
""",
    )
    source = _source(tmp_path)
    source.write_text(source.read_text() + "\n// a changed candidate\n")
    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDA_MPS_PIPE_DIRECTORY", raising=False)
    monkeypatch.setenv("KERNELSEEK_MPS", "off")
    # A task that names no isolation judges its kernels in processes of their own.
    assert task.isolation == "process"
    judged = api.evaluate(task, source, sets=["quick"])
    isolated = judged.device["name"]
    in_process = api.evaluate(task, source, sets=["quick"], isolation="in-process")
    assert judged.isolation == "process" and in_process.isolation == "in-process"
    assert "isolation: process" in format_summary(judged)
    loaded_beside = in_process.device["name"]
    assert loaded_beside.startswith("in-process|") and loaded_beside.endswith("|none")
    # A call timed across processes carries the hand-over (fenced by default, and here
    # with no MPS server, the contexts' switching too), which the worker measures and takes
    # out: its cached times are its own; the kernels' host and the judge's empty kernel (the
    # hand-over's measure) are built before the worker starts.
    key = loaded_beside.split("|")[1]
    assert isolated == "process|" + key + "-process-fenced-no-mps-net-own|built+probe"
    assert "GPU shared through: none (KERNELSEEK_MPS=off)" in format_summary(judged)
    with pytest.raises(KernelseekError, match="isolation must be one of"):
        api.evaluate(task, source, sets=["quick"], isolation="container")


@needs_nvcc
def test_another_process_on_the_gpu_is_named_in_the_result(task, monkeypatch, tmp_path) -> None:
    # The stand-in nvidia-smi lists this test's own process (ours: the evaluation runs in it)
    # and one that is not, on the worker's GPU.
    uuid_hex = "0123456789abcdef0123456789abcdef"
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text(
        "#!/bin/sh\n"
        f"echo 'GPU-01234567-89ab-cdef-0123-456789abcdef, {os.getpid()}, python3, 900'\n"
        "echo 'GPU-01234567-89ab-cdef-0123-456789abcdef, 999999, job, 7'\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{smi.parent}{os.pathsep}{os.environ['PATH']}")
    _scripted_worker(
        monkeypatch,
        tmp_path,
        f"""
import json, sys
req = json.loads(sys.stdin.read())
from kernelseek_tui.evaluate.protocol_seal import Sealer
seal = Sealer.from_request(req)  # the judge reads only lines sealed with its key
def emit(m): print(seal.line(m), flush=True)
emit({{"type": "device", "name": "stand-in", "index": "0", "uuid": "{uuid_hex}"}})
for s in req["scenarios"]:
    emit({{"type": "scenario", "result": {{"name": s["name"], "set": s["set"],
          "fields": s["fields"], "passed": True, "reasons": [], "ms": 1.0}}}})
emit({{"type": "done"}})
""",
    )
    source = _source(tmp_path)
    source.write_text(source.read_text() + "\n// a changed candidate\n")
    result = api.evaluate(task, source, sets=["quick"], compare=False)
    assert result.other_gpu_processes == ["pid 999999 (job, 7 MiB)"]
    # This stand-in reports no progress: no scenario is seen beginning.
    assert_timeline(result, missing={"first_scenario"})
    assert "warning: the GPU was shared during this evaluation (pid 999999" in format_summary(
        result
    )


@needs_nvcc
def test_the_result_says_how_each_kernels_process_was_confined(task, monkeypatch, tmp_path) -> None:
    # The worker says it of each kernel's process as it loads the kernel there
    # (evaluate/sandbox_confinement.h); processes that differ are each named.
    confined = "landlock abi 7: writes only under /dev; no exec; no TCP"
    _scripted_worker(
        monkeypatch,
        tmp_path,
        PREAMBLE
        + f"""
emit({{"type": "confinement", "who": "the candidate", "said": {confined!r}}})
emit({{"type": "confinement", "who": "the starting kernel", "said": "none: no Landlock"}})
emit({{"type": "done"}})
""",
    )
    monkeypatch.delenv("CUDA_MPS_PIPE_DIRECTORY", raising=False)
    monkeypatch.setenv("KERNELSEEK_MPS", "off")
    source = _source(tmp_path)
    source.write_text(source.read_text() + "\n// confined or not\n")
    result = api.evaluate(task, source, sets=["quick"], isolation="process")
    said = f"the candidate: {confined} | the starting kernel: none: no Landlock"
    assert result.confinement == said
    assert f"confinement of the kernels' processes: {said}" in format_summary(result)
    assert EvalResult.from_json(result.to_json()).confinement == said


def test_processes_confined_alike_are_said_once() -> None:
    alike = {"the candidate": "landlock abi 7: x", "the starting kernel": "landlock abi 7: x"}
    assert api.confinement_said(alike) == "landlock abi 7: x"
    in_process = EvalResult(eval_id="e", verdict="pass")
    assert in_process.confinement is None
    assert "confinement" not in format_summary(in_process)


def test_an_isolated_result_says_how_its_calls_were_handed_over() -> None:
    from kernelseek_tui.evaluate.result import EvalResult

    result = EvalResult(eval_id="e", verdict="pass", isolation="process", handover="counters")
    assert "calls handed over by counters" in format_summary(result)
    again = EvalResult.from_json(result.to_json())
    assert (again.isolation, again.handover) == ("process", "counters")
    # A result written before the field existed still reads.
    data = result.to_dict()
    del data["handover"]
    assert EvalResult.from_dict(data).handover is None


@needs_nvcc
def test_an_isolated_worker_is_a_client_of_the_judges_mps_server_restarted_after_a_hang(
    task, monkeypatch, tmp_path
) -> None:
    from test_private_mps import log_of, stand_in_daemon

    from kernelseek_tui.evaluate import private_mps

    control = stand_in_daemon(tmp_path)
    monkeypatch.setenv("PATH", f"{control.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_MPS_PIPE_DIRECTORY", raising=False)
    monkeypatch.delenv("KERNELSEEK_MPS", raising=False)
    monkeypatch.setenv("KERNELSEEK_CACHE", str(tmp_path / "cache"))
    servers: dict = {}
    monkeypatch.setattr(private_mps, "_SERVERS", servers)
    # The stand-in worker names the server it was given, then hangs when told to, or fails
    # at its set-up as one the server refused.
    hang, refuse = tmp_path / "hang", tmp_path / "refuse"
    _scripted_worker(
        monkeypatch,
        tmp_path,
        """
import json, os, sys, time
req = json.loads(sys.stdin.read())
from kernelseek_tui.evaluate.protocol_seal import Sealer
seal = Sealer.from_request(req)
def emit(m): print(seal.line(m), flush=True)
if os.path.exists(REFUSE_FILE):  # as a worker whose CUDA context the server refused
    emit({"type": "fatal", "kind": "error", "reason": "CUDARuntimeError: "
          "cudaErrorDevicesUnavailable: CUDA-capable device(s) is/are busy or unavailable"})
    sys.exit(3)
emit({"type": "device", "name": os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "none"),
      "index": "0"})
if os.path.exists(HANG_FILE):
    emit({"type": "progress", "index": 0, "total": 1, "scenario": req["scenarios"][0]["name"],
          "phase": "check"})
    time.sleep(60)
emit({"type": "done"})
""".replace("HANG_FILE", repr(str(hang))).replace("REFUSE_FILE", repr(str(refuse))),
    )
    source = _source(tmp_path)
    try:
        first = api.evaluate(task, source, sets=["quick"], isolation="process")
        (server,) = servers.values()
        pipe = server.environment()["CUDA_MPS_PIPE_DIRECTORY"]
        assert first.device["name"] == pipe
        assert first.mps == "a private MPS server started by the judge"
        assert "GPU shared through: a private MPS server" in format_summary(first)
        assert log_of(control) == [f"start {pipe} all"]
        # Its times are keyed as any other isolated run's: a server was there.
        hang.touch()
        hung = api.evaluate(task, source, sets=["quick"], isolation="process", stall_timeout_s=1.5)
        assert hung.verdict == "fail" and "no progress" in hung.reasons[0]
        assert "restarted after this evaluation" in str(hung.mps)
        assert log_of(control) == [f"start {pipe} all", "quit", f"start {pipe} all"]
        hang.unlink()
        after = api.evaluate(task, source, sets=["quick"], isolation="process")
        assert after.device["name"] == pipe  # the same directories: a client finds the new one
        assert after.mps == "a private MPS server started by the judge"
        assert log_of(control)[3:] == []  # no restart after an evaluation that ended well
        refuse.touch()
        refused = api.evaluate(task, source, sets=["quick"], isolation="process")
        assert refused.verdict == "error"
        assert "cudaErrorDevicesUnavailable" in refused.reasons[0]
        assert "KERNELSEEK_MPS=off judges without it" in refused.reasons[1]
        assert log_of(control)[3:] == ["quit", f"start {pipe} all"]
    finally:
        for server in servers.values():
            server.stop()
