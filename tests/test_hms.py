"""Each HMS detector on hand-built trajectories: fired, not fired, not applicable, and edge cases."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_gym.core import hms
from harness_gym.core.hms import EVENTS, EpisodeOutcome, HMSParams, detect, hms_norm

ALL = frozenset(EVENTS)
GOOD_RUBRIC = {"a": (1.0, 1.0), "b": (1.0, 1.0)}


def step(action: str, draft: str | None = "d1", valid: bool = True, **extra: Any) -> dict[str, Any]:
    return {"action": action, "valid": valid, "draft_hash": draft, "failure": False, **extra}


def episode(
    steps: list[dict[str, Any]],
    *,
    submitted: bool = True,
    G: float = 1.0,
    rubric: dict | None = None,
    signals: dict | None = None,
    events: frozenset[str] = ALL,
    max_steps: int = 12,
    evidence_required: bool = False,
) -> EpisodeOutcome:
    for t, s in enumerate(steps, start=1):
        s["t"] = t
    return EpisodeOutcome(
        steps=steps,
        submitted=submitted,
        max_steps=max_steps,
        G=G,
        rubric=rubric or GOOD_RUBRIC,
        signals=signals or {},
        events=events,
        evidence_required=evidence_required,
    )


def check(coverage: float) -> dict[str, float]:
    return {"coverage": coverage, "missing": 1.0 - coverage}


def fired(name: str, ep: EpisodeOutcome, params: HMSParams | None = None) -> tuple[bool, bool]:
    """The event ``name``'s detector gives on ``ep``; ``detect``, which scores every episode in one pass,
    must give the same event (every hand-built case below checks both)."""
    p = params or HMSParams()
    ev = hms.DETECTORS[name](ep, p)
    assert detect(ep, p)[name] == ev
    return ev["fired"], ev["applicable"]


# -- CheckBeforeSubmit -------------------------------------------------------------------------
def test_cbs_fires_on_clean_check_right_before_submit():
    ep = episode([step("DRAFT"), step("CHECK", check=check(1.0)), step("SUBMIT")])
    assert fired("CheckBeforeSubmit", ep) == (True, True)


def test_cbs_needs_a_step_between_a_check_that_found_missing_items_and_submit():
    ep = episode([step("DRAFT"), step("CHECK", check=check(0.5)), step("SUBMIT")])
    assert fired("CheckBeforeSubmit", ep) == (False, True)
    ep = episode([step("DRAFT"), step("CHECK", check=check(0.5)), step("REVISE"), step("SUBMIT")])
    assert fired("CheckBeforeSubmit", ep) == (True, True)


def test_cbs_not_fired_without_check_invalid_check_or_submit():
    assert fired("CheckBeforeSubmit", episode([step("DRAFT"), step("SUBMIT")])) == (False, True)
    invalid = episode([step("DRAFT"), step("CHECK", valid=False), step("SUBMIT")])
    assert fired("CheckBeforeSubmit", invalid) == (False, True)
    truncated = episode([step("DRAFT"), step("CHECK", check=check(1.0))], submitted=False)
    assert fired("CheckBeforeSubmit", truncated) == (False, True)


def test_cbs_not_applicable_outside_its_domains():
    ep = episode([step("CHECK", check=check(1.0)), step("SUBMIT")], events=ALL - {"CheckBeforeSubmit"})
    assert fired("CheckBeforeSubmit", ep) == (False, False)


# -- EvidenceBeforeClaim -----------------------------------------------------------------------
def test_ebc_fires_when_evidence_precedes_draft_and_claims_are_supported():
    steps = [step("RETRIEVE", draft=None, evidence=["doc-1"]), step("DRAFT"), step("SUBMIT")]
    assert fired("EvidenceBeforeClaim", episode(steps, signals={"claim_support": 0.7})) == (True, True)


def test_ebc_not_fired_when_evidence_comes_after_the_first_claim_or_support_is_low():
    late = [step("DRAFT"), step("RETRIEVE", evidence=["doc-1"]), step("REVISE"), step("SUBMIT")]
    assert fired("EvidenceBeforeClaim", episode(late, signals={"claim_support": 1.0})) == (False, True)
    early = [step("RETRIEVE", draft=None, evidence=["doc-1"]), step("DRAFT"), step("SUBMIT")]
    assert fired("EvidenceBeforeClaim", episode(early, signals={"claim_support": 0.69})) == (False, True)
    empty = [step("RETRIEVE", draft=None), step("DRAFT"), step("SUBMIT")]
    assert fired("EvidenceBeforeClaim", episode(empty, signals={"claim_support": 1.0})) == (False, True)


def test_ebc_not_applicable_in_coding_like_domains():
    steps = [step("RETRIEVE", draft=None, evidence=["x"]), step("DRAFT"), step("SUBMIT")]
    ep = episode(steps, signals={"claim_support": 1.0}, events=ALL - {"EvidenceBeforeClaim"})
    assert fired("EvidenceBeforeClaim", ep) == (False, False)


# -- TestBeforeSubmit --------------------------------------------------------------------------
def run(passed: int, total: int = 3) -> dict[str, int]:
    return {"passed": passed, "total": total}


def test_tbs_fires_on_passing_run_of_the_submitted_code():
    ep = episode([step("DRAFT"), step("CALL_TOOL", tests=run(3)), step("SUBMIT")])
    assert fired("TestBeforeSubmit", ep) == (True, True)


def test_tbs_not_fired_when_the_passing_run_was_on_other_code():
    steps = [step("DRAFT"), step("CALL_TOOL", tests=run(3)), step("REVISE", draft="d2"), step("SUBMIT", "d2")]
    assert fired("TestBeforeSubmit", episode(steps)) == (False, True)


def test_tbs_not_fired_when_submit_follows_a_failing_run():
    steps = [
        step("DRAFT"),
        step("CALL_TOOL", tests=run(3)),
        step("REVISE", draft="d2"),
        step("CALL_TOOL", draft="d2", tests=run(1)),
        step("REVISE", draft="d1"),
        step("SUBMIT", draft="d1"),
    ]
    assert fired("TestBeforeSubmit", episode(steps)) == (True, True)
    steps = [step("DRAFT"), step("CALL_TOOL", tests=run(1)), step("SUBMIT")]
    assert fired("TestBeforeSubmit", episode(steps)) == (False, True)


def test_tbs_counts_the_visible_tests_a_check_runs_and_ignores_empty_runs():
    ep = episode([step("DRAFT"), step("CHECK", check=check(1.0), tests=run(3)), step("SUBMIT")])
    assert fired("TestBeforeSubmit", ep) == (True, True)
    ep = episode([step("DRAFT"), step("CALL_TOOL", tests=run(0, 0)), step("SUBMIT")])
    assert fired("TestBeforeSubmit", ep) == (False, True)


def test_tbs_not_applicable_outside_coding():
    ep = episode([step("DRAFT"), step("CALL_TOOL", tests=run(3)), step("SUBMIT")], events=frozenset())
    assert fired("TestBeforeSubmit", ep) == (False, False)


# -- RevisionAfterFailure ----------------------------------------------------------------------
def failing(action: str = "CALL_TOOL", **extra: Any) -> dict[str, Any]:
    s = step(action, **extra)
    s["failure"] = True
    return s


def test_raf_fires_when_each_failure_is_revised_within_three_steps():
    steps = [step("DRAFT"), failing(), step("OBSERVE"), step("CHECK", check=check(1)), step("REVISE")]
    assert fired("RevisionAfterFailure", episode([*steps, step("SUBMIT")])) == (True, True)


def test_raf_not_fired_when_revision_comes_too_late_or_one_failure_is_left():
    late = [step("DRAFT"), failing(), step("OBSERVE"), step("OBSERVE"), step("OBSERVE"), step("REVISE")]
    assert fired("RevisionAfterFailure", episode([*late, step("SUBMIT")])) == (False, True)
    second = [step("DRAFT"), failing(), step("REVISE"), failing(), step("SUBMIT")]
    assert fired("RevisionAfterFailure", episode(second)) == (False, True)
    invalid_revise = [step("DRAFT"), failing(), step("REVISE", valid=False), step("SUBMIT")]
    assert fired("RevisionAfterFailure", episode(invalid_revise)) == (False, True)


def test_raf_not_applicable_without_failures():
    assert fired("RevisionAfterFailure", episode([step("DRAFT"), step("SUBMIT")])) == (False, False)


# -- ValidToolUse ------------------------------------------------------------------------------
def tool(valid: bool) -> dict[str, Any]:
    return step("CALL_TOOL", tool={"name": "calc", "valid": valid, "ok": valid})


def test_vtu_fires_at_ninety_percent_valid_calls():
    ep = episode([*(tool(True) for _ in range(9)), tool(False), step("SUBMIT")])
    assert fired("ValidToolUse", ep) == (True, True)


def test_vtu_not_fired_below_threshold():
    ep = episode([tool(True), tool(False), step("SUBMIT")])
    assert fired("ValidToolUse", ep) == (False, True)


def test_vtu_not_applicable_without_tool_calls():
    assert fired("ValidToolUse", episode([step("DRAFT"), step("SUBMIT")])) == (False, False)


# -- StopWhenSufficient ------------------------------------------------------------------------
def test_sws_fires_after_a_sufficient_check_within_the_window():
    ep = episode([step("DRAFT"), step("CHECK", check=check(0.9)), step("OBSERVE"), step("SUBMIT")])
    assert fired("StopWhenSufficient", ep) == (True, True)


def test_sws_not_fired_when_coverage_low_check_too_early_or_no_budget_left():
    low = episode([step("DRAFT"), step("CHECK", check=check(0.8)), step("SUBMIT")])
    assert fired("StopWhenSufficient", low) == (False, True)
    early = [step("DRAFT"), step("CHECK", check=check(1.0)), *(step("OBSERVE") for _ in range(3))]
    assert fired("StopWhenSufficient", episode([*early, step("SUBMIT")])) == (False, True)
    last_step = episode([step("DRAFT"), step("CHECK", check=check(1.0)), step("SUBMIT")], max_steps=3)
    assert fired("StopWhenSufficient", last_step) == (False, True)


def test_sws_threshold_is_a_parameter():
    ep = episode([step("DRAFT"), step("CHECK", check=check(0.75)), step("SUBMIT")])
    assert fired("StopWhenSufficient", ep, HMSParams(sufficient_coverage=0.70)) == (True, True)


# -- EarlySubmit -------------------------------------------------------------------------------
def test_es_fires_on_poor_quick_submit_and_respects_the_threshold():
    quick = episode([step("DRAFT"), step("OBSERVE"), step("SUBMIT")], G=0.4, rubric={"a": (0.4, 1.0)})
    assert fired("EarlySubmit", quick) == (True, True)
    four = episode([step("DRAFT"), *(step("OBSERVE") for _ in range(2)), step("SUBMIT")], G=0.4)
    assert fired("EarlySubmit", four) == (False, True)  # step 4 > 0.25 * 12
    assert fired("EarlySubmit", four, HMSParams(early_submit_threshold=0.35)) == (True, True)


def test_es_not_fired_on_good_quick_submit():
    assert fired("EarlySubmit", episode([step("DRAFT"), step("SUBMIT")], G=0.9)) == (False, True)


def test_es_fires_when_the_harness_submits_despite_its_own_check_or_tests():
    late = [*(step("OBSERVE") for _ in range(5))]
    half = [step("DRAFT"), *late, step("CHECK", check=check(0.5)), step("SUBMIT")]
    assert fired("EarlySubmit", episode(half, G=0.9)) == (True, True)
    failing = [step("DRAFT"), *late, step("CALL_TOOL", tests=run(1)), step("SUBMIT")]
    assert fired("EarlySubmit", episode(failing, G=0.9)) == (True, True)


def test_es_ignores_checks_and_tests_of_earlier_drafts_and_hidden_outcomes():
    late = [*(step("OBSERVE") for _ in range(5))]
    revised = [step("DRAFT"), step("CHECK", check=check(0.25)), step("REVISE", draft="d2"), *late]
    assert fired("EarlySubmit", episode([*revised, step("SUBMIT", draft="d2")], G=0.9)) == (False, True)
    # A poor outcome alone, submitted late and never checked, is not early.
    half = {"a": (0.0, 1.0), "b": (1.0, 1.0)}
    ep = episode([step("DRAFT"), *late, step("SUBMIT")], G=0.3, rubric=half, signals={"pass_rate": 0.1})
    assert fired("EarlySubmit", ep) == (False, True)


def test_es_fires_when_evidence_is_required_but_none_was_gathered():
    late = [step("DRAFT"), *(step("OBSERVE") for _ in range(5)), step("SUBMIT")]
    assert fired("EarlySubmit", episode(late, evidence_required=True)) == (True, True)
    with_evidence = [step("RETRIEVE", evidence=["d"]), *late]
    assert fired("EarlySubmit", episode(with_evidence, evidence_required=True)) == (False, True)


def test_es_not_fired_without_submit():
    ep = episode([step("DRAFT")], submitted=False, G=0.0, rubric={"a": (0.0, 1.0)})
    assert fired("EarlySubmit", ep) == (False, True)


# -- aggregate ---------------------------------------------------------------------------------
def test_detect_returns_every_event_and_hms_norm_weighs_applicable_ones():
    ep = episode([step("DRAFT"), step("CHECK", check=check(1.0)), step("SUBMIT")], G=1.0)
    events = detect(ep)
    assert tuple(events) == EVENTS
    # applicable: CBS (fired), EBC (not fired), TBS (not), SWS (fired), ES (not); RAF/VTU not applicable
    assert hms_norm(events) == pytest.approx(2 / 5)


def test_hms_norm_penalises_early_submit_and_handles_nothing_applicable():
    events = {"EarlySubmit": {"fired": True, "applicable": True}, "X": {"fired": True, "applicable": False}}
    assert hms_norm(events, HMSParams(weights={"EarlySubmit": -1.0, "X": 1.0})) == -1.0
    assert hms_norm({"X": {"fired": False, "applicable": False}}, HMSParams(weights={"X": 1.0})) == 0.0


# -- boundary cases, event by event ------------------------------------------------------------
def test_default_weights_reward_every_event_and_penalise_early_submit():
    assert dict(HMSParams().weights) == {
        "CheckBeforeSubmit": 1.0,
        "EvidenceBeforeClaim": 1.0,
        "TestBeforeSubmit": 1.0,
        "RevisionAfterFailure": 1.0,
        "ValidToolUse": 1.0,
        "StopWhenSufficient": 1.0,
        "EarlySubmit": -1.0,
    }


def test_ebc_boundaries():
    evidence = step("RETRIEVE", draft=None, evidence=["doc-1"])
    # no DRAFT at all, or not submitted: applicable but not fired
    assert fired(
        "EvidenceBeforeClaim", episode([evidence, step("SUBMIT")], signals={"claim_support": 1.0})
    ) == (
        False,
        True,
    )
    unsubmitted = episode([evidence, step("DRAFT")], submitted=False, signals={"claim_support": 1.0})
    assert fired("EvidenceBeforeClaim", unsubmitted) == (False, True)
    # support exactly at the threshold fires; no support measured counts as none
    at = episode([evidence, step("DRAFT"), step("SUBMIT")], signals={"claim_support": 0.70})
    assert fired("EvidenceBeforeClaim", at) == (True, True)
    unmeasured = episode([evidence, step("DRAFT"), step("SUBMIT")])
    assert fired("EvidenceBeforeClaim", unmeasured) == (False, True)


def test_tbs_boundaries():
    # no submit at all (the budget ran out): applicable, not fired
    unsubmitted = episode([step("DRAFT"), step("CALL_TOOL", tests=run(3))], submitted=False)
    assert fired("TestBeforeSubmit", unsubmitted) == (False, True)
    # a SUBMIT as the very first step has nothing before it
    assert fired("TestBeforeSubmit", episode([step("SUBMIT")])) == (False, True)
    # a passing run as the very first step counts
    assert fired("TestBeforeSubmit", episode([step("CALL_TOOL", tests=run(3)), step("SUBMIT")])) == (
        True,
        True,
    )
    # one test, passing, is a full pass
    assert fired(
        "TestBeforeSubmit", episode([step("DRAFT"), step("CALL_TOOL", tests=run(1, 1)), step("SUBMIT")])
    ) == (
        True,
        True,
    )
    # a passing run on the submitted draft does not excuse a failing run on it right before the submit
    flaky = [step("DRAFT"), step("CALL_TOOL", tests=run(3)), step("CALL_TOOL", tests=run(2)), step("SUBMIT")]
    assert fired("TestBeforeSubmit", episode(flaky)) == (False, True)
    # ... but an invalid run right before the submit is no failing run
    invalid = [
        step("DRAFT"),
        step("CALL_TOOL", tests=run(3)),
        step("CALL_TOOL", valid=False, tests=run(0)),
        step("SUBMIT"),
    ]
    assert fired("TestBeforeSubmit", episode(invalid)) == (True, True)


def test_raf_boundaries():
    window = HMSParams().revision_window
    assert window == 3
    at_once = [step("DRAFT"), failing(), step("REVISE"), step("SUBMIT")]
    assert fired("RevisionAfterFailure", episode(at_once)) == (True, True)
    last_in_window = [
        step("DRAFT"),
        failing(),
        step("OBSERVE"),
        step("OBSERVE"),
        step("REVISE"),
        step("SUBMIT"),
    ]
    assert fired("RevisionAfterFailure", episode(last_in_window)) == (True, True)
    assert fired("RevisionAfterFailure", episode(last_in_window), HMSParams(revision_window=2)) == (
        False,
        True,
    )
    # a REVISE that itself fails does not answer its own failure; the next REVISE does
    self_revising = [step("DRAFT"), failing("REVISE"), step("SUBMIT")]
    assert fired("RevisionAfterFailure", episode(self_revising)) == (False, True)
    answered = [step("DRAFT"), failing("REVISE"), step("REVISE"), step("SUBMIT")]
    assert fired("RevisionAfterFailure", episode(answered)) == (True, True)


def test_vtu_boundaries():
    just_below = episode([*(tool(True) for _ in range(8)), tool(False), step("SUBMIT")])  # 8 / 9 < 0.9
    assert fired("ValidToolUse", just_below) == (False, True)
    assert fired("ValidToolUse", just_below, HMSParams(valid_tool_rate=8 / 9)) == (True, True)


def test_sws_boundaries():
    # a sufficient CHECK as the very first step, and coverage exactly at the threshold
    assert fired("StopWhenSufficient", episode([step("CHECK", check=check(1.0)), step("SUBMIT")])) == (
        True,
        True,
    )
    at = episode([step("DRAFT"), step("CHECK", check=check(0.85)), step("SUBMIT")])
    assert fired("StopWhenSufficient", at) == (True, True)
    # the CHECK exactly check_window steps before the submit is inside the window
    edge = [step("DRAFT"), step("CHECK", check=check(1.0)), step("OBSERVE"), step("OBSERVE"), step("SUBMIT")]
    assert fired("StopWhenSufficient", episode(edge)) == (True, True)
    # a submit one step before the limit still has budget left
    assert fired("StopWhenSufficient", episode(edge, max_steps=5)) == (False, True)
    assert fired("StopWhenSufficient", episode(edge, max_steps=6)) == (True, True)
    # an invalid CHECK does not count
    invalid = episode([step("DRAFT"), step("CHECK", valid=False, check=check(1.0)), step("SUBMIT")])
    assert fired("StopWhenSufficient", invalid) == (False, True)


def test_es_boundaries():
    late = [step("OBSERVE") for _ in range(5)]
    # G exactly at the quality floor is not poor
    assert fired("EarlySubmit", episode([step("DRAFT"), step("SUBMIT")], G=0.5)) == (False, True)
    assert fired("EarlySubmit", episode([step("DRAFT"), step("SUBMIT")], G=0.49)) == (True, True)
    # a submit exactly at threshold * max_steps (step 3 of 12) is early
    three = episode([step("DRAFT"), step("OBSERVE"), step("SUBMIT")], G=0.4)
    assert fired("EarlySubmit", three) == (True, True)
    # exactly half the tests passing is not failing; fewer is, even with one test
    half = [step("DRAFT"), *late, step("CALL_TOOL", tests=run(1, 2)), step("SUBMIT")]
    assert fired("EarlySubmit", episode(half, G=0.9)) == (False, True)
    one = [step("DRAFT"), *late, step("CALL_TOOL", tests=run(0, 1)), step("SUBMIT")]
    assert fired("EarlySubmit", episode(one, G=0.9)) == (True, True)
    # an empty run says nothing (and divides by nothing)
    empty = [step("DRAFT"), *late, step("CALL_TOOL", tests=run(0, 0)), step("SUBMIT")]
    assert fired("EarlySubmit", episode(empty, G=0.9)) == (False, True)
    # a CHECK with just under half missing is no reason
    under = [step("DRAFT"), *late, step("CHECK", check={"coverage": 0.51, "missing": 0.49}), step("SUBMIT")]
    assert fired("EarlySubmit", episode(under, G=0.9)) == (False, True)


def test_cbs_boundaries():
    # the last CHECK before the submit decides, and exactly one step between it and the submit suffices
    found = step("CHECK", check=check(0.5))
    assert fired("CheckBeforeSubmit", episode([step("DRAFT"), found, step("OBSERVE"), step("SUBMIT")])) == (
        True,
        True,
    )
    clean_then_missing = [
        step("DRAFT"),
        step("CHECK", check=check(1.0)),
        step("CHECK", check=check(0.5)),
        step("SUBMIT"),
    ]
    assert fired("CheckBeforeSubmit", episode(clean_then_missing)) == (False, True)
    # a CHECK as the very first step counts
    assert fired("CheckBeforeSubmit", episode([step("CHECK", check=check(1.0)), step("SUBMIT")])) == (
        True,
        True,
    )


def test_hms_norm_hand_computed():
    events = {
        "CheckBeforeSubmit": {"fired": True, "applicable": True},
        "EvidenceBeforeClaim": {"fired": False, "applicable": False},
        "TestBeforeSubmit": {"fired": True, "applicable": True},
        "RevisionAfterFailure": {"fired": False, "applicable": True},
        "ValidToolUse": {"fired": False, "applicable": False},
        "StopWhenSufficient": {"fired": True, "applicable": True},
        "EarlySubmit": {"fired": True, "applicable": True},
    }
    assert hms_norm(events) == pytest.approx((1 + 1 + 0 + 1 - 1) / 5)
    weights = {**HMSParams().weights, "TestBeforeSubmit": 3.0, "EarlySubmit": -2.0}
    assert hms_norm(events, HMSParams(weights=weights)) == pytest.approx(
        (1 + 3 + 1 - 2) / (1 + 3 + 1 + 1 + 2)
    )


def test_detect_marks_events_outside_the_domain_not_applicable():
    ep = episode(
        [step("DRAFT"), step("CHECK", check=check(1.0)), step("SUBMIT")], events=frozenset({"EarlySubmit"})
    )
    events = detect(ep)
    assert events["EarlySubmit"] == {"fired": False, "applicable": True}
    assert all(
        events[name] == {"fired": False, "applicable": False} for name in EVENTS if name != "EarlySubmit"
    )


def test_an_episode_without_steps_fires_nothing_and_only_the_always_applicable_events_apply():
    ep = episode([], submitted=False)
    always = {"fired": False, "applicable": True}
    never = {"fired": False, "applicable": False}
    assert detect(ep) == {
        "CheckBeforeSubmit": always,
        "EvidenceBeforeClaim": always,
        "TestBeforeSubmit": always,
        "RevisionAfterFailure": never,  # no failure to revise
        "ValidToolUse": never,  # no tool call
        "StopWhenSufficient": always,
        "EarlySubmit": always,
    }
    assert all(fired(name, ep) == (ev["fired"], ev["applicable"]) for name, ev in detect(ep).items())


def test_hms_params_from_a_mapping_refuse_unknown_keys_and_wrong_types():
    assert HMSParams.from_mapping({"check_window": 4}).check_window == 4
    with pytest.raises(ValueError, match=r"unknown hms_params key\(s\) \['early_submit'\]"):
        HMSParams.from_mapping({"early_submit": 0.3})
    known = ", ".join(f.name for f in dataclasses.fields(HMSParams))
    assert known.startswith("early_submit_threshold, early_submit_quality, ")
    with pytest.raises(ValueError, match=f"; known: {re.escape(known)}$"):
        HMSParams.from_mapping({"x": 1})
    with pytest.raises(ValueError, match=r"check_window must be a non-negative int, got 2\.5"):
        HMSParams(check_window=2.5)
    with pytest.raises(ValueError, match=r"claim_support must be a non-negative number, got .0\.7."):
        HMSParams(claim_support="0.7")


def test_hms_params_accept_zero_thresholds_and_negative_weights_and_refuse_bad_weights():
    assert HMSParams(claim_support=0.0, early_submit_threshold=0, check_window=0).claim_support == 0.0
    assert HMSParams(weights={"EarlySubmit": -2.5}).weights == {"EarlySubmit": -2.5}
    with pytest.raises(ValueError, match=r"^hms_params claim_support must be a non-negative number, got -0"):
        HMSParams(claim_support=-0.1)
    with pytest.raises(
        ValueError, match=r"^hms_params weights must be a mapping event -> weight, got \[1\.0\]$"
    ):
        HMSParams(weights=[1.0])
    with pytest.raises(ValueError, match=r"^hms_params weights\['EarlySubmit'\] must be a number, got 'x'$"):
        HMSParams(weights={"EarlySubmit": "x"})
    with pytest.raises(ValueError, match=r"^hms_params weights\['X'\] must be a number, got True$"):
        HMSParams(weights={"X": True})


# -- detect: one pass over the steps, event for event what each detector says -----------------------
_ACTIONS = ("OBSERVE", "RETRIEVE", "CALL_TOOL", "DRAFT", "CHECK", "REVISE", "SUBMIT")


@st.composite
def _random_episode(draw: st.DrawFn) -> tuple[EpisodeOutcome, HMSParams]:
    n = draw(st.integers(1, 9))
    submitted = draw(st.booleans())
    steps = []
    for i in range(n):
        action = "SUBMIT" if submitted and i == n - 1 else draw(st.sampled_from(_ACTIONS))
        extra: dict[str, Any] = {"failure": draw(st.booleans())}
        if action == "CHECK" or draw(st.booleans()):  # a CHECK always reports its coverage
            extra["check"] = check(draw(st.sampled_from([0.0, 0.5, 0.85, 1.0])))
        if draw(st.booleans()):
            total = draw(st.integers(0, 3))
            extra["tests"] = {"passed": draw(st.integers(0, total)), "total": total}
        if draw(st.booleans()):
            extra["tool"] = {"valid": draw(st.booleans()), "ok": True}
        if draw(st.booleans()):
            extra["evidence"] = draw(st.sampled_from([[], ["e1"]]))
        steps.append(
            step(action, draft=draw(st.sampled_from(["d1", "d2", None])), valid=draw(st.booleans()), **extra)
        )
    ep = episode(
        steps,
        submitted=submitted,
        G=draw(st.sampled_from([0.0, 0.4, 1.0])),
        signals={"claim_support": draw(st.sampled_from([0.0, 0.7, 1.0]))},
        events=frozenset(draw(st.sets(st.sampled_from(EVENTS)))),
        max_steps=draw(st.integers(n, n + 2)),
        evidence_required=draw(st.booleans()),
    )
    params = HMSParams(revision_window=draw(st.integers(0, 3)), check_window=draw(st.integers(0, 3)))
    return ep, params


@settings(max_examples=400, deadline=None)
@given(_random_episode())
def test_detect_gives_every_detectors_event(case: tuple[EpisodeOutcome, HMSParams]) -> None:
    ep, params = case
    expected = {
        name: hms.DETECTORS[name](ep, params) if name in ep.events else {"fired": False, "applicable": False}
        for name in EVENTS
    }
    assert detect(ep, params) == expected
    assert list(detect(ep, params)) == list(EVENTS)
