"""Learner diagnostics: the top-string share and the action-verdict MI, and their report section."""

from __future__ import annotations

import json
import math
from itertools import product
from pathlib import Path

import numpy as np
import pytest

from harness_gym.bench.report import HEADINGS, write_report
from harness_gym.bench.report.access import _label
from harness_gym.evaluation.diagnostics import (
    VERDICTS,
    episode_play,
    mutual_information,
    plug_in_bias,
    policy_diagnostics,
)
from harness_gym.policies.open_loop import LETTERS

PLANNING = "HarnessPlanning-v0"


def _step(action: str, check: bool | None = None) -> dict:
    """A step record; ``check`` True: a passing CHECK report, False: a failing one."""
    record = {"action": action, "failure": check is False}
    if check is not None:
        record["check"] = {"coverage": 1.0 if check else 0.5}
    return record


def test_episode_play_reads_the_last_verdict_before_each_step() -> None:
    steps = [
        _step("DRAFT"),
        _step("CHECK", False),
        _step("REVISE"),
        _step("CHECK", True),
        _step("DRAFT"),  # a new draft does not reset the verdict
        _step("SUBMIT"),
    ]
    string, pairs = episode_play(steps)
    assert string == "DCVCDS"
    assert [v for v, _ in pairs] == ["none", "none", "fail", "fail", "pass", "pass"]
    assert episode_play([_step("CHECK"), _step("SUBMIT")])[1][1][0] == "none"  # no report: no verdict


def test_mi_is_zero_when_the_action_ignores_the_verdict() -> None:
    pairs = list(product(VERDICTS, "DCVS")) * 5  # every action equally often under every verdict
    assert mutual_information(pairs) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("k", [2, 3])
def test_mi_of_a_policy_that_copies_the_verdict_is_log2_k(k: int) -> None:
    copy = dict(zip(VERDICTS, "SVC", strict=True))
    pairs = [(v, copy[v]) for v in VERDICTS[:k]] * 7
    mi = mutual_information(pairs)
    assert 0 < mi <= math.log2(k) + 1e-12 and mi == pytest.approx(math.log2(k))
    noisy = [*pairs, *((v, "D") for v in VERDICTS[:k])]  # a little noise: still positive, below the bound
    assert 0 < mutual_information(noisy) < math.log2(k)


def test_episodes_that_revise_on_fail_and_submit_on_pass_carry_the_verdict() -> None:
    """After the check the action copies the verdict (REVISE on fail, SUBMIT on pass)."""
    failing = [_step("DRAFT"), _step("CHECK", False), _step("REVISE"), _step("CHECK", True), _step("SUBMIT")]
    passing = [_step("DRAFT"), _step("CHECK", True), _step("SUBMIT")]
    d = policy_diagnostics([episode_play(failing), episode_play(passing)] * 10)
    # after a check: (fail, V), (fail, C), (pass, S), (pass, S): the action names the verdict, 1 bit
    assert d["top_share"] == 0.5 and d["mi_checked_bits"] == pytest.approx(1.0)
    assert 0 < d["mi_bits"] <= math.log2(3)


def test_plug_in_bias_shrinks_with_more_steps() -> None:
    pairs = list(product(VERDICTS, "DCVS"))
    assert plug_in_bias(pairs) == pytest.approx(6 / (2 * 12 * math.log(2)))
    assert plug_in_bias(pairs * 10) == pytest.approx(plug_in_bias(pairs) / 10)
    assert mutual_information([]) == 0.0 == plug_in_bias([])


def test_a_fixed_string_policy_has_share_one() -> None:
    fixed = [episode_play([_step("DRAFT"), _step("CHECK", i % 2 == 0), _step("SUBMIT")]) for i in range(6)]
    d = policy_diagnostics(fixed)
    assert d["top_string"] == "DCS" and d["top_share"] == 1.0 and d["episodes"] == 6
    # after the check the action does not depend on pass or fail; before it, only position varies
    assert d["mi_checked_bits"] == pytest.approx(0.0, abs=1e-12) and d["checked_steps"] == 6
    assert d["mi_bits"] > 0
    mixed = fixed + [episode_play([_step("DRAFT"), _step("SUBMIT")])] * 2
    assert policy_diagnostics(mixed)["top_share"] == pytest.approx(6 / 8)
    with pytest.raises(ValueError, match="no episodes"):
        policy_diagnostics([])


def test_a_real_open_loop_episode_gives_its_string() -> None:
    from harness_gym.evaluation.protocol import evaluate
    from harness_gym.policies.open_loop import OpenLoopPolicy

    policy = OpenLoopPolicy(PLANNING)
    plays = []
    evaluate(
        policy,
        PLANNING,
        seeds=(0,),
        rollouts=1,
        on_episode=lambda r: plays.append(episode_play(r["step_records"])),
    )
    d = policy_diagnostics(plays)
    assert d["top_string"] == policy.string + "S" and d["top_share"] == 1.0  # then it submits
    assert set(d["top_string"]) <= set(LETTERS)


def test_the_report_section_reads_its_numbers_from_results_json(tmp_path: Path) -> None:
    diagnostics = {
        "expert": policy_diagnostics(
            [episode_play([_step("DRAFT"), _step("CHECK", False), _step("REVISE")])]
        ),
        "awr": {
            "episodes": 60,
            "top_string": "DCS",
            "top_share": 0.95,
            "mi_bits": 0.0412,
            "mi_bias_bits": 0.0031,
            "steps": 180,
            "mi_checked_bits": 0.0052,
            "checked_steps": 60,
        },
    }
    results = {"settings": {PLANNING: {"diagnostics": diagnostics}}, "config": {}}
    write_report(results, tmp_path)
    stored = json.loads((tmp_path / "results.json").read_text())["settings"][PLANNING]["diagnostics"]
    report = (tmp_path / "report.md").read_text()
    section = report.split(f"## {HEADINGS['diagnostics']}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith(f"| {_label(PLANNING)} |")]
    assert len(rows) == len(stored)
    for row, (name, d) in zip(rows, stored.items(), strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == name and cells[3] == f"`{d['top_string']}`"
        assert float(cells[2].rstrip("%")) == pytest.approx(100 * d["top_share"], abs=0.05)
        assert float(cells[4]) == pytest.approx(d["mi_bits"], abs=5e-4)
        assert float(cells[6]) == pytest.approx(d["mi_checked_bits"], abs=5e-4)
        assert int(cells[7]) == d["episodes"] and int(cells[8]) == d["steps"]
    glossary = report.split("## Glossary", 1)[1]
    assert "**Top-string share**" in glossary and "**Verdict MI**" in glossary


def test_diagnostics_do_not_depend_on_the_order_episodes_arrive_in() -> None:
    """Ray delivers a setting's episodes in another order than local threads: the same episodes give the
    same numbers bit for bit, ties between strings included."""
    from harness_gym.evaluation.diagnostics import policy_diagnostics

    rng = np.random.default_rng(0)
    verdicts, letters = ("none", "pass", "fail"), "ODCRS"
    plays = []
    for _ in range(40):
        steps = [(verdicts[rng.integers(3)], letters[rng.integers(5)]) for _ in range(rng.integers(1, 9))]
        plays.append(("".join(letter for _, letter in steps), steps))
    plays += [("OS", [("none", "O"), ("none", "S")]), ("DS", [("none", "D"), ("pass", "S")])] * 3
    forward = policy_diagnostics(plays)
    for seed in range(5):
        order = np.random.default_rng(seed).permutation(len(plays))
        assert policy_diagnostics([plays[i] for i in order]) == forward
