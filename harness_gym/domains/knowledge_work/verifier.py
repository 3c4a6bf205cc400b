"""Knowledge-work verifier: parse a report, read the sources it cites, score it against the task.

A report answers a business question with a few required fields. Every task's payload names them in
``format``: a ``style`` (``colon``: ``LABEL: value`` lines; ``equals``: ``label = value`` lines;
``json``: one JSON object) and, in order, ``[role, label]`` pairs. The roles are

- ``figure``: the key number (an amount or a count), compared to the cent;
- ``person``: the approver / budget owner, a full name;
- ``date``: the approval date or the as-of date of the data used, ``YYYY-MM-DD``;
- ``conflict`` (hard tasks only): which source is superseded and by which;
- ``sources``: the ids of the sources that support the answer (``MEMO-123``, ``EMAIL-456``, ``TABLE-789``).

Sources are memos, emails and tables (a header, a blank line, then CSV). Everything here reads the
source *texts*: numbers and dates are extracted from them, tables are parsed and recomputed, so
"the cited sources contain the reported facts" is checked, not looked up.

What earns nothing: citing more sources than the answer rests on (``sources`` must be exactly the
supporting set; every citation beyond the task's count of supporting sources cancels one supported
claim in ``evidence_support``), a conflict note that lists sources or figures other than the conflicting
ones, a second copy of a field or a repeated JSON key (the field is read as missing), candidate lists
in a field (a figure stating several numbers, a date field with several dates, are no answer), ids
that do not exist.

Two users: ``artifact_scores`` (the rubric, which may use the task's gold values) and
``observable_check`` (what a harness may check: format, fields, grounding in the sources it has
opened and the tool outputs it has seen; never the gold values).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from harness_gym.executors.base import Finding

CRITERIA: dict[str, float] = {
    "answer_correctness": 4.0,
    "evidence_support": 1.0,
    "criterion_coverage": 2.0,
    "output_format": 1.0,
    "source_conflict": 1.0,
}
"""Rubric criteria and maxima (the superset; ``source_conflict`` only on tasks with conflicting sources).

The key figure weighs half of the total (4 of 8): a report with the wrong number is of little use
whatever else it gets right. Coverage of the required fields weighs 2; evidence support, format and
(hard tasks) conflict handling weigh 1 each. ``output_format`` needs exactly the required format (style,
labels, nothing else) with every field filled in; ``source_conflict`` gives half for the superseding
value and half for a conflict note naming the superseded source or its figure.
"""

BASE_CRITERIA: dict[str, float] = {k: v for k, v in CRITERIA.items() if k != "source_conflict"}
ROLES: tuple[str, ...] = ("figure", "person", "date", "conflict", "sources")
CLAIM_ROLES: tuple[str, ...] = ("figure", "person", "date")
SOURCE_ID = re.compile(r"\b(?:MEMO|EMAIL|TABLE)-\d{3}\b", re.IGNORECASE)
MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_NO = {name: i + 1 for i, name in enumerate(MONTHS)}
_MONTH_ALT = "|".join(MONTHS)
_DATE_PATTERNS = (
    (re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"), "ymd"),
    (re.compile(rf"\b(\d{{1,2}}) ({_MONTH_ALT}) (\d{{4}})\b", re.IGNORECASE), "dmy"),
    (re.compile(rf"\b({_MONTH_ALT}) (\d{{1,2}}),? (\d{{4}})\b", re.IGNORECASE), "mdy"),
)
_YEAR_MONTH = re.compile(r"\b\d{4}-\d{2}\b")
_NUMBER = re.compile(r"(?<![\w.-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w-])")
_NONE_WORDS = {"", "none", "n/a", "na", "no", "no conflict", "-", "null"}
MAX_CITED = 2
"""No answer rests on more than two sources (a figure and, on hard tasks, the source it supersedes)."""


# --------------------------------------------------------------------------------------------------
# Values


def cents(x: float) -> int:
    """Figures are compared to the cent."""
    return round(x * 100)


def parse_number(value: Any) -> float | None:
    """The first number in a value: ``184500``, ``"184,500"``, ``"EUR 184,500.00"``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    match = re.search(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?", value)
    return float(match.group(0).replace(",", "")) if match else None


def _iso(year: int, month: int, day: int) -> str | None:
    if 1 <= month <= 12 and 1 <= day <= 31:
        return f"{year:04d}-{month:02d}-{day:02d}"
    return None


def dates_in(text: str) -> set[str]:
    """Every date in a text, as ISO strings (``2024-07-12``, ``12 July 2024``, ``July 12, 2024``)."""
    out: set[str] = set()
    for pattern, order in _DATE_PATTERNS:
        for m in pattern.finditer(text):
            if order == "ymd":
                iso = _iso(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            elif order == "dmy":
                iso = _iso(int(m.group(3)), _MONTH_NO[m.group(2).lower()], int(m.group(1)))
            else:
                iso = _iso(int(m.group(3)), _MONTH_NO[m.group(1).lower()], int(m.group(2)))
            if iso:
                out.add(iso)
    return out


def parse_date(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    found = sorted(dates_in(value))
    return found[0] if len(found) == 1 else None


def numbers_in(text: str) -> set[int]:
    """Numbers in running text, in cents; dates, year-months, ids and labels such as Q3 are skipped."""
    for pattern, _ in _DATE_PATTERNS:
        text = pattern.sub(" ", text)
    text = _YEAR_MONTH.sub(" ", text)
    return {cents(float(m.group(1).replace(",", "") + (m.group(2) or ""))) for m in _NUMBER.finditer(text)}


def norm_name(value: Any) -> str:
    return " ".join(str(value).split()).casefold() if isinstance(value, str) else ""


def source_ids(value: Any) -> tuple[str, ...]:
    """Source ids named in a field, upper-cased, first occurrence first."""
    if isinstance(value, list):
        value = " ".join(str(v) for v in value)
    if not isinstance(value, str):
        return ()
    return tuple(dict.fromkeys(m.group(0).upper() for m in SOURCE_ID.finditer(value)))


# --------------------------------------------------------------------------------------------------
# Tables and the table tool


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[dict[str, str], ...]


def parse_table(text: str) -> Table | None:
    """A table source: free header lines, a blank line, then CSV with a header row."""
    _, sep, body = text.partition("\n\n")
    if not sep:
        return None
    lines = [line.strip() for line in body.strip().splitlines() if line.strip()]
    if len(lines) < 2:
        return None
    header = tuple(cell.strip() for cell in lines[0].split(","))
    rows = []
    for line in lines[1:]:
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) == len(header):
            rows.append(dict(zip(header, cells, strict=True)))
    return Table(header, tuple(rows))


def table_calc(table: Table, calc: Mapping[str, Any]) -> tuple[float | None, int]:
    """Apply a calculation spec to a table: ``(value, rows used)``; value None if it cannot apply.

    ``calc``: ``op`` (sum | mean | max | count | filter), ``column`` (numeric column), ``filters``
    {column: value} (case-insensitive equality), ``period`` {"column", "months": [YYYY-MM...]} and
    ``above`` (keep rows whose column exceeds it). ``filter`` only counts matching rows.
    """
    filters = calc.get("filters", {})
    period = calc.get("period")
    needed = set(filters) | ({period["column"]} if period else set())
    column = calc.get("column")
    if column:
        needed.add(column)
    if not needed <= set(table.header):
        return None, 0
    months = set(period["months"]) if period else None
    above = calc.get("above")
    values: list[float] = []
    for row in table.rows:
        if any(row[col].casefold() != str(want).casefold() for col, want in filters.items()):
            continue
        if months is not None and row[period["column"]][:7] not in months:
            continue
        if column:
            x = parse_number(row[column])
            if x is None:
                continue
            if above is not None and x <= above:
                continue
            values.append(x)
        else:
            values.append(0.0)
    op = calc["op"]
    if op in ("count", "filter"):
        return float(len(values)), len(values)
    if not values:
        return None, 0
    if op == "sum":
        return round(sum(values), 2), len(values)
    if op == "mean":
        return round(sum(values) / len(values), 2), len(values)
    if op == "max":
        return max(values), len(values)
    raise ValueError(f"unknown table operation {op!r}")


def format_figure(x: float) -> str:
    return f"{x:,.2f}" if cents(x) % 100 else f"{round(x):,}"


# --------------------------------------------------------------------------------------------------
# The sources of one task


@dataclass(frozen=True)
class SourceFacts:
    kind: str
    folded: str
    numbers: frozenset[int]
    dates: frozenset[str]
    table: Table | None
    calc_value: int | None
    """The question's calculation over this table, in cents (None: not a table or not applicable)."""


@dataclass(frozen=True)
class SourceIndex:
    """What every check and score needs from a task's sources, computed once per task."""

    sources: Mapping[str, SourceFacts]
    order: tuple[str, ...]


def _norm_text(text: str) -> str:
    return " ".join(text.split()).casefold()


def build_index(payload: Mapping[str, Any]) -> SourceIndex:
    calc = payload.get("calc")
    facts = {}
    for src in payload["sources"]:
        text = src["text"]
        table = parse_table(text) if src["kind"] == "table" else None
        numbers = numbers_in(text)
        dates = dates_in(text)
        calc_value = None
        if table is not None:
            head = text.partition("\n\n")[0]
            numbers = numbers_in(head)
            for row in table.rows:
                for cell in row.values():
                    dates |= dates_in(cell)
                    if not _YEAR_MONTH.fullmatch(cell) and not dates_in(cell):
                        x = parse_number(cell) if re.fullmatch(r"-?[\d.,]+", cell) else None
                        if x is not None:
                            numbers.add(cents(x))
            if calc is not None and calc["op"] != "filter":
                value, _ = table_calc(table, calc)
                calc_value = None if value is None else cents(value)
        facts[src["id"]] = SourceFacts(
            kind=src["kind"],
            folded=_norm_text(text),
            numbers=frozenset(numbers),
            dates=frozenset(dates),
            table=table,
            calc_value=calc_value,
        )
    return SourceIndex(sources=facts, order=tuple(src["id"] for src in payload["sources"]))


# --------------------------------------------------------------------------------------------------
# Reports


@dataclass(frozen=True)
class Report:
    """A parsed report: the raw value of every role found, and whether the format was followed."""

    values: Mapping[str, Any]
    well_formed: bool
    problem: str


def _labels(fmt: Mapping[str, Any]) -> dict[str, str]:
    return {label.casefold(): role for role, label in fmt["fields"]}


_LOOSE_LINE = re.compile(r"^([A-Za-z][A-Za-z_ ]*?)\s*([:=])\s*(.*)$")


def parse_report(fmt: Mapping[str, Any], text: str) -> Report:
    """Parse a report in the task's format; content is read leniently, the format judged strictly."""
    labels = _labels(fmt)
    if fmt["style"] == "json":
        return _parse_json(fmt, labels, text)
    sep = ":" if fmt["style"] == "colon" else "="
    exact = {label for _, label in fmt["fields"]}
    values: dict[str, Any] = {}
    repeated: set[str] = set()
    problem = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _LOOSE_LINE.match(line.lstrip("-*> ").replace("**", ""))
        role = labels.get(m.group(1).strip().casefold().replace(" ", "_")) if m else None
        if role is None:
            problem = problem or f"unexpected line {line[:40]!r}"
            continue
        assert m is not None
        if role in values or role in repeated:
            problem = problem or f"duplicate field {m.group(1).strip()}"
            repeated.add(role)
            values.pop(role, None)
            continue
        values[role] = m.group(3).strip()
        strict = re.match(rf"^(\S+?)\s*{re.escape(sep)}\s*(.*)$", line)
        if not strict or strict.group(1) not in exact or m.group(2) != sep:
            problem = problem or f"line {line[:40]!r} is not 'LABEL{sep} value' with a required label"
    if not values:
        problem = problem or "no required field found"
    return Report(values, not problem, problem)


class _Pairs(list):
    """A JSON object as its (key, value) pairs in order, repeated keys kept (``object_pairs_hook``)."""


def _parse_json(fmt: Mapping[str, Any], labels: dict[str, str], text: str) -> Report:
    stripped = text.strip()
    start, end = stripped.find("{"), stripped.rfind("}")
    if start < 0 or end < start:
        return Report({}, False, "no JSON object found")
    try:
        obj = json.loads(stripped[start : end + 1], object_pairs_hook=_Pairs)
    except (json.JSONDecodeError, RecursionError):
        return Report({}, False, "the JSON object does not parse")
    # text from a "{" that parses is an object, so obj is always _Pairs
    values: dict[str, Any] = {}
    repeated: set[str] = set()
    problem = "" if (start == 0 and end == len(stripped) - 1) else "text outside the JSON object"
    exact = {label for _, label in fmt["fields"]}
    for key, value in obj:
        role = labels.get(str(key).casefold())
        if role is None:
            problem = problem or f"unexpected key {key!r}"
            continue
        if role in values or role in repeated:
            problem = problem or f"duplicate key {key!r}"
            repeated.add(role)
            values.pop(role, None)
            continue
        values[role] = value
        if key not in exact:
            problem = problem or f"key {key!r} does not match the required spelling"
    if "sources" in values and not (
        isinstance(values["sources"], list) and all(isinstance(v, str) for v in values["sources"])
    ):
        problem = problem or "sources must be a list of ids"
    if not values:
        problem = problem or "no required field found"
    return Report(values, not problem, problem)


def _present(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, list):
        return bool(value)
    return str(value).strip().casefold() not in ("", "null")


@dataclass(frozen=True)
class Claims:
    """The typed claims of a report."""

    figure: float | None
    person: str
    date: str | None
    cited: tuple[str, ...]
    conflict: str


def _one_figure(value: Any) -> float | None:
    """The figure a field states; None when it states none or several numbers (``84,500 or 213,000``)."""
    if isinstance(value, str) and len(numbers_in(value)) > 1:
        return None
    return parse_number(value)


def claims_of(report: Report) -> Claims:
    v = report.values
    conflict = v.get("conflict")
    return Claims(
        figure=_one_figure(v.get("figure")),
        person=norm_name(v.get("person")),
        date=parse_date(v.get("date")),
        cited=source_ids(v.get("sources")),
        conflict=conflict.strip() if isinstance(conflict, str) else "",
    )


def _supports(facts: SourceFacts, role: str, claims: Claims) -> bool:
    if role == "figure":
        assert claims.figure is not None
        c = cents(claims.figure)
        return c in facts.numbers or c == facts.calc_value
    if role == "person":
        return bool(claims.person) and claims.person in facts.folded
    return claims.date in facts.dates


def _claimed(claims: Claims) -> list[str]:
    out = []
    if claims.figure is not None:
        out.append("figure")
    if claims.person:
        out.append("person")
    if claims.date:
        out.append("date")
    return out


def support_fraction(index: SourceIndex, claims: Claims, among: Iterable[str]) -> tuple[float, list[str]]:
    """Fraction of the report's claims that some source in ``among`` supports, and the unsupported."""
    pool = [index.sources[sid] for sid in among if sid in index.sources]
    claimed = _claimed(claims)
    if not claimed or not pool:
        return 0.0, claimed
    unsupported = [role for role in claimed if not any(_supports(f, role, claims) for f in pool)]
    return 1.0 - len(unsupported) / len(claimed), unsupported


def notes_conflict(claims: Claims, gold: Mapping[str, Any]) -> bool:
    """The conflict field names the superseded source or its figure (and is not 'none'), and names no
    source or figure beyond the conflicting ones (a list of every source or number names nothing)."""
    superseded = gold["superseded"]
    text = claims.conflict
    if text.casefold().strip(" .") in _NONE_WORDS:
        return False
    ids, numbers = set(source_ids(text)), numbers_in(text)
    conflicting = {*gold["sources"], superseded["source"]}
    if not ids <= conflicting or not numbers <= {cents(superseded["figure"]), cents(gold["figure"])}:
        return False
    return superseded["source"] in ids or cents(superseded["figure"]) in numbers


def criteria_for(payload: Mapping[str, Any]) -> dict[str, float]:
    """The task's criteria: ``source_conflict`` is scored only where sources conflict."""
    return dict(CRITERIA if payload["gold"].get("superseded") else BASE_CRITERIA)


@dataclass(frozen=True)
class Scores:
    rubric: dict[str, tuple[float, float]]
    claim_support: float


def artifact_scores(payload: Mapping[str, Any], text: str, index: SourceIndex | None = None) -> Scores:
    """Score a report against the task (the gold values and the task's sources)."""
    index = index or build_index(payload)
    fmt, gold = payload["format"], payload["gold"]
    report = parse_report(fmt, text)
    claims = claims_of(report)
    figure_ok = claims.figure is not None and cents(claims.figure) == cents(gold["figure"])
    cited = [sid for sid in claims.cited if sid in index.sources]
    support, _ = support_fraction(index, claims, cited)
    padding = max(0, len(cited) - len(gold["sources"]))
    claimed = len(_claimed(claims))
    credited = max(0.0, support * claimed - padding) / claimed if claimed else 0.0
    superseded = gold.get("superseded")
    roles = [role for role, _ in fmt["fields"]]
    fabricated = any(sid not in index.sources for sid in claims.cited)
    correct = {
        "figure": figure_ok,
        "person": bool(claims.person) and claims.person == norm_name(gold["person"]),
        "date": claims.date == gold["date"],
        "sources": set(gold["sources"]) == set(cited) and not fabricated,
        "conflict": bool(superseded) and notes_conflict(claims, gold),
    }
    coverage = sum(correct[role] for role in roles) / len(roles)
    complete = all(_present(report.values.get(role)) for role in roles if role != "sources")
    top = criteria_for(payload)
    rubric = {
        "answer_correctness": (top["answer_correctness"] * figure_ok, top["answer_correctness"]),
        "evidence_support": (top["evidence_support"] * credited, top["evidence_support"]),
        "criterion_coverage": (top["criterion_coverage"] * coverage, top["criterion_coverage"]),
        "output_format": (top["output_format"] * (report.well_formed and complete), top["output_format"]),
    }
    if "source_conflict" in top:
        conflict = 0.5 * figure_ok + 0.5 * correct["conflict"]
        rubric["source_conflict"] = (top["source_conflict"] * conflict, top["source_conflict"])
    return Scores(rubric=rubric, claim_support=credited)


# --------------------------------------------------------------------------------------------------
# What a harness can check


@dataclass(frozen=True)
class CheckReport:
    items: dict[str, bool]
    issues: tuple[str, ...]


def read_report(fmt: Mapping[str, Any], text: str) -> tuple[Report, Claims, tuple[str, ...]]:
    """A report parsed in the task's format, its typed claims and the labels of the required fields it
    leaves empty."""
    report = parse_report(fmt, text)
    label = dict(fmt["fields"])
    missing = tuple(label[role] for role, _ in fmt["fields"] if not _present(report.values.get(role)))
    return report, claims_of(report), missing


@lru_cache(maxsize=4096)
def tool_numbers(text: str) -> frozenset[int]:
    """``numbers_in`` a tool output (kept: a CHECK reads every tool output in the context again)."""
    return frozenset(numbers_in(text))


def observable_check(
    payload: Mapping[str, Any],
    index: SourceIndex,
    text: str,
    opened: Sequence[str],
    tool_texts: Sequence[str],
    read: tuple[Report, Claims, tuple[str, ...]] | None = None,
) -> CheckReport:
    """Checks a harness can run without the gold answer: format, required fields, grounding of the
    figure, person and date in the sources it opened (or the figure in its tool outputs), and that
    every cited source exists and was opened. ``read``: ``read_report(payload["format"], text)``, when the
    caller has it."""
    fmt = payload["format"]
    report, claims, missing = read if read is not None else read_report(fmt, text)
    issues: list[Finding] = []
    items: dict[str, bool] = {}
    items["format"] = report.well_formed
    if not report.well_formed:
        issues.append(Finding("format", f"format: {report.problem}"))
    label = dict(fmt["fields"])
    items["fields"] = not missing
    if missing:
        issues.append(Finding("missing_field", f"missing required field(s): {', '.join(missing)}"))
    opened_set = [sid for sid in dict.fromkeys(opened) if sid in index.sources]
    if claims.figure is None:
        items["figure_grounded"] = False
        issues.append(Finding("figure_missing", f"{label['figure']}: no single number given"))
    else:
        c = cents(claims.figure)
        in_tools = any(c in tool_numbers(t) for t in tool_texts)
        items["figure_grounded"] = in_tools or any(c in index.sources[s].numbers for s in opened_set)
        if not items["figure_grounded"]:
            issues.append(
                Finding(
                    "figure_ungrounded",
                    f"{label['figure']} {format_figure(claims.figure)} appears in no opened source or tool "
                    "output",
                )
            )
    ungrounded = []
    if claims.person and not any(claims.person in index.sources[s].folded for s in opened_set):
        ungrounded.append(label["person"])
    if claims.date and not any(claims.date in index.sources[s].dates for s in opened_set):
        ungrounded.append(label["date"])
    items["claims_grounded"] = bool(claims.person and claims.date) and not ungrounded
    if ungrounded:
        issues.append(
            Finding("person_or_date_ungrounded", f"not found in any opened source: {', '.join(ungrounded)}")
        )
    unknown = [sid for sid in claims.cited if sid not in index.sources]
    unopened = [sid for sid in claims.cited if sid in index.sources and sid not in opened_set]
    items["citations"] = bool(claims.cited) and not unknown and not unopened
    if not claims.cited:
        issues.append(Finding("no_citation", "no source cited"))
    if unknown:
        issues.append(Finding("unknown_citation", f"cites unknown source(s): {', '.join(unknown)}"))
    if unopened:
        issues.append(Finding("cites_unopened", f"cites source(s) never opened: {', '.join(unopened)}"))
    if claims.conflict and (
        len(source_ids(claims.conflict)) > MAX_CITED + 1 or len(numbers_in(claims.conflict)) > MAX_CITED
    ):
        issues.append(
            Finding(
                "conflict_field_padded",
                f"{label['conflict']}: name the superseded source and figure and what replaces them",
            )
        )
    if len(claims.cited) > MAX_CITED:
        items["citations"] = False
        issues.append(
            Finding(
                "too_many_citations",
                f"cites {len(claims.cited)} sources; cite only the sources the answer rests on "
                f"(at most {MAX_CITED})",
            )
        )
    return CheckReport(items=items, issues=tuple(issues))


# --------------------------------------------------------------------------------------------------
# Retrieval: BM25 over the question

_STOP = frozenset(
    (
        "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had", "has",
        "have", "how", "in", "is", "it", "its", "of", "on", "or", "our", "that", "the", "their", "this",
        "to", "was", "were", "what", "which", "who", "whom", "with",
    )
)  # fmt: skip


def tokens(text: str) -> list[str]:
    return [t for t in re.findall(r"[a-z0-9]+", text.casefold()) if t not in _STOP]


def bm25_ranking(
    question: str, docs: Sequence[tuple[str, str]], k1: float = 1.5, b: float = 0.75
) -> list[str]:
    """Ids of ``(id, text)`` docs by descending BM25 score against the question (ties: given order)."""
    bags = [tokens(text) for _, text in docs]
    n = len(bags)
    avgdl = sum(map(len, bags)) / n if n else 0.0
    df: dict[str, int] = {}
    for bag in bags:
        for term in set(bag):
            df[term] = df.get(term, 0) + 1
    query = list(dict.fromkeys(tokens(question)))
    scored = []
    for i, bag in enumerate(bags):
        tf: dict[str, int] = {}
        for term in bag:
            tf[term] = tf.get(term, 0) + 1
        score = 0.0
        for term in query:
            f = tf.get(term, 0)
            if not f:
                continue
            idf = math.log(1.0 + (n - df[term] + 0.5) / (df[term] + 0.5))
            score += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(bag) / avgdl))
        scored.append((-score, i))
    return [docs[i][0] for _, i in sorted(scored)]
