"""``harness-gym submit`` and ``evaluate_policy(..., env_id="all")``: a policy on every setting, a results
file, and its rank among the shipped reference results."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness_gym.cli.main import main
from harness_gym.cli.submit import default_name
from harness_gym.envs.registry import ENV_IDS
from harness_gym.evaluation import results
from harness_gym.evaluation.scoring import (
    REFERENCE_RESULTS,
    PolicyError,
    SuiteScore,
    evaluate_policy,
    from_factory,
)

ROOT = Path(__file__).resolve().parents[1]
MODULE = '''
import numpy as np

def policy(obs, mask):
    """Submit at once where allowed, else the last legal action: a fast, weak policy."""
    return 6 if mask[6] else int(np.flatnonzero(mask)[-1])

def make_policy(seed):
    return policy
'''


def tiny(obs: np.ndarray, mask: np.ndarray) -> int:
    return 6 if mask[6] else int(np.flatnonzero(mask)[-1])


def test_the_package_ships_the_bench_results_as_reference():
    assert REFERENCE_RESULTS.read_bytes() == (ROOT / "docs" / "bench" / "results.json").read_bytes()
    assert set(results.load(REFERENCE_RESULTS)["scores"]) == set(ENV_IDS)


def test_submit_scores_every_setting_writes_a_file_and_ranks_it(tmp_path, monkeypatch, capsys):
    (tmp_path / "tinymod.py").write_text(MODULE)
    monkeypatch.chdir(tmp_path)
    argv = ["submit", "tinymod:make_policy", "--name", "tiny", "--reps", "20", "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    doc = results.load(tmp_path / "tiny.json")
    assert set(doc["scores"]) == set(ENV_IDS)
    assert all(set(entry["policies"]) == {"base", "tiny"} for entry in doc["scores"].values())
    assert doc["policies"]["tiny"]["per_seed_models"] is False  # the same object for every seed
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[: len(ENV_IDS)]] == list(ENV_IDS)  # one line per setting
    rows = [line for line in lines if line.startswith("| ")]
    names = [row.split("|")[2].strip() for row in rows[2:]]
    assert "tiny" in names and "sac" in names and "base" in names  # ranked beside the reference
    reference = results.load(REFERENCE_RESULTS)
    assert len(names) == len(reference["policies"]) + 1
    assert names[-1] == "tiny"  # submitting at once scores below every reference policy
    assert lines[-1].startswith(f"tiny: rank {len(names)} of {len(names)}, IQM ")
    assert not (tmp_path / "tiny.json.partial").exists()

    # the same from Python: identical episodes, the same results document
    suite = evaluate_policy(tiny, "all", name="tiny")
    assert isinstance(suite, SuiteScore) and [s.env_id for s in suite.scores] == list(ENV_IDS)
    python_doc = suite.to_results()
    assert json.dumps(python_doc["scores"], sort_keys=True) == json.dumps(doc["scores"], sort_keys=True)
    assert python_doc["policies"] == doc["policies"]
    assert suite["HarnessPlanning-v0"].delta_G.estimate < 0 and "HarnessDBBench-v0" in suite.summary()


def test_submit_refuses_in_one_line_before_playing(tmp_path, monkeypatch, capsys):
    (tmp_path / "tinymod.py").write_text(MODULE)
    (tmp_path / "broken.py").write_text("def make_policy(seed):\n    raise RuntimeError('no weights')\n")
    monkeypatch.chdir(tmp_path)
    cases = [
        (["tinymod:make_policy", "--name", "sac"], "already have a policy 'sac'; choose --name"),
        (["tinymod:make_policy", "--out", "nowhere/x.json"], "cannot write nowhere/x.json"),
        (["missing_module:make_policy"], "cannot load 'missing_module:make_policy': ModuleNotFoundError"),
        (["tinymod:nothing"], "cannot load 'tinymod:nothing': AttributeError"),
        (["broken:make_policy"], "broken:make_policy raised for HarnessKnowledgeWork-v0: RuntimeError"),
        (["tinymod:make_policy", "--reps", "0"], "--reps must be at least 1"),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit) as stop:
            main(["submit", *argv, "--quiet"])
        assert message in str(stop.value), argv
        assert "\n" not in str(stop.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.py", "tinymod.py"]  # nothing written


def test_a_factory_gives_one_policy_or_one_model_per_seed():
    assert from_factory(lambda seed: tiny, (0, 1, 2)) is tiny
    made = from_factory(lambda seed: lambda obs, mask: seed, (0, 1, 2))
    assert isinstance(made, list) and [m(None, None) for m in made] == [0, 1, 2]
    seen = []
    from_factory(lambda seed, env_id: seen.append((seed, env_id)), (0, 1), "HarnessPlanning-v0")
    assert seen == [(0, "HarnessPlanning-v0"), (1, "HarnessPlanning-v0")]


def test_rows_are_named_after_the_algorithm_not_a_generic_function():
    assert default_name("mymodule:make_policy") == "mymodule"
    assert default_name("pkg.algos.cql_run:policy") == "cql_run"
    assert default_name("pkg.algos:make_cql") == "cql"
    assert default_name("pkg.algos:filtered_bc") == "filtered_bc"
    assert default_name("forced-check") == "forced-check"


def test_a_policy_per_setting_must_cover_every_setting():
    with pytest.raises(PolicyError, match="missing HarnessCoding-v0"):
        evaluate_policy({env_id: tiny for env_id in ENV_IDS if env_id != "HarnessCoding-v0"}, "all")
