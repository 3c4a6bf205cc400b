"""Bring your own algorithm: ``evaluate_policy``, the plain-Minari loop, results files, ``leaderboard``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import minari
import numpy as np
import pytest

import harness_gym
from harness_gym.bench.runner import BenchConfig, run
from harness_gym.cli.main import main
from harness_gym.datasets.collect import CollectConfig, collect
from harness_gym.evaluation import results
from harness_gym.evaluation.aggregate import summarize
from harness_gym.evaluation.scoring import PolicyError, evaluate_policy, protocol_seeds
from harness_gym.policies.scripted import make_policy

PLANNING = "HarnessPlanning-v0"
DB = "HarnessDBBench-v0"
ROOT = Path(__file__).resolve().parents[1]
ONE_SEED = {"seeds": (0,), "rollouts": 1}


@pytest.fixture(scope="module")
def datasets(tmp_path_factory) -> Path:
    """A small planning buffer under the README's dataset id, in a Minari root of its own."""
    root = tmp_path_factory.mktemp("datasets")
    for behaviour in ("mixed", "medium-expert"):  # the README's example reads the medium-expert tier
        dataset_id = f"harness/planning/{behaviour}-v0"
        collect(CollectConfig(PLANNING, behaviour, 80, dataset_id, root=str(root), show_progress=False))
    return root


def filtered_bc(dataset) -> object:
    """Behaviour cloning of the best quarter of the episodes with a linear score per action (numpy)."""
    episodes = sorted(dataset.iterate_episodes(), key=lambda ep: -ep.infos["G"][-1])
    best = episodes[: len(episodes) // 4]
    X = np.concatenate([ep.observations[:-1] for ep in best])
    Y = np.eye(dataset.action_space.n)[np.concatenate([ep.actions for ep in best])]
    W = np.linalg.lstsq(X, Y, rcond=None)[0]

    def policy(obs, mask):
        return int(np.where(mask, obs @ W, -np.inf).argmax())

    return policy


@pytest.fixture(scope="module")
def bench_file(tmp_path_factory) -> Path:
    """A small bench's results.json (one seed, one rollout: the protocol of ``ONE_SEED``)."""
    out = tmp_path_factory.mktemp("bench")
    config = BenchConfig(
        settings=(PLANNING,),
        episodes_per_task=1,
        algos=("bc",),
        act=("sample",),
        n_steps=5,
        n_boot=200,
        curve_points=2,
        out=str(out),
        show_progress=False,
        **ONE_SEED,
    )
    run(config)
    return out / "results.json"


def test_readme_worked_example_runs_as_written(datasets, tmp_path, monkeypatch, capsys) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Evaluate your own algorithm\n", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(datasets))
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    score = namespace["score"]
    assert len(score.episodes) == 180 and score.seeds == (0, 1, 2) and score.delta_G is not None
    assert "vs Base" in capsys.readouterr().out
    doc = results.load(tmp_path / "mine.json")
    assert set(doc["scores"][PLANNING]["policies"]) == {"base", "filtered-bc"}
    assert score.delta_G.low > 0  # even from this small buffer, filtered BC beats Base


def test_outside_policy_joins_the_bench_in_the_leaderboard(datasets, bench_file, tmp_path, capsys) -> None:
    policy = filtered_bc(minari.load_dataset(str(datasets / "harness/planning/mixed-v0")))
    score = evaluate_policy(policy, PLANNING, name="my-fbc", **ONE_SEED)
    assert len(score.episodes) == len(score.base_episodes) == 20
    assert set(score.seed_scores) == {0} and score.p_value is not None
    mine = score.write_results(tmp_path / "mine.json")
    out = tmp_path / "board"
    assert main(["leaderboard", str(bench_file), str(mine), "--out", str(out), "--reps", "200"]) == 0
    printed = capsys.readouterr().out
    table = (out / "leaderboard.md").read_text()
    for name in ("my-fbc", "bc", "base", "forced-check"):
        assert f"| {name} |" in table and f"| {name} |" in printed
    merged = results.load(out / "results.json")
    assert set(merged["scores"][PLANNING]["policies"]) == {"base", "forced-check", "bc", "my-fbc"}
    assert merged["policies"]["my-fbc"] == {"kind": "outside", "per_seed_models": False}
    # one policy playing every seed has its episode-level interval, even from one seed; a learner does not
    metrics = merged["aggregate"]["metrics"]
    assert metrics["my-fbc"]["interval"] == "episodes" and metrics["my-fbc"]["iqm"]["ci_low"] is not None
    assert metrics["bc"]["interval"] is None and metrics["bc"]["iqm"]["ci_low"] is None
    assert {"aggregate", "improvement", "performance_profile"} <= {p.stem[4:] for p in out.glob("fig_*.png")}


def test_leaderboard_of_the_bench_file_reproduces_its_aggregate(bench_file, tmp_path) -> None:
    from harness_gym.bench.leaderboard import leaderboard

    written = json.loads(bench_file.read_text())
    assert written["smoke"] is False and written["schema"] == results.SCHEMA
    again = leaderboard([bench_file], reps=200, poi_reps=200)["aggregate"]
    assert again["metrics"] == written["aggregate"]["metrics"]
    assert again["improvement"] == written["aggregate"]["improvement"]
    assert again == json.loads(json.dumps(summarize(results.load(bench_file), 200, 200)))


def test_leaderboard_refuses_other_protocols_in_one_line(bench_file, tmp_path, capsys) -> None:
    other = evaluate_policy(make_policy("forced-check", PLANNING), PLANNING, seeds=(0, 1), rollouts=1)
    path = other.write_results(tmp_path / "two-seeds.json")
    assert main(["leaderboard", str(bench_file), str(path), "--no-figures"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "another protocol" in err and "seeds" in err
    broken = json.loads(path.read_text())
    broken["scores"][PLANNING]["policies"]["base"]["seed_scores"]["0"] += 5.0
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    assert main(["leaderboard", str(tmp_path / "broken.json")]) == 1
    assert "seed 0 scores" in capsys.readouterr().err
    (tmp_path / "old.json").write_text(json.dumps({"settings": {}}))
    assert main(["leaderboard", str(tmp_path / "old.json")]) == 1
    assert "no 'schema' key" in capsys.readouterr().err


def test_a_policy_missing_a_setting_is_named_or_the_settings_narrowed(bench_file, tmp_path, capsys) -> None:
    """The outside policy is scored on a setting the bench file lacks: the bench's learners miss it."""
    explorer = make_policy("exploratory", PLANNING)
    files = [str(bench_file)]
    for env_id in (PLANNING, DB):
        score = evaluate_policy(explorer, env_id, name="explorer", **ONE_SEED)
        files.append(str(score.write_results(tmp_path / f"{env_id}.json")))
    assert main(["leaderboard", *files, "--no-figures"]) == 0
    table = capsys.readouterr().out
    assert "2 settings" in table and "Left out: " in table and "bc (no scores on HarnessDBBench-v0" in table
    assert "| explorer |" in table and "| base |" in table and "| bc |" not in table
    assert main(["leaderboard", *files, "--no-figures", "--missing", "drop-setting"]) == 0
    table = capsys.readouterr().out
    assert "1 setting (HarnessPlanning-v0)" in table and "| explorer |" in table and "| bc |" in table
    assert "Left out: setting HarnessDBBench-v0 (no scores for " in table


def test_plain_minari_loop_over_protocol_seeds_agrees_exactly(datasets) -> None:
    """The documented loop on Minari's eval env plays the same episodes as ``evaluate_policy``."""
    dataset = minari.load_dataset(str(datasets / "harness/planning/mixed-v0"))
    policy = filtered_bc(dataset)
    sampler = make_policy("exploratory", PLANNING)  # draws from the episode's generator
    for player in (policy, sampler):
        env = dataset.recover_environment(eval_env=True)
        G = []
        for ep in harness_gym.protocol_seeds(PLANNING, seeds=(0, 1), rollouts=1):
            obs, info = env.reset(seed=ep.seed, options=ep.options)
            rng, done = ep.rng(), False
            while not done:
                mask = info["action_mask"]
                action = player.act(obs, mask, rng) if hasattr(player, "act") else player(obs, mask)
                obs, _, terminated, truncated, info = env.step(action)
                done = terminated or truncated
            G.append(info["G"])
        assert np.mean(G) == evaluate_policy(player, PLANNING, seeds=(0, 1), rollouts=1, base=False).G


def test_protocol_seeds_are_in_protocol_order() -> None:
    episodes = protocol_seeds(PLANNING, seeds=(2, 0), rollouts=2)
    assert len(episodes) == 20 * 2 * 2 and len({ep.seed for ep in episodes}) == len(episodes)
    assert [ep.protocol_seed for ep in episodes[:40]] == [2] * 40
    assert [ep.rollout for ep in episodes[:4]] == [0, 1, 0, 1]
    assert episodes[0].task_id == episodes[1].task_id != episodes[2].task_id


def test_one_policy_per_seed_plays_its_own_seed() -> None:
    players = [make_policy("base", PLANNING), make_policy("forced-check", PLANNING)]
    score = evaluate_policy(players, PLANNING, seeds=(0, 1), rollouts=1, name="mixed")
    by_seed = {s: [r.G for r in score.episodes if r.seed == s] for s in (0, 1)}
    base = evaluate_policy(players[0], PLANNING, seeds=(0,), rollouts=1, base=False)
    forced = evaluate_policy(players[1], PLANNING, seeds=(1,), rollouts=1, base=False)
    assert by_seed[0] == [r.G for r in base.episodes] and by_seed[1] == [r.G for r in forced.episodes]
    # a seed's score is the normalised mean G of that seed's episodes alone (its model's), never of all
    from harness_gym.evaluation.reference_scores import normalized_score

    means = {s: sum(g) / len(g) for s, g in by_seed.items()}
    assert means[0] != means[1]
    assert score.seed_scores == {s: pytest.approx(normalized_score(PLANNING, means[s])) for s in (0, 1)}
    assert score.per_seed_models and score.to_results()["policies"]["mixed"]["per_seed_models"]
    with pytest.raises(PolicyError, match="2 policies for 3 seeds"):
        evaluate_policy(players, PLANNING, seeds=(0, 1, 2))
    with pytest.raises(PolicyError, match="cannot evaluate 42"):
        evaluate_policy(42, PLANNING, **ONE_SEED)


def test_evaluate_plays_a_trained_d3rlpy_algorithm(datasets) -> None:
    from baselines.train import train
    from harness_gym.datasets.d3rlpy_bridge import quiet_d3rlpy

    quiet_d3rlpy()
    model = train("bc", minari.load_dataset(str(datasets / "harness/planning/mixed-v0")), seed=0, n_steps=5)
    sampled = evaluate_policy(model, PLANNING, base=False, **ONE_SEED)
    greedy = evaluate_policy(model, PLANNING, act="greedy", base=False, **ONE_SEED)
    assert (sampled.act, greedy.act) == ("sample", "greedy") and len(sampled.episodes) == 20


def make_policy_for_seed(seed: int):
    """A factory for ``harness-gym evaluate --policy tests.test_own_algorithm:make_policy_for_seed``."""
    return make_policy("forced-check" if seed else "base", PLANNING)


SAME = make_policy("forced-check", PLANNING)


def same_policy_for_every_seed(seed: int):
    """A factory returning one object whatever the seed: one policy, not one model per seed."""
    return SAME


def test_cli_evaluate_takes_a_factory_per_seed_and_writes_results(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    out = tmp_path / "mine.json"
    argv = ["evaluate", "--env", PLANNING, "--policy", f"{__name__}:make_policy_for_seed", "--quiet"]
    assert main([*argv, "--seeds", "0", "1", "--rollouts", "1", "--results-out", str(out)]) == 0
    printed = capsys.readouterr().out
    players = [make_policy_for_seed(0), make_policy_for_seed(1)]
    score = evaluate_policy(players, PLANNING, seeds=(0, 1), rollouts=1, name="policy_for_seed")
    assert score.summary() in printed and "(one model per seed)" in printed
    doc = results.load(out)
    assert doc["policies"]["policy_for_seed"] == {"kind": "outside", "per_seed_models": True}
    assert not (tmp_path / "mine.json.partial").exists()
    # a factory returning the same object for every seed is one policy, as evaluate_policy(policy) has it
    argv = ["evaluate", "--env", PLANNING, "--policy", f"{__name__}:same_policy_for_every_seed", "--quiet"]
    assert main([*argv, "--seeds", "0", "1", "--rollouts", "1"]) == 0
    one = evaluate_policy(SAME, PLANNING, seeds=(0, 1), rollouts=1, name="same_policy_for_every_seed")
    assert one.summary() in capsys.readouterr().out and "(one policy for every seed)" in one.summary()
    with pytest.raises(SystemExit, match="cannot load policy factory 'nomodule:nothing'"):
        main(["evaluate", "--env", PLANNING, "--policy", "nomodule:nothing", "--seeds", "0"])


def test_bench_algos_flag_runs_a_subset(monkeypatch, tmp_path, capsys) -> None:
    import harness_gym.bench.runner as runner

    seen = []
    done = {"timings": {"total_s": 0.0, "peak_rss_mb": 0.0}, "settings": {}}
    monkeypatch.setattr(runner, "run", lambda config: seen.append(config) or done)
    assert main(["bench", "--quick", "--algos", "bc", "dqn", "--out", str(tmp_path), "--quiet"]) == 0
    assert seen[0].algos == ("bc", "dqn") and seen[0].smoke
    with pytest.raises(SystemExit, match="nope"):
        main(["bench", "--algos", "nope", "--out", str(tmp_path)])


def test_import_harness_gym_stays_light_until_evaluate_policy_is_used() -> None:
    import subprocess

    heavy = ("torch", "d3rlpy", "minari", "scipy", "jsonschema", "harness_gym.evaluation.scoring")
    code = (
        f"import sys, harness_gym; before = sorted(m for m in {heavy!r} if m in sys.modules); "
        "harness_gym.evaluate_policy; print(before, 'harness_gym.evaluation.scoring' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] True"
