"""task.toml and scenario files: what they expand to, and the errors a user sees."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.expr import ExprError, evaluate_expr
from kernelseek_tui.task import RandomField, TaskError, load_task

ROOT = Path(__file__).resolve().parents[1]
TASK_DIR = ROOT / "kernels" / "flash_fwd"


def test_correctness_set_is_exactly_the_182_scenarios() -> None:
    task = load_task(TASK_DIR)
    scenarios = task.scenarios("correctness")
    assert len(scenarios) == 182
    assert len({s.name for s in scenarios}) == 182
    pairs = {(s.fields["seqlen_q"], s.fields["seqlen_k"]) for s in scenarios}
    assert len(pairs) == 13 and (4224, 4224) in pairs and (1, 1) in pairs
    heads = {(s.fields["headdim"], s.fields["nheads"], s.fields["nheads_kv"]) for s in scenarios}
    assert heads == {
        (64, 6, 6),
        (64, 6, 2),
        (128, 6, 6),
        (128, 6, 2),
        (128, 6, 1),
        (256, 6, 6),
        (256, 6, 2),
    }
    for s in scenarios:
        assert s.fields["batch"] == (9 if s.fields["seqlen_k"] <= 2048 else 2)
    assert sum(s.fields["causal"] for s in scenarios) == 91


def test_bench_set_is_fa3s_36_shapes() -> None:
    scenarios = load_task(TASK_DIR).scenarios("bench")
    assert len(scenarios) == 36
    for s in scenarios:
        f = s.fields
        assert f["batch"] * f["seqlen_q"] == 16384
        assert f["nheads"] * f["headdim"] == 2048
        assert f["seqlen_q"] == f["seqlen_k"] and f["nheads_kv"] == f["nheads"]


def test_quick_set_and_knobs() -> None:
    task = load_task(TASK_DIR)
    assert len(task.scenarios("quick")) == 12
    assert task.sets["quick"].timed and not task.sets["correctness"].timed
    assert {k.name for k in task.knobs} == {"BLOCK_M", "BLOCK_N"}
    assert task.default_knobs() == {"BLOCK_M": 64, "BLOCK_N": 64}


def test_int_scalars_follow_abi_order() -> None:
    task = load_task(TASK_DIR)
    scenario = task.scenarios("correctness")[1]
    assert task.int_args(scenario.fields) == [9, 1, 1, 6, 6, 64, 1]
    assert [t.name for t in task.tensors] == ["q", "k", "v", "out", "lse"]
    assert task.tensors[4].dims(scenario.fields) == (9, 6, 1)


def test_random_draws_differ_and_obey_the_rules() -> None:
    task = load_task(TASK_DIR)
    first = task.draw_random(20, random.Random(1))
    second = task.draw_random(20, random.Random(2))
    assert [s.fields for s in first] != [s.fields for s in second]
    for s in first + second:
        f = s.fields
        assert f["nheads"] % f["nheads_kv"] == 0
        assert f["headdim"] in (64, 128, 256)
        assert f["batch"] * f["nheads"] * f["seqlen_q"] * f["seqlen_k"] * f["headdim"] <= 4e10
        task.check_scenario(s, where="test")


def test_random_draws_reach_what_the_fixed_sets_leave_unchecked() -> None:
    # Up to 3000 tokens and 16 heads (before 2026-12-07), nothing beyond 4224 tokens was checked
    # but the bench set's square MHA shapes.
    drawn = [s.fields for s in load_task(TASK_DIR).draw_random(400, random.Random(7))]
    assert any(f["seqlen_k"] > 4224 and f["nheads"] != f["nheads_kv"] for f in drawn)
    assert any(f["seqlen_q"] <= 4 and f["seqlen_k"] > 3000 for f in drawn)  # decoding
    assert any(f["seqlen_q"] > 4224 and f["seqlen_q"] != f["seqlen_k"] for f in drawn)
    assert any(f["nheads"] > 32 for f in drawn)
    # log-uniform: short sequences stay common
    assert sum(f["seqlen_q"] <= 64 for f in drawn) > len(drawn) // 4


def test_a_log_scale_draws_each_factor_of_two_alike() -> None:
    field = RandomField("n", low=1, high=1023, log=True)
    rng = random.Random(3)
    draws = [field.draw(rng, {}) for _ in range(20000)]
    assert min(draws) == 1 and max(draws) <= 1023
    # ten octaves, 1-1 through 512-1023: each about a tenth of the draws
    octaves = [sum(1 << k <= d < 2 << k for d in draws) for k in range(10)]
    assert all(1500 < n < 2500 for n in octaves), octaves


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ('{ min = 1, max = 9, scale = "cubic" }', "neither 'linear' nor 'log'"),
        ('{ min = 0, max = 9, scale = "log" }', "needs min >= 1"),
        ("{ min = 9, max = 1 }", "min 9 exceeds max 1"),
    ],
)
def test_a_bad_random_range_is_refused(tmp_path: Path, spec: str, message: str) -> None:
    path = _task_copy(tmp_path, edit="batch = { min = 1, max = 4 } => batch = " + spec)
    with pytest.raises(TaskError, match=message):
        load_task(path)


@pytest.mark.parametrize("value", ["1.5", "0", "true"])
def test_a_skipped_call_rule_outside_zero_to_one_is_refused(tmp_path: Path, value: str) -> None:
    path = _task_copy(tmp_path, edit=f"min_fastest = 0.5 => min_fastest = {value}")
    with pytest.raises(TaskError, match="min_fastest must be a fraction of the median"):
        load_task(path)


def _task_copy(tmp_path: Path, edit: str | None = None, append: str = "") -> Path:
    target = tmp_path / "task"
    subprocess.run(["cp", "-r", str(TASK_DIR), str(target)], check=True)
    toml = target / "task.toml"
    text = toml.read_text()
    if edit:
        old, new = edit.split(" => ")
        assert old in text
        text = text.replace(old, new)
    toml.write_text(text + append)
    return target


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ('source = "baseline.cu" => source = "missing.cu"', "source 'missing.cu' does not exist"),
        ('dtype = "float32" => dtype = "float33"', "unknown dtype"),
        (
            '"batch", "seqlen_q", "nheads", "headdim"] => "batch", "seqlenq", "nheads", "headdim"]',
            "unknown field",
        ),
        ('sets = ["correctness", "bench"] => sets = ["nope"]', "unknown set"),
        ('name = "flash_fwd" => name = 3', "wrong type"),
        ("values = [32, 64, 128]\ndefault = 64 => values = [32]\ndefault = 64", "default"),
        (
            'eval_timeout_s = 900 => eval_timeout_s = 900\nisolation = "container"',
            "isolation must be one of in-process, process",
        ),
    ],
)
def test_malformed_task_gives_one_clear_error(tmp_path: Path, edit: str, message: str) -> None:
    with pytest.raises(TaskError, match=message):
        load_task(_task_copy(tmp_path, edit))


def test_a_task_runs_its_kernels_in_processes_of_their_own_unless_it_says_otherwise(
    tmp_path: Path,
) -> None:
    assert load_task(TASK_DIR).isolation == "process"
    edit = 'eval_timeout_s = 900 => eval_timeout_s = 900\nisolation = "in-process"'
    assert load_task(_task_copy(tmp_path, edit)).isolation == "in-process"


def test_perturbed_inputs_are_named_inputs(tmp_path: Path) -> None:
    from kernelseek_tui.evaluate.worker import perturbed_inputs

    task = load_task(TASK_DIR)
    assert task.timing.perturb == ("q",)
    assert [spec.name for spec in perturbed_inputs(task)] == ["q"]
    everything = load_task(_task_copy(tmp_path, 'perturb = ["q"] => perturb = []'))
    assert [spec.name for spec in perturbed_inputs(everything)] == ["q", "k", "v"]
    (tmp_path / "bad").mkdir()
    with pytest.raises(TaskError, match=r"'out'.*not an input tensor"):
        load_task(_task_copy(tmp_path / "bad", 'perturb = ["q"] => perturb = ["out"]'))


def test_key_under_the_wrong_table_is_reported(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match="unknown key"):
        load_task(_task_copy(tmp_path, append='\nnvcc_flag = ["-O2"]\n'))


def test_not_a_task_directory(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match=r"no task\.toml"):
        load_task(tmp_path)


def test_scenario_file_errors(tmp_path: Path) -> None:
    task = load_task(TASK_DIR)
    bad = tmp_path / "bad.toml"
    bad.write_text('[[scenario]]\nname = "x"\nbatch = 1\n')
    with pytest.raises(KernelseekError, match="missing field"):
        task.load_scenarios(bad)
    bad.write_text(
        '[[scenario]]\nname = "x"\nbatch = 1\nseqlen_q = 1\nseqlen_k = 1\n'
        "nheads = 3\nnheads_kv = 2\nheaddim = 64\ncausal = 0\n"
    )
    with pytest.raises(KernelseekError, match="breaks the rule"):
        task.load_scenarios(bad)
    bad.write_text("[[scenario]\n")
    with pytest.raises(KernelseekError, match=r"bad\.toml"):
        task.load_scenarios(bad)


def test_expressions_are_safe_and_exact() -> None:
    assert evaluate_expr("9 if seqlen_k <= 2048 else 2", {"seqlen_k": 4096}) == 2
    assert evaluate_expr("cdiv(a, 64) * 64", {"a": 65}) == 128
    with pytest.raises(ExprError, match="unsupported"):
        evaluate_expr("__import__('os')", {})
    with pytest.raises(ExprError, match="unknown name"):
        evaluate_expr("x + 1", {})


def test_eval_list_needs_no_gpu_and_prints_every_scenario() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernelseek_tui",
            "eval",
            str(TASK_DIR),
            "--list",
            "--set",
            "correctness",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 182
    assert lines[0].startswith("correctness\ts1x1-d64-h6kv6-c0\tbatch=9 seqlen_q=1")


def test_eval_of_a_bad_task_dir_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kernelseek_tui", "eval", str(tmp_path), "--list"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_flush_size_is_the_judges_rule_unless_set(tmp_path: Path) -> None:
    assert load_task(TASK_DIR).timing.flush_mb is None
    sized = load_task(_task_copy(tmp_path, 'perturb = ["q"] => perturb = ["q"]\nflush_mb = 256'))
    assert sized.timing.flush_mb == 256
    (tmp_path / "bad").mkdir()
    with pytest.raises(TaskError, match="flush_mb"):
        load_task(_task_copy(tmp_path / "bad", 'perturb = ["q"] => perturb = ["q"]\nflush_mb = 0'))


def test_a_set_may_time_for_less_long_but_never_differently(tmp_path: Path) -> None:
    task = load_task(TASK_DIR)
    quick = task.timing_for("quick")
    assert (quick.warmup_ms, quick.rep_ms) == (5, 20)  # the agent's loop: shorter runs
    assert task.timing_for("bench") is task.timing  # the objective's: do_bench's durations
    assert task.timing_for("random") is task.timing and task.timing_for(None) is task.timing
    same = {"method", "perturb", "flush_mb", "max_tflops", "turn_run", "rotate_l2_multiple"}
    assert all(getattr(quick, key) == getattr(task.timing, key) for key in same)
    quick_line = "timing = { warmup_ms = 5, rep_ms = 20 }"
    refused = {
        'timing = { method = "batched" }': "method cannot be set per set",
        "timing = { rep_ms = 0 }": "rep_ms must be a positive number",
        "timing = { min_reps = 2.5 }": "min_reps must be a whole number",
        "timing = { min_reps = 50, max_reps = 10 }": "min_reps 50 exceeds max_reps 10",
        "timing = 20": "must be a table of durations",
        "timinq = { rep_ms = 20 }": "unknown key",
    }
    for n, (line, message) in enumerate(refused.items()):
        (tmp_path / str(n)).mkdir()
        with pytest.raises(TaskError, match=message):
            load_task(_task_copy(tmp_path / str(n), f"{quick_line} => {line}"))
