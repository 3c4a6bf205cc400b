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


# -- leaderboard -----------------------------------------------------------------------------------
@pytest.fixture
def results_file(tmp_path: Path) -> Path:
    """A hand-built results file of three policies (tests/test_leaderboard.py)."""
    from test_leaderboard import MEAN_AND_IQM_DISAGREE, hand_built

    path = tmp_path / "results.json"
    path.write_text(json.dumps(hand_built(MEAN_AND_IQM_DISAGREE)))
    return path


def test_leaderboard_refuses_nan_episodes_and_ranks_nothing(results_file: Path, capsys) -> None:
    doc = json.loads(results_file.read_text())
    doc["scores"][PLANNING]["policies"]["base"]["episode_G"][0] = float("nan")
    results_file.write_text(json.dumps(doc))
    code, out, err = cli("leaderboard", str(results_file), "--no-figures", capsys=capsys)
    assert code == 1 and out == ""
    assert one_line(err) == (
        f"harness-gym leaderboard: {results_file} does not follow harness-gym-results-v1 at "
        f"scores/{PLANNING}/policies/base/episode_G/0: nan is not a finite number"
    )
    doc["scores"][PLANNING]["policies"]["base"]["episode_G"][0] = 0.5  # a forged policy instead
    doc["policies"]["forged"] = {"kind": "outside", "per_seed_models": False}
    doc["scores"][PLANNING]["policies"]["forged"] = {
        "seed_scores": dict.fromkeys(doc["scores"][PLANNING]["policies"]["base"]["seed_scores"], 100.0),
        "episode_G": [float("nan")] * len(doc["scores"][PLANNING]["policies"]["base"]["episode_G"]),
    }
    results_file.write_text(json.dumps(doc))
    code, out, err = cli("leaderboard", str(results_file), "--no-figures", capsys=capsys)
    assert code == 1 and out == "" and "forged/episode_G/0: nan is not a finite number" in one_line(err)


@pytest.mark.parametrize("reps", ["-5", "0"])
def test_leaderboard_reps_below_one(results_file: Path, reps: str, capsys) -> None:
    code, out, err = cli("leaderboard", str(results_file), "--no-figures", "--reps", reps, capsys=capsys)
    assert code == 1 and out == ""
    assert one_line(err) == f"harness-gym leaderboard: --reps must be at least 1, got {reps}"


def test_leaderboard_out_is_checked_before_computing(results_file: Path, tmp_path: Path, monkeypatch, capsys):
    import harness_gym.evaluation.aggregate as aggregate

    def computed(*args, **kwargs):
        raise AssertionError("the aggregate was computed before --out was checked")

    monkeypatch.setattr(aggregate, "summarize", computed)
    afile = tmp_path / "afile"
    afile.write_text("")
    for out, what in ((afile, "is a file"), (afile / "board", f"is under {afile}, which is a file")):
        code, printed, err = cli("leaderboard", str(results_file), "--out", str(out), capsys=capsys)
        assert code == 1 and printed == ""
        assert one_line(err) == f"harness-gym leaderboard: --out {out} {what}, not a directory"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "results.json"]  # nothing created


# -- evaluate --policy module:factory --------------------------------------------------------------
POLICIES = '''
import numpy as np


def raises(seed):
    raise ValueError("no model for seed %d" % seed)


def returns_none(seed):
    return lambda obs, mask: None


def returns_99(seed):
    return lambda obs, mask: 99


def returns_float(seed):
    return lambda obs, mask: 3.0


def returns_true(seed):
    return lambda obs, mask: True


class Boom:
    def act(self, obs, mask, rng):
        raise RuntimeError("boom in act")


def raises_in_act(seed):
    return Boom()


def takes_masked(seed):
    """The first masked action while there is one, else the first legal one."""
    return lambda obs, mask: int(np.flatnonzero(mask == 0 if (mask == 0).any() else mask)[0])
'''


@pytest.fixture
def policies(tmp_path_factory, monkeypatch) -> str:
    """The module name of ``POLICIES`` (importable), beside a module with a syntax error."""
    where = tmp_path_factory.getbasetemp() / "policy_modules"
    if not where.exists():
        where.mkdir()
        (where / "hg_bad_policies.py").write_text(POLICIES)
        (where / "hg_syntax_error.py").write_text("def make(seed)\n    return None\n")
    monkeypatch.syspath_prepend(str(where))
    return "hg_bad_policies"


EVAL = ("evaluate", "--env", PLANNING, "--seeds", "0", "--rollouts", "1", "--no-base", "--quiet")
EPISODE = re.escape(f" ({PLANNING} task ") + r"planning-\d+, episode seed \d+\)$"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("hg_syntax_error:make", r"cannot import module 'hg_syntax_error' of policy factory "
         r"'hg_syntax_error:make': SyntaxError: expected ':' \(hg_syntax_error.py, line 1\)$"),
        (":make", r"--policy ':make' names no module \(expected module:factory, e.g. my_policies:make\)$"),
        ("MOD:", r"--policy 'MOD:' names no factory"),
        ("MOD:raises", r"policy factory MOD:raises failed for seed 0 \(it is called with each seed\): "
         "ValueError: no model for seed 0$"),
        ("os:getcwd", r"policy factory os:getcwd failed for seed 0 .*: TypeError: .*getcwd\(\) takes no"),
        ("MOD:returns_none", r"policy 'returns_none' returned None \(NoneType\): an action is an int in "
         r"Discrete\(7\), as env.step requires" + EPISODE),
        ("MOD:returns_99", r"policy 'returns_99' returned action 99, not in Discrete\(7\)" + EPISODE),
        ("MOD:returns_float", r"policy 'returns_float' returned 3.0 \(float\): an action .*" + EPISODE),
        ("MOD:returns_true", r"policy 'returns_true' returned True \(bool\): an action .*" + EPISODE),
        ("MOD:raises_in_act", r"policy 'raises_in_act': act raised RuntimeError: boom in act" + EPISODE),
    ],
)  # fmt: skip
def test_evaluate_names_the_module_factory_or_episode(
    policies: str, spec: str, expected: str, capsys
) -> None:
    spec = spec.replace("MOD", policies)
    code, out, err = cli(*EVAL, "--policy", spec, capsys=capsys)
    assert code == 1 and "mean G" not in out
    assert re.fullmatch("harness-gym evaluate: " + expected.replace("MOD", policies) + ".*", one_line(err))


def test_evaluate_reports_the_masked_actions_taken(policies: str, capsys) -> None:
    code, out, _ = cli(*EVAL, "--policy", f"{policies}:takes_masked", capsys=capsys)
    assert code == 0
    # the env's own count: a plain loop over the same episodes
    from harness_gym.evaluation.scoring import protocol_seeds

    policy, env, masked, episodes = (
        __import__(policies).takes_masked(0),
        gym.make(PLANNING, split="eval"),
        0,
        0,
    )
    for ep in protocol_seeds(PLANNING, seeds=(0,), rollouts=1):
        obs, info = env.reset(seed=ep.seed, options=ep.options)
        done, before = False, masked
        while not done:
            obs, _, terminated, truncated, info = env.step(policy(obs, info["action_mask"]))
            masked += info["invalid_action"]
            done = terminated or truncated
        episodes += masked > before
    assert masked > 0
    assert f"masked actions: {masked} taken in {episodes} of 20 episodes" in out


# -- evaluate_policy -------------------------------------------------------------------------------
def test_evaluate_policy_refuses_what_it_cannot_play_as_given() -> None:
    from harness_gym.evaluation.scoring import PolicyError, evaluate_policy

    def policy(obs, mask):
        return 0

    with pytest.raises(PolicyError, match=r"^seeds must be integers, got 0.5 in seeds=\[0.5\]$"):
        evaluate_policy(policy, PLANNING, seeds=[0.5], rollouts=1)
    with pytest.raises(PolicyError, match=r"^seeds must be integers, got True"):
        evaluate_policy(policy, PLANNING, seeds=[True], rollouts=1)
    with pytest.raises(PolicyError, match=r"^seeds must be a sequence of integers, got 3$"):
        evaluate_policy(policy, PLANNING, seeds=3, rollouts=1)
    with pytest.raises(PolicyError, match=r"^rollouts must be an integer of at least 1, got 1.5$"):
        evaluate_policy(policy, PLANNING, seeds=[0], rollouts=1.5)
    with pytest.raises(PolicyError, match=rf"^unknown env id None; known: .*{PLANNING}"):
        evaluate_policy(policy, None, seeds=[0], rollouts=1)


def test_evaluate_policy_applies_env_steps_action_rule() -> None:
    """A plain function's action is held to exactly what env.step takes."""
    import numpy as np

    from harness_gym.evaluation.scoring import PolicyError, checked_action, evaluate_policy

    env = gym.make(PLANNING)
    for action in (1, np.int64(1), np.uint8(1), 1.0, np.float32(1), True, np.bool_(True), None, "1", 7, -1):
        env.reset(seed=0)
        try:
            env.step(action)
            refused = False
        except (TypeError, ValueError):
            refused = True
        try:
            checked_action(action, "p")
            checked = False
        except PolicyError:
            checked = True
        assert checked == refused, action
    with pytest.raises(PolicyError, match=r"returned 3.0 \(float\).*task planning-\d+, episode seed \d+\)$"):
        evaluate_policy(lambda obs, mask: 3.0, PLANNING, seeds=[0], rollouts=1, base=False)


# -- --config --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('temperature = "hot"', 'temperature must be a number, got "hot"'),
        ("max_tokens = 1.5", "max_tokens must be an integer, got 1.5"),
        ("max_tokens = true", "max_tokens must be an integer, got true"),
        ("model = 3", "model must be a string, got 3"),
        ("stop = [1, 2]", "stop must be a string or an array of strings, got [1, 2]"),
        ('fold_system = "yes"', 'fold_system must be true or false, got "yes"'),
        ("extra_body = 3", "extra_body must be a table or a JSON object as a string, got 3"),
    ],
)
def test_config_value_of_the_wrong_type_names_the_key(tmp_path: Path, line: str, expected: str, capsys):
    config = tmp_path / "run.toml"
    model = "" if line.startswith("model") else 'model = "m"\n'
    # no retries: a value taken as it is would end at the closed port at once, not after minutes
    config.write_text(f'[executor]\n{model}base_url = "http://127.0.0.1:9/v1"\nmax_retries = 0\n{line}\n')
    code, out, err = cli("run", "--env", PLANNING, "--episodes", "1", "--config", str(config), capsys=capsys)
    assert code == 1 and out == "" and one_line(err) == f"{config}: {expected}"


def test_masked_actions_are_counted_apart_from_legal_ones_that_fail() -> None:
    """On knowledge work a legal CALL_TOOL with no table open is an invalid step too, but not a masked
    action: the count equals the env's own ``info["invalid_action"]`` over the same episodes."""
    import numpy as np

    from harness_gym.core.actions import Action
    from harness_gym.evaluation.scoring import evaluate_policy, protocol_seeds

    env_id = "HarnessKnowledgeWork-v0"

    class Policy:
        """CALL_TOOL and a masked action by turns (the first legal one when none is masked)."""

        def reset(self) -> None:
            self.t = 0

        def act(self, obs, mask, rng) -> int:
            self.t += 1
            if self.t % 2 and mask[Action.CALL_TOOL]:
                return int(Action.CALL_TOOL)
            return int(np.flatnonzero(mask == 0 if (mask == 0).any() else mask)[0])

    policy, env, masked, failed = Policy(), gym.make(env_id, split="eval"), 0, 0
    for ep in protocol_seeds(env_id, seeds=(0,), rollouts=1):
        obs, info = env.reset(seed=ep.seed, options=ep.options)
        policy.reset()
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(policy.act(obs, info["action_mask"], None))
            masked += info["invalid_action"]
            done = terminated or truncated
        failed += sum(not step["valid"] for step in info["trajectory"]["steps"])
    assert 0 < masked < failed  # both kinds happen
    score = evaluate_policy(policy, env_id, seeds=(0,), rollouts=1, base=False)
    assert score.masked_actions == masked
