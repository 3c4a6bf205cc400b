"""Failures a user can cause: one line naming the thing (file, dataset id, line number), a non-zero exit,
and no traceback; the Python API raises the same named errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from conftest import require
from upstream import upstream_path

from harness_gym.cli.main import main
from harness_gym.core.task import TaskFileError
from harness_gym.datasets.collect import CollectConfig, collect

ROOT = Path(__file__).resolve().parents[1]
PLANNING = "HarnessPlanning-v0"


def cli(*args: str, capsys: pytest.CaptureFixture) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``harness-gym ARGS`` run in this process."""
    try:
        code = main(list(args))
    except SystemExit as exc:  # how argparse and SystemExit("message") end the real command
        code = exc.code if isinstance(exc.code, int) else 1
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """Two good planning datasets and a truncated copy of one of them."""
    root = tmp_path_factory.mktemp("datasets")
    for policy, n in (("mixed", 8), ("base", 4)):
        collect(CollectConfig(PLANNING, policy, n, f"harness/planning/{policy}-v0", root=str(root),
                              show_progress=False))  # fmt: skip
    broken = root / "harness/planning/broken-v0"
    shutil.copytree(root / "harness/planning/base-v0", broken)
    data = broken / "data" / "main_data.hdf5"
    with data.open("r+b") as handle:
        handle.truncate(data.stat().st_size // 2)
    return root


@pytest.fixture(scope="module")
def model(root: Path, tmp_path_factory) -> Path:
    require("d3rlpy")
    path = tmp_path_factory.mktemp("models") / "awr.d3"
    assert main(["train", "--algo", "awr", "--dataset", "harness/planning/mixed-v0", "--root", str(root),
                 "--steps", "1", "--out", str(path)]) == 0  # fmt: skip
    return path


# -- datasets --------------------------------------------------------------------------------------
def test_listing_names_a_truncated_dataset_and_goes_on(root: Path, capsys) -> None:
    code, out, err = cli("datasets", "--root", str(root), capsys=capsys)
    assert code == 1 and "1 of 3 datasets could not be read" in err
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert set(rows) == {
        "harness/planning/base-v0",
        "harness/planning/broken-v0",
        "harness/planning/mixed-v0",
    }
    assert "truncated or corrupt" in rows["harness/planning/broken-v0"]
    assert rows["harness/planning/mixed-v0"].split()[1] == PLANNING


def test_train_on_a_truncated_or_missing_dataset(root: Path, tmp_path, capsys) -> None:
    args = ("--algo", "awr", "--root", str(root), "--out", str(tmp_path / "m.d3"))
    code, _, err = cli("train", "--dataset", "harness/planning/broken-v0", *args, capsys=capsys)
    assert code != 0
    assert re.search(r"dataset 'harness/planning/broken-v0' at .* is truncated or corrupt", one_line(err))
    code, _, err = cli("train", "--dataset", "harness/planning/nope-v0", *args, capsys=capsys)
    assert code != 0 and "no dataset 'harness/planning/nope-v0'" in one_line(err)
    assert "local datasets: harness/planning/base-v0" in err
    assert not (tmp_path / "m.d3").exists()


def test_no_traceback_from_the_real_command(root: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "harness_gym.cli", "datasets", "combine", "harness/planning/c-v0",
         "harness/planning/base-v0", "harness/planning/broken-v0", "--root", str(root)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert run.returncode != 0 and "harness/planning/broken-v0" in one_line(run.stderr)


def test_combine_from_the_command_line(root: Path, capsys) -> None:
    code, out, _ = cli("datasets", "combine", "harness/planning/both-v0", "harness/planning/mixed-v0",
                       "harness/planning/base-v0", "--root", str(root), capsys=capsys)  # fmt: skip
    assert code == 0 and "wrote harness/planning/both-v0" in out
    code, _, err = cli("datasets", "combine", "harness/planning/both-v0", "harness/planning/mixed-v0",
                       "harness/planning/base-v0", "--root", str(root), capsys=capsys)  # fmt: skip
    assert code != 0 and "already exists" in one_line(err)
    shutil.rmtree(root / "harness/planning/both-v0")


# -- models ----------------------------------------------------------------------------------------
def test_a_planning_model_is_refused_on_coding(model: Path, capsys) -> None:
    code, _, err = cli("evaluate", "--env", "HarnessCoding-v0", "--policy", str(model), capsys=capsys)
    line = one_line(err)
    assert code != 0 and str(model) in line
    assert "trained on HarnessPlanning-v0 (dataset harness/planning/mixed-v0), not HarnessCoding-v0" in line
    assert "--force" in line


def test_missing_and_corrupt_models(tmp_path: Path, capsys) -> None:
    code, _, err = cli("evaluate", "--env", PLANNING, "--policy", str(tmp_path / "x.d3"), capsys=capsys)
    assert code != 0 and f"no model file {tmp_path / 'x.d3'}" in one_line(err)
    junk = tmp_path / "junk.d3"
    junk.write_bytes(b"\x80\x04garbage")
    code, _, err = cli("evaluate", "--env", PLANNING, "--policy", str(junk), capsys=capsys)
    assert code != 0 and f"{junk} is not a readable d3rlpy model file" in one_line(err)
    code, _, err = cli("evaluate", "--env", PLANNING, "--policy", "nonsense", capsys=capsys)
    assert code != 0 and "unknown policy 'nonsense'" in one_line(err)


# -- caches ----------------------------------------------------------------------------------------
def test_corrupt_response_cache(tmp_path: Path, capsys, loopback_llm_env) -> None:
    cache = tmp_path / "responses.sqlite"
    cache.write_text("this is not an SQLite database, it is a truncated copy of one" * 20)
    llm = (
        "--executor",
        "openai",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--cache",
        str(cache),
    )
    code, _, err = cli("run", "--env", PLANNING, "--episodes", "1", *llm, capsys=capsys)
    assert code != 0 and f"cannot open response cache {cache}" in one_line(err)


def test_corrupt_collection_checkpoint(tmp_path: Path, capsys) -> None:
    args = ("collect", "--env", PLANNING, "--episodes", "3", "--dataset-id", "harness/planning/ck-v0",
            "--root", str(tmp_path), "--quiet")  # fmt: skip
    checkpoints = tmp_path / ".harness-collect" / "harness__planning__ck-v0"
    checkpoints.mkdir(parents=True)
    (checkpoints / "config.json").write_text("{not json")
    code, _, err = cli(*args, capsys=capsys)
    assert code != 0 and f"checkpoint manifest {checkpoints / 'config.json'} cannot be read" in one_line(err)
    shutil.rmtree(checkpoints)
    config = CollectConfig(PLANNING, "mixed", 3, "harness/planning/ck-v0", root=str(tmp_path))
    checkpoints.mkdir(parents=True)
    (checkpoints / "config.json").write_text(json.dumps(config.content_key(), sort_keys=True))
    for i in range(3):
        (checkpoints / f"episode-{i:06d}.npz").write_bytes(b"PK\x03\x04 truncated")
    code, _, err = cli(*args, capsys=capsys)
    assert code != 0 and f"checkpoint {checkpoints / 'episode-000000.npz'} is corrupt" in one_line(err)


# -- upstream files --------------------------------------------------------------------------------
@pytest.fixture
def tau_copy(tmp_path: Path) -> Path:
    source = upstream_path("tau_retail")
    for name in ("users.json", "orders.json", "products.json", "tasks_train.jsonl", "tasks_test.jsonl"):
        shutil.copyfile(source / name, tmp_path / name)
    return tmp_path


def _edit_line(path: Path, number: int, edit) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[number - 1] = edit(lines[number - 1])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_malformed_tau_task_line_names_file_and_line(tau_copy: Path) -> None:
    tasks = tau_copy / "tasks_train.jsonl"
    _edit_line(tasks, 3, lambda line: line[:40])
    with pytest.raises(TaskFileError, match=re.escape(f"{tasks} line 3 column")):
        gym.make("HarnessTauRetail-v0", data_path=str(tau_copy))


def test_tau_task_line_missing_a_field(tau_copy: Path) -> None:
    tasks = tau_copy / "tasks_train.jsonl"

    def drop_user(line: str) -> str:
        record = json.loads(line)
        del record["user_id"]
        return json.dumps(record)

    _edit_line(tasks, 2, drop_user)
    with pytest.raises(TaskFileError, match=re.escape(f"{tasks} line 2: missing field user_id")):
        gym.make("HarnessTauRetail-v0", data_path=str(tau_copy))


def test_malformed_users_json_names_the_file(tau_copy: Path) -> None:
    users = tau_copy / "users.json"
    users.write_text(users.read_text(encoding="utf-8")[:5000], encoding="utf-8")
    with pytest.raises(TaskFileError, match=re.escape(f"{users} line ")):
        gym.make("HarnessTauRetail-v0", data_path=str(tau_copy))


def test_dbbench_record_missing_a_nested_field(tmp_path: Path) -> None:
    source = upstream_path("dbbench")
    for name in ("dev.jsonl", "standard.jsonl"):
        shutil.copyfile(source / name, tmp_path / name)

    def drop_table_name(line: str) -> str:
        record = json.loads(line)
        del record["table"]["table_name"]
        return json.dumps(record)

    _edit_line(tmp_path / "dev.jsonl", 4, drop_table_name)
    with pytest.raises(
        TaskFileError, match=re.escape(f"{tmp_path / 'dev.jsonl'} line 4: missing field table/table_name")
    ):
        gym.make("HarnessDBBench-v0", data_path=str(tmp_path))


# -- arguments -------------------------------------------------------------------------------------
def test_task_ids_as_a_string_is_one_id() -> None:
    env = gym.make("HarnessCoding-v0")
    first = env.unwrapped.tasks[0].task_id
    one = gym.make("HarnessCoding-v0", task_ids=first)
    assert [t.task_id for t in one.unwrapped.tasks] == [first]
    with pytest.raises(ValueError, match=r"unknown task id\(s\) .*\['coding-nope'\]"):
        gym.make("HarnessCoding-v0", task_ids="coding-nope")
