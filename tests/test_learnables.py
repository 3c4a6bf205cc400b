"""d3rlpy conformance: learnables registered on ``import baselines`` (without importing d3rlpy), and saved
models that remember their env id, dataset and observation layout, refused elsewhere unless forced."""

from __future__ import annotations

import ast
import dataclasses
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require

require("d3rlpy")

import d3rlpy

import baselines
from baselines.awr import DiscreteAWRConfig
from baselines.learnables import LEARNABLE_MODULES
from harness_gym.core.actions import N_ACTIONS
from harness_gym.core.state import FEATURES, LAYOUT_VERSION, N_FEATURES
from harness_gym.evaluation.model_files import (
    PROVENANCE_KEY,
    ModelError,
    Provenance,
    load_model,
    read_provenance,
    save_model,
)

ROOT = Path(__file__).resolve().parents[1]


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip


def _learner(shape: tuple[int, ...] = (N_FEATURES,)):
    learner = DiscreteAWRConfig(hidden_units=8, masked=False).create(device=False)
    learner.create_impl(shape, N_ACTIONS)
    return learner


PLANNING = Provenance("HarnessPlanning-v0", "harness/planning/mixed-v0", "awr", 0)


def test_every_module_that_registers_a_learnable_is_listed() -> None:
    registering = set()
    for path in (ROOT / "baselines").glob("*.py"):
        calls = [
            node for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "register_learnable"
        ]  # fmt: skip
        if calls:
            registering.add(f"baselines.{path.stem}")
    assert registering and registering == set(LEARNABLE_MODULES)


def test_import_baselines_stays_light_and_registers_when_d3rlpy_arrives(tmp_path) -> None:
    model = tmp_path / "awr.d3"
    _learner().save(str(model))
    light = _python(
        "import sys, harness_gym.policies.scripted; print('d3rlpy' in sys.modules, 'torch' in sys.modules)"
    )
    assert light.stdout.split() == ["False", "False"], light.stderr
    for order in ("import baselines, d3rlpy", "import d3rlpy, baselines", "import baselines.awr, d3rlpy"):
        run = _python(f"{order}\nprint(type(d3rlpy.load_learnable({str(model)!r})).__name__)")
        assert run.returncode == 0 and run.stdout.strip() == "DiscreteAWR", (order, run.stderr)
        if order.startswith("import baselines"):  # legacy gym's notice, printed by d3rlpy's import of it
            assert "unmaintained" not in run.stderr, run.stderr


def test_saved_model_records_its_provenance_and_stays_a_d3rlpy_file(tmp_path) -> None:
    path = tmp_path / "m.d3"
    save_model(_learner(), path, PLANNING)
    assert read_provenance(path) == PLANNING
    assert (PLANNING.layout_version, PLANNING.features) == (LAYOUT_VERSION, FEATURES)
    assert type(d3rlpy.load_learnable(str(path))).__name__ == "DiscreteAWR"
    learner, overridden = load_model(path, "HarnessPlanning-v0")
    assert overridden == [] and learner.impl.action_size == N_ACTIONS


def test_another_env_or_layout_is_refused_unless_forced(tmp_path) -> None:
    path = tmp_path / "m.d3"
    save_model(_learner(), path, PLANNING)
    where = r"trained on HarnessPlanning-v0 \(dataset harness/planning/mixed-v0\)"
    with pytest.raises(ModelError, match=where):
        load_model(path, "HarnessCoding-v0")
    _, overridden = load_model(path, "HarnessCoding-v0", force=True)
    assert len(overridden) == 1 and "HarnessPlanning-v0" in overridden[0]

    old = tmp_path / "old.d3"
    save_model(_learner(), old, dataclasses.replace(PLANNING, layout_version=0, features=FEATURES[:-1]))
    with pytest.raises(ModelError, match="observation layout version 0"):
        load_model(old, "HarnessPlanning-v0")

    plain = tmp_path / "plain.d3"
    _learner().save(str(plain))
    assert read_provenance(plain) is None
    with pytest.raises(ModelError, match="records no env id"):
        load_model(plain, "HarnessPlanning-v0")
    assert load_model(plain, "HarnessPlanning-v0", force=True)[1]

    narrow = tmp_path / "narrow.d3"
    save_model(_learner((5,)), narrow, PLANNING)
    with pytest.raises(ModelError, match=r"shape \(5,\)"):
        load_model(narrow, "HarnessPlanning-v0", force=True)


def test_missing_and_corrupt_files_are_named(tmp_path) -> None:
    with pytest.raises(ModelError, match=re.escape(f"no model file {tmp_path / 'nope.d3'}")):
        load_model(tmp_path / "nope.d3", "HarnessPlanning-v0")
    junk = tmp_path / "junk.d3"
    junk.write_bytes(b"not a pickle at all")
    with pytest.raises(ModelError, match=re.escape(f"{junk} is not a readable d3rlpy model file")):
        load_model(junk, "HarnessPlanning-v0")
    good = tmp_path / "good.d3"
    save_model(_learner(), good, PLANNING)
    truncated = tmp_path / "truncated.d3"
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(ModelError, match=re.escape(str(truncated))):
        load_model(truncated, "HarnessPlanning-v0")
    other = tmp_path / "other.d3"
    other.write_bytes(pickle.dumps({"weights": [1, 2]}))
    with pytest.raises(ModelError, match="not a d3rlpy model file"):
        load_model(other, "HarnessPlanning-v0")
    bad_weights = tmp_path / "bad_weights.d3"
    obj = pickle.loads(good.read_bytes())
    obj["torch"] = obj["torch"][:100]
    bad_weights.write_bytes(pickle.dumps(obj))
    with pytest.raises(ModelError, match="weights cannot be loaded"):
        load_model(bad_weights, "HarnessPlanning-v0")
    assert PROVENANCE_KEY in obj and baselines.learnables.register_all()


def test_a_learnable_importing_another_is_registered_after_it(tmp_path) -> None:
    """``import baselines.awr`` loads d3rlpy half-way through awr; a second learnable that imports from
    awr must only be imported once awr has finished (else: ImportError from a partial module)."""
    (tmp_path / "second_learnable.py").write_text(
        "import dataclasses\n"
        "from d3rlpy.base import register_learnable\n"
        "from baselines.awr import DiscreteAWRConfig\n\n"
        "@dataclasses.dataclass()\n"
        "class SecondConfig(DiscreteAWRConfig):\n"
        "    @staticmethod\n"
        "    def get_type() -> str:\n"
        "        return 'second_learnable'\n\n"
        "register_learnable(SecondConfig)\n"
    )
    run = _python(
        "import baselines, baselines.learnables as L\n"
        f"baselines.__path__.append({str(tmp_path)!r})\n"
        "L.LEARNABLE_MODULES = ('baselines.awr', 'baselines.second_learnable')\n"
        "import baselines.awr\n"
        "from d3rlpy.base import LearnableConfig\n"
        "from d3rlpy.serializable_config import CONFIG_STORAGE\n"
        "names = CONFIG_STORAGE[LearnableConfig].config_list\n"
        "print('discrete_awr' in names, 'second_learnable' in names)\n"
    )
    assert run.returncode == 0 and run.stdout.split() == ["True", "True"], run.stderr[-3000:]
