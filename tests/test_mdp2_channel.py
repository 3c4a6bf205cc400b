"""MDP v2 travels one way: ``obs_layout`` is a field of the collection and bench configs (and a flag of their
commands), reaches every environment they make, and selects the v2 task set's ids and reference scores;
layout v1 keeps every published key, env spec and table as it was."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import minari
import pytest

from harness_gym.bench.runner import BenchConfig, LearningCurves, gap_policies, run
from harness_gym.cli.main import main
from harness_gym.core.state import LAYOUT_VERSIONS, LAYOUTS
from harness_gym.datasets.collect import CollectConfig, CollectError, collect, task_ids
from harness_gym.envs.registry import env_class
from harness_gym.evaluation import reference_scores, results
from harness_gym.evaluation.headroom import Protocol, reference_table
from harness_gym.policies.open_loop import open_loop_table

MULTI_TOOL = "HarnessMultiTool-v0"
LONG_MEMORY = "HarnessLongMemory-v0"


def _collected(tmp_path, obs_layout: str) -> minari.MinariDataset:
    config = CollectConfig(
        MULTI_TOOL,
        "mixed",
        4,
        f"harness/multi_tool/{obs_layout}-v0",
        root=str(tmp_path),
        show_progress=False,
        obs_layout=obs_layout,
    )
    collect(config)
    return minari.load_dataset(str(tmp_path / config.dataset_id))


def test_a_v2_collection_plays_v2_and_says_so(tmp_path) -> None:
    dataset = _collected(tmp_path, "v2")
    meta = dataset.storage.metadata
    assert dataset.spec.env_spec.kwargs["obs_layout"] == "v2"
    episode = next(iter(dataset.iterate_episodes()))
    assert episode.observations.shape[1] == len(LAYOUTS["v2"])
    assert meta["harness_layout_version"] == LAYOUT_VERSIONS["v2"]
    assert list(meta["harness_task_ids"]) == task_ids(MULTI_TOOL, "train", "v2")
    v2_tasks = env_class(MULTI_TOOL).domain_cls().tasks("v2")
    assert meta["harness_task_set_version"] == v2_tasks[0].version
    assert meta["harness_reference_table_version"] == reference_scores.reference_table_version("v2")
    limits = (meta["ref_min_score"], meta["ref_max_score"])
    assert limits == reference_scores.reference_scores(MULTI_TOOL, "v2")
    assert json.loads(meta["harness_config"])["obs_layout"] == "v2"


def test_layout_v1_keeps_the_published_keys_and_env_spec(tmp_path) -> None:
    dataset = _collected(tmp_path, "v1")
    assert "obs_layout" not in dataset.spec.env_spec.kwargs
    assert "obs_layout" not in json.loads(dataset.storage.metadata["harness_config"])
    assert dataset.storage.metadata["harness_layout_version"] == LAYOUT_VERSIONS["v1"]
    assert dataset.storage.metadata["harness_reference_table_version"] == (
        reference_scores.reference_table_version()
    )
    assert "obs_layout" not in CollectConfig(MULTI_TOOL, "mixed", 4, "harness/x/y-v0").content_key()


def test_an_unknown_layout_is_refused_by_name(tmp_path) -> None:
    config = CollectConfig(MULTI_TOOL, "mixed", 4, "harness/x/y-v0", root=str(tmp_path), obs_layout="v3")
    with pytest.raises(CollectError, match="obs_layout 'v3'"):
        collect(config)
    with pytest.raises(ValueError, match="obs_layout 'v3'"):
        run(BenchConfig(settings=(MULTI_TOOL,), obs_layout="v3", out=str(tmp_path / "b")))
    with pytest.raises(ValueError, match="unknown obs_layout 'v3'"):
        reference_scores.reference_table("v3")


def test_the_collect_command_passes_the_layout(tmp_path) -> None:
    dataset_id = "harness/multi_tool/cli-v0"
    args = ["collect", "--env", MULTI_TOOL, "--episodes", "2", "--dataset-id", dataset_id]
    assert main([*args, "--root", str(tmp_path), "--quiet", "--obs-layout", "v2"]) == 0
    assert minari.load_dataset(str(tmp_path / dataset_id)).spec.env_spec.kwargs["obs_layout"] == "v2"


def test_the_bench_config_passes_the_layout_to_every_env_and_record() -> None:
    assert BenchConfig(obs_layout="v2").env_kwargs()["obs_layout"] == "v2"
    assert "obs_layout" not in BenchConfig().env_kwargs()
    assert results.simulator(None, "default", "v2")["obs_layout"] == "v2"
    assert "obs_layout" not in results.simulator(None, "default")  # v1 records as published
    random, expert = reference_scores.reference_scores(MULTI_TOOL, "v2")
    assert results.setting(MULTI_TOOL, ["t"], "v2")["reference"] == {"random": random, "expert": expert}
    assert reference_scores.reference_scores(MULTI_TOOL, "v2") != reference_scores.reference_scores(
        MULTI_TOOL
    )
    gap = gap_policies(MULTI_TOOL, "v2")
    assert gap["open-loop"].string == open_loop_table("v2")["strings"][MULTI_TOOL]["string"]


def test_learning_curves_count_the_validation_tasks_of_the_layout_played(monkeypatch) -> None:
    """Long memory's v2 task set has 15 validation tasks, v1's 16: a curve's rollouts follow the task set
    the curve plays."""
    import harness_gym.bench.runner as runner
    import harness_gym.evaluation.protocol as protocol
    from harness_gym.core.task import VALIDATION, select

    tasks = {
        layout: select(env_class(LONG_MEMORY).domain_cls().tasks(layout), VALIDATION) for layout in LAYOUTS
    }
    assert runner.curve_rollouts(len(tasks["v1"])) != runner.curve_rollouts(len(tasks["v2"]))
    played: list[dict] = []

    def evaluate(policy, env_id, **kwargs):
        played.append(kwargs)
        return [SimpleNamespace(G=0.5)]

    monkeypatch.setattr(protocol, "evaluate", evaluate)
    monkeypatch.setattr(runner, "acting_policies", lambda algorithm, trained, act: [("a", object())])
    curves = LearningCurves(LONG_MEMORY, None, {"obs_layout": "v2"})
    curves.recorder(SimpleNamespace(name="a"), 0)(None, 1)
    assert played[0]["obs_layout"] == "v2"
    assert played[0]["rollouts"] == runner.curve_rollouts(len(tasks["v2"]))


def test_the_packaged_v2_table_is_this_simulators_measurement_on_planning() -> None:
    """The v2 ends are measured on v2 (rerun `harness-gym headroom --env all --policies random expert
    --write-reference-scores --obs-layout v2` whenever the simulator changes)."""
    packaged = reference_scores.reference_table("v2")
    assert packaged["protocol"] == {**Protocol().describe(), "obs_layout": "v2"}
    table = reference_table([MULTI_TOOL], Protocol())
    assert table["scores"][MULTI_TOOL] != packaged["scores"][MULTI_TOOL]  # v1's numbers differ
    from harness_gym.evaluation.headroom import REFERENCE_POLICY_NAMES, measure, reference_table_from

    measured = {MULTI_TOOL: measure(MULTI_TOOL, REFERENCE_POLICY_NAMES, Protocol(), obs_layout="v2")}
    assert (
        reference_table_from(measured, Protocol(), "v2")["scores"][MULTI_TOOL]
        == (packaged["scores"][MULTI_TOOL])
    )


def test_a_layout_without_a_measured_table_names_the_command(monkeypatch, tmp_path) -> None:
    monkeypatch.setitem(reference_scores.REFERENCE_FILES, "v2", tmp_path / "absent.json")
    reference_scores.reference_table.cache_clear()
    try:
        with pytest.raises(FileNotFoundError, match="--write-reference-scores --obs-layout v2"):
            reference_scores.reference_scores(MULTI_TOOL, "v2")
    finally:
        reference_scores.reference_table.cache_clear()


def test_the_evaluate_command_plays_and_normalises_on_the_layout_and_profile_given(tmp_path) -> None:
    out = tmp_path / "expert.json"
    args = ["evaluate", "--env", MULTI_TOOL, "--policy", "expert", "--seeds", "0", "--rollouts", "1"]
    assert (
        main(
            [*args, "--quiet", "--obs-layout", "v2", "--executor-profile", "weak", "--results-out", str(out)]
        )
        == 0
    )
    document = json.loads(out.read_text())
    simulator = document["simulator"]
    assert simulator["obs_layout"] == "v2"
    assert simulator["profile"] == results.simulator(None, "weak")["profile"]
    setting = document["scores"][MULTI_TOOL]
    assert setting["tasks"] == task_ids(MULTI_TOOL, "eval", "v2")
    random, expert = reference_scores.reference_scores(MULTI_TOOL, "v2")
    assert setting["reference"] == {"random": random, "expert": expert}
    G = sum(setting["policies"]["expert"]["episode_G"]) / len(setting["policies"]["expert"]["episode_G"])
    score = setting["policies"]["expert"]["seed_scores"]["0"]
    assert score == pytest.approx(100 * (G - random) / (expert - random), abs=1e-3)


def test_v1_and_v2_results_never_merge() -> None:
    def document(obs_layout: str) -> dict:
        setting = results.setting(MULTI_TOOL, ["t"], obs_layout)
        episode = SimpleNamespace(seed=0, task_id="t", rollout=0, G=0.5)
        setting["policies"]["base"] = results.runs(MULTI_TOOL, [episode], ["t"], [0], 1, obs_layout)
        protocol = results.protocol("eval", [0], 1)
        simulator = results.simulator(None, "default", obs_layout)
        return results.document(
            protocol, simulator, {"base": results.policy_meta("scripted")}, {MULTI_TOOL: setting}
        )

    with pytest.raises(results.ResultsError, match="simulator"):
        results.merge([("v1", document("v1")), ("v2", document("v2"))])
    assert results.merge([("a", document("v2")), ("b", document("v2"))])["simulator"]["obs_layout"] == "v2"


def test_a_model_trained_on_v2_at_a_price_says_so_and_plays_only_v2(tmp_path, capsys) -> None:
    """``harness-gym train`` reads the layout from the dataset and relabels at ``--token-price``; the model
    file records both, and ``evaluate`` refuses it on the other layout."""
    from harness_gym.evaluation.model_files import read_provenance

    dataset_id = "harness/multi_tool/v2-v0"
    config = CollectConfig(MULTI_TOOL, "mixed", 8, dataset_id, root=str(tmp_path), show_progress=False)
    collect(dataclasses.replace(config, obs_layout="v2"))
    model = tmp_path / "bc.d3"
    train = ["train", "--algo", "bc", "--dataset", dataset_id, "--root", str(tmp_path), "--steps", "3"]
    assert main([*train, "--out", str(model), "--token-price", "0.05"]) == 0
    provenance = read_provenance(model)
    assert (provenance.layout_version, provenance.features) == (LAYOUT_VERSIONS["v2"], LAYOUTS["v2"])
    assert provenance.token_price == 0.05
    evaluate = ["evaluate", "--env", MULTI_TOOL, "--policy", str(model), "--seeds", "0", "--rollouts", "1"]
    assert main([*evaluate, "--quiet", "--no-base", "--obs-layout", "v2"]) == 0
    assert "episodes=20" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="obs_layout 'v1'"):
        main([*evaluate, "--quiet", "--no-base"])
    v1_id = "harness/multi_tool/v1-v0"
    collect(dataclasses.replace(config, dataset_id=v1_id))
    with pytest.raises(SystemExit, match="no per-step token counts"):
        main([*train[:4], v1_id, *train[5:], "--out", str(tmp_path / "x.d3"), "--token-price", "0.05"])
