"""Learning curves: checkpoints of every training run, evaluated on a fixed episode set, in the report."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import require

require("d3rlpy")

import minari
import torch

from baselines.train import checkpoint_steps, n_train_steps
from harness_gym.bench.report import FIGURES, HEADINGS, markdown_tables, write_figures
from harness_gym.bench.runner import BenchConfig, LearningCurves, random_states_kept, run
from harness_gym.datasets.d3rlpy_bridge import quiet_d3rlpy, to_d3rlpy
from harness_gym.evaluation.engine import EngineConfig
from harness_gym.policies.algorithms import TrainingData, get

PLANNING = "HarnessPlanning-v0"
POINTS = BenchConfig().curve_points


def test_checkpoint_steps_are_evenly_spaced_and_end_at_the_total() -> None:
    assert checkpoint_steps(1000, 5) == [200, 400, 600, 800, 1000]
    assert checkpoint_steps(7, 5) == [1, 2, 4, 5, 7]
    assert checkpoint_steps(3, 5) == [1, 2, 3]
    with pytest.raises(ValueError, match=">= 1"):
        checkpoint_steps(0, 5)


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("bench") / "results"
    config = BenchConfig(
        settings=(PLANNING,),
        seeds=(0, 1),
        rollouts=1,
        episodes_per_task=1,
        algos=("awr", "dqn", "sac"),
        n_steps=7,  # not a multiple of the curve points: every run must still train 7 steps
        n_boot=200,
        out=str(out),
        show_progress=False,
        keep_datasets=True,
    )
    return run(config), out


def test_every_algo_and_seed_has_its_curve_at_its_own_steps(bench: tuple[dict[str, Any], Path]) -> None:
    results, out = bench
    setting = results["settings"][PLANNING]
    curves = setting["curves"]
    assert set(curves) == {"awr", "dqn", "sac"}
    data = to_d3rlpy(minari.load_dataset(str(out / "datasets" / "harness/planning/bench-mixed-v0")))
    paper_steps = n_train_steps("awr", data.dataset.transition_count)  # the paper's epochs, not n_steps
    assert paper_steps != 7
    for algo, total in (("awr", paper_steps), ("dqn", 7), ("sac", 7)):
        assert set(curves[algo]) == {"0", "1"}
        for points in curves[algo].values():
            assert [step for step, _ in points] == checkpoint_steps(total, POINTS)
            assert all(0.0 <= g <= 1.0 for _, g in points)
    assert setting["timings"]["curves_s"] > 0


def test_the_last_point_is_the_final_model_on_the_validation_episodes(
    bench: tuple[dict[str, Any], Path],
) -> None:
    """The last point of each run is its final model (retrained alike: curves do not change it) played on
    the validation tasks x ``curve_rollouts`` with the run's seed (sample mode for stochastic learners);
    the eval split never enters a curve."""
    import gymnasium as gym

    from harness_gym.bench.runner import CURVE_SPLIT, acting_policies, curve_rollouts
    from harness_gym.core.task import validation_ids
    from harness_gym.evaluation.protocol import evaluate

    results, out = bench
    setting = results["settings"][PLANNING]
    quiet_d3rlpy()
    dataset = minari.load_dataset(str(out / "datasets" / "harness/planning/bench-mixed-v0"))
    data = TrainingData(PLANNING, dataset, to_d3rlpy(dataset))
    tasks = gym.make(PLANNING, split=CURVE_SPLIT).unwrapped.tasks
    assert CURVE_SPLIT == "validation" and {t.split for t in tasks} == {"train"}
    assert {t.task_id for t in tasks} == validation_ids(gym.make(PLANNING, split="all").unwrapped.tasks)
    for algo in ("awr", "dqn", "sac"):
        algorithm = get(algo)
        for seed in (0, 1):
            trained = algorithm.train(data, seed=seed, n_steps=7)
            _, policy = acting_policies(algorithm, trained, ("sample",))[0]
            episodes = evaluate(
                policy, PLANNING, split=CURVE_SPLIT, seeds=(seed,), rollouts=curve_rollouts(len(tasks))
            )
            assert {r.task_id for r in episodes} == {t.task_id for t in tasks}
            last = setting["curves"][algo][str(seed)][-1][1]
            assert last == pytest.approx(np.mean([r.G for r in episodes]), abs=1e-9)


def test_curves_do_not_change_the_trained_model(bench: tuple[dict[str, Any], Path]) -> None:
    _, out = bench
    quiet_d3rlpy()
    dataset = minari.load_dataset(str(out / "datasets" / "harness/planning/bench-mixed-v0"))
    data = TrainingData(PLANNING, dataset, to_d3rlpy(dataset))
    curves = LearningCurves(PLANNING, EngineConfig(), {})
    for algorithm in (get("dqn"), get("awr-converged")):
        recorder = curves.recorder(algorithm, 2)
        with_curve = algorithm.train(data, seed=2, n_steps=6, curve_points=POINTS, on_checkpoint=recorder)
        without = algorithm.train(data, seed=2, n_steps=6)
        assert with_curve.model.grad_step == without.model.grad_step == 6
        assert with_curve.fingerprint == without.fingerprint
        assert [step for step, _ in curves.points[algorithm.name]["2"]] == checkpoint_steps(6, POINTS)


def test_random_states_kept_restores_every_global_generator() -> None:
    def seed_all() -> None:
        random.seed(1)
        np.random.seed(1)
        torch.manual_seed(1)

    def draws() -> tuple[float, float, float]:
        return random.random(), float(np.random.random()), float(torch.rand(1))

    seed_all()
    expected = draws()
    seed_all()
    with random_states_kept():
        draws()
    assert draws() == expected


# -- the report ------------------------------------------------------------------------------------
def _results(curves: dict[str, Any] | None) -> dict[str, Any]:
    setting: dict[str, Any] = {"compare": {"policies": {}}, "timings": {"curves_s": 3.25, "total_s": 9.0}}
    if curves is not None:
        setting["curves"] = curves
    return {"config": {}, "timings": {}, "settings": {PLANNING: setting}}


CURVES = {
    "awr": {
        "0": [[100, 0.2], [200, 0.4], [300, 0.5], [400, 0.55], [500, 0.6]],
        "1": [[100, 0.4], [200, 0.4], [300, 0.5], [400, 0.65], [500, 0.8]],
    },
    "dqn": {"0": [[200, 0.3], [400, 0.3], [600, 0.3], [800, 0.3], [1000, 0.25]]},
}


def _section_rows(md: str) -> list[list[str]]:
    section = md.split(f"## {HEADINGS['curves']}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[c.strip() for c in line.strip("|").split(" | ")] for line in lines]


def test_report_section_averages_seeds_at_each_checkpoint() -> None:
    rows = _section_rows(markdown_tables(_results(CURVES)))
    assert rows[0] == ["Setting", "Algorithm", "Steps", "20%", "40%", "60%", "80%", "100%", "Last ΔG"]
    body = {r[1]: r for r in rows[2:]}
    assert body["awr"][2:] == ["500", "0.300", "0.400", "0.500", "0.600", "0.700", "+0.100"]
    assert body["dqn"][2:] == ["1000", "0.300", "0.300", "0.300", "0.300", "0.250", "-0.050"]


def test_report_without_curves_says_so() -> None:
    md = markdown_tables(_results(None))
    assert f"## {HEADINGS['curves']}" in md
    assert "No learning curves" in md


def test_learning_curve_figure_is_written(tmp_path: Path, saved_figures) -> None:
    paths = write_figures(_results(CURVES), tmp_path)
    assert paths["learning_curves"] == tmp_path / FIGURES["learning_curves"]
    assert paths["learning_curves"].stat().st_size > 0
    fig = saved_figures[FIGURES["learning_curves"]]
    ax = fig.axes[0]
    plotted = {tuple(line.get_xdata()): list(line.get_ydata()) for line in ax.get_lines()}
    # the mean over seeds at each checkpoint, as the report's table has it
    assert plotted.keys() == {(100, 200, 300, 400, 500), (200, 400, 600, 800, 1000)}
    assert plotted[(100, 200, 300, 400, 500)] == pytest.approx([0.3, 0.4, 0.5, 0.6, 0.7])
    assert plotted[(200, 400, 600, 800, 1000)] == pytest.approx([0.3, 0.3, 0.3, 0.3, 0.25])
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["awr", "dqn", "Base's G on the eval split"]
    empty = write_figures(_results(None), tmp_path / "empty")  # no curves: a placeholder panel
    assert empty["learning_curves"].stat().st_size > 0
    placeholder = saved_figures[FIGURES["learning_curves"]].axes[0]
    assert placeholder.get_lines() == [] and "no learning curves" in [t.get_text() for t in placeholder.texts]
