"""A task directory's ``task.toml``: what the kernel computes, how it is launched and judged.

Nothing here knows what the kernel computes. A task names its scenario fields, the tensors (with
shapes as expressions of those fields), the scalars in ABI order, its scenario sets, the
tolerance rule per output, the reference (a Python callable in the task directory), the
comparators, the nvcc flags, the tunable knobs and the dependency rule.
"""

from __future__ import annotations

import math
import random
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.expr import ExprError, evaluate_expr, expr_names
from kernelseek_tui.scenarios import Scenario, load_scenario_file

TASK_FILE = "task.toml"
DTYPES = {"bfloat16": 2, "float16": 2, "float32": 4, "int32": 4, "int64": 8}


class TaskError(KernelseekError):
    """A task directory or task.toml that cannot be used, with the file and the reason."""


@dataclass(frozen=True, slots=True)
class TensorSpec:
    name: str
    dtype: str
    shape: tuple[str, ...]
    role: str  # "input" or "output"

    @property
    def itemsize(self) -> int:
        return DTYPES[self.dtype]

    def dims(self, fields: dict[str, int]) -> tuple[int, ...]:
        return tuple(int(evaluate_expr(dim, fields)) for dim in self.shape)


@dataclass(frozen=True, slots=True)
class FloatSpec:
    """A float scalar: ``value`` (an expression) times a random factor drawn from ``jitter``."""

    name: str
    value: str
    jitter: tuple[float, float] = (1.0, 1.0)

    def draw(self, fields: dict[str, int], rng: random.Random) -> float:
        base = float(evaluate_expr(self.value, fields))
        low, high = self.jitter
        return base * (low if low == high else rng.uniform(low, high))


@dataclass(frozen=True, slots=True)
class ScenarioSet:
    name: str
    file: Path
    timed: bool
    # How long a timed scenario of this set times each callable, where it differs from the
    # task's [timing] (only the durations: SET_TIMING_KEYS); None: the task's.
    timing: Timing | None = None


# What a set may change of the task's timing: how long, never how (method, flush, perturbation,
# rotation and peak stay the task's, so a set cannot time more leniently than another).
SET_TIMING_KEYS = ("warmup_ms", "rep_ms", "min_reps", "max_reps")


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How one output is judged against the reference.

    ``lowp``: max|out - ref| <= multiple * max|out_lowp - ref| + atol, where ref is the fp32
    reference rounded to the output dtype, out_lowp the reference computed with its
    low-precision intermediate rounding, and atol = atol_shift_factor * max|ref + s - s - ref|
    (rounding in the output dtype) plus ``atol``.
    ``abs``: |out - ref| <= atol + rtol * |ref| elementwise, against the fp32 reference.

    ``per``: "tensor" takes the maxima of the ``lowp`` rule over the whole tensor (FA3's test);
    "row" takes them over each row along the last axis, so that rows with large values (a
    causal scenario's short rows) cannot widen the tolerance of rows with small ones, and adds
    ``row_ulps`` units in the last place of the output dtype at the row's largest |ref|: a
    rounding allowance that scales with the row, where FA3's shift (rounding at magnitude s)
    is one fixed amount that outweighs everything else on rows of small values.
    """

    output: str
    rule: str
    multiple: float = 2.0
    atol: float = 0.0
    rtol: float = 0.0
    atol_shift: float = 0.0
    atol_shift_factor: float = 2.0
    per: str = "tensor"
    row_ulps: float = 1.0


@dataclass(frozen=True, slots=True)
class Knob:
    name: str
    values: tuple[int, ...]
    default: int
    # The task sources (file names in the task directory) the knob means something to; empty:
    # all. A task loaded for one source carries only that source's knobs.
    sources: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RandomField:
    name: str
    low: int | None = None
    high: int | None = None
    choices: tuple[int, ...] = ()
    expr: str | None = None
    # Drawn uniformly in log(value) (`scale = "log"`): each factor of two of the range as likely
    # as the next, so a range of 1 to 16384 still draws short sequences often and long ones
    # (over 4096: one draw in seven) without the long ones taking over.
    log: bool = False

    def draw(self, rng: random.Random, bound: dict[str, int]) -> int:
        if self.expr is not None:
            return int(evaluate_expr(self.expr, bound))
        if self.choices:
            return rng.choice(self.choices)
        assert self.low is not None and self.high is not None
        if self.log:
            value = int(math.exp(rng.uniform(math.log(self.low), math.log(self.high + 1))))
            return min(max(value, self.low), self.high)
        return rng.randint(self.low, self.high)


@dataclass(frozen=True, slots=True)
class RandomRule:
    """The declared ranges from which held-out scenarios are drawn, fresh each evaluation."""

    fields: tuple[RandomField, ...]
    where: tuple[str, ...] = ()
    set_name: str = "random"


@dataclass(frozen=True, slots=True)
class DependencyRule:
    allowed_includes: tuple[str, ...]
    forbidden_words: tuple[str, ...]
    allowed_libraries: tuple[str, ...]
    forbidden_symbols: tuple[str, ...]
    # CUDA driver functions (cu*) the candidate's own code may call; the harness links libcuda
    # only for a candidate that calls one. Every other driver function is refused.
    driver_functions: tuple[str, ...] = ()
    # Everything the candidate's own object may call ("name*": a prefix); empty: no allow-list.
    allowed_symbols: tuple[str, ...] = ()
    # The most PTX statements the candidate's own inline assembly may hold in device code
    # (evaluate/device_asm_rules.py); None: no limit.
    max_device_asm: int | None = None


@dataclass(frozen=True, slots=True)
class Timing:
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    min_reps: int = 5
    max_reps: int = 200
    rotate_l2_multiple: float = 3.0  # rotate input sets until they span this many L2s
    max_rotations: int = 8
    # "flushed": each call timed alone between two events with the L2 cache flushed before it,
    # the way FA3's and Triton's own benchmarks time (do_bench); "batched": back-to-back calls
    # between two events (cheaper per sample, but a peer with a slow Python-side launch is
    # timed low on short calls and every kernel gains from a warm L2 and overlapping tails).
    method: str = "flushed"
    # The device's peak for the task's arithmetic: a measured rate above it means the timed
    # calls did not do the work (memoized, skipped), whatever their outputs say.
    max_tflops: float | None = None
    # The inputs whose signs the judge flips before every measured call (perturb.py); empty:
    # every floating-point input. The flip runs between the calls, outside their events, but
    # its memory traffic still sits before each call: fewer tensors keep the gap between calls
    # closer to do_bench's, where one input already changes every output.
    perturb: tuple[str, ...] = ()
    # Where ``perturb`` lists only some inputs: the share of measured samples, drawn in secret,
    # before which every floating-point input is flipped instead, so that work done once on the
    # unlisted inputs and kept across calls shows in those samples' times (evaluate/kept_work.py).
    # 0: none (that hole open).
    every_input_share: float = 0.25
    # The size of the L2 flush before each "flushed" sample, in MB; None: the judge's rule
    # (twice the L2, at least 64 MiB). do_bench clears 256 MB.
    flush_mb: float | None = None
    # Interleaved timing (candidate, best-so-far and peers in turn) takes this many samples of
    # one callable before the next one's: 1 alternates every sample. A kernel's time depends on
    # what ran just before it (H200, 2026-12-04: FA3 read 4-8% faster right after another
    # kernel than after itself, the candidate 2-5% slower right after FA3); runs of a few
    # samples leave that effect to each run's first sample, which the median passes over.
    turn_run: int = 1
    # Kernels timed in processes of their own: how far, in microseconds, the hand-over taken
    # out of a kernel's calls (measured once per process with the judge's empty kernel) can be
    # from what a real call of that process paid. Measured on an H100 (2026-12-06): up to
    # about 3 us (docs/RELIABILITY.md, "Paired timing and the hand-over"). New-best decisions
    # count it as an error of every call of a process alike (evaluate/paired.py, noise.py).
    handover_uncertainty_us: float = 3.0
    # A timed scenario whose fastest measured sample is under ``min_fastest`` of its median
    # fails: one call did far less than the others (a call that skips its work reads at the
    # hand-over's floor). Only where the median is at least ``fastest_floor_ms``: on shorter
    # calls the hand-over's jitter is a large part of every sample. None: no such rule (a
    # kernel whose work depends on its data may have honest fast calls).
    min_fastest: float | None = None
    fastest_floor_ms: float = 0.03


@dataclass(slots=True)
class Task:
    name: str
    dir: Path
    description: str
    source: Path
    scenario_fields: tuple[str, ...]
    constraints: tuple[str, ...]
    tensors: tuple[TensorSpec, ...]
    ints: tuple[str, ...]
    floats: tuple[FloatSpec, ...]
    sets: dict[str, ScenarioSet]
    objective_sets: tuple[str, ...]
    objective_random: int
    random_rule: RandomRule | None
    tolerances: dict[str, Tolerance]
    reference_module: Path
    reference_function: str
    flops_function: str | None
    comparator_module: Path | None
    comparators: tuple[str, ...]
    nvcc_flags: tuple[str, ...]
    build_timeout_s: float
    eval_timeout_s: float
    knobs: tuple[Knob, ...]
    dependency_rule: DependencyRule
    timing: Timing
    # Where the kernels run while judged: "process" (each in a process of its own,
    # evaluate/sandboxed_kernel.py; the default since 2026-12-06, when its timing and wall
    # times were measured to hold, docs/BENCHMARKS.md) or "in-process" (loaded into the judge's
    # worker, next to the checker: faster to start, but the candidate's load-time code can reach
    # the judge, docs/RELIABILITY.md "Known holes").
    isolation: str = "process"
    _scenario_cache: dict[str, list[Scenario]] = field(default_factory=dict, repr=False)

    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        return tuple(t for t in self.tensors if t.role == "input")

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        return tuple(t for t in self.tensors if t.role == "output")

    def knob(self, name: str) -> Knob:
        for knob in self.knobs:
            if knob.name == name:
                return knob
        raise TaskError(f"task {self.name!r} has no knob {name!r}")

    def default_knobs(self) -> dict[str, int]:
        return {knob.name: knob.default for knob in self.knobs}

    def timing_for(self, set_name: str | None) -> Timing:
        """How a timed scenario of ``set_name`` is timed: its set's durations where the set
        gives some, else the task's (also for a set the task does not name: random, files)."""
        spec = self.sets.get(set_name) if set_name is not None else None
        return spec.timing if spec is not None and spec.timing is not None else self.timing

    def scenarios(self, set_name: str) -> list[Scenario]:
        """The expanded scenarios of a named set (cached: the files do not change mid-run)."""
        if set_name not in self.sets:
            known = ", ".join(sorted(self.sets)) or "none"
            raise TaskError(f"task {self.name!r} has no scenario set {set_name!r} (known: {known})")
        if set_name not in self._scenario_cache:
            spec = self.sets[set_name]
            self._scenario_cache[set_name] = self.load_scenarios(spec.file, set_name)
        return self._scenario_cache[set_name]

    def load_scenarios(self, path: Path, set_name: str | None = None) -> list[Scenario]:
        """Scenarios from any file in the scenario format, checked against this task."""
        scenarios = load_scenario_file(path, set_name or path.stem, self.scenario_fields)
        for scenario in scenarios:
            self.check_scenario(scenario, where=str(path))
        return scenarios

    def check_scenario(self, scenario: Scenario, where: str) -> None:
        for rule in self.constraints:
            if not evaluate_expr(rule, scenario.fields):
                raise TaskError(f"{where}: scenario {scenario.name!r} breaks the rule {rule!r}")

    def draw_random(self, count: int, rng: random.Random) -> list[Scenario]:
        """``count`` fresh scenarios from the declared ranges, different on every call."""
        if self.random_rule is None or count <= 0:
            return []
        rule = self.random_rule
        drawn: list[Scenario] = []
        for _ in range(count * 1000):
            if len(drawn) == count:
                break
            bound: dict[str, int] = {}
            for random_field in rule.fields:
                bound[random_field.name] = random_field.draw(rng, bound)
            fields = {name: bound[name] for name in self.scenario_fields}
            if not all(evaluate_expr(w, bound) for w in rule.where):
                continue
            if not all(evaluate_expr(c, fields) for c in self.constraints):
                continue
            name = f"{rule.set_name}-{len(drawn)}-" + "-".join(str(v) for v in fields.values())
            drawn.append(Scenario(name=name, set=rule.set_name, fields=fields))
        if len(drawn) < count:
            raise TaskError(f"task {self.name!r}: the random ranges rarely meet their rules")
        return drawn

    def int_args(self, fields: dict[str, int]) -> list[int]:
        return [int(evaluate_expr(expr, fields)) for expr in self.ints]


def load_task(task_dir: str | Path, source: str | None = None) -> Task:
    """Read and check ``<task_dir>/task.toml``; raises TaskError naming the file and the problem.

    ``source`` (a file in the task directory) replaces the task's starting kernel: a session
    then starts from it, is timed against it and tunes its knobs.
    """
    directory = Path(task_dir).resolve()
    path = directory / TASK_FILE
    if not path.is_file():
        raise TaskError(f"{directory} is not a task directory: it has no {TASK_FILE}")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise TaskError(f"{path}: {error}") from None
    try:
        return _build_task(directory, path, raw, source)
    except TaskError:
        raise
    except ExprError as error:
        raise TaskError(f"{path}: {error}") from None
    except (KeyError, TypeError, ValueError) as error:
        raise TaskError(f"{path}: malformed entry ({type(error).__name__}: {error})") from None


def _require(raw: dict[str, Any], key: str, path: Path, kind: type | tuple[type, ...]) -> Any:
    if key not in raw:
        raise TaskError(f"{path}: missing required key {key!r}")
    value = raw[key]
    if not isinstance(value, kind):
        raise TaskError(f"{path}: {key!r} has the wrong type ({type(value).__name__})")
    return value


def _existing(directory: Path, relative: str, path: Path, what: str) -> Path:
    target = (directory / relative).resolve()
    if not target.is_file():
        raise TaskError(f"{path}: {what} {relative!r} does not exist")
    return target


def _start_source(directory: Path, path: Path, relative: str) -> Path:
    """The starting kernel: an existing file inside the task directory (sessions edit it)."""
    target = _existing(directory, relative, path, "source")
    if not target.is_relative_to(directory):
        raise TaskError(f"{path}: source {relative!r} is outside the task directory")
    return target


def _build_task(directory: Path, path: Path, raw: dict[str, Any], source: str | None) -> Task:
    name = _require(raw, "name", path, str)
    start = _start_source(directory, path, source or _require(raw, "source", path, str))
    fields = tuple(_require(raw, "scenario_fields", path, list))
    constraints = tuple(raw.get("constraints", []))
    for rule in constraints:
        _check_names(rule, set(fields), path, "constraint")

    _no_unknown_keys(raw, _TOP_KEYS, path, "task.toml")
    tensors = []
    for entry in _require(raw, "tensor", path, list):
        _no_unknown_keys(entry, {"name", "dtype", "shape", "role"}, path, "[[tensor]]")
        spec = TensorSpec(
            name=entry["name"],
            dtype=entry["dtype"],
            shape=tuple(str(d) for d in entry["shape"]),
            role=entry["role"],
        )
        if spec.dtype not in DTYPES:
            raise TaskError(f"{path}: tensor {spec.name!r} has unknown dtype {spec.dtype!r}")
        if spec.role not in ("input", "output"):
            raise TaskError(f"{path}: tensor {spec.name!r} role must be 'input' or 'output'")
        for dim in spec.shape:
            _check_names(dim, set(fields), path, f"shape of {spec.name!r}")
        tensors.append(spec)
    if not any(t.role == "output" for t in tensors):
        raise TaskError(f"{path}: a task needs at least one output tensor")

    ints = tuple(raw.get("ints", []))
    for expr in ints:
        _check_names(expr, set(fields), path, "int scalar")
    for entry in raw.get("float", []):
        _no_unknown_keys(entry, {"name", "value", "jitter"}, path, "[[float]]")
    floats = tuple(
        FloatSpec(
            name=entry["name"],
            value=str(entry["value"]),
            jitter=(float(entry.get("jitter", (1, 1))[0]), float(entry.get("jitter", (1, 1))[1])),
        )
        for entry in raw.get("float", [])
    )

    timing = _timing(raw.get("timing", {}), path, tuple(tensors))
    sets = {}
    for set_name, entry in _require(raw, "sets", path, dict).items():
        _no_unknown_keys(entry, {"file", "timed", "timing"}, path, f"set {set_name!r}")
        file = _existing(directory, entry["file"], path, f"scenario file of set {set_name!r}")
        set_timing = _set_timing(entry.get("timing"), timing, path, set_name)
        sets[set_name] = ScenarioSet(set_name, file, bool(entry.get("timed", False)), set_timing)
    objective = raw.get("objective", {})
    objective_sets = tuple(objective.get("sets", list(sets)))
    for set_name in objective_sets:
        if set_name not in sets:
            raise TaskError(f"{path}: objective names unknown set {set_name!r}")

    random_rule = _random_rule(raw.get("random"), fields, path)

    tolerances = {}
    for output, entry in _require(raw, "tolerance", path, dict).items():
        tolerances[output] = Tolerance(output=output, **entry)
        if tolerances[output].rule not in ("lowp", "abs"):
            raise TaskError(f"{path}: tolerance of {output!r}: rule must be 'lowp' or 'abs'")
        if tolerances[output].per not in ("tensor", "row"):
            raise TaskError(f"{path}: tolerance of {output!r}: per must be 'tensor' or 'row'")
        if tolerances[output].per == "row" and tolerances[output].rule != "lowp":
            raise TaskError(
                f"{path}: tolerance of {output!r}: per = 'row' applies to the lowp rule only "
                "(the abs rule is judged element by element already)"
            )
        if tolerances[output].row_ulps != 1.0 and tolerances[output].per != "row":
            raise TaskError(
                f"{path}: tolerance of {output!r}: row_ulps applies to per = 'row' only"
            )
        if tolerances[output].row_ulps < 0:
            raise TaskError(f"{path}: tolerance of {output!r}: row_ulps must be >= 0")
    for tensor in tensors:
        if tensor.role == "output" and tensor.name not in tolerances:
            raise TaskError(f"{path}: output {tensor.name!r} has no tolerance rule")

    reference = _require(raw, "reference", path, dict)
    comparators = raw.get("comparators", {})
    build = raw.get("build", {})
    deps = raw.get("dependencies", {})
    for table, known in _TABLE_KEYS.items():
        _no_unknown_keys(raw.get(table, {}), known, path, f"[{table}]")
    knobs = []
    for entry in raw.get("knob", []):
        _no_unknown_keys(entry, {"name", "values", "default", "sources"}, path, "[[knob]]")
        values = tuple(int(v) for v in entry["values"])
        default = int(entry.get("default", values[0]))
        if default not in values:
            raise TaskError(f"{path}: knob {entry['name']!r} default is not among its values")
        sources = tuple(str(s) for s in entry.get("sources", []))
        if not sources or start.relative_to(directory).as_posix() in sources:
            knobs.append(Knob(entry["name"], values, default, sources))

    return Task(
        name=name,
        dir=directory,
        description=raw.get("description", ""),
        source=start,
        scenario_fields=fields,
        constraints=constraints,
        tensors=tuple(tensors),
        ints=ints,
        floats=floats,
        sets=sets,
        objective_sets=objective_sets,
        objective_random=int(objective.get("random", 0)),
        random_rule=random_rule,
        tolerances=tolerances,
        reference_module=_existing(directory, reference["module"], path, "reference module"),
        reference_function=reference.get("function", "reference"),
        flops_function=reference.get("flops"),
        comparator_module=(
            _existing(directory, comparators["module"], path, "comparator module")
            if "module" in comparators
            else None
        ),
        comparators=tuple(comparators.get("names", [])),
        nvcc_flags=tuple(build.get("nvcc_flags", [])),
        build_timeout_s=float(build.get("timeout_s", 300)),
        eval_timeout_s=float(raw.get("eval_timeout_s", 600)),
        knobs=tuple(knobs),
        dependency_rule=DependencyRule(
            allowed_includes=tuple(deps.get("allowed_includes", [])),
            forbidden_words=tuple(deps.get("forbidden_words", [])),
            allowed_libraries=tuple(deps.get("allowed_libraries", [])),
            forbidden_symbols=tuple(deps.get("forbidden_symbols", [])),
            driver_functions=tuple(deps.get("driver_functions", [])),
            allowed_symbols=tuple(deps.get("allowed_symbols", [])),
            max_device_asm=_max_device_asm(deps.get("max_device_asm"), path),
        ),
        timing=timing,
        isolation=_isolation(raw.get("isolation", "process"), path),
    )


def _max_device_asm(value: Any, path: Path) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TaskError(f"{path}: [dependencies] max_device_asm must be a whole number, 0 or more")
    return value


ISOLATIONS = ("in-process", "process")


def _isolation(value: Any, path: Path) -> str:
    if value not in ISOLATIONS:
        raise TaskError(f"{path}: isolation must be one of {', '.join(ISOLATIONS)}, not {value!r}")
    return str(value)


TIMING_METHODS = ("flushed", "batched")


def _timing(raw: dict[str, Any], path: Path, tensors: tuple[TensorSpec, ...]) -> Timing:
    raw = dict(raw)
    if "perturb" in raw:
        raw["perturb"] = tuple(raw["perturb"])
    try:
        timing = Timing(**raw)
    except TypeError as error:
        raise TaskError(f"{path}: [timing]: {error}") from None
    inputs = {t.name for t in tensors if t.role == "input"}
    unknown = [name for name in timing.perturb if name not in inputs]
    if unknown:
        raise TaskError(
            f"{path}: [timing] perturb names {', '.join(map(repr, unknown))}, "
            f"not an input tensor ({', '.join(sorted(inputs))})"
        )
    if timing.flush_mb is not None and not timing.flush_mb > 0:
        raise TaskError(f"{path}: [timing] flush_mb must be a positive size in MB")
    share = timing.every_input_share
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share < 1:
        raise TaskError(
            f"{path}: [timing] every_input_share must be a share of the samples, 0 to 1"
        )
    uncertainty = timing.handover_uncertainty_us
    if isinstance(uncertainty, bool) or not isinstance(uncertainty, int | float) or uncertainty < 0:
        raise TaskError(f"{path}: [timing] handover_uncertainty_us must be 0 or more microseconds")
    if timing.min_fastest is not None and (
        isinstance(timing.min_fastest, bool)
        or not isinstance(timing.min_fastest, int | float)
        or not 0 < timing.min_fastest < 1
    ):
        raise TaskError(f"{path}: [timing] min_fastest must be a fraction of the median, 0 to 1")
    floor = timing.fastest_floor_ms
    if isinstance(floor, bool) or not isinstance(floor, int | float) or floor < 0:
        raise TaskError(f"{path}: [timing] fastest_floor_ms must be 0 or more milliseconds")
    if not isinstance(timing.turn_run, int) or timing.turn_run < 1:
        raise TaskError(f"{path}: [timing] turn_run must be a whole number of samples, 1 or more")
    if timing.method not in TIMING_METHODS:
        raise TaskError(
            f"{path}: [timing] method {timing.method!r} is not one of {', '.join(TIMING_METHODS)}"
        )
    return timing


def _set_timing(raw: Any, task_timing: Timing, path: Path, set_name: str) -> Timing | None:
    """A set's own durations over the task's timing (``timing = { rep_ms = 20, ... }``)."""
    if raw is None:
        return None
    where = f"{path}: set {set_name!r}: timing"
    if not isinstance(raw, dict):
        raise TaskError(f"{where} must be a table of durations ({', '.join(SET_TIMING_KEYS)})")
    unknown = sorted(set(raw) - set(SET_TIMING_KEYS))
    if unknown:
        raise TaskError(
            f"{where}: {', '.join(unknown)} cannot be set per set (only "
            f"{', '.join(SET_TIMING_KEYS)}: how a set is timed is the task's)"
        )
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise TaskError(f"{where}: {key} must be a positive number")
        if key.endswith("_reps") and not isinstance(value, int):
            raise TaskError(f"{where}: {key} must be a whole number")
    merged = replace(task_timing, **raw)
    if merged.min_reps > merged.max_reps:
        raise TaskError(f"{where}: min_reps {merged.min_reps} exceeds max_reps {merged.max_reps}")
    return merged


def _random_rule(
    raw: dict[str, Any] | None, fields: tuple[str, ...], path: Path
) -> RandomRule | None:
    if raw is None:
        return None
    parsed = []
    bound: set[str] = set()
    for name, spec in raw.get("fields", {}).items():
        if isinstance(spec, str):
            _check_names(spec, bound, path, f"random field {name!r}")
            parsed.append(RandomField(name, expr=spec))
        elif "choices" in spec:
            parsed.append(RandomField(name, choices=tuple(int(c) for c in spec["choices"])))
        else:
            low, high, scale = int(spec["min"]), int(spec["max"]), spec.get("scale", "linear")
            if scale not in ("linear", "log"):
                raise TaskError(
                    f"{path}: random field {name!r}: scale {scale!r} is neither 'linear' nor 'log'"
                )
            if scale == "log" and low < 1:
                raise TaskError(f"{path}: random field {name!r}: a log scale needs min >= 1")
            if low > high:
                raise TaskError(f"{path}: random field {name!r}: min {low} exceeds max {high}")
            parsed.append(RandomField(name, low=low, high=high, log=scale == "log"))
        bound.add(name)
    missing = [f for f in fields if f not in bound]
    if missing:
        raise TaskError(f"{path}: [random.fields] does not draw {', '.join(missing)}")
    where = tuple(raw.get("where", []))
    for rule in where:
        _check_names(rule, bound, path, "random rule")
    return RandomRule(fields=tuple(parsed), where=where, set_name=raw.get("set", "random"))


_TOP_KEYS = {
    "name",
    "description",
    "source",
    "eval_timeout_s",
    "isolation",
    "scenario_fields",
    "constraints",
    "tensor",
    "ints",
    "float",
    "sets",
    "objective",
    "random",
    "tolerance",
    "reference",
    "comparators",
    "build",
    "timing",
    "knob",
    "dependencies",
}

_TABLE_KEYS = {
    "objective": {"sets", "random"},
    "random": {"set", "where", "fields"},
    "reference": {"module", "function", "flops"},
    "comparators": {"module", "names"},
    "build": {"nvcc_flags", "timeout_s"},
    "dependencies": {
        "allowed_includes",
        "forbidden_words",
        "allowed_libraries",
        "forbidden_symbols",
        "driver_functions",
        "allowed_symbols",
        "max_device_asm",
    },
}


def _no_unknown_keys(raw: dict[str, Any], known: set[str], path: Path, where: str) -> None:
    # A key TOML files under the wrong table (after a [[table]] header) must not vanish quietly.
    unknown = sorted(set(raw) - known)
    if unknown:
        raise TaskError(f"{path}: unknown key(s) {unknown} in {where}")


def _check_names(expr: str, known: set[str], path: Path, what: str) -> None:
    unknown = expr_names(expr) - known
    if unknown:
        raise TaskError(f"{path}: {what} {expr!r} names unknown field(s) {sorted(unknown)}")
