"""The algorithm x tier suite on a tiny configuration: what it writes, its table's shape and its refusals."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from harness_gym.bench import tiers as tier_bench
from harness_gym.cli.main import main

TINY = replace(
    tier_bench.QUICK_TIERS,
    tiers=("random", "coverage"),
    algos=("bc", "cql"),
    episodes_per_task=1,
    n_steps=20,
    n_boot=50,
    workers=1,
    show_progress=False,
)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiers")
    return tier_bench.run(replace(TINY, out=str(out))), out


def test_the_suite_writes_its_table_report_and_figure(results):
    res, out = results
    assert sorted(p.name for p in out.iterdir()) == ["fig_tiers.png", "report.md", "results.json"]
    assert json.loads((out / "results.json").read_text())["table"] == res["table"]
    for scope in (res["table"]["aggregate"], res["table"]["settings"]["HarnessPlanning-v0"]):
        assert set(scope) == {"bc", "cql"}
        for algo in scope.values():
            assert set(algo) == {"random", "coverage"}
            for cell in algo.values():
                assert cell["ci_low"] <= cell["estimate"] <= cell["ci_high"]
    setting = res["settings"]["HarnessPlanning-v0"]
    assert setting["buffers"]["random"]["episodes"] == setting["buffers"]["coverage"]["episodes"] == 80
    report = (out / "report.md").read_text()
    assert "`harness-gym bench --tiers random coverage`" in report and "## HarnessPlanning-v0" in report


def test_value_errors_are_reported_for_the_same_policies_on_every_tier(results):
    res, _ = results
    ope = res["settings"]["HarnessPlanning-v0"]["ope"]
    for tier in ("random", "coverage"):
        assert set(ope[tier]) == {*tier_bench.OPE_POLICIES, "cql"}
    errors = tier_bench.ope_errors(res)
    assert set(errors) == {"random", "coverage"}
    assert {"fqe", "own_q:cql"} <= set(errors["coverage"])
    assert all(v is None or v >= 0 for by_tier in errors.values() for v in by_tier.values())


def test_bad_choices_are_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(ValueError, match="unknown tier"):
        tier_bench.validate(replace(TINY, tiers=("best",)))
    with pytest.raises(ValueError, match="unknown setting"):
        tier_bench.validate(replace(TINY, settings=("HarnessHumanEval-v0",)))
    with pytest.raises(SystemExit, match="drop --train-profile"):
        main(["bench", "--tiers", "random", "--train-profile", "hard", "--out", str(tmp_path)])
    with pytest.raises(SystemExit, match="unknown tier"):
        main(["bench", "--tiers", "best", "--out", str(tmp_path)])
