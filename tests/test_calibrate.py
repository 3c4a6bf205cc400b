"""harness-gym calibrate: probe episodes recover a known simulated profile within their intervals."""

from __future__ import annotations

import json

import pytest

from harness_gym.calibrate import calibrate_env, truth_of, wilson
from harness_gym.cli import main
from harness_gym.profiles import DomainProfile, DraftParams, ExecutorProfile, Mechanism, named

KNOWN = Mechanism(
    p_fix={"localised": 0.5, "verdict": 0.3, "none": 0.1},
    p_break=0.2,
    p_reflaw=0.7,
    fix_decay=0.6,
    judge_tpr=0.7,
    judge_fpr=0.25,
)


def _known(env_domain: str, draft: DraftParams) -> ExecutorProfile:
    return named("default").with_domain(env_domain, DomainProfile(draft=draft, mechanism=KNOWN))


@pytest.mark.parametrize(
    ("env_id", "domain", "draft"),
    [
        ("HarnessPlanning-v0", "planning", DraftParams({"easy": 0.3, "standard": 0.15, "hard": 0.05}, 0.25)),
        (
            "HarnessMultiTool-v0",
            "multi_tool",
            DraftParams({"easy": 0.25, "standard": 0.1, "hard": 0.05}, 0.5, p_tool_correct=0.6),
        ),
    ],
)
def test_calibrate_recovers_a_known_simulated_profile(env_id, domain, draft):
    profile = _known(domain, draft)
    measured, estimates = calibrate_env(env_id, executor_profile=profile, probes=300, seed=0)
    truth = truth_of(profile.domain(domain))
    covered = [name for name, e in estimates.items() if e.covers(truth[name])]
    missed = {name: (truth[name], estimates[name]) for name in estimates if name not in covered}
    assert len(covered) >= 0.9 * len(estimates), missed
    # the written profile holds the point estimates
    assert measured.mechanism.p_fix["localised"] == pytest.approx(estimates["p_fix[localised]"].value)
    assert measured.draft.flaw_weights == profile.domain(domain).draft.flaw_weights


def test_wilson_interval():
    e = wilson(45, 100)
    assert e.low < 0.45 < e.high and e.low == pytest.approx(0.3561, abs=1e-3)
    assert wilson(0, 0).n == 0 and (wilson(0, 0).low, wilson(0, 0).high) == (0.0, 1.0)


def test_cli_writes_a_loadable_profile_and_prints_a_table(tmp_path, capsys):
    out = tmp_path / "mine.json"
    assert main(["calibrate", "--env", "HarnessPlanning-v0", "--probes", "40", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "p_fix[localised]" in printed and "judge_tpr" in printed
    profile = ExecutorProfile.load(out)
    assert set(profile.domains) == {"planning"}
    assert json.loads(out.read_text())["name"] == "mine"
