"""A small, safe arithmetic language for task files: shapes, derived scenario fields, filters.

Task files are data a user may bring from anywhere, so they are never passed to ``eval``. The
grammar is Python's expression syntax restricted to numbers, names bound by the caller,
arithmetic, comparisons, ``and``/``or``/``not``, ``x if c else y`` and a few pure functions.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from kernelseek_tui.errors import KernelseekError

Number = int | float | bool

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "sqrt": math.sqrt,
    "ceil": math.ceil,
    "floor": math.floor,
    "int": int,
    "cdiv": lambda a, b: -(-a // b),
}


class ExprError(KernelseekError):
    """An expression in a task file that is malformed or names an unknown field."""


@lru_cache(maxsize=1024)
def _parse(text: str) -> ast.expr:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        raise ExprError(f"cannot parse expression {text!r}: {error.msg}") from None
    return tree.body


def evaluate_expr(text: str | Number, names: Mapping[str, Number]) -> Number:
    """The value of ``text`` with ``names`` bound; a bare number is returned as it is."""
    if isinstance(text, bool | int | float):
        return text
    return _eval(_parse(str(text)), names, str(text))


def expr_names(text: str | Number) -> set[str]:
    """The field names an expression reads (for checking a task file before any scenario)."""
    if isinstance(text, bool | int | float):
        return set()
    return {
        node.id
        for node in ast.walk(_parse(str(text)))
        if isinstance(node, ast.Name) and node.id not in _FUNCTIONS
    }


def _eval(node: ast.expr, names: Mapping[str, Number], source: str) -> Any:
    match node:
        case ast.Constant(value=value) if isinstance(value, bool | int | float):
            return value
        case ast.Name(id=name):
            if name not in names:
                known = ", ".join(sorted(names)) or "none"
                raise ExprError(f"unknown name {name!r} in {source!r} (known: {known})")
            return names[name]
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
            try:
                return _BINARY[type(op)](_eval(left, names, source), _eval(right, names, source))
            except ZeroDivisionError:
                raise ExprError(f"division by zero in {source!r}") from None
        case ast.UnaryOp(op=op, operand=operand) if type(op) in _UNARY:
            return _UNARY[type(op)](_eval(operand, names, source))
        case ast.BoolOp(op=ast.And(), values=values):
            return all(_eval(v, names, source) for v in values)
        case ast.BoolOp(op=ast.Or(), values=values):
            return any(_eval(v, names, source) for v in values)
        case ast.Compare(left=left, ops=ops, comparators=rights):
            current = _eval(left, names, source)
            for comparison, right in zip(ops, rights, strict=True):
                if type(comparison) not in _COMPARE:
                    raise ExprError(f"unsupported comparison in {source!r}")
                value = _eval(right, names, source)
                if not _COMPARE[type(comparison)](current, value):
                    return False
                current = value
            return True
        case ast.IfExp(test=test, body=body, orelse=orelse):
            chosen = body if _eval(test, names, source) else orelse
            return _eval(chosen, names, source)
        case ast.Call(func=ast.Name(id=fname), args=args, keywords=[]) if fname in _FUNCTIONS:
            return _FUNCTIONS[fname](*(_eval(a, names, source) for a in args))
    raise ExprError(f"unsupported syntax in expression {source!r}")
