"""The protocol end to end at toy size: legal actions only, train/evaluate commands, the bench report."""

from __future__ import annotations

import csv
import json
import re

import minari
import numpy as np
import pytest

from baselines.train import ALGOS, train
from harness_gym.bench.report import HEADINGS, fmt_ci, fmt_signed
from harness_gym.bench.runner import BenchConfig, run
from harness_gym.cli.main import main
from harness_gym.datasets.collect import CollectConfig, collect
from harness_gym.datasets.d3rlpy_bridge import quiet_d3rlpy
from harness_gym.evaluation.d3rlpy_policy import MaskedPolicy
from harness_gym.evaluation.headroom import Protocol, measure, paired_gap
from harness_gym.evaluation.protocol import evaluate
from harness_gym.policies.scripted import make_policy

PLANNING = "HarnessPlanning-v0"


@pytest.fixture(scope="module")
def buffer(tmp_path_factory):
    root = tmp_path_factory.mktemp("datasets")
    collect(
        CollectConfig(PLANNING, "mixed", 80, "harness/planning/tiny-v0", root=str(root), show_progress=False)
    )
    return root, minari.load_dataset(str(root / "harness/planning/tiny-v0"))


@pytest.mark.parametrize("algo", ALGOS)
def test_trained_policies_only_take_legal_actions(buffer, algo):
    quiet_d3rlpy()
    model = train(algo, buffer[1], seed=0, n_steps=5)
    # strict=True turns any masked action into an InvalidActionError
    results = evaluate(MaskedPolicy(model, algo), PLANNING, seeds=(0,), rollouts=1, strict=True)
    assert len(results) == 20


@pytest.mark.parametrize("name", ["base", "exploratory", "forced-check", "random"])
def test_scripted_policies_only_take_legal_actions(name):
    results = evaluate(make_policy(name, PLANNING), PLANNING, seeds=(0,), rollouts=1, strict=True)
    assert len(results) == 20


def test_cli_train_then_evaluate_a_saved_model(buffer, tmp_path, capsys):
    root, _ = buffer
    model = tmp_path / "awr.d3"
    argv = ["train", "--algo", "awr", "--dataset", "harness/planning/tiny-v0", "--root", str(root)]
    assert main([*argv, "--steps", "5", "--out", str(model)]) == 0
    assert model.exists()
    out = tmp_path / "eval.json"
    assert main(["evaluate", "--env", PLANNING, "--policy", str(model), "--out", str(out)]) == 0
    assert "episodes=180" in capsys.readouterr().out
    assert len(json.loads(out.read_text())) == 180
    # one saved model per seed: the model of seed s plays seed s
    per_seed = ["evaluate", "--env", PLANNING, "--policy", str(model), str(model), "--rollouts", "1"]
    assert main([*per_seed, "--seeds", "0", "1", "--quiet"]) == 0
    assert "episodes=40" in (printed := capsys.readouterr().out) and "(one model per seed)" in printed
    with pytest.raises(SystemExit, match="2 model files for seeds"):
        main([*per_seed, "--seeds", "0", "1", "2"])
    with pytest.raises(SystemExit, match="no dataset"):
        main(
            [
                "train",
                "--algo",
                "awr",
                "--dataset",
                "harness/planning/none-v0",
                "--root",
                str(root),
                "--out",
                "x",
            ]
        )


def test_bench_writes_the_report(tmp_path):
    config = BenchConfig(
        settings=(PLANNING,),
        seeds=(0,),
        rollouts=1,
        episodes_per_task=1,
        algos=("awr", "bc", "dqn"),
        n_steps=5,
        n_boot=200,
        out=str(tmp_path / "results"),
        show_progress=False,
    )
    results = run(config)
    policies = results["settings"][PLANNING]["compare"]["policies"]
    # stochastic learners in both modes (sampled under their name), Q-learners greedy only
    assert set(policies) == {"base", "forced-check", "awr", "bc", "awr-greedy", "bc-greedy", "dqn"}
    assert all(p["pairs"] == 20 for p in policies.values())
    scores = results["scores"][PLANNING]["policies"]  # the results schema: per-seed scores and episodes
    assert set(scores) == set(policies) and all(set(s["seed_scores"]) == {"0"} for s in scores.values())
    assert all(len(s["episode_G"]) == 20 for s in scores.values())
    assert set(results["settings"][PLANNING]["pass_k"]) == set(policies)  # rollouts=1: pass^1 only
    assert all(set(by_k) == {"1"} for by_k in results["settings"][PLANNING]["pass_k"].values())
    aggregate = json.loads((tmp_path / "results" / "results.json").read_text())["aggregate"]
    assert aggregate["runs_per_policy"] == 1 and set(aggregate["metrics"]) == set(policies)
    assert ("awr", "bc") in {(p["x"], p["y"]) for p in aggregate["improvement"]}
    for name in ("report.md", "results.json", "summary.csv"):
        assert (tmp_path / "results" / name).exists()
    # every evaluated policy's first evaluation episodes are kept, and shown in view.html
    lines = (tmp_path / "results" / "episodes" / f"{PLANNING}.jsonl").read_text().splitlines()
    kept = [json.loads(line) for line in lines]
    assert {r["policy"] for r in kept} == set(policies)
    assert all(sum(r["policy"] == name for r in kept) == config.view_episodes for name in policies)
    assert all(r["step_records"][-1]["action"] in {"SUBMIT"} or r["steps"] == 12 for r in kept)
    page = (tmp_path / "results" / "view.html").read_text()
    for name in policies:
        shown = re.findall(
            rf'data-policy="{re.escape(name)}"[^>]*><div class="head"><b>{re.escape(name)} seed', page
        )
        assert len(shown) == config.view_episodes
    # off-policy evaluation: every trained acting policy and seed, each estimator beside the truth
    ope = results["settings"][PLANNING]["ope"]
    assert set(ope) == set(policies) - {"base", "forced-check"}
    keys = {"true", "true_se", "fqe", "is", "wis", "pdis", "dr", "own_q", "ess"}
    for name, per_seed in ope.items():
        assert set(per_seed) == {"0"} and set(per_seed["0"]) == keys
        entry = per_seed["0"]
        assert 0.0 <= entry["true"] <= 1.0 and entry["true_se"] >= 0.0 and entry["ess"] >= 0.0
        assert all(isinstance(entry[k], float) for k in ("fqe", "is", "pdis", "dr"))
        assert (entry["own_q"] is None) == (name != "dqn")  # only the Q-learner has its own values
    assert "ope_s" in results["settings"][PLANNING]["timings"]
    assert "## Off-policy evaluation" in (tmp_path / "results" / "report.md").read_text()
    rows = list(csv.DictReader((tmp_path / "results" / "summary.csv").open()))
    assert {row["policy"] for row in rows} == set(policies)
    # the state-dependence gap: expert and open-loop on the same episodes, as headroom measures them
    setting = results["settings"][PLANNING]
    measured = measure(PLANNING, ("expert", "open-loop"), Protocol(seeds=(0,), rollouts=1))
    expert, open_loop = ([r["G"] for r in measured[name]] for name in ("expert", "open-loop"))
    gap = setting["state_dependence"]
    tasks = [r["task_id"] for r in measured["expert"]]
    expected = paired_gap(expert, open_loop, clusters=tasks)
    assert (gap["gap"], gap["ci_low"], gap["ci_high"]) == pytest.approx(expected)
    assert gap["expert_G"] == pytest.approx(np.mean(expert)) and gap["pairs"] == 20
    assert gap["open_loop_G"] == pytest.approx(np.mean(open_loop))
    # G and tokens per episode of every evaluated policy; the gap's two are references, not in the tables
    tokens = setting["tokens"]
    assert set(tokens) == set(policies) | {"expert", "open-loop"}
    assert {name for name, point in tokens.items() if point["kind"] == "learner"} == set(policies) - {
        "base",
        "forced-check",
    }
    assert tokens["expert"]["G"] == pytest.approx(gap["expert_G"]) and tokens["expert"]["tokens"] > 0
    assert all(tokens[name]["G"] == pytest.approx(policies[name]["G"]) for name in policies)
    report = (tmp_path / "results" / "report.md").read_text()
    section = report.split(f"## {HEADINGS['state_dependence']}\n", 1)[1]
    assert f"| {fmt_signed(gap['gap'])} | {fmt_ci(gap['ci_low'], gap['ci_high'])} | 20 |" in section
    assert "![g_vs_tokens](fig_g_vs_tokens.png)" in report
    # learner diagnostics of every evaluated policy, the gap's two included, from its evaluation episodes
    diagnostics = setting["diagnostics"]
    assert set(diagnostics) == set(policies) | {"expert", "open-loop"}
    assert all(d["episodes"] == 20 and 0.0 <= d["mi_bits"] <= np.log2(3) for d in diagnostics.values())
    assert diagnostics["open-loop"]["top_share"] == 1.0  # a fixed string
    section = report.split(f"## {HEADINGS['diagnostics']}\n", 1)[1]
    assert f"| expert | {diagnostics['expert']['top_share']:.1%} |" in section
    assert (tmp_path / "results" / "fig_g_vs_tokens.png").stat().st_size > 0
    with pytest.raises(ValueError, match="unknown setting"):
        run(BenchConfig(settings=("Nope-v0",), out=str(tmp_path / "x")))
