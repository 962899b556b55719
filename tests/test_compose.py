"""Composed suggestions parse, with the meaning intended, whatever the user's operands are."""

import ast

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flake8_dataloader.rules.compose import method_of, positive, when_workers

NAMES = st.sampled_from(["workers", "cache", "args.workers", "cfg['n']", "f(x)", "0", "2", "None", "True"])


def _extend(inner):
    expr = inner
    return st.one_of(
        st.builds(lambda t, b, o: ast.IfExp(test=t, body=b, orelse=o), expr, expr, expr),
        st.builds(lambda b: ast.Lambda(args=ast.arguments([], [], None, [], [], None, []), body=b), expr),
        st.builds(
            lambda op, a, b: ast.BoolOp(op=op, values=[a, b]), st.sampled_from([ast.Or(), ast.And()]), expr, expr
        ),
        st.builds(lambda a: ast.UnaryOp(op=ast.Not(), operand=a), expr),
        st.builds(lambda a: ast.UnaryOp(op=ast.USub(), operand=a), expr),
        st.builds(
            lambda op, a, b: ast.Compare(left=a, ops=[op], comparators=[b]),
            st.sampled_from([ast.Lt(), ast.Gt(), ast.Eq(), ast.In(), ast.IsNot()]),
            expr,
            expr,
        ),
        st.builds(
            lambda op, a, b: ast.BinOp(left=a, op=op, right=b),
            st.sampled_from([ast.Add(), ast.Mult(), ast.BitOr(), ast.Pow(), ast.LShift(), ast.FloorDiv()]),
            expr,
            expr,
        ),
        st.builds(lambda a: ast.NamedExpr(target=ast.Name("n", ast.Store()), value=a), expr),
        st.builds(lambda a: ast.Call(func=ast.Name("int", ast.Load()), args=[a], keywords=[]), expr),
    )


OPERANDS = st.recursive(NAMES.map(lambda text: ast.parse(text, mode="eval").body), _extend, max_leaves=6)


def written(tree: ast.expr, parenthesised: bool) -> str:
    """The operand as a user writes it: minimal parentheses, or the whole in parentheses."""
    text = ast.unparse(ast.fix_missing_locations(tree))
    return f"({text})" if parenthesised else text


def dump(tree: ast.AST) -> str:
    return ast.dump(tree, include_attributes=False)


def parsed(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


@settings(max_examples=300, deadline=None)
@given(OPERANDS, OPERANDS, st.booleans(), st.booleans())
def test_composed_text_parses_to_the_intended_tree(workers, value, paren_workers, paren_value):
    workers_text, value_text = written(workers, paren_workers), written(value, paren_value)
    workers_tree, value_tree = parsed(workers_text), parsed(value_text)
    greater = ast.Compare(left=workers_tree, ops=[ast.Gt()], comparators=[ast.Constant(0)])
    for operand in (cst.parse_expression(workers_text), workers_text):  # a node here, text from a summary
        assert dump(parsed(positive(operand))) == dump(greater)
    guarded = ast.IfExp(test=greater, body=value_tree, orelse=ast.Constant(None))
    assert dump(parsed(when_workers(cst.parse_expression(value_text), cst.parse_expression(workers_text)))) == dump(
        guarded
    )
    attribute = ast.Attribute(value=workers_tree, attr="get_context", ctx=ast.Load())
    method = ast.Call(func=attribute, args=[ast.Constant("spawn")], keywords=[])
    assert dump(parsed(method_of(cst.parse_expression(workers_text), "get_context('spawn')"))) == dump(method)


@pytest.mark.parametrize(
    "workers, expected",
    [
        ("args.workers", "args.workers > 0"),
        ("0 if dataset.cached_data_mode else workers", "(0 if dataset.cached_data_mode else workers) > 0"),
        ("lambda: 4", "(lambda: 4) > 0"),
        ("a or b", "(a or b) > 0"),
        ("not a", "(not a) > 0"),
        ("a < b", "(a < b) > 0"),
        ("(a if c else b)", "(a if c else b) > 0"),
        ("a + b", "a + b > 0"),
    ],
)
def test_only_operands_that_need_them_get_parentheses(workers, expected):
    assert positive(cst.parse_expression(workers)) == expected


def test_the_rule_book_example():
    composed = when_workers(cst.parse_expression("a if c else 2"), cst.parse_expression("0 if cached else workers"))
    assert composed == "(a if c else 2) if (0 if cached else workers) > 0 else None"
