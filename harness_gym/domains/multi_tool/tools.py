"""The four tools of the multi-tool domain, run for real against a task's documents.

A tool call is the text an executor returns for a tool request: one JSON object
``{"tool": NAME, "args": {...}}``. Tools:

- ``read_document {"doc": ID}``: the document's notes and the name, columns and size of each table.
- ``extract_table {"doc": ID, "table": NAME, "columns": [COLUMN, ...] (optional)}``: the table's rows; binds
  every numeric cell to the name ``<column>_<row>`` (rows numbered from 1) for later calculator calls.
  Names stay bound for the rest of the episode; a later extraction rebinds the names it shares.
- ``calculator {"expression": TEXT}``: safe arithmetic. The expression is parsed with :mod:`ast` and
  walked node by node (never ``eval``): numbers, ``+ - * / **``, unary minus, parentheses and bound names.
- ``convert {"value": NUMBER, "from_unit": UNIT, "to_unit": UNIT}``: fixed-rate conversion between units
  of one dimension (``RATES``; unit names are case-insensitive).

Validation is strict and every refusal names the problem (unknown document, table, column, tool or unit,
malformed expression, unbound name, wrong argument set). A refused call is *invalid*; a call that passes
validation but fails while running (division by zero, overflow) is valid but not ok.

Each result is rendered as text that goes into the harness context. Its first line is machine-readable:
``<tool> -> ok: <value>`` or ``<tool> -> error: <message>``, where ``<value>`` is the document id
(read_document), ``<doc>/<table> columns=<c1,c2,...> rows=<n>`` (extract_table), a number (calculator) or
``<number> <unit>`` (convert). The second line is ``call: <canonical JSON of the call>``.
"""

from __future__ import annotations

import ast
import json
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

TOOL_NAMES: tuple[str, ...] = ("read_document", "extract_table", "calculator", "convert")

# Factor of each unit in its dimension's base unit (kg, m, L, MJ, USD). Currency rates are fixed and
# documented here; they are not market rates.
RATES: dict[str, dict[str, float]] = {
    "mass": {
        "kg": 1.0, "lb": 0.45359237, "oz": 0.028349523125, "g": 0.001, "t": 1000.0, "st": 6.35029318,
    },
    "length": {"m": 1.0, "km": 1000.0, "mi": 1609.344, "ft": 0.3048, "yd": 0.9144, "nmi": 1852.0},
    "volume": {"L": 1.0, "gal": 3.785411784, "qt": 0.946352946, "bbl": 158.987294928, "m3": 1000.0},
    "energy": {"MJ": 1.0, "kWh": 3.6, "BTU": 0.001055056, "therm": 105.5056, "GJ": 1000.0},
    "currency": {
        "USD": 1.0, "EUR": 1.08, "GBP": 1.27, "JPY": 0.0067, "CAD": 0.74, "CHF": 1.13, "SEK": 0.095,
        "AUD": 0.66, "NOK": 0.094,
    },
}  # fmt: skip
DIMENSION: dict[str, str] = {unit: dim for dim, units in RATES.items() for unit in units}
CANONICAL_UNIT: dict[str, str] = {unit.lower(): unit for unit in DIMENSION}

MAX_EXPRESSION = 400
MAX_MAGNITUDE = 1e15
MAX_EXPONENT = 8.0


class ToolError(Exception):
    """A refused call (invalid arguments): the message names the problem."""


class RunError(Exception):
    """A valid call that failed while running."""


def fmt_number(x: float) -> str:
    """How tool results print numbers: ten significant digits, no exponent for ordinary magnitudes."""
    text = f"{x:.10g}"
    if "e" in text:
        text = f"{x:.6f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


# --------------------------------------------------------------------------------------------------
# Units


def canonical_unit(unit: Any) -> str | None:
    """The canonical spelling of a supported unit, or None."""
    if not isinstance(unit, str):
        return None
    return CANONICAL_UNIT.get(unit.strip().lower())


def convert_value(value: float, from_unit: str, to_unit: str) -> float:
    """Fixed-rate conversion; raises ToolError for unsupported units or mismatched dimensions."""
    src, dst = canonical_unit(from_unit), canonical_unit(to_unit)
    for given, unit in ((from_unit, src), (to_unit, dst)):
        if unit is None:
            raise ToolError(f"unsupported unit {given!r}; supported: {', '.join(DIMENSION)}")
    assert src is not None and dst is not None
    if DIMENSION[src] != DIMENSION[dst]:
        raise ToolError(f"cannot convert {src} ({DIMENSION[src]}) to {dst} ({DIMENSION[dst]})")
    rates = RATES[DIMENSION[src]]
    return value * rates[src] / rates[dst]


# --------------------------------------------------------------------------------------------------
# Calculator

_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_OP_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


@lru_cache(maxsize=8192)
def _parse_expression(expression: str) -> ast.expr | str:
    """The expression's AST, or the reason it is malformed (cached: pools repeat expressions)."""
    if not expression.strip():
        return "empty expression"
    if len(expression) > MAX_EXPRESSION:
        return f"expression longer than {MAX_EXPRESSION} characters"
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return f"malformed expression: {getattr(exc, 'msg', None) or type(exc).__name__}"
    problem = _disallowed(tree.body)
    return problem if problem else tree.body


def _disallowed(node: ast.AST) -> str | None:
    """The first construct the calculator does not accept, described; None if all are allowed."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Constant):
            if isinstance(item.value, bool) or not isinstance(item.value, int | float):
                return f"only numbers are allowed as constants, got {item.value!r}"
        elif isinstance(item, ast.Name):
            continue
        elif isinstance(item, ast.BinOp):
            if type(item.op) not in _BINOPS:
                return f"operator {type(item.op).__name__} is not allowed (use + - * / ** and parentheses)"
            stack += (item.left, item.right)
        elif isinstance(item, ast.UnaryOp):
            if not isinstance(item.op, ast.USub | ast.UAdd):
                return f"operator {type(item.op).__name__} is not allowed"
            stack.append(item.operand)
        elif isinstance(item, ast.Call):
            return "function calls are not allowed (write the arithmetic out, e.g. a + b + c)"
        else:
            return f"{type(item).__name__} is not allowed in an expression"
    return None


def expression_names(expression: str) -> set[str]:
    """Names an expression refers to (empty for a malformed one)."""
    tree = _parse_expression(expression)
    if isinstance(tree, str):
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def evaluate(expression: str, names: Mapping[str, float] | None = None) -> float:
    """Evaluate arithmetic safely; ToolError for malformed input or unbound names, RunError at run time."""
    if not isinstance(expression, str):
        raise ToolError("expression must be a string")
    tree = _parse_expression(expression)
    if isinstance(tree, str):
        raise ToolError(tree)
    bound = names or {}
    unbound = sorted(n for n in expression_names(expression) if n not in bound)
    if unbound:
        raise ToolError(
            f"unknown name(s) {', '.join(unbound)}: names are bound by extract_table as <column>_<row>"
        )
    value = _eval(tree, bound)
    if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise RunError("result out of range")
    return value


def _eval(node: ast.expr, names: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.Name):
        return float(names[node.id])
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, names)
        return -value if isinstance(node.op, ast.USub) else value
    assert isinstance(node, ast.BinOp)
    left, right = _eval(node.left, names), _eval(node.right, names)
    if isinstance(node.op, ast.Pow) and (abs(right) > MAX_EXPONENT or abs(left) > 1e6):
        raise RunError(f"power too large ({fmt_number(left)} ** {fmt_number(right)})")
    try:
        value = _BINOPS[type(node.op)](left, right)
    except ZeroDivisionError:
        raise RunError("division by zero") from None
    except OverflowError:
        raise RunError("result out of range") from None
    if isinstance(value, complex) or not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
        raise RunError("result out of range")
    return float(value)


# --------------------------------------------------------------------------------------------------
# Documents


def find_doc(docs: Sequence[Mapping[str, Any]], doc_id: Any) -> Mapping[str, Any]:
    if not isinstance(doc_id, str):
        raise ToolError("doc must be a document id string")
    for doc in docs:
        if doc["id"] == doc_id:
            return doc
    raise ToolError(f"unknown document {doc_id!r}; documents: {', '.join(d['id'] for d in docs)}")


def find_table(doc: Mapping[str, Any], name: Any) -> Mapping[str, Any]:
    if not isinstance(name, str):
        raise ToolError("table must be a table name string")
    for table in doc["tables"]:
        if table["name"] == name:
            return table
    raise ToolError(
        f"unknown table {name!r} in {doc['id']}; tables: {', '.join(t['name'] for t in doc['tables'])}"
    )


def cell_text(column: Mapping[str, Any], value: Any) -> str:
    """A cell as the documents print it (numbers with the column's fixed decimals)."""
    if "decimals" not in column:
        return str(value)
    return f"{value:.{column['decimals']}f}"


def bindings(table: Mapping[str, Any], columns: Sequence[str]) -> dict[str, float]:
    """Names bound by extracting ``columns`` of ``table``: numeric cells as ``<column>_<row>``."""
    index = {col["name"]: i for i, col in enumerate(table["columns"])}
    out: dict[str, float] = {}
    for name in columns:
        col = table["columns"][index[name]]
        if "decimals" not in col:
            continue
        for r, row in enumerate(table["rows"], start=1):
            out[f"{name}_{r}"] = float(row[index[name]])
    return out


# --------------------------------------------------------------------------------------------------
# Calls


@dataclass(frozen=True)
class ToolResult:
    """One executed call: what the harness sees (``text``) and what HMS/the rubric read."""

    tool: str
    valid: bool
    ok: bool
    text: str
    error: str | None = None
    number: float | None = None
    unit: str | None = None


_ARGS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "read_document": (frozenset({"doc"}), frozenset()),
    "extract_table": (frozenset({"doc", "table"}), frozenset({"columns"})),
    "calculator": (frozenset({"expression"}), frozenset()),
    "convert": (frozenset({"value", "from_unit", "to_unit"}), frozenset()),
}


def canonical_call(tool: str, args: Mapping[str, Any]) -> str:
    """The one spelling of a call used in pools and results (sorted keys, compact separators)."""
    return json.dumps({"tool": tool, "args": dict(args)}, sort_keys=True, separators=(", ", ": "))


def parse_call(text: str) -> tuple[str, dict[str, Any]]:
    """Parse an executor's call text into (tool, args); ToolError names what is wrong."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").removeprefix("json").strip()
    try:
        obj = json.loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        raise ToolError(
            'could not parse the tool call: expected one JSON object {"tool": ..., "args": {...}}'
        ) from None
    if not isinstance(obj, dict) or set(obj) != {"tool", "args"}:
        raise ToolError('a tool call must be a JSON object with exactly the keys "tool" and "args"')
    tool, args = obj["tool"], obj["args"]
    if not isinstance(tool, str) or tool not in _ARGS:
        raise ToolError(f"unknown tool {tool!r}; tools: {', '.join(TOOL_NAMES)}")
    if not isinstance(args, dict):
        raise ToolError(f"{tool}: args must be a JSON object")
    required, optional = _ARGS[tool]
    missing = sorted(required - set(args))
    extra = sorted(set(args) - required - optional)
    if missing:
        raise ToolError(f"{tool}: missing argument(s) {', '.join(missing)}")
    if extra:
        raise ToolError(f"{tool}: unknown argument(s) {', '.join(extra)}")
    return tool, args


def _tool_label(text: str) -> str:
    """Best-effort tool name of an unparseable or refused call, for the record (never free text)."""
    match = re.search(r'"tool"\s*:\s*"([A-Za-z_][A-Za-z0-9_]*)"', text)
    return match.group(1) if match and match.group(1) in _ARGS else "unknown"


def run_call(
    docs: Sequence[Mapping[str, Any]], text: str, names: Mapping[str, float] | None = None
) -> ToolResult:
    """Validate and run one call text against the task's documents and the names bound so far."""
    try:
        tool, args = parse_call(text)
    except ToolError as exc:
        label = _tool_label(text)
        return ToolResult(label, False, False, f"{label} -> error: {exc}", error=str(exc))
    call = canonical_call(tool, args)
    try:
        value, number, unit, body = _RUNNERS[tool](docs, args, names or {})
    except ToolError as exc:
        return ToolResult(tool, False, False, f"{tool} -> error: {exc}\ncall: {call}", error=str(exc))
    except RunError as exc:
        return ToolResult(tool, True, False, f"{tool} -> error: {exc}\ncall: {call}", error=str(exc))
    text_out = f"{tool} -> ok: {value}\ncall: {call}" + (f"\n{body}" if body else "")
    return ToolResult(tool, True, True, text_out, number=number, unit=unit)


Run = tuple[str, float | None, str | None, str]


def _read_document(docs: Sequence[Mapping[str, Any]], args: Mapping[str, Any], names: Mapping) -> Run:
    doc = find_doc(docs, args["doc"])
    lines = [f'{doc["id"]} "{doc["title"]}"', doc["text"], "Tables:"]
    for table in doc["tables"]:
        cols = ", ".join(
            f"{c['name']} ({c['unit']})" if c.get("unit") else c["name"] for c in table["columns"]
        )
        lines.append(f"- {table['name']}: {table['caption']}; columns {cols}; {len(table['rows'])} rows")
    return doc["id"], None, None, "\n".join(lines)


def _extract_table(docs: Sequence[Mapping[str, Any]], args: Mapping[str, Any], names: Mapping) -> Run:
    doc = find_doc(docs, args["doc"])
    table = find_table(doc, args["table"])
    all_cols = [c["name"] for c in table["columns"]]
    cols = args.get("columns", all_cols)
    if not isinstance(cols, list) or not cols or not all(isinstance(c, str) for c in cols):
        raise ToolError("columns must be a non-empty list of column names")
    unknown = [c for c in cols if c not in all_cols]
    if unknown:
        raise ToolError(
            f"unknown column(s) {', '.join(map(repr, unknown))} in {table['name']}; "
            f"columns: {', '.join(all_cols)}"
        )
    if len(set(cols)) != len(cols):
        raise ToolError("columns must not repeat")
    index = [all_cols.index(c) for c in cols]
    lines = ["row | " + " | ".join(cols)]
    for r, row in enumerate(table["rows"], start=1):
        lines.append(f"{r} | " + " | ".join(cell_text(table["columns"][i], row[i]) for i in index))
    bound = [c for c in cols if "decimals" in table["columns"][all_cols.index(c)]]
    if bound:
        lines.append("bound names: " + ", ".join(f"{c}_1..{c}_{len(table['rows'])}" for c in bound))
    value = f"{doc['id']}/{table['name']} columns={','.join(cols)} rows={len(table['rows'])}"
    return value, None, None, "\n".join(lines)


def _calculator(docs: Sequence[Mapping[str, Any]], args: Mapping[str, Any], names: Mapping) -> Run:
    result = evaluate(args["expression"], names)
    return fmt_number(result), result, None, ""


def _convert(docs: Sequence[Mapping[str, Any]], args: Mapping[str, Any], names: Mapping) -> Run:
    value = args["value"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolError(f"value must be a JSON number, got {value!r}")
    result = convert_value(float(value), args["from_unit"], args["to_unit"])
    if not math.isfinite(result) or abs(result) > MAX_MAGNITUDE:
        raise RunError("result out of range")
    unit = canonical_unit(args["to_unit"])
    return f"{fmt_number(result)} {unit}", result, unit, ""


_RUNNERS: dict[str, Callable[[Sequence[Mapping[str, Any]], Mapping[str, Any], Mapping], Run]] = {
    "read_document": _read_document,
    "extract_table": _extract_table,
    "calculator": _calculator,
    "convert": _convert,
}


# --------------------------------------------------------------------------------------------------
# Reading results back from the context


@dataclass(frozen=True)
class Seen:
    """A tool result as read back from its text in the context."""

    tool: str
    ok: bool
    value: str


@lru_cache(maxsize=65536)
def read_result(text: str) -> Seen:
    """Parse the first line of a result text (see the module docstring); cached, texts repeat."""
    head = text.split("\n", 1)[0]
    tool, _, rest = head.partition(" -> ")
    if rest.startswith("ok: "):
        return Seen(tool, True, rest[4:])
    return Seen(tool, False, "")


def extracted(value: str) -> tuple[str, str, tuple[str, ...]]:
    """(doc, table, columns) from an extract_table result value."""
    where, _, rest = value.partition(" columns=")
    doc, _, table = where.partition("/")
    columns = rest.rsplit(" rows=", 1)[0]
    return doc, table, tuple(columns.split(","))


def numeric(seen: Seen) -> tuple[float, str | None] | None:
    """(number, unit) of an ok calculator/convert result, else None."""
    if not seen.ok or seen.tool not in ("calculator", "convert"):
        return None
    number, _, unit = seen.value.partition(" ")
    try:
        return float(number), (unit or None)
    except ValueError:
        return None


def names_in_context(docs: Sequence[Mapping[str, Any]], results: Sequence[Seen]) -> dict[str, float]:
    """Names bound by the ok extract_table results so far (later extractions win)."""
    out: dict[str, float] = {}
    for seen in results:
        if seen.ok and seen.tool == "extract_table":
            doc_id, table_name, columns = extracted(seen.value)
            table = find_table(find_doc(docs, doc_id), table_name)
            out.update(bindings(table, columns))
    return out


# --------------------------------------------------------------------------------------------------
# Progress along a gold chain


def step_done(step: Mapping[str, Any], tool: str, value: str) -> bool:
    """Whether an ok result (tool name + result value) accomplishes a gold step.

    ``step["match"]`` says what success looks like: the document read, the table extracted (with the
    needed columns), the calculator's value, or the converted value and its unit. Values are compared,
    not call texts, so an equivalent call (reordered terms, other whitespace) counts as well.
    """
    if tool != step["tool"]:
        return False
    match = step["match"]
    if tool == "read_document":
        return value == match["doc"]
    if tool == "extract_table":
        doc, table, columns = extracted(value)
        return doc == match["doc"] and table == match["table"] and set(match["columns"]) <= set(columns)
    number, _, unit = value.partition(" ")
    try:
        x = float(number)
    except ValueError:
        return False
    gold = match["value"]
    close = abs(x - gold) <= 1e-6 * max(1.0, abs(gold))
    return close and (tool == "calculator" or unit == match["unit"])


def completed(chain: Sequence[Mapping[str, Any]], results: Sequence[Seen]) -> list[bool]:
    """Which gold steps the results accomplish.

    An extraction stops counting once a later extraction of another table rebinds the columns it
    needs: the names in view then hold other values, as they would in a real harness's context.
    """
    done = []
    for step in chain:
        hits = [i for i, seen in enumerate(results) if seen.ok and step_done(step, seen.tool, seen.value)]
        ok = bool(hits)
        if ok and step["tool"] == "extract_table":
            needed = set(step["match"]["columns"])
            for seen in results[hits[-1] + 1 :]:
                if seen.ok and seen.tool == "extract_table" and needed & set(extracted(seen.value)[2]):
                    ok = step_done(step, seen.tool, seen.value)
        done.append(ok)
    return done
