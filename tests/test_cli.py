"""The command line: listing environments and rolling scripted policies."""

from __future__ import annotations

import pytest

import harness_gym
from harness_gym.cli.main import main
from harness_gym.core.state import FEATURES


def test_envs_lists_ids_counts_and_layout(capsys):
    assert main(["envs"]) == 0
    out = capsys.readouterr().out
    for env_id in harness_gym.ENV_IDS:
        assert env_id in out
    assert " 80    20" in out
    assert all(f"`{name}`" in out for name in FEATURES)


def test_run_prints_quality_process_and_trajectory(capsys):
    assert (
        main(["run", "--env", "HarnessPlanning-v0", "--policy", "random", "--episodes", "3", "--show"]) == 0
    )
    out = capsys.readouterr().out
    assert "mean G" in out and "mean HMS_norm" in out and "CheckBeforeSubmit" in out
    assert "[HarnessPlanning-v0]" in out and "end: " in out


def test_run_is_reproducible(capsys):
    main(["run", "--env", "HarnessPlanning-v0", "--episodes", "4", "--seed", "5"])
    first = capsys.readouterr().out
    main(["run", "--env", "HarnessPlanning-v0", "--episodes", "4", "--seed", "5"])
    assert capsys.readouterr().out == first


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--env", "Nope-v0"], "unknown env id 'Nope-v0'"),
        (["run", "--env", "HarnessPlanning-v0", "--episodes", "0"], "at least 1"),
    ],
)
def test_bad_arguments_exit_with_a_message(argv, message):
    with pytest.raises(SystemExit, match=message):
        main(argv)


def test_protocol_runs_every_eval_task_and_matches_the_calibration_protocol(capsys):
    assert main(["run", "--env", "HarnessPlanning-v0", "--protocol"]) == 0
    out = capsys.readouterr().out
    assert "episodes=180" in out and "paper's Base G 0.385" in out
