"""Screening mutants of a reference in the sandbox, and choosing a task's pool from the screened ones.

Shared by the coding generator and the HumanEval builder (which builds its records at run time, so this
lives outside ``generate.py``). Artifacts are formatted by :func:`normalize` first, so style gives
nothing away.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness_gym.domains.coding.verifier import evaluate_calls, judge
from harness_gym.sandbox import SandboxLimits

MAX_MUTANTS = 6


def normalize(source: str) -> str:
    """Canonical formatting shared by the reference and every pool artifact, so style gives nothing away."""
    return ast.unparse(ast.parse(source)) + "\n"


@dataclass(frozen=True)
class Screened:
    """A mutant with its sandbox results on the visible and the hidden tests."""

    kind: str
    source: str
    status: str  # "ok" (tests ran), "timeout" or "crash" (the module itself failed)
    visible_passed: int
    visible_total: int
    hidden_passed: int
    hidden_total: int

    @property
    def timed_out(self) -> bool:
        return self.status == "timeout"

    @property
    def passes_visible(self) -> bool:
        return self.visible_passed == self.visible_total

    @property
    def hidden_pass_rate(self) -> float:
        return self.hidden_passed / self.hidden_total

    @property
    def fails_hidden(self) -> bool:
        """Fails a hidden test: only those earn credit, so only such a mutant scores below the reference."""
        return self.hidden_passed < self.hidden_total

    @property
    def fails_some(self) -> bool:
        return self.visible_passed + self.hidden_passed < self.visible_total + self.hidden_total


# Screens many mutants of one task in one sandboxed child with a CPU timer (ITIMER_VIRTUAL) per mutant, so
# an endless loop costs SCREEN_CPU_S rather than a whole run; the values are judged as the verifier does.
# A mutant that kills the interpreter is found as the first one without an end record, and the rest are
# screened again.
SCREEN_CPU_S = 0.3
BATCH_LIMITS = SandboxLimits(wall_time_s=300.0, cpu_time_s=120, output_bytes=2**24)


def screen_mutants(
    mutants: Sequence[tuple[str, str]], function_name: str, visible: list[dict], hidden: list[dict]
) -> list[Screened]:
    """Run every mutant against the visible and hidden tests in the sandbox (batched, see above)."""
    tests = visible + hidden
    calls = [test["args"] for test in tests]
    outcomes: dict[int, tuple[str, list[int]]] = {}
    pending = list(range(len(mutants)))
    while pending:
        sources = [mutants[i][1] for i in pending]
        found, ends, _ = evaluate_calls(sources, function_name, calls, BATCH_LIMITS, budget=SCREEN_CPU_S)
        for s, index in enumerate(pending):
            if s not in ends:
                continue
            status = ends[s] if ends[s] in ("ok", "timeout") else "crash"
            results = [
                int(judge(test, [found[(s, i)]])[0]) if (s, i) in found else 0 for i, test in enumerate(tests)
            ]
            outcomes[index] = (status, results if status == "ok" else [])
        missing = [i for i in pending if i not in outcomes]
        if missing:
            outcomes[missing[0]] = ("timeout", [])
        pending = missing[1:]
    screened = []
    for i, (kind, source) in enumerate(mutants):
        status, results = outcomes[i]
        results = results + [0] * (len(tests) - len(results))
        screened.append(
            Screened(
                kind=kind,
                source=source,
                status=status,
                visible_passed=sum(results[: len(visible)]),
                visible_total=len(visible),
                hidden_passed=sum(results[len(visible) :]),
                hidden_total=len(hidden),
            )
        )
    return screened


def choose_mutants(candidates: Sequence[Screened], seed: str, limit: int = MAX_MUTANTS) -> list[Screened]:
    """Up to ``limit`` mutants, diverse in kind, with one plausible-but-wrong mutant (passes the visible
    tests, fails a hidden one) and one that fails a visible test whenever such mutants exist."""
    order = list(candidates)
    random.Random(seed).shuffle(order)
    chosen: list[Screened] = []

    def pick(accept: Callable[[Screened], bool]) -> bool:
        for mutant in order:
            if mutant not in chosen and accept(mutant):
                chosen.append(mutant)
                return True
        return False

    def new_kind(mutant: Screened) -> bool:
        return mutant.kind not in {m.kind for m in chosen}

    pick(lambda m: m.passes_visible)
    pick(lambda m: not m.passes_visible and new_kind(m)) or pick(lambda m: not m.passes_visible)
    while len(chosen) < limit and (pick(new_kind) or pick(lambda m: True)):
        pass
    return chosen
