"""Scenario files: one ``[[scenario]]`` table each, or ``[[grid]]`` tables that expand to them.

A grid is the Cartesian product of its keys in file order. A key that names several fields
joined by commas (``"seqlen_q,seqlen_k"``) takes a list of tuples, zipped rather than crossed.
``[grid.derived]`` computes further fields from those, and ``name`` is a template such as
``"s{seqlen_q}x{seqlen_k}-d{headdim}"`` that must give each scenario a unique name.
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.expr import ExprError, evaluate_expr


class ScenarioError(KernelseekError):
    """A scenario file that cannot be used, with the file and the reason."""


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    set: str
    fields: dict[str, int]

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.fields.items())


def load_scenario_file(path: Path, set_name: str, field_names: tuple[str, ...]) -> list[Scenario]:
    """Expand a scenario file; every scenario must give exactly ``field_names``, as integers."""
    if not path.is_file():
        raise ScenarioError(f"scenario file {str(path)!r} does not exist")
    try:
        raw = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(f"{path}: {error}") from None
    unknown_top = set(raw) - {"scenario", "grid", "description"}
    if unknown_top:
        raise ScenarioError(f"{path}: unknown top-level keys {sorted(unknown_top)}")
    scenarios: list[Scenario] = []
    try:
        for entry in raw.get("scenario", []):
            scenarios.append(_explicit(entry, set_name, field_names, path))
        for entry in raw.get("grid", []):
            scenarios.extend(_expand_grid(entry, set_name, field_names, path))
    except ExprError as error:
        raise ScenarioError(f"{path}: {error}") from None
    if not scenarios:
        raise ScenarioError(f"{path}: no [[scenario]] or [[grid]] tables")
    seen: set[str] = set()
    for scenario in scenarios:
        if scenario.name in seen:
            raise ScenarioError(f"{path}: scenario name {scenario.name!r} appears twice")
        seen.add(scenario.name)
    return scenarios


def _as_fields(values: dict[str, Any], field_names: tuple[str, ...], where: str) -> dict[str, int]:
    missing = [f for f in field_names if f not in values]
    extra = [k for k in values if k not in field_names]
    if missing:
        raise ScenarioError(f"{where}: missing field(s) {', '.join(missing)}")
    if extra:
        raise ScenarioError(f"{where}: unknown field(s) {', '.join(extra)}")
    fields = {}
    for name in field_names:
        value = values[name]
        if isinstance(value, bool):
            value = int(value)
        if not isinstance(value, int) and not (isinstance(value, float) and value.is_integer()):
            raise ScenarioError(f"{where}: field {name!r} must be an integer, got {value!r}")
        fields[name] = int(value)
    return fields


def _explicit(
    entry: dict[str, Any], set_name: str, field_names: tuple[str, ...], path: Path
) -> Scenario:
    if "name" not in entry:
        raise ScenarioError(f"{path}: a [[scenario]] table has no name")
    values = {k: v for k, v in entry.items() if k != "name"}
    fields = _as_fields(values, field_names, f"{path}: scenario {entry['name']!r}")
    return Scenario(name=str(entry["name"]), set=set_name, fields=fields)


def _expand_grid(
    entry: dict[str, Any], set_name: str, field_names: tuple[str, ...], path: Path
) -> list[Scenario]:
    template = entry.get("name")
    if not isinstance(template, str):
        raise ScenarioError(f"{path}: a [[grid]] table needs a name template")
    derived = entry.get("derived", {})
    axes: list[tuple[list[str], list[tuple[Any, ...]]]] = []
    for key, values in entry.items():
        if key in ("name", "derived"):
            continue
        names = [part.strip() for part in key.split(",")]
        if not isinstance(values, list):
            values = [values]
        rows = []
        for value in values:
            row = tuple(value) if isinstance(value, list) else (value,)
            if len(row) != len(names):
                raise ScenarioError(f"{path}: grid key {key!r} wants {len(names)} values per item")
            rows.append(row)
        axes.append((names, rows))
    scenarios = []
    for combination in itertools.product(*(rows for _, rows in axes)):
        bound: dict[str, Any] = {}
        for (names, _), row in zip(axes, combination, strict=True):
            bound.update(zip(names, row, strict=True))
        for name, expr in derived.items():
            bound[name] = evaluate_expr(expr, bound)
        try:
            name = template.format(**bound)
        except KeyError as error:
            raise ScenarioError(f"{path}: name template names unknown field {error}") from None
        fields = _as_fields(bound, field_names, f"{path}: grid scenario {name!r}")
        scenarios.append(Scenario(name=name, set=set_name, fields=fields))
    return scenarios
