"""Expressions that messages and fixes compose from the user's own expressions.

A suggestion such as `persistent_workers=<workers> > 0` is copied into code by users and
written into files by the fix command, so it must parse with the meaning intended: an
operand that binds more loosely than its place allows (`0 if cached else workers`,
`lambda: ...`, `a or b`, `not a`, `a < b`) is parenthesised. Every composition goes through
this module, for every rule.
"""

from __future__ import annotations

from typing import Union

import libcst as cst

from ..facts.resolve import source_of

# Binding strength of an expression, loosest first (the Python reference's precedence table).
_LOOSEST = 0  # lambda, yield, an assignment expression, an unparenthesised tuple
_CONDITIONAL = 1
_OR = 2
_AND = 3
_NOT = 4
_COMPARISON = 5
_BINARY = {
    cst.BitOr: 6,
    cst.BitXor: 7,
    cst.BitAnd: 8,
    cst.LeftShift: 9,
    cst.RightShift: 9,
    cst.Add: 10,
    cst.Subtract: 10,
    cst.Multiply: 11,
    cst.Divide: 11,
    cst.FloorDivide: 11,
    cst.Modulo: 11,
    cst.MatrixMultiply: 11,
}
_UNARY = 12  # -x, +x, ~x
_POWER = 13
_AWAIT = 14
_ATOM = 15  # names, literals, calls, attributes, subscripts, anything in parentheses

Operand = Union[cst.BaseExpression, str]


def strength(expr: cst.BaseExpression) -> int:
    """How tightly ``expr`` binds as written (its own parentheses make it an atom)."""
    if getattr(expr, "lpar", None):
        return _ATOM
    if isinstance(expr, (cst.Lambda, cst.Yield, cst.NamedExpr, cst.Tuple)):
        return _LOOSEST
    if isinstance(expr, cst.IfExp):
        return _CONDITIONAL
    if isinstance(expr, cst.BooleanOperation):
        return _OR if isinstance(expr.operator, cst.Or) else _AND
    if isinstance(expr, cst.UnaryOperation):
        return _NOT if isinstance(expr.operator, cst.Not) else _UNARY
    if isinstance(expr, cst.Comparison):
        return _COMPARISON
    if isinstance(expr, cst.BinaryOperation):
        return _POWER if isinstance(expr.operator, cst.Power) else _BINARY[type(expr.operator)]
    if isinstance(expr, cst.Await):
        return _AWAIT
    return _ATOM


def _operand(operand: Operand, tighter_than: int) -> str:
    """The operand's text, in parentheses unless it binds more tightly than ``tighter_than``."""
    if isinstance(operand, str):
        try:
            operand = cst.parse_expression(operand)
        except Exception:  # text kept from another module that does not parse alone
            return f"({operand})"
    text = source_of(operand)
    return text if strength(operand) > tighter_than else f"({text})"


def positive(workers: Operand) -> str:
    """`<workers> > 0`."""
    return f"{_operand(workers, _COMPARISON)} > 0"


def when_workers(value: Operand, workers: Operand) -> str:
    """`<value> if <workers> > 0 else None`."""
    return f"{_operand(value, _CONDITIONAL)} if {positive(workers)} else None"


def method_of(receiver: cst.BaseExpression, call: str) -> str:
    """`<receiver>.<call>`, e.g. `mp.get_context('spawn')` (`(0).x`: `0.x` would read as a number)."""
    integer = isinstance(receiver, cst.Integer) and not receiver.lpar
    return f"({source_of(receiver)}).{call}" if integer else f"{_operand(receiver, _AWAIT)}.{call}"
