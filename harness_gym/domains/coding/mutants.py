"""Flawed variants of a reference solution: the artifacts a simulated LLM can produce.

Single-point AST mutations model plausible logic slips (a wrong comparison, an off-by-one, a forgotten
edge-case guard); ``syntax_error`` and ``unsafe_import`` model code that fails before any test runs or
that passes the tests but must be rejected by the safety scan. Every function here is deterministic:
the same source always gives the same mutants in the same order.
"""

from __future__ import annotations

import ast
import copy
import random
from collections.abc import Callable, Iterator

MUTATION_KINDS = (
    "flip_comparison",
    "off_by_one",
    "swap_arithmetic",
    "swap_boolean",
    "negate_condition",
    "missing_edge_case",
    "wrong_return",
)

_COMPARE_FLIPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}

_ARITHMETIC_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
}

_EARLY_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)

# A slot is where a node sits: (parent, field name, index in a list field or None).
Slot = tuple[ast.AST, str, int | None]


def find_function(tree: ast.Module, name: str) -> ast.FunctionDef:
    """The top-level ``def`` called ``name``; mutations stay inside it so helpers and imports survive."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise ValueError(f"no top-level function {name!r}")


def _body_slots(func: ast.FunctionDef) -> Iterator[tuple[Slot, ast.AST]]:
    """Every node of the function body (docstring and annotations excluded), in a fixed walk order."""
    queue: list[ast.AST] = [func]
    while queue:
        parent = queue.pop(0)
        for name, value in ast.iter_fields(parent):
            if parent is func and name != "body":
                continue
            if name in ("annotation", "returns", "decorator_list") or isinstance(parent, ast.arguments):
                continue
            if isinstance(value, list):
                for index, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        if parent is func and index == 0 and _is_docstring(child):
                            continue
                        yield (parent, name, index), child
                        queue.append(child)
            elif isinstance(value, ast.AST):
                yield (parent, name, None), value
                queue.append(value)


def _is_docstring(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _flip_comparison(node: ast.AST, slot: Slot) -> list[ast.AST | None]:
    if not isinstance(node, ast.Compare):
        return []
    out: list[ast.AST | None] = []
    for index, op in enumerate(node.ops):
        flipped = _COMPARE_FLIPS.get(type(op))
        if flipped is not None:
            new = copy.deepcopy(node)
            new.ops[index] = flipped()
            out.append(new)
    return out


def _plus(expr: ast.expr, delta: int) -> ast.expr:
    op: ast.operator = ast.Add() if delta > 0 else ast.Sub()
    return ast.BinOp(left=copy.deepcopy(expr), op=op, right=ast.Constant(abs(delta)))


def _is_int_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int


def _off_by_one(node: ast.AST, slot: Slot) -> list[ast.AST | None]:
    parent, field, _ = slot
    if _is_int_constant(node):
        assert isinstance(node, ast.Constant)
        return [ast.Constant(node.value + 1), ast.Constant(node.value - 1)]
    is_range_arg = (
        field == "args"
        and isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id == "range"
    )
    is_slice_bound = isinstance(parent, ast.Slice) and field in ("lower", "upper")
    if (is_range_arg or is_slice_bound) and isinstance(node, ast.expr) and not _is_int_constant(node):
        return [_plus(node, 1), _plus(node, -1)]
    return []


def _swap_arithmetic(node: ast.AST, slot: Slot) -> list[ast.AST | None]:
    if isinstance(node, ast.BinOp | ast.AugAssign):
        swapped = _ARITHMETIC_SWAPS.get(type(node.op))
        if swapped is not None:
            new = copy.deepcopy(node)
            new.op = swapped()
            return [new]
    return []


def _swap_boolean(node: ast.AST, slot: Slot) -> list[ast.AST | None]:
    if isinstance(node, ast.BoolOp):
        new = copy.deepcopy(node)
        new.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        return [new]
    return []


def _negate(expr: ast.expr) -> ast.expr:
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        return copy.deepcopy(expr.operand)
    return ast.UnaryOp(op=ast.Not(), operand=copy.deepcopy(expr))


def _negate_condition(node: ast.AST, slot: Slot) -> list[ast.AST | None]:
    parent, field, _ = slot
    is_test = (isinstance(parent, ast.If | ast.IfExp) and field == "test") or (
        isinstance(parent, ast.comprehension) and field == "ifs"
    )
    if is_test and isinstance(node, ast.expr):
        return [_negate(node)]
    return []


def _missing_edge_case(node: ast.AST, slot: Slot) -> list[ast.AST | None]:
    """An ``if`` guard that leaves early (return/raise/continue/break) and has no ``else``: drop it."""
    if isinstance(node, ast.If) and not node.orelse and isinstance(node.body[-1], _EARLY_EXITS):
        return [None]
    return []


_SCOPES = (ast.FunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _local_names(func: ast.FunctionDef) -> dict[str, int]:
    """Parameters (line 0), then names bound in the function's own scope, with their first binding line.

    Knowing the line lets ``wrong_return`` pick only names already bound where the ``return`` is: a
    plausible wrong answer rather than an UnboundLocalError.
    """
    names = {arg.arg: 0 for arg in func.args.posonlyargs + func.args.args + func.args.kwonlyargs}
    nested: set[int] = set()
    for node in ast.walk(func):
        if node is not func and isinstance(node, _SCOPES):
            nested.update(id(inner) for inner in ast.walk(node) if inner is not node)
    bound = [
        node
        for node in ast.walk(func)
        if id(node) not in nested and isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    ]
    for node in sorted(bound, key=lambda n: (n.lineno, n.col_offset)):
        names.setdefault(node.id, node.lineno)
    names.pop("_", None)
    return names


def _wrong_return(func: ast.FunctionDef) -> Callable[[ast.AST, Slot], list[ast.AST | None]]:
    candidates = _local_names(func)
    top_level_returns = {
        id(node) for node in ast.walk(func) if isinstance(node, ast.Return) and _owner(func, node) is func
    }

    def mutate(node: ast.AST, slot: Slot) -> list[ast.AST | None]:
        if not isinstance(node, ast.Return) or node.value is None or id(node) not in top_level_returns:
            return []
        current = node.value.id if isinstance(node.value, ast.Name) else None
        return [
            ast.Return(value=ast.Name(id=name, ctx=ast.Load()))
            for name, line in candidates.items()
            if name != current and line < node.lineno
        ]

    return mutate


def _owner(func: ast.FunctionDef, target: ast.AST) -> ast.AST | None:
    """The innermost function that contains ``target``."""
    owner: ast.AST | None = None

    def visit(node: ast.AST, current: ast.AST) -> None:
        nonlocal owner
        for child in ast.iter_child_nodes(node):
            if child is target:
                owner = current
            visit(child, child if isinstance(child, ast.FunctionDef | ast.Lambda) else current)

    visit(func, func)
    return owner


def _operator(kind: str, func: ast.FunctionDef) -> Callable[[ast.AST, Slot], list[ast.AST | None]]:
    simple = {
        "flip_comparison": _flip_comparison,
        "off_by_one": _off_by_one,
        "swap_arithmetic": _swap_arithmetic,
        "swap_boolean": _swap_boolean,
        "negate_condition": _negate_condition,
        "missing_edge_case": _missing_edge_case,
    }
    return _wrong_return(func) if kind == "wrong_return" else simple[kind]


def _sites(func: ast.FunctionDef, kind: str) -> list[tuple[Slot, int]]:
    operator = _operator(kind, func)
    return [(slot, len(alts)) for slot, node in _body_slots(func) if (alts := operator(node, slot))]


def _replace(slot: Slot, new: ast.AST | None) -> None:
    parent, field, index = slot
    if index is None:
        assert new is not None
        setattr(parent, field, new)
        return
    items = getattr(parent, field)
    if new is None:
        del items[index]
        if not items and field == "body":
            items.append(ast.Pass())
    else:
        items[index] = new


def _mutant(source: str, function_name: str, kind: str, site: int, choice: int) -> str:
    tree = ast.parse(source)
    func = find_function(tree, function_name)
    operator = _operator(kind, func)
    slots = [(slot, node) for slot, node in _body_slots(func) if operator(node, slot)]
    slot, node = slots[site]
    _replace(slot, operator(node, slot)[choice])
    return ast.unparse(ast.fix_missing_locations(tree))


def ast_mutants(source: str, function_name: str) -> list[tuple[str, str]]:
    """All single-point mutants ``(kind, source)`` of ``function_name``, deduplicated, in a fixed order.

    Mutants that no longer compile or that unparse to the original are left out.
    """
    original = ast.unparse(ast.parse(source))
    seen = {original}
    out: list[tuple[str, str]] = []
    for kind in MUTATION_KINDS:
        func = find_function(ast.parse(source), function_name)
        for site, (_, n_choices) in enumerate(_sites(func, kind)):
            for choice in range(n_choices):
                mutated = _mutant(source, function_name, kind, site, choice)
                if mutated in seen:
                    continue
                try:
                    compile(mutated, "<mutant>", "exec")
                except SyntaxError:
                    continue
                seen.add(mutated)
                out.append((kind, mutated))
    return out


def syntax_error_variant(source: str, salt: int = 0) -> str:
    """A realistic slip that ``ast.parse`` rejects: a block header without its colon or an unclosed bracket.

    ``salt`` picks among the possible slips so a task set shows a mix of them.
    """
    lines = source.splitlines()
    headers = [
        i
        for i, line in enumerate(lines)
        if line.rstrip().endswith(":")
        and line.lstrip().startswith(("if ", "for ", "while ", "elif ", "def ", "else"))
    ]
    closers = [i for i, line in enumerate(lines) if line.rstrip().endswith((")", "]"))]
    options: list[str] = []
    for i in headers:
        broken = [*lines[:i], lines[i].rstrip()[:-1], *lines[i + 1 :]]
        options.append("\n".join(broken) + "\n")
    for i in closers:
        broken = [*lines[:i], lines[i].rstrip()[:-1], *lines[i + 1 :]]
        options.append("\n".join(broken) + "\n")
    start = random.Random(salt).randrange(len(options)) if options else 0
    for candidate in options[start:] + options[:start]:
        try:
            ast.parse(candidate)
        except SyntaxError:
            return candidate
    return source.replace("def ", "def (", 1)


_UNSAFE_SNIPPETS: tuple[tuple[str, str], ...] = (
    ("import os", "workdir = os.getcwd()"),
    ("import sys", "recursion_limit = sys.getrecursionlimit()"),
    ("import subprocess", "command_line = subprocess.list2cmdline(['python', '--version'])"),
    ("import os", "separator = os.sep"),
)


def unsafe_import_variant(source: str, function_name: str, salt: int = 0) -> str:
    """The reference plus a forbidden import used harmlessly: same results, but the safety scan rejects it."""
    import_line, statement = _UNSAFE_SNIPPETS[salt % len(_UNSAFE_SNIPPETS)]
    tree = ast.parse(source)
    func = find_function(tree, function_name)
    position = 1 if func.body and _is_docstring(func.body[0]) else 0
    func.body.insert(position, ast.parse(statement).body[0])
    tree.body.insert(0, ast.parse(import_line).body[0])
    return ast.unparse(ast.fix_missing_locations(tree))
