"""Task features of a coding task, read off its prompt text (``harness_gym.envs.features``)."""

from __future__ import annotations

import re

from harness_gym.envs.features import scaled

_SIGNATURE = re.compile(r"Implement `\w+\(([^)]*)\)`")
_DOCTEST = re.compile(r"^\s*>>> ", re.MULTILINE)
_EDGE = re.compile(
    r"\b(empty|negative|zero|non-ASCII|case|whitespace|larger than|duplicates?|None|ties?)\b", re.IGNORECASE
)

TASK_FEATURES = (
    ("parameters", "parameters of the function to implement (scaled, cap 4)"),
    ("spec_examples", "doctest examples (>>> lines) the prompt shows (scaled, cap 3)"),
    ("visible_tests", "visible tests shown (scaled, cap 5; 0 until OBSERVE shows them)"),
    ("edge_cases", "edge cases the spec names (empty, negative, case, ...; scaled, cap 5)"),
)

COMPONENTS = {
    "syntax": "form",
    "signature": "form",
    "unsafe": "content",
    "test_failed": "tests",
    "tests_error": "tests",
}


def task_features(text: str) -> tuple[float, ...]:
    signature = _SIGNATURE.search(text)
    params = [p for p in signature.group(1).split(",") if p.strip()] if signature else []
    spec, _, shown = text.partition("Visible tests")
    prose = _DOCTEST.split(spec.split("Starter code:")[0])[0]
    return (
        scaled(len(params), 4),
        scaled(len(_DOCTEST.findall(spec)), 3),
        scaled(len(re.findall(r"^assert ", shown, re.MULTILINE)), 5),
        scaled(len(_EDGE.findall(prose)), 5),
    )
