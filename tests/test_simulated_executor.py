"""The simulated executor's mechanism, measured over many draws."""

from __future__ import annotations

import hashlib
import struct
from typing import ClassVar

import numpy as np
import pytest

from harness_gym import ENV_IDS
from harness_gym.core.state import FEATURE_INDEX, FEATURES
from harness_gym.core.task import Task
from harness_gym.envs.domain import ArtifactPool, Flawed, artifact_hash
from harness_gym.executors import Context, ExecutorRequest, Feedback, Finding, FlawKind, SimulatedExecutor
from harness_gym.executors.profiles import DomainProfile, DraftParams, Mechanism
from harness_gym.executors.simulated import HashDraws

TASK = Task("t-0", "coding", "v0", "standard", "train", "tmpl", "Write f.", payload={})
POOL = ArtifactPool(
    reference="REF",
    flawed=(Flawed("off_by_one", "BAD1"), Flawed("off_by_one", "BAD2"), Flawed("syntax_error", "BAD3")),
)
EVERYWHERE = ("easy", "standard", "hard")


class StubDomain:
    name = "coding"
    flaws: ClassVar[dict[str, FlawKind]] = {
        "off_by_one": FlawKind("content", frozenset({"test_failed"}), "none"),
        "syntax_error": FlawKind("form", frozenset({"syntax"}), "none"),
    }

    def pool(self, task: Task) -> ArtifactPool:
        return POOL

    def informedness(self, task: Task, context: Context) -> float:
        return float(context.observed)

    def evidence(self, task: Task, context: Context, needs: str) -> float:
        return 1.0 if needs == "none" else float(context.observed)

    def tool_pool(self, task: Task, context: Context) -> ArtifactPool:
        step = len(context.tool_results)
        return ArtifactPool(
            f"calc(step={step})", (Flawed("invalid_args", "calc(x=)"), Flawed("wrong_tool", "convert()"))
        )


class GatedStubDomain(StubDomain):
    """The off-by-one's fix needs the task read (``observed``)."""

    flaws: ClassVar[dict[str, FlawKind]] = {
        **StubDomain.flaws,
        "off_by_one": FlawKind("content", frozenset({"test_failed"}), "observed"),
    }


def executor(draft: dict | None = None, domain=StubDomain, **mechanism) -> SimulatedExecutor:
    """Rates are measured over repeated identical requests, so calls sample unless a test says otherwise."""
    mechanism.setdefault("temperature", 1.0)
    profile = DomainProfile(draft=DraftParams(**(draft or {})), mechanism=Mechanism(**mechanism))
    return SimulatedExecutor(domain(), profile)  # type: ignore[arg-type]


def outcomes(ex: SimulatedExecutor, request: ExecutorRequest, n: int = 4000) -> dict[str, float]:
    rng = np.random.default_rng(0)
    texts = [ex.complete(request, rng).text for _ in range(n)]
    return {text: texts.count(text) / n for text in set(texts)}


def rate(ex: SimulatedExecutor, request: ExecutorRequest, target: str = "REF", n: int = 4000) -> float:
    return outcomes(ex, request, n).get(target, 0.0)


def revise(draft: str, feedback: Feedback | None = None, revision: int = 0) -> ExecutorRequest:
    return ExecutorRequest("revise", TASK, Context(), draft=draft, feedback=feedback, revision=revision)


LOCALISED = Feedback(
    "tests", artifact_hash("BAD1"), (Finding("test_failed", "test 2 failed: expected 3, got 4"),)
)
VERDICT = Feedback("check", artifact_hash("BAD1"), ("judge: FAIL: the draft does not meet the criteria",))
ELSEWHERE = Feedback("check", artifact_hash("BAD1"), (Finding("syntax", "does not parse: line 3"),))
"""Fresh feedback on the draft that names another flaw than the draft's own (an off-by-one)."""
FIX = {"localised": 0.7, "verdict": 0.3, "none": 0.1}


def test_informed_drafts_are_more_often_correct():
    ex = executor({"p_correct": {"easy": 0.5, "standard": 0.3, "hard": 0.1}, "informed_gain": 0.3})
    blind = rate(ex, ExecutorRequest("draft", TASK, Context(observed=False)))
    informed = rate(ex, ExecutorRequest("draft", TASK, Context(observed=True)))
    assert blind == pytest.approx(0.3, abs=0.03)
    assert informed == pytest.approx(0.6, abs=0.03)


def test_fix_rate_depends_on_what_the_feedback_localises():
    ex = executor(p_fix=FIX)
    assert rate(ex, revise("BAD1", LOCALISED)) == pytest.approx(0.7, abs=0.03)
    assert rate(ex, revise("BAD1", VERDICT)) == pytest.approx(0.3, abs=0.03)
    assert rate(ex, revise("BAD1")) == pytest.approx(0.1, abs=0.03)
    stale = Feedback("tests", artifact_hash("BAD2"), ("test 2 failed",))  # about another draft
    clean = Feedback("check", artifact_hash("BAD1"), ())  # found nothing: does not localise
    assert rate(ex, revise("BAD1", stale)) == pytest.approx(0.1, abs=0.03)
    assert rate(ex, revise("BAD1", clean)) == pytest.approx(0.1, abs=0.03)


def test_feedback_about_another_flaw_gets_no_localised_rate():
    """A finding that names something other than the draft's own flaw is a verdict, not a location."""
    ex = executor(p_fix=FIX, p_fix_form=0.7)
    assert rate(ex, revise("BAD1", ELSEWHERE)) == pytest.approx(0.3, abs=0.03)
    untagged = Feedback("tests", artifact_hash("BAD1"), ("test 2 failed: expected 3, got 4",))
    assert rate(ex, revise("BAD1", untagged)) == pytest.approx(0.3, abs=0.03)
    # the same finding names the syntax-error variant's own flaw
    own = Feedback("check", artifact_hash("BAD3"), ELSEWHERE.issues)
    assert rate(ex, revise("BAD3", own)) == pytest.approx(0.7, abs=0.03)


def test_form_and_content_flaws_have_their_own_localised_rates():
    ex = executor(p_fix=FIX, p_fix_form=0.9)
    assert rate(ex, revise("BAD1", LOCALISED)) == pytest.approx(0.7, abs=0.03)  # content
    own = Feedback("check", artifact_hash("BAD3"), ELSEWHERE.issues)
    assert rate(ex, revise("BAD3", own)) == pytest.approx(0.9, abs=0.03)  # form


def _revise_in(context: Context, draft: str, feedback: Feedback | None) -> ExecutorRequest:
    return ExecutorRequest("revise", TASK, context, draft=draft, feedback=feedback)


def test_without_the_evidence_a_fix_needs_a_revision_is_a_blind_retry():
    """e = 0: the uninformed rate min(p_fix[none], p_correct); e = 1: the feedback kind's rate."""
    draft = {"p_correct": dict.fromkeys(EVERYWHERE, 0.05)}
    ex = executor(draft, domain=GatedStubDomain, p_fix=FIX)
    blind, read = Context(observed=False), Context(observed=True)
    assert rate(ex, _revise_in(blind, "BAD1", LOCALISED)) == pytest.approx(0.05, abs=0.02)
    assert rate(ex, _revise_in(read, "BAD1", LOCALISED)) == pytest.approx(0.7, abs=0.03)
    assert rate(ex, _revise_in(blind, "BAD1", None)) == pytest.approx(0.05, abs=0.02)
    assert rate(ex, _revise_in(read, "BAD1", None)) == pytest.approx(0.1, abs=0.02)
    # a form flaw's fix needs nothing gathered
    own = Feedback("check", artifact_hash("BAD3"), ELSEWHERE.issues)
    assert rate(ex, _revise_in(blind, "BAD3", own)) == pytest.approx(0.785, abs=0.03)


def test_repeated_revisions_have_diminishing_returns():
    ex = executor(p_fix=FIX, fix_decay=0.5)
    first, third = rate(ex, revise("BAD1", LOCALISED)), rate(ex, revise("BAD1", LOCALISED, revision=2))
    assert first == pytest.approx(0.7, abs=0.03)
    assert third == pytest.approx(0.7 * 0.25, abs=0.03)


def test_a_failed_fix_can_return_another_flaw():
    ex = executor(p_fix={"localised": 0.0, "verdict": 0.0, "none": 0.0}, p_reflaw=0.6)
    seen = outcomes(ex, revise("BAD1", LOCALISED))
    assert seen.get("BAD1", 0.0) == pytest.approx(0.4, abs=0.03)
    assert seen.get("BAD2", 0.0) + seen.get("BAD3", 0.0) == pytest.approx(0.6, abs=0.03)
    assert "REF" not in seen


def test_revise_can_break_a_correct_draft_into_any_flaw():
    ex = executor(p_break=0.2)
    seen = outcomes(ex, revise("REF"))
    assert seen["REF"] == pytest.approx(0.8, abs=0.03)
    assert set(seen) - {"REF"} <= {"BAD1", "BAD2", "BAD3"}


def test_a_changed_draft_does_not_imply_a_correct_one():
    """Among revisions of a flawed draft that changed it, a good share are other flaws."""
    ex = executor(p_fix={"localised": 0.5, "verdict": 0.2, "none": 0.1}, p_reflaw=0.5)
    seen = outcomes(ex, revise("BAD1", LOCALISED))
    changed = {text: p for text, p in seen.items() if text != "BAD1"}
    assert 0.15 < sum(p for text, p in changed.items() if text != "REF") / sum(changed.values()) < 0.5


def test_flaw_weights_shape_the_wrong_drafts():
    never = dict.fromkeys(EVERYWHERE, 0.0)
    ex = executor({"p_correct": never, "informed_gain": 0.0, "flaw_weights": {"syntax_error": 0.0}})
    request = ExecutorRequest("draft", TASK, Context())
    rng = np.random.default_rng(1)
    assert {ex.complete(request, rng).text for _ in range(300)} == {"BAD1", "BAD2"}
    zero = executor(
        {"p_correct": never, "informed_gain": 0.0, "flaw_weights": {"syntax_error": 0, "off_by_one": 0}}
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
    ex = executor({"p_tool_correct": 0.85})
    request = ExecutorRequest("tool", TASK, Context(tool_results=["read_document: ok"]))
    assert rate(ex, request, target="calc(step=1)") == pytest.approx(0.85, abs=0.03)
    assert rate(ex, request, target="calc(x=)") == pytest.approx(0.075, abs=0.02)


class ForcedRevise:
    """The simulated executor, except that a REVISE returns a chosen text."""

    name = "forced"

    def __init__(self, inner: SimulatedExecutor, revised: str) -> None:
        self.inner, self.revised = inner, revised

    def complete(self, request: ExecutorRequest, rng: np.random.Generator):
        response = self.inner.complete(request, rng)
        if request.kind == "revise":
            from dataclasses import replace

            return replace(response, text=self.revised)
        return response


def _obs_after_revise(env_id: str, revised_to: str) -> np.ndarray:
    """Base's gathering and DRAFT, a CHECK, then one REVISE whose output is forced."""
    import gymnasium as gym

    from harness_gym.core.actions import Action

    env = gym.make(env_id, split="train")
    inner = env.unwrapped.executor
    task = env.unwrapped.tasks[0]
    pool = env.unwrapped.domain.pool(task)
    text = {"reference": pool.reference, "flawed": pool.flawed[-1].source}.get(revised_to)
    obs, info = env.reset(seed=3, options={"task_id": task.task_id})
    domain = env.unwrapped.domain
    while not obs[FEATURE_INDEX["has_draft"]]:
        obs, *_, info = env.step(domain.base_action(obs, info["action_mask"]))
    obs, *_, info = env.step(int(Action.CHECK))
    ep = env.unwrapped._ep
    ep.executor = ForcedRevise(inner, text or ep.draft)  # no text: the draft comes back unchanged
    obs, *_ = env.step(int(Action.REVISE))
    assert ep.draft == (text or ep.draft)
    return obs


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_no_feature_reveals_what_a_revise_returned(env_id):
    """Every feature after a REVISE is the same whether it returned the reference, a flawed variant or
    the unchanged draft: the observation is a function of the history, never of the new draft."""
    after = {what: _obs_after_revise(env_id, what) for what in ("reference", "flawed", "unchanged")}
    for i, name in enumerate(FEATURES):
        values = {what: float(obs[i]) for what, obs in after.items()}
        assert len(set(values.values())) == 1, f"{env_id}: feature {name} differs: {values}"


def test_at_temperature_zero_an_identical_request_gets_the_identical_reply():
    ex = executor(p_fix=FIX, judge_tpr=0.5, judge_fpr=0.5, temperature=0.0)
    rng = np.random.default_rng(0)
    for key in range(20):
        judge = ExecutorRequest("judge", TASK, Context(observed=True), draft="BAD1", episode_key=key)
        assert len({ex.complete(judge, rng).text for _ in range(5)}) == 1
        again = ExecutorRequest("revise", TASK, Context(), draft="BAD1", feedback=LOCALISED, episode_key=key)
        assert len({ex.complete(again, rng).text for _ in range(5)}) == 1
    # ... but a different episode, or anything the prompt would hold, draws afresh
    verdicts = {
        ex.complete(ExecutorRequest("judge", TASK, Context(), draft="BAD1", episode_key=k), rng).text
        for k in range(20)
    }
    assert len(verdicts) == 2
    gathered = {
        ex.complete(
            ExecutorRequest("judge", TASK, Context(evidence=[f"doc{i}"]), draft="BAD1", episode_key=0), rng
        ).text
        for i in range(20)
    }
    assert len(gathered) == 2


def test_sampling_draws_every_call_afresh():
    ex = executor(judge_tpr=0.5, judge_fpr=0.5, temperature=1.0)
    rng = np.random.default_rng(0)
    judge = ExecutorRequest("judge", TASK, Context(), draft="BAD1")
    assert len({ex.complete(judge, rng).text for _ in range(20)}) == 2


@pytest.mark.parametrize("env_id", ["HarnessDBBench-v0", "HarnessMultiTool-v0"])
def test_a_recheck_of_an_unchanged_draft_repeats_the_judges_verdict(env_id):
    import gymnasium as gym

    from harness_gym.core.actions import Action

    env = gym.make(env_id, split="eval")
    for seed in range(12):
        env.reset(seed=seed)
        env.step(int(Action.DRAFT))
        verdicts = set()
        for _ in range(2):
            env.step(int(Action.CHECK))
            verdicts.add(tuple(env.unwrapped._ep.steps[-1].get("issues", ())))
        assert len(verdicts) == 1


def test_hash_draws_read_eight_words_per_keyed_block() -> None:
    """A greedy call's draws: block b is blake2b(b as 4 little-endian bytes, key=digest), read as eight
    little-endian 64-bit words, each word's top 53 bits over 2**53; draws 8 and 16 start new blocks."""
    digest = hashlib.blake2b(b"episode", digest_size=16).digest()
    expected = [
        (word >> 11) / 2**53
        for block in range(3)
        for word in struct.unpack("<8Q", hashlib.blake2b(block.to_bytes(4, "little"), key=digest).digest())
    ]
    draws = HashDraws(digest)
    assert [draws.random() for _ in range(20)] == expected[:20]
