"""The simulated executor's competence model, measured over many draws."""

from __future__ import annotations

import numpy as np
import pytest

from harness_gym.domains.base import ArtifactPool, Flawed, artifact_hash
from harness_gym.executors import Competence, Context, ExecutorRequest, Feedback, SimulatedExecutor
from harness_gym.task import Task

TASK = Task("t-0", "coding", "v0", "standard", "train", "tmpl", "Write f.", payload={})
POOL = ArtifactPool(
    reference="REF",
    flawed=(Flawed("off_by_one", "BAD1"), Flawed("off_by_one", "BAD2"), Flawed("syntax_error", "BAD3")),
)


class StubDomain:
    def __init__(self, competence: Competence) -> None:
        self.competence = competence

    def pool(self, task: Task) -> ArtifactPool:
        return POOL

    def informedness(self, task: Task, context: Context) -> float:
        return float(context.observed)

    def tool_pool(self, task: Task, context: Context) -> ArtifactPool:
        step = len(context.tool_results)
        return ArtifactPool(
            f"calc(step={step})", (Flawed("invalid_args", "calc(x=)"), Flawed("wrong_tool", "convert()"))
        )


def executor(**params) -> SimulatedExecutor:
    return SimulatedExecutor(StubDomain(Competence(**params)))  # type: ignore[arg-type]


def rate(ex: SimulatedExecutor, request: ExecutorRequest, target: str = "REF", n: int = 4000) -> float:
    rng = np.random.default_rng(0)
    return sum(ex.complete(request, rng).text == target for _ in range(n)) / n


def test_informed_drafts_are_more_often_correct():
    ex = executor(p_correct={"easy": 0.5, "standard": 0.3, "hard": 0.1}, informed_gain=0.3)
    blind = rate(ex, ExecutorRequest("draft", TASK, Context(observed=False)))
    informed = rate(ex, ExecutorRequest("draft", TASK, Context(observed=True)))
    assert blind == pytest.approx(0.3, abs=0.03)
    assert informed == pytest.approx(0.6, abs=0.03)


def test_revise_after_localised_feedback_fixes_more_than_blind_revise():
    ex = executor(p_fix_informed=0.7, p_fix_blind=0.15)
    localised = Feedback("tests", artifact_hash("BAD1"), ("test 2 failed",))
    informed = rate(ex, ExecutorRequest("revise", TASK, Context(), draft="BAD1", feedback=localised))
    blind = rate(ex, ExecutorRequest("revise", TASK, Context(), draft="BAD1"))
    stale = Feedback("tests", artifact_hash("BAD2"), ("test 2 failed",))  # about another draft
    stale_rate = rate(ex, ExecutorRequest("revise", TASK, Context(), draft="BAD1", feedback=stale))
    clean = Feedback("check", artifact_hash("BAD1"), ())  # found nothing: does not localise
    clean_rate = rate(ex, ExecutorRequest("revise", TASK, Context(), draft="BAD1", feedback=clean))
    assert informed == pytest.approx(0.7, abs=0.03)
    assert blind == pytest.approx(0.15, abs=0.03)
    assert stale_rate == pytest.approx(0.15, abs=0.03) and clean_rate == pytest.approx(0.15, abs=0.03)


def test_revise_can_break_a_correct_draft():
    ex = executor(p_break=0.2)
    kept = rate(ex, ExecutorRequest("revise", TASK, Context(), draft="REF"))
    assert kept == pytest.approx(0.8, abs=0.03)


def test_flaw_weights_shape_the_wrong_drafts():
    ex = executor(
        p_correct={"standard": 0.0, "easy": 0.0, "hard": 0.0},
        informed_gain=0.0,
        flaw_weights={"syntax_error": 0.0},
    )
    request = ExecutorRequest("draft", TASK, Context())
    rng = np.random.default_rng(1)
    texts = {ex.complete(request, rng).text for _ in range(300)}
    assert texts == {"BAD1", "BAD2"}
    never_right = {"standard": 0.0, "easy": 0.0, "hard": 0.0}
    zero = executor(
        p_correct=never_right, informed_gain=0.0, flaw_weights={"syntax_error": 0, "off_by_one": 0}
    )
    with pytest.raises(ValueError, match="zero weight"):
        zero.complete(ExecutorRequest("draft", TASK, Context()), np.random.default_rng(0))


def test_judge_rates():
    ex = executor(judge_tpr=0.8, judge_fpr=0.1)
    on_flawed = rate(ex, ExecutorRequest("judge", TASK, Context(), draft="BAD1"), target="PASS")
    on_correct = rate(ex, ExecutorRequest("judge", TASK, Context(), draft="REF"), target="PASS")
    assert on_flawed == pytest.approx(0.2, abs=0.03)
    assert on_correct == pytest.approx(0.9, abs=0.03)


def test_same_generator_state_same_response_and_usage_is_counted():
    ex = executor()
    request = ExecutorRequest("draft", TASK, Context(observed=True))
    a = [ex.complete(request, np.random.default_rng(5)) for _ in range(3)]
    assert len({r.text for r in a}) == 1
    assert a[0].usage.completion_tokens > 0 and a[0].usage.prompt_tokens > 0


def test_bad_requests_are_named():
    ex = executor()
    with pytest.raises(ValueError, match="current draft"):
        ex.complete(ExecutorRequest("revise", TASK, Context()), np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown request kind"):
        ex.complete(ExecutorRequest("poem", TASK, Context()), np.random.default_rng(0))  # type: ignore[arg-type]


def test_tool_requests_pick_the_right_call_with_p_tool_correct():
    ex = executor(p_tool_correct=0.85)
    request = ExecutorRequest("tool", TASK, Context(tool_results=["read_document: ok"]))
    assert rate(ex, request, target="calc(step=1)") == pytest.approx(0.85, abs=0.03)
    assert rate(ex, request, target="calc(x=)") == pytest.approx(0.075, abs=0.02)
