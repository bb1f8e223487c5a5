"""Kernels judged in a process of their own (``isolation = "process"``), on the GPU.

The same candidates as tests/test_evaluate_gpu.py, judged with every kernel in its own host
process (evaluate/sandboxed_kernel.py): the honest ones pass, each broken or cheating one fails
with the reason it gets in-process (or the reason the host gives for the same cause), and the
kernel's process is shown to hold no Python. Written 2026-12-04 on a machine with no GPU; the
CPU side of the host is tested in tests/test_sandbox_host.py.

Every test here runs with the hand-over ``KERNELSEEK_HANDOVER`` names (fenced by default);
run the file once more with ``KERNELSEEK_HANDOVER=counters`` or ``events`` for the others
(evaluate/stream_counters.py); the tests that compare hand-overs name theirs. The kernels'
processes and the worker share the GPU through the judge's own MPS server
(evaluate/private_mps.py), or the one ``CUDA_MPS_PIPE_DIRECTORY`` names, or none with
``KERNELSEEK_MPS=off``.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path

import pytest
from test_evaluate_gpu import BROKEN, KERNELS, NOTHING_TO_COMPUTE, SMALL, TIMED, TIMED_TEN, VARIANTS
from test_evaluate_gpu import _variant as variant

from kernelseek_tui.evaluate.api import evaluate
from kernelseek_tui.evaluate.sandbox_host import CONFINEMENT_VARIABLE
from kernelseek_tui.task import load_task

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "kernels" / "flash_fwd"


@pytest.fixture(scope="module")
def task():
    return load_task(TASK_DIR)


def landlock_here() -> bool:
    """This machine's kernel has Landlock (landlock_create_ruleset's version query)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc.syscall(ctypes.c_long(444), None, ctypes.c_size_t(0), ctypes.c_uint32(1)) >= 1


def isolated(task, source: Path, **kwargs):
    return evaluate(task, source, isolation="process", **kwargs)


def small(task, source: Path, **kwargs):
    return isolated(task, source, scenarios_file=SMALL, timed=False, compare=False, **kwargs)


def test_the_starting_kernel_passes_all_182_in_a_process_of_its_own(task) -> None:
    result = isolated(task, task.source, sets=["correctness"], random_count=0, compare=False)
    assert result.verdict == "pass", result.reasons
    assert result.summary.passed == result.summary.total == 182
    # Confined, unless this kernel has no Landlock or the user turned it off: a host that
    # could not confine itself goes on and says so, and that must not pass unseen here (on an
    # H100, 2026-12-07, the confined host first failed its first CUDA call; it writes its own
    # /proc entries).
    if os.environ.get(CONFINEMENT_VARIABLE) != "off" and landlock_here():
        assert (result.confinement or "").startswith("landlock abi"), result.confinement


def test_the_result_names_the_hand_over_its_calls_went_through(task) -> None:
    from kernelseek_tui.evaluate.stream_counters import default_handover

    result = small(task, task.source)
    assert result.verdict == "pass", result.reasons
    assert (result.isolation, result.handover) == ("process", default_handover())


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_subtly_wrong_kernels_still_fail_with_reason(task, tmp_path: Path, name: str) -> None:
    old, new, expected = VARIANTS[name]
    result = small(task, variant(tmp_path, name, old, new))
    assert result.verdict == "fail"
    text = " ".join(result.reasons)
    assert any(word in text for word in expected), text


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_kernels_still_fail_with_reason_and_the_next_evaluation_works(
    task, name: str
) -> None:
    result = small(task, KERNELS / name, stall_timeout_s=20)
    assert result.verdict == "fail", result.reasons
    text = " ".join(result.reasons)
    assert any(word in text for word in BROKEN[name]), text
    after = small(task, task.source)
    assert after.verdict == "pass", after.reasons


def test_rewritten_inputs_are_seen_through_the_shared_buffers(task, tmp_path: Path) -> None:
    # The memset runs in the kernel's own process, on the mapped allocation: the judge must see
    # it in its own buffers.
    source = variant(
        tmp_path,
        "zeroes_v_when_timed",
        NOTHING_TO_COMPUTE,
        NOTHING_TO_COMPUTE + "\n"
        "    static int calls = 0;\n"
        "    if (++calls > 1)\n"
        "        cudaMemsetAsync(tensors[2], 0, (size_t)batch * p.seqlen_k * p.nheads_kv *"
        " (size_t)ints[5] * 2, stream);",
    )
    result = isolated(task, source, scenarios_file=TIMED, compare=False)
    assert result.verdict == "fail"
    assert "modified inputs" in " ".join(result.reasons), result.reasons


def test_work_off_the_given_stream_is_still_caught(task, tmp_path: Path) -> None:
    source = variant(
        tmp_path,
        "wrong_stream",
        "kernel<<<grid, kThreads, T::kSmemBytes, stream>>>(p);",
        "kernel<<<grid, kThreads, T::kSmemBytes, 0>>>(p);",
    )
    result = isolated(task, source, scenarios_file=TIMED, compare=False)
    assert result.verdict == "fail"
    text = " ".join(result.reasons)
    assert any(w in text for w in ("outside the given stream", "NaN", "measured call")), text


def test_the_starting_kernel_passes_timed_with_judged_calls_and_peers(task) -> None:
    result = isolated(task, task.source, scenarios_file=TIMED_TEN)
    assert result.verdict == "pass", result.reasons
    assert all(s.passed and s.ms for s in result.scenarios), [s.reasons for s in result.scenarios]
    assert any(s.peers for s in result.scenarios)
    # Each timed scenario says how long its gates held the GPU idle per sample (evaluate/gate.py):
    # a pipe round trip and the peers' launches, tens to hundreds of microseconds.
    holds = [s.gate_hold_us for s in result.scenarios]
    print(f"gate holds (us): {holds}")
    assert all(us is not None and 0 < us < 10_000 for us in holds), holds


def test_each_timed_kernel_has_the_hand_over_of_its_own_process_taken_out(
    task, tmp_path: Path
) -> None:
    # One figure for all read sm90.cu up to 7% fast on an H100 (2026-12-06): the candidate's
    # process paid 6 us a call, the one the figure was measured in 14. Each kernel's now comes
    # from its own process; the starting kernel's only where its times are not cached.
    cache, source = tmp_path / "baseline", TASK_DIR / "sm90.cu"
    cold = isolated(task, source, scenarios_file=TIMED, compare=False, baseline_cache=cache)
    assert cold.verdict == "pass", cold.reasons
    print(f"hand-over, cold cache: {cold.handovers_us}")
    assert set(cold.handovers_us) == {"the candidate", "the starting kernel"}
    assert all(0.0 <= us < 100.0 for us in cold.handovers_us.values()), cold.handovers_us
    assert cold.handover_us == cold.handovers_us["the candidate"]
    warm = isolated(task, source, scenarios_file=TIMED, compare=False, baseline_cache=cache)
    assert warm.verdict == "pass", warm.reasons
    assert set(warm.handovers_us) == {"the candidate"}, warm.handovers_us


PROBE = r"""
#include <dlfcn.h>
#include <stdint.h>
#include <cuda_runtime.h>
// Writes 1.0f into its first tensor when the process it runs in has a Python interpreter.
extern "C" int ks_launch(void **tensors, const int64_t *, const double *, void *stream) {
    float seen = dlsym(RTLD_DEFAULT, "PyGILState_Ensure") != nullptr ? 1.0f : 0.0f;
    cudaStream_t s = (cudaStream_t)stream;
    int copied = (int)cudaMemcpyAsync(tensors[0], &seen, sizeof seen, cudaMemcpyHostToDevice, s);
    return copied | (int)cudaStreamSynchronize(s);
}
"""


def test_the_kernels_process_holds_no_python(tmp_path: Path) -> None:
    cp = pytest.importorskip("cupy")
    from kernelseek_tui.evaluate.buffers import allocate
    from kernelseek_tui.evaluate.sandboxed_kernel import SandboxedKernel
    from kernelseek_tui.evaluate.worker import Kernel
    from kernelseek_tui.task import TensorSpec

    source = tmp_path / "probe.cu"
    source.write_text(PROBE)
    library = tmp_path / "libprobe.so"
    subprocess.run(
        ["nvcc", "-shared", "-Xcompiler", "-fPIC", "-o", str(library), str(source), "-ldl"],
        check=True,
    )
    spec = TensorSpec(name="seen", dtype="float32", shape=("1",), role="output")
    stream = cp.cuda.Stream(non_blocking=True)
    answers = {}
    for name in ("in-process", "process"):
        tensor = allocate(cp, spec, (1,), shared=True)
        tensor.body.fill(-1)
        cp.cuda.Device().synchronize()
        kernel = (
            Kernel(str(library))
            if name == "in-process"
            else SandboxedKernel(library, cp=cp, stream=stream, who="the probe")
        )
        call = kernel.bind_tensors([tensor], [], [], stream.ptr)
        assert call() == 0
        stream.synchronize()
        if isinstance(kernel, SandboxedKernel):
            kernel.check()
            kernel.forget_all()
            kernel.close()
        answers[name] = float(tensor.body[0])
    # The probe sees Python where it is loaded into the judge, and none in its own process.
    assert answers == {"in-process": 1.0, "process": 0.0}


# A kernel's process whose DONE comes before the kernel's work, as a candidate able to patch the
# code of the process it runs in could make it (docs/RELIABILITY.md, "what the counters change
# for a cheat"): its host signals DONE the moment GO arrives and only then launches, so the
# judge's end event closes on the hand-over alone while the work runs on. Its devsync answers
# at once without waiting, so neither a measured run's tail nor the cross-check's wall clock
# (both reach the kernel's process through devsync) can see the work; its sync stays honest, so
# the untimed correctness checks still see right outputs. What is left to catch it is the
# judge's own: the judged measured call's outputs, copied on the judge's stream right after its
# end event, and the timed figure against the device's peak.
EARLY_DONE_PATCHES = (
    (  # events: DONE recorded before ks_launch
        "    int code = launch_candidate(launch, binding->second, &left);\n"
        "    // DONE is recorded whatever ks_launch did: the judge's stream waits on it.\n"
        "    error = cudaEventRecord(g_done[static_cast<int>(k)], g_stream);\n"
        '    if (error != cudaSuccess) return "error " + cuda_text(error);\n',
        "    error = cudaEventRecord(g_done[static_cast<int>(k)], g_stream);\n"
        '    if (error != cudaSuccess) return "error " + cuda_text(error);\n'
        "    int code = launch_candidate(launch, binding->second, &left);\n",
    ),
    (  # counters: DONE written before ks_launch
        "    int code = launch_candidate(launch, binding->second, &error);\n"
        "    // DONE is written whatever ks_launch did: the judge's stream waits on it.\n"
        "    result = g_write_value(g_stream, g_done_counter, value, 0);\n",
        "    result = g_write_value(g_stream, g_done_counter, value, 0);\n"
        "    int code = launch_candidate(launch, binding->second, &error);\n",
    ),
    (  # devsync: "waited 0 us", without waiting
        "std::string command_sync(bool device) {\n",
        'std::string command_sync(bool device) {\n    if (device) return "ok 0";\n',
    ),
)


def patched_host(tmp_path: Path, name: str, patches: tuple[tuple[str, str], ...]) -> Path:
    """The kernels' host built with each (old, new) of ``patches`` applied once, as CUDA (the
    host has a kernel of its own, its trailing launch's)."""
    from kernelseek_tui.evaluate.sandbox_host import HOST_SOURCE

    text = HOST_SOURCE.read_text()
    for old, new in patches:
        assert text.count(old) == 1, f"the host's source changed; patch no longer applies: {old}"
        text = text.replace(old, new)
    source = tmp_path / f"{name}.cu"
    source.write_text(text)
    host = tmp_path / name
    # The patched copy is elsewhere: its include of sandbox_confinement.h is found beside
    # the real source.
    include = f"-I{HOST_SOURCE.parent}"
    subprocess.run(["nvcc", "-O2", include, "-o", str(host), str(source), "-ldl"], check=True)
    return host


def early_done_host(tmp_path: Path) -> Path:
    return patched_host(tmp_path, "early_done_host", EARLY_DONE_PATCHES)


@pytest.mark.parametrize("kernel", ["starting", "sm90"])
def test_a_process_signalling_done_before_the_work_is_caught_or_gains_nothing(
    task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    import kernelseek_tui.evaluate.api as api

    source = task.source if kernel == "starting" else TASK_DIR / "sm90.cu"
    honest = isolated(task, source, scenarios_file=TIMED, compare=False)
    assert honest.verdict == "pass", honest.reasons
    host = early_done_host(tmp_path)
    monkeypatch.setattr(api, "host_executable", lambda: host)
    result = isolated(task, source, scenarios_file=TIMED, compare=False)
    reasons = " ".join(result.reasons)
    ms = [(h.ms, s.ms) for h, s in zip(honest.scenarios, result.scenarios, strict=True)]
    print(
        f"early DONE, {kernel} kernel, {result.handover}, MPS {result.mps}: "
        f"{result.verdict}: {reasons}; ms honest / early: {ms}"
    )
    if result.verdict == "pass":
        # Without MPS the two contexts take turns on the GPU, and the judge's stream only runs
        # again once the kernel's turn is over: an early DONE then buys nothing. It must not.
        assert all(s and h and s > 0.9 * h for h, s in ms), ms
        return
    assert any(w in reasons for w in ("measured call", "above the device's peak")), reasons


# A candidate's process with a thread of its own that keeps the GPU busy whenever the candidate
# has not been called for 20 ms: while the judge checks the candidate's outputs and, above all,
# while it times the starting kernel, whose cached times are the denominator of every later
# candidate's speedup. A candidate gets such a thread by walking its own process's memory to
# the C library (the static rules refuse `pthread_create`); here the host is built with it,
# starting it when it loads the candidate's library. The defence: every other kernel's process
# is settled and stopped while the starting kernel is timed (Evaluation.others_stopped).
# Inserted where the host's own functions are (inside its unnamed namespace).
HEATER = r"""
__global__ void ks_test_heat(long long cycles) {
    long long began = clock64();
    while (clock64() - began < cycles) {}
}
std::atomic<long long> g_test_last_call{0};
long long test_now_ns() {
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}
void test_heat() {
    cudaStream_t stream;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    for (;;) {
        if (test_now_ns() - g_test_last_call.load() > 20000000LL) {
            ks_test_heat<<<sms * 2, 256, 0, stream>>>(1000000);
            cudaStreamSynchronize(stream);
        } else {
            usleep(200);
        }
    }
}
"""

HEATER_PATCHES = (
    ("#include <map>\n", "#include <atomic>\n#include <map>\n#include <thread>\n"),
    (
        "bool g_probing = false;\n",
        HEATER + "bool g_probing = false;\n",
    ),
    (
        "    g_probing = probe;\n",
        "    g_probing = probe;\n"
        "    if (library_path == CANDIDATE_LIBRARY) {\n"
        "        g_test_last_call = test_now_ns();\n"
        "        std::thread(test_heat).detach();\n"
        "    }\n",
    ),
    (
        "std::string command_count(const std::vector<std::string> &w) {\n",
        "std::string command_count(const std::vector<std::string> &w) {\n"
        "    g_test_last_call = test_now_ns();\n",
    ),
    (
        "std::string command_call(const std::vector<std::string> &w) {\n",
        "std::string command_call(const std::vector<std::string> &w) {\n"
        "    g_test_last_call = test_now_ns();\n",
    ),
)


def heater_host(tmp_path: Path, candidate_library: Path) -> Path:
    named = f'"{candidate_library}"'
    patches = tuple((old, new.replace("CANDIDATE_LIBRARY", named)) for old, new in HEATER_PATCHES)
    return patched_host(tmp_path, "heater_host", patches)


def test_a_candidate_heating_the_gpu_while_the_starting_kernel_is_timed_leaves_its_time_alone(
    task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kernelseek_tui.evaluate.api as api
    from kernelseek_tui.evaluate.build import build

    source = TASK_DIR / "sm90.cu"
    honest = isolated(
        task, source, scenarios_file=TIMED, compare=False, baseline_cache=tmp_path / "honest"
    )
    assert honest.verdict == "pass", honest.reasons
    built = build(source.read_text(), rule=task.dependency_rule, extra_flags=task.nvcc_flags)
    assert built.ok and built.library is not None
    host = heater_host(tmp_path, Path(built.library).resolve())
    monkeypatch.setattr(api, "host_executable", lambda: host)
    heated = isolated(
        task, source, scenarios_file=TIMED, compare=False, baseline_cache=tmp_path / "heated"
    )
    starting = (honest.scenarios[0].baseline_ms, heated.scenarios[0].baseline_ms)
    print(f"the starting kernel's ms, honest / beside the heater: {starting}; {heated.reasons}")
    # The heater keeps out of the candidate's own calls, so the candidate passes and the
    # starting kernel is timed; stopped meanwhile, the heater leaves its time as it was.
    assert heated.verdict == "pass", heated.reasons
    assert starting[0] and starting[1] and starting[1] < 1.1 * starting[0], starting


# The spin the patched hosts below run on a side stream: each thread until ``ns`` have passed.
SPIN_KERNEL = r"""__global__ void ks_test_spin_ns(long long ns) {
    long long began, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(began));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - began < ns);
}
"""
COUNT_COMMAND = "std::string command_count(const std::vector<std::string> &w) {\n"
DONE_WRITE = (
    "    // DONE is written whatever ks_launch did: the judge's stream waits on it.\n"
    "    result = g_write_value(g_stream, g_done_counter, value, 0);\n"
)

# A kernel's process that writes DONE while its call is still running, as a candidate's kernel
# writing the counter itself, or code that patched its process, could: a second stream waits
# for GO like the call, spins 50 us (the call is running by then) and writes DONE, while the call
# runs on. Without the judge's GPU fence the judge's end event closes 50 us into the call (the
# judged call's copy or the device's peak then catch it); with it (KERNELSEEK_HANDOVER=fenced,
# evaluate/gpu_fence.py) the sample holds the call until every SM is free, so the early DONE
# buys nothing. First run on an H100, 2026-12-06 11:32 UTC: fenced it passed at 3.414 ms against
# 3.494 honest (the fence's hand-over 70 us against 10); unfenced it was caught by the device
# staying busy after the stream's last work (the call still running past its DONE).
FENCE_PROBE_PATCHES = (
    (
        COUNT_COMMAND,
        SPIN_KERNEL
        + r"""int test_done_while_running(unsigned int value) {
    static cudaStream_t side = nullptr;
    if (side == nullptr) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    int result = g_wait_value(side, g_go_counter, value, 0);
    if (result != 0) return result;
    ks_test_spin_ns<<<1, 1, 0, side>>>(50000);
    return g_write_value(side, g_done_counter, value, 0);
}
"""
        + COUNT_COMMAND,
    ),
    (DONE_WRITE, "    result = test_done_while_running(value);\n"),
)


def test_with_the_fence_a_done_written_while_the_call_runs_gains_nothing(
    task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kernelseek_tui.evaluate.api as api
    from kernelseek_tui.evaluate.stream_counters import HANDOVER_VARIABLE

    monkeypatch.setenv(HANDOVER_VARIABLE, "fenced")
    honest = isolated(task, task.source, scenarios_file=TIMED, compare=False)
    assert honest.verdict == "pass", honest.reasons
    assert honest.handover == "fenced"
    host = patched_host(tmp_path, "done_while_running_host", FENCE_PROBE_PATCHES)
    monkeypatch.setattr(api, "host_executable", lambda: host)
    fenced = isolated(task, task.source, scenarios_file=TIMED, compare=False)
    monkeypatch.setenv(HANDOVER_VARIABLE, "counters")
    unfenced = isolated(task, task.source, scenarios_file=TIMED, compare=False)
    ms = [
        (h.ms, f.ms, u.ms)
        for h, f, u in zip(honest.scenarios, fenced.scenarios, unfenced.scenarios, strict=True)
    ]
    print(
        f"DONE while running, the starting kernel: fenced {fenced.verdict} {fenced.reasons}, "
        f"unfenced {unfenced.verdict} {unfenced.reasons}; ms honest / fenced / unfenced: {ms}; "
        f"hand-overs (us) honest {honest.handovers_us}, fenced {fenced.handovers_us}"
    )
    # With the fence: the call's work is in its samples, within 5% of the honest figure.
    assert fenced.verdict == "pass", fenced.reasons
    assert all(h and f and abs(f / h - 1) < 0.05 for h, f, _ in ms), ms
    # Without it the same process is caught (or, without MPS, gains nothing: the contexts take
    # turns), which is what shows the cheat is real.
    reasons = " ".join(unfenced.reasons)
    assert unfenced.verdict != "pass" or all(u and h and u > 0.9 * h for h, _, u in ms), ms
    if unfenced.verdict != "pass":
        caught_by = ("measured call", "above the device's peak", "work outside the given stream")
        assert any(w in reasons for w in caught_by), reasons


# A candidate's process that, after each of its calls, fills the GPU for about a millisecond on
# a stream of its own: the work starts once the call is done and runs through the next
# callable's turn in the interleaved run (a peer's, or the best so far's), slowing it, and ends
# before the candidate's own next turn, so no tail of the candidate's sees it. Before the judge's
# trailing launch, the counters caught it by the judged call's cross-check (wall time per call
# against the stream's: H100, 2026-12-06, 4 runs of 4), and fenced it passed 2.6-5.2% fast.
# With the trailing launch (16:23 the same day) the reverse: with the counters alone it passed
# at 1.034 (its own calls slowed to 0.191 ms, FA3's as much), fenced it lost (0.183): the two
# tests below. Fenced has been the default since (evaluate/stream_counters.py says when).
AFTER_CALL = r"""void test_after_call(long long ns) {
    static cudaStream_t side = nullptr;
    static cudaEvent_t done = nullptr;
    static int sms = 0;
    if (side == nullptr) {
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
        cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    }
    cudaEventRecord(done, g_stream);
    cudaStreamWaitEvent(side, done, 0);
    ks_test_spin_ns<<<GRID, THREADS, 0, side>>>(ns);
}
"""


def after_each_call_patches(
    grid: str, threads: int, ns: int | None, probe_ns: int | None = None
) -> tuple[tuple[str, str], ...]:
    """The host with ``grid`` blocks (``sms``: the GPU's SM count) of ``threads`` spinning ``ns``
    nanoseconds on a side stream after each of its kernel's calls, its DONE written, and
    ``probe_ns`` after each of the judge's probe's calls (benchmarks/keep_alive_sweep.py); None
    for either: not started there (both None: the same build, that code never started)."""
    code = AFTER_CALL.replace("GRID", grid).replace("THREADS", str(threads))
    patches = ((COUNT_COMMAND, SPIN_KERNEL + code + COUNT_COMMAND),)
    after_done = ""
    if ns is not None:
        after_done += f"    if (launch != g_probe_launch) test_after_call({ns}LL);\n"
    if probe_ns is not None:
        after_done += f"    if (launch == g_probe_launch) test_after_call({probe_ns}LL);\n"
    return (*patches, (DONE_WRITE, DONE_WRITE + after_done)) if after_done else patches


HEAT_AFTER_CALL_PATCHES = after_each_call_patches("sms * 2", 256, 1_000_000)


def judged_in_host(task, host: Path, monkeypatch: pytest.MonkeyPatch, handover: str | None = None):
    """sm90.cu judged isolated on the one timed scenario, its process run by ``host`` (a patched
    build), with ``handover`` (None: whatever ``KERNELSEEK_HANDOVER`` already names)."""
    import kernelseek_tui.evaluate.api as api
    from kernelseek_tui.evaluate.stream_counters import HANDOVER_VARIABLE

    if handover is not None:
        monkeypatch.setenv(HANDOVER_VARIABLE, handover)
    monkeypatch.setattr(api, "host_executable", lambda: host)
    return isolated(task, TASK_DIR / "sm90.cu", scenarios_file=TIMED)


def test_fenced_a_candidate_heating_the_gpu_after_each_call_gains_nothing(
    task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fenced, the fence inside each call holds the heater's work in the candidate's own
    # sample. With the judge's trailing launch (2026-12-06 16:23, H100): x FA3 0.183 heated
    # against 1.002 idle. Before it, the heater read 2.6-5.2% fast fenced (its launch after
    # each call lowered its process's hand-over; docs/RELIABILITY.md).
    host = patched_host(tmp_path, "heat_after_call_host", HEAT_AFTER_CALL_PATCHES)
    heated = judged_in_host(task, host, monkeypatch, "fenced")
    # The same code in a host built the same way (nvcc, the heater compiled in) that never
    # starts the heater: what the fence and the build alone do to x FA3.
    control = patched_host(tmp_path, "heater_never_called_host", HEAT_AFTER_CALL_PATCHES[:1])
    idle = judged_in_host(task, control, monkeypatch, "fenced")
    print(
        f"x FA3 fenced, idle / heated: {idle.summary.vs_fa3} / {heated.summary.vs_fa3} "
        f"({heated.verdict} {heated.reasons}); hand-overs {idle.handovers_us} / "
        f"{heated.handovers_us}; ms "
        f"{[(a.ms, b.ms) for a, b in zip(idle.scenarios, heated.scenarios, strict=True)]}"
    )
    assert idle.verdict == "pass", idle.reasons
    assert heated.verdict != "pass" or (heated.summary.vs_fa3 or 0) < 1.03 * (
        idle.summary.vs_fa3 or 0
    )


@pytest.mark.xfail(
    strict=True,
    reason="the counters' hole since the judge's trailing launch, why fenced is the default "
    "(docs/RELIABILITY.md, 'A process that lowers its own hand-over'): on an H100, 2026-12-06 "
    "16:23, it passed with the counters at x FA3 1.034, its calls 0.191 ms against 0.112 idle "
    "(FA3 slowed as much); before the trailing launch the cross-check caught it 4 times of 4",
)
def test_with_the_counters_a_candidate_heating_the_gpu_after_each_call_is_caught(
    task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = patched_host(tmp_path, "heat_after_call_host", HEAT_AFTER_CALL_PATCHES)
    unfenced = judged_in_host(task, host, monkeypatch, "counters")
    print(
        f"unfenced: {unfenced.verdict} {unfenced.reasons} x FA3 {unfenced.summary.vs_fa3} "
        f"ms {[s.ms for s in unfenced.scenarios]} hand-overs {unfenced.handovers_us}"
    )
    assert unfenced.verdict == "fail", unfenced.reasons
    assert any("work outside the given stream" in r for r in unfenced.reasons), unfenced.reasons


# A lighter cousin of the heater above: after each call, one warp spins 20 us on a stream of its
# own. Too short for the tail or the cross-check to name (1 ms of slack), and it keeps the
# process's side of the GPU busy between calls. The question it asks (2026-12-06, after the
# heater read 2.6-5.2% fast fenced): does work a process does after its calls lower that
# process's real hand-over below the one measured with the judge's probe, before the kernel was
# loaded? The judge takes the probe's figure out of every call, so a lower real one reads fast.
# First run (H100, 2026-12-06 14:46, the default judge): yes, by 5-6 us a call; it passed at
# 4.6-5.5% over the same build idle. With the judge's own launch after every call, its probe's
# included (the host's trailing launch, 16:17 and 16:23 the same day): it passed twice, the
# second time at 1.008 and 1.022 busy against 0.982 and 0.994 idle: the gain is down to under
# the 3% bound, not to nothing (docs/RELIABILITY.md). With the fence the default (19:06 the same
# day) it loses: busy 0.930 and 0.920 against 0.963 and 0.990 idle.
def keep_alive_patches(ns: int | None) -> tuple[tuple[str, str], ...]:
    """The host with one warp spinning ``ns`` nanoseconds on a side stream after each of its
    kernel's calls; ``ns`` None: the same build with the spin compiled in and never started
    (benchmarks/keep_alive_sweep.py sweeps ``ns``)."""
    return after_each_call_patches("1", 32, ns)


KEEP_ALIVE_PATCHES = keep_alive_patches(20000)

# The host's own thread held ``ns`` nanoseconds on the CPU after each of its kernel's calls'
# DONE, launching nothing: what a launch after the call costs the host's thread, without the
# launch. Fenced, a zero-length launch after each call still read 1-2% fast (H100, 2026-12-06,
# 21:15); that launch also puts off the judge's trailing launch, which comes next on the same
# thread. If this reads as fast, the timing of the judge's own launches is the cause, not a
# launch of the candidate's (benchmarks/keep_alive_sweep.py, variant ``wN``; not yet run).
WAIT_AFTER_CALL = r"""void test_wait_after_call(long long ns) {
    timespec began, now;
    clock_gettime(CLOCK_MONOTONIC, &began);
    do {
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - began.tv_sec) * 1000000000LL + (now.tv_nsec - began.tv_nsec) < ns);
}
"""


def wait_after_call_patches(ns: int) -> tuple[tuple[str, str], ...]:
    """The host whose thread waits ``ns`` nanoseconds after each of its kernel's calls' DONE
    (not after the probe's), before the judge's trailing launch and the reply."""
    return (
        (COUNT_COMMAND, WAIT_AFTER_CALL + COUNT_COMMAND),
        (
            DONE_WRITE,
            DONE_WRITE + f"    if (launch != g_probe_launch) test_wait_after_call({ns}LL);\n",
        ),
    )


WAIT_AFTER_CALL_PATCHES = wait_after_call_patches(4000)


def test_a_process_kept_busy_after_each_call_reads_no_faster_than_the_same_build_idle(
    task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    idle = patched_host(tmp_path, "keep_alive_never_called", keep_alive_patches(None))
    busy = patched_host(tmp_path, "keep_alive_host", KEEP_ALIVE_PATCHES)
    runs = {}
    for name, host in (("idle", idle), ("busy", busy), ("idle again", idle), ("busy again", busy)):
        runs[name] = judged_in_host(task, host, monkeypatch)
    print(
        "x FA3, ms, hand-overs (us): "
        + "; ".join(
            f"{name} {r.verdict} {r.summary.vs_fa3} {[s.ms for s in r.scenarios]} "
            f"{r.handovers_us} {r.reasons}"
            for name, r in runs.items()
        )
    )
    for name in ("idle", "idle again"):
        assert runs[name].verdict == "pass", runs[name].reasons
    idle_fa3 = max(runs["idle"].summary.vs_fa3 or 0, runs["idle again"].summary.vs_fa3 or 0)
    for name in ("busy", "busy again"):
        assert runs[name].verdict != "pass" or (runs[name].summary.vs_fa3 or 0) < 1.03 * idle_fa3


def test_with_the_probe_in_turn_each_timed_scenario_is_net_of_a_hand_over_timed_with_it(
    task, monkeypatch: pytest.MonkeyPatch
) -> None:
    # KERNELSEEK_HANDOVER_PROBE=in-turn (evaluate/handover_cost.py, "In turn"; off by default):
    # the probe kept in the candidate's process after its load and timed beside each scenario's
    # calls. Written 2026-12-06 late, before its first GPU run: it must judge an honest kernel
    # as the default does, with a hand-over of the size the probe before the load measures.
    from kernelseek_tui.evaluate.handover_cost import PROBE_VARIABLE

    monkeypatch.setenv(PROBE_VARIABLE, "before")
    before = isolated(task, TASK_DIR / "sm90.cu", scenarios_file=TIMED)
    monkeypatch.setenv(PROBE_VARIABLE, "in-turn")
    in_turn = isolated(task, TASK_DIR / "sm90.cu", scenarios_file=TIMED)
    timed = [s for s in in_turn.scenarios if s.ms is not None]
    print(
        f"x FA3 before / in turn: {before.summary.vs_fa3} / {in_turn.summary.vs_fa3}; hand-over "
        f"before {before.handover_us} us, in turn {[s.handover_us for s in timed]} us"
    )
    assert before.verdict == in_turn.verdict == "pass", (before.reasons, in_turn.reasons)
    assert in_turn.handover_probe_time == "in-turn"
    assert timed and all(s.handover_us is not None and 0 < s.handover_us < 50 for s in timed)
    assert all(s.handover_us is None for s in before.scenarios)
