"""Scoring a multi-tool answer: the number, the unit, the required format and the episode's tool calls.

The artifact is two lines of text (the task prompt states the label, the unit, the decimals and where the
unit goes)::

    TOTAL: 1234.50 USD            (or, for unit-first formats, TOTAL: USD 1234.50)
    TOOLS: extract_table, calculator, convert

Criteria (``CRITERIA``):

- ``numeric_answer`` (3): the number, read leniently (any line holding a number next to a known unit;
  thousands separators ignored), is in the required unit and within tolerance of the reference value:
  ``max(1e-3 * |reference|, 0.51 * 10**-decimals)`` (relative 1e-3, widened to the rounding the format
  asks for).
- ``tool_use`` (1): the episode's actual tool calls: half for the fraction of the task's tool chain they
  accomplished (the right document read, table extracted, value computed or converted: a required tool
  run on anything else does not count), half for the fraction of calls that were valid, paid only once
  some step of the chain was accomplished. Without any call, 0; trivial valid calls (``1+1``, reading an
  unrelated document), 0.
- ``format`` (1): thirds for the answer line exactly in the required form (label, decimals, unit token
  and placement), a ``TOOLS:`` line naming known tools that contains the required chain in order, and
  the layout (exactly two lines: the labelled answer line, then the TOOLS line).

The number is read once: a number next to a known unit outside the ``TOOLS:`` line. An artifact that
states several different such numbers (a second answer line, a list of candidates, the value in two
units) has no answer; a unit other than the required one (or no unit) earns nothing, whatever the
number.

``claim_support`` (an HMS signal) is the fraction of the artifact's claims that the episode's successful
tool outputs back: the number (some calculator/convert output equals it within tolerance) and each tool
the ``TOOLS:`` line names (it ran successfully).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from harness_gym.domains.multi_tool.tools import (
    TOOL_NAMES,
    Seen,
    canonical_unit,
    completed,
    expression_names,
    numeric,
    read_result,
)

CRITERIA: dict[str, float] = {"numeric_answer": 3.0, "tool_use": 1.0, "format": 1.0}

REL_TOLERANCE = 1e-3
_TOKEN_RE = re.compile(r"-?\d[\d,]*(?:\.\d+)?|[A-Za-z][A-Za-z0-9]*")
_NUMBER_RE = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


@dataclass(frozen=True)
class AnswerSpec:
    """What the prompt asks for (everything but ``value`` is stated in the prompt)."""

    label: str
    decimals: int
    unit_first: bool
    unit: str
    tools: tuple[str, ...]
    value: float
    """The reference value (hidden; only the terminal scorer reads it)."""

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> AnswerSpec:
        a = payload["answer"]
        return cls(a["label"], a["decimals"], a["unit_first"], a["unit"], tuple(a["tools"]), a["value"])

    @property
    def tolerance(self) -> float:
        return tolerance(self.value, self.decimals)

    def line(self, number: float) -> str:
        """The answer line in the required format."""
        text = f"{number:.{self.decimals}f}"
        body = f"{self.unit} {text}" if self.unit_first else f"{text} {self.unit}"
        return f"{self.label}: {body}"

    def example(self) -> str:
        placeholder = "<number>"
        body = f"{self.unit} {placeholder}" if self.unit_first else f"{placeholder} {self.unit}"
        return f"{self.label}: {body}"


def tolerance(value: float, decimals: int) -> float:
    return max(REL_TOLERANCE * abs(value), 0.51 * 10.0**-decimals)


@dataclass(frozen=True)
class Parsed:
    """What the verifier reads from an artifact."""

    number: float | None
    unit: str | None
    """Canonical spelling of the unit next to the number (None if no known unit)."""
    answer_exact: bool
    tools_ok: bool
    layout_ok: bool
    tools_listed: tuple[str, ...]

    @property
    def format_score(self) -> float:
        return (self.answer_exact + self.tools_ok + self.layout_ok) / 3


def _lenient_answer(lines: Sequence[str]) -> tuple[float | None, str | None]:
    """The one (number, unit) the artifact states; (None, None) when it states none or several."""
    found: set[tuple[float, str]] = set()
    for line in lines:
        if line.upper().startswith("TOOLS"):
            continue
        tokens = _TOKEN_RE.findall(line)
        for i, token in enumerate(tokens):
            if not _NUMBER_RE.fullmatch(token):
                continue
            for j in (i + 1, i - 1):
                if 0 <= j < len(tokens):
                    unit = canonical_unit(tokens[j])
                    if unit is not None:
                        try:
                            found.add((float(token.replace(",", "")), unit))
                        except ValueError:
                            return None, None
                        break
    if len(found) != 1:
        return None, None
    number, unit = found.pop()
    return number, unit


@lru_cache(maxsize=256)
def _answer_pattern(label: str, decimals: int, unit_first: bool, unit: str) -> re.Pattern[str]:
    number = r"-?\d+" + (rf"\.\d{{{decimals}}}" if decimals else "")
    body = rf"{re.escape(unit)} {number}" if unit_first else rf"{number} {re.escape(unit)}"
    return re.compile(rf"{re.escape(label)}: {body}")


def _is_subsequence(needle: Sequence[str], hay: Sequence[str]) -> bool:
    it = iter(hay)
    return all(any(x == y for y in it) for x in needle)


def parse_artifact(spec: AnswerSpec, text: str) -> Parsed:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    number, unit = _lenient_answer(lines)
    pattern = _answer_pattern(spec.label, spec.decimals, spec.unit_first, spec.unit)
    answer_exact = any(pattern.fullmatch(line) for line in lines)
    tools_listed: tuple[str, ...] = ()
    tools_ok = False
    for line in lines:
        if line.startswith("TOOLS:"):
            tools_listed = tuple(name.strip() for name in line[len("TOOLS:") :].split(",") if name.strip())
            tools_ok = bool(tools_listed) and all(name in TOOL_NAMES for name in tools_listed)
            tools_ok = tools_ok and _is_subsequence(spec.tools, tools_listed)
            break
    layout_ok = len(lines) == 2 and lines[0].startswith(f"{spec.label}:") and lines[1].startswith("TOOLS:")
    return Parsed(number, unit, answer_exact, tools_ok, layout_ok, tools_listed)


def number_matches(spec: AnswerSpec, parsed: Parsed) -> bool:
    return (
        parsed.number is not None
        and parsed.unit == spec.unit
        and abs(parsed.number - spec.value) <= spec.tolerance
    )


def artifact_scores(payload: Mapping[str, Any], artifact: str) -> dict[str, tuple[float, float]]:
    """The artifact-only criteria (``numeric_answer``, ``format``); ``tool_use`` needs the episode."""
    spec = AnswerSpec.from_payload(payload)
    parsed = parse_artifact(spec, artifact)
    top_n, top_f = CRITERIA["numeric_answer"], CRITERIA["format"]
    return {
        "numeric_answer": (top_n if number_matches(spec, parsed) else 0.0, top_n),
        "format": (top_f * parsed.format_score, top_f),
    }


def tool_use_score(calls: Sequence[Mapping[str, Any]], done: Sequence[bool]) -> float:
    """``tool_use`` in [0, max] from the episode's ``{"name", "valid", "ok"}`` tool records and which steps
    of the task's gold chain their results accomplished (``tools.completed``)."""
    if not calls:
        return 0.0
    progress = sum(done) / len(done) if done else 1.0
    valid = sum(bool(c["valid"]) for c in calls) / len(calls)
    return CRITERIA["tool_use"] * (valid * (progress > 0) + progress) / 2


def score(
    payload: Mapping[str, Any], artifact: str, calls: Sequence[Mapping[str, Any]], results: Sequence[Seen]
) -> dict[str, tuple[float, float]]:
    """The full rubric of a submitted artifact given the episode's tool records and result texts."""
    rubric = artifact_scores(payload, artifact)
    done = completed(payload["chain"], results)
    rubric["tool_use"] = (tool_use_score(calls, done), CRITERIA["tool_use"])
    return {name: rubric[name] for name in CRITERIA}


def claim_support(spec: AnswerSpec, parsed: Parsed, results: Sequence[Seen]) -> float:
    """Fraction of the artifact's claims (its number, each tool it lists) that tool outputs back."""
    if parsed.number is None:
        return 0.0
    tol = tolerance(parsed.number, spec.decimals)
    outputs = [out for out in map(numeric, results) if out is not None]
    backed = any(
        abs(x - parsed.number) <= tol and (unit is None or unit == parsed.unit) for x, unit in outputs
    )
    ran = {seen.tool for seen in results if seen.ok}
    claims = 1 + len(parsed.tools_listed)
    supported = backed + sum(name in ran for name in parsed.tools_listed)
    return supported / claims


_CALL_LINE = re.compile(r"^call: (.*)$", re.MULTILINE)


def _call_args(text: str) -> dict[str, Any]:
    match = _CALL_LINE.search(text)
    try:
        args = json.loads(match.group(1))["args"] if match else {}
    except (ValueError, KeyError, TypeError):
        return {}
    return args if isinstance(args, dict) else {}


def unconnected(required: Sequence[str], texts: Sequence[str]) -> list[str]:
    """Required tools whose successful calls never used an earlier step's output (what a CHECK can see).

    A calculator call is connected when its expression uses a value of an extracted table (a number or a
    bound cell name); a convert call when its value is an earlier calculator output (or, with
    no calculator in the chain, an extracted value). Trivial calls (``1+1``, converting 1 unit) are not.
    """
    extracted: list[float] = []
    computed: list[float] = []
    connected: set[str] = set()
    for text in texts:
        seen = read_result(text)
        if not seen.ok:
            continue
        args = _call_args(text)
        if seen.tool == "extract_table":
            body = text.split("\n", 2)[2] if text.count("\n") >= 2 else ""
            extracted += [float(x.replace(",", "")) for x in _NUMBER_RE.findall(body)]
        elif seen.tool == "calculator":
            expression = str(args.get("expression", ""))
            numbers = [float(x.replace(",", "")) for x in _NUMBER_RE.findall(expression)]
            literal_ok = any(abs(x - y) < 1e-9 for x in numbers for y in extracted)
            if expression_names(expression) or literal_ok:
                connected.add("calculator")
            out = numeric(seen)
            if out is not None:
                computed.append(out[0])
        elif seen.tool == "convert":
            value = args.get("value")
            sources = computed if "calculator" in required else extracted
            if isinstance(value, int | float) and any(
                abs(value - y) <= 1e-6 * max(1.0, abs(y)) for y in sources
            ):
                connected.add("convert")
    return [name for name in ("calculator", "convert") if name in required and name not in connected]
