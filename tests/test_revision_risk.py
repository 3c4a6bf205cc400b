"""MDP v2's revision risk: a REVISE of a correct draft breaks it at a rate set by the feedback it got
(``Mechanism.p_break_feedback``); MDP v1 keeps one rate whatever the feedback."""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np
import pytest

from harness_gym.core.task import Task
from harness_gym.envs.domain import ArtifactPool, Flawed, artifact_hash
from harness_gym.executors import Context, ExecutorRequest, Feedback, Finding, FlawKind, SimulatedExecutor
from harness_gym.executors.profiles import MECHANISMS, DomainProfile, DraftParams, Mechanism, revision_verdict

TASK = Task("t-0", "coding", "v0", "standard", "train", "tmpl", "Write f.", payload={})
POOL = ArtifactPool(reference="REF", flawed=(Flawed("off_by_one", "BAD1"), Flawed("off_by_one", "BAD2")))
REF = artifact_hash("REF")
FEEDBACK = {
    "none": None,
    "fail": Feedback("check", REF, (Finding("test_failed", "f(1) == 2 failed"),)),
    "pass": Feedback("check", REF, ()),
}


class StubDomain:
    name = "coding"
    flaws: ClassVar[dict[str, FlawKind]] = {
        "off_by_one": FlawKind("content", frozenset({"test_failed"}), "none")
    }

    def pool(self, task: Task) -> ArtifactPool:
        return POOL


def broken(by_feedback: bool, verdict: str, n: int = 4000, **mechanism) -> float:
    """Share of ``n`` sampled REVISE calls on the correct draft with ``verdict`` feedback that break it."""
    profile = DomainProfile(draft=DraftParams(), mechanism=Mechanism(temperature=1.0, **mechanism))
    ex = SimulatedExecutor(StubDomain(), profile, break_by_feedback=by_feedback)  # type: ignore[arg-type]
    request = ExecutorRequest("revise", TASK, Context(), draft="REF", feedback=FEEDBACK[verdict])
    rng = np.random.default_rng(0)
    return sum(ex.complete(request, rng).text != "REF" for _ in range(n)) / n


def test_the_verdict_a_revise_gets() -> None:
    assert {v: revision_verdict(f, REF) for v, f in FEEDBACK.items()} == {v: v for v in FEEDBACK}
    # feedback on another draft says nothing about this one
    assert revision_verdict(FEEDBACK["fail"], artifact_hash("BAD1")) == "none"


def test_p_break_differs_by_feedback_over_many_draws() -> None:
    """Under v2 each verdict breaks the draft at its own rate (default profile: 0.042 / 0.46 / 0.016)."""
    rates = {verdict: broken(True, verdict) for verdict in FEEDBACK}
    default = Mechanism().p_break_feedback
    for verdict, rate in rates.items():
        assert rate == pytest.approx(default[verdict], abs=0.025), verdict
    assert rates["fail"] > rates["none"] > rates["pass"]


def test_v1_keeps_one_rate_whatever_the_feedback() -> None:
    """The same draws give the same drafts under every verdict: v1 reads only ``p_break``."""
    rates = {verdict: broken(False, verdict, p_break=0.2) for verdict in FEEDBACK}
    assert rates["none"] == rates["fail"] == rates["pass"] == pytest.approx(0.2, abs=0.025)


def test_the_named_profiles_order_their_rates() -> None:
    """Weak to strong: the false-alarm rate falls across the cited range; a pass never breaks more than
    no feedback, and no feedback keeps v1's rate."""
    weak, default, strong = (MECHANISMS[name] for name in ("weak", "default", "strong"))
    assert weak.p_break_feedback["fail"] > default.p_break_feedback["fail"] > strong.p_break_feedback["fail"]
    for m in (weak, default, strong):
        assert m.p_break_feedback["pass"] <= m.p_break_feedback["none"] == m.p_break


def test_a_profile_needs_every_verdict() -> None:
    with pytest.raises(ValueError, match="p_break_feedback needs exactly the verdicts"):
        Mechanism(p_break_feedback={"none": 0.1, "fail": 0.5})
    with pytest.raises(ValueError, match=r"p_break_feedback\['fail'\] must lie in"):
        Mechanism(p_break_feedback={"none": 0.1, "fail": 1.5, "pass": 0.0})


def test_only_layout_v2_turns_it_on() -> None:
    assert not gym.make("HarnessCoding-v0").unwrapped.executor.break_by_feedback
    v2 = gym.make("HarnessCoding-v0", obs_layout="v2").unwrapped.executor
    assert v2.break_by_feedback and v2.describe()["break_by_feedback"] is True


def test_only_layout_v2_records_the_rates_it_reads() -> None:
    """A v1 dataset's recorded executor has no ``p_break_feedback`` (v1 never reads it, and recording it
    would change every published v1 dataset's checksum); a v2 one records the rates it plays with."""
    v1 = gym.make("HarnessPlanning-v0").unwrapped.executor.describe()
    assert "p_break_feedback" not in v1["profile"]["mechanism"] and "break_by_feedback" not in v1
    assert v1["profile"]["mechanism"]["p_break"] == MECHANISMS["default"].p_break
    v2 = gym.make("HarnessPlanning-v0", obs_layout="v2").unwrapped.executor.describe()
    assert v2["profile"]["mechanism"]["p_break_feedback"] == dict(MECHANISMS["default"].p_break_feedback)
