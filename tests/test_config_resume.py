"""Every setting that changes a result is in every resume check.

A resume key is built from its config's fields (``harness_gym.evaluation.engine.config_key``), leaving
out only the fields each config documents as result-neutral. The generic test below perturbs every field
of every resumable config in turn: a resume must be refused unless the field is in ``RESULT_NEUTRAL``,
the reviewed list of fields that change no result. A field added to a config enters the key without
anyone remembering to; a field wrongly declared neutral, or dropped from a key, fails here.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness_gym.bench.runner import BenchConfig
from harness_gym.bench.tiers import TierBenchConfig
from harness_gym.cli.main import main
from harness_gym.datasets import collect as collect_module
from harness_gym.datasets.collect import CollectConfig, CollectError, checkpoint_dir, collect
from harness_gym.evaluation.engine import ResumeError, check_manifest
from harness_gym.evaluation.protocol import EvalSettings
from harness_gym.executors.openai_executor import OpenAIConfig
from harness_gym.executors.profiles import PROFILE_ENV

PLANNING = "HarnessPlanning-v0"
DATASET = "harness/planning/resume-v0"


class Interrupted(Exception):
    """Raised from inside a collection to stop it the way a kill would: checkpoints kept, no dataset."""


def interrupt_after(monkeypatch: pytest.MonkeyPatch, episodes: int) -> None:
    """Make the collection stop once ``episodes`` episodes are checkpointed."""
    save = collect_module._save_episode
    saved = []

    def save_then_maybe_stop(directory: Path, index: int, arrays: dict) -> None:
        save(directory, index, arrays)
        saved.append(index)
        if len(saved) >= episodes:
            raise Interrupted

    monkeypatch.setattr(collect_module, "_save_episode", save_then_maybe_stop)


def collect_args(root: Path) -> list[str]:
    return ["collect", "--env", PLANNING, "--episodes", "12", "--dataset-id", DATASET, "--root", str(root)]


# -- the demonstrated bug: a collection interrupted under one profile resumed under another ------------
def test_a_collection_interrupted_under_weak_is_not_resumed_under_strong(tmp_path, monkeypatch):
    """Decision: the executor profile is a setting of the collection, so a resume under another profile
    is refused, naming it (before, the checkpoints of ``weak`` were mixed with episodes of ``strong``)."""
    monkeypatch.setenv(PROFILE_ENV, "weak")
    interrupt_after(monkeypatch, 3)
    with pytest.raises(Interrupted):
        main([*collect_args(tmp_path), "--quiet"])
    monkeypatch.undo()
    directory = checkpoint_dir(CollectConfig(PLANNING, "mixed", 12, DATASET, root=str(tmp_path)))
    assert len(list(directory.glob("episode-*.npz"))) == 3

    monkeypatch.setenv(PROFILE_ENV, "strong")
    with pytest.raises(SystemExit, match=r"different settings.*executor_profile: 'weak' -> 'strong'"):
        main([*collect_args(tmp_path), "--quiet"])
    with pytest.raises(SystemExit, match="executor_profile: 'weak' -> 'default'"):
        main([*collect_args(tmp_path), "--quiet", "--executor-profile", "default"])
    assert not (tmp_path / DATASET).exists()

    monkeypatch.setenv(PROFILE_ENV, "weak")  # the same settings resume to the end
    assert main([*collect_args(tmp_path), "--quiet"]) == 0
    assert (tmp_path / DATASET).exists()


def test_the_profile_reaches_the_episodes_and_the_record(tmp_path):
    """The field is what the episodes are played under (weak and strong executors fix drafts at different
    rates, so a checking behaviour's returns differ), and what the dataset records: a non-default
    profile in its env spec, the default left implicit there and in ``harness_config`` as before."""
    import minari

    def returns(dataset_id: str, profile: str | None) -> list[float]:
        config = CollectConfig(
            PLANNING, "check-revise", 32, dataset_id, root=str(tmp_path), show_progress=False
        )
        collect(dataclasses.replace(config, executor_profile=profile))
        dataset = minari.load_dataset(str(tmp_path / dataset_id))
        return [float(ep.rewards.sum()) for ep in dataset.iterate_episodes()]

    assert returns(DATASET, "weak") != returns("harness/planning/strong-v0", "strong")
    spec = minari.load_dataset(str(tmp_path / DATASET)).spec.env_spec
    assert spec.kwargs["executor_profile"] == "weak"
    returns("harness/planning/default-v0", None)
    default = minari.load_dataset(str(tmp_path / "harness/planning/default-v0"))
    assert "executor_profile" not in default.spec.env_spec.kwargs
    assert "executor_profile" not in json.loads(default.storage.metadata["harness_config"])


# -- every field of every resumable config -------------------------------------------------------------
RESULT_NEUTRAL: dict[type, set[str]] = {
    CollectConfig: {"workers", "concurrency", "backend", "ray_address", "overwrite", "root", "show_progress"},
    BenchConfig: {
        "workers",
        "concurrency",
        "backend",
        "ray_address",
        "ray_tasks",
        "out",
        "show_progress",
        "keep_datasets",
        "view_episodes",
    },
    TierBenchConfig: {"workers", "out", "show_progress"},
    EvalSettings: set(),
}
"""Per resumable config, the fields that change no result: scheduling (processes, threads, backend,
Ray), where output goes and whether it is kept, what is shown while running. Reviewed here, on purpose
apart from the configs' own lists: the test compares the two."""


def perturbed(value: object, name: str) -> object:
    """A different valid-looking value of the same type as ``value``."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value / 2 + 0.01
    if isinstance(value, str):
        return value + "-x"
    if isinstance(value, tuple):
        return value[:-1] if len(value) > 1 else (*value, value[0] if value else "x")
    if isinstance(value, dict):
        return {**value, "extra": 1}
    if value is None:
        return {"executor": OpenAIConfig(model="m", base_url="http://127.0.0.1:1/v1")}.get(name, 7)
    if isinstance(value, OpenAIConfig):
        return dataclasses.replace(value, temperature=0.5)
    raise AssertionError(f"no perturbation for {name}={value!r}")


def instances() -> list[object]:
    return [
        CollectConfig(PLANNING, "mixed", 12, DATASET),
        BenchConfig(),
        TierBenchConfig(),
        EvalSettings(PLANNING, "eval", (0, 1), 3, "awr", "abc123", env={"max_steps": 9}),
    ]


def refuses(tmp_path: Path, before: object, after: object) -> bool:
    """Whether the resume check of ``after`` refuses a checkpoint written by ``before``."""
    if isinstance(before, CollectConfig):
        directory = checkpoint_dir(dataclasses.replace(after, root=str(tmp_path)))
        directory.mkdir(parents=True, exist_ok=True)  # as ``before`` left it, wherever ``after`` looks
        (directory / "config.json").write_text(json.dumps(before.content_key(), sort_keys=True))
        try:
            collect_module._open_checkpoints(dataclasses.replace(after, root=str(tmp_path), overwrite=False))
        except CollectError:
            return True
        return False
    check_manifest(tmp_path, before.content_key(), "test")
    try:
        check_manifest(tmp_path, after.content_key(), "test")
    except ResumeError:
        return True
    return False


def field_cases() -> list[tuple[object, str]]:
    return [(config, f.name) for config in instances() for f in dataclasses.fields(config)]


@pytest.mark.parametrize(
    ("config", "name"), field_cases(), ids=[f"{type(c).__name__}.{n}" for c, n in field_cases()]
)
def test_every_field_is_in_the_resume_key_unless_documented_neutral(tmp_path, config, name):
    after = dataclasses.replace(config, **{name: perturbed(getattr(config, name), name)})
    neutral = name in RESULT_NEUTRAL[type(config)]
    assert refuses(tmp_path, config, after) is not neutral, (
        f"{type(config).__name__}.{name}: resume {'refused' if not neutral else 'accepted'} "
        f"expected (neutral: {neutral})"
    )


@pytest.mark.parametrize("config", instances(), ids=lambda c: type(c).__name__)
def test_the_configs_neutral_lists_are_the_reviewed_ones(config):
    assert set(type(config).NEUTRAL) == RESULT_NEUTRAL[type(config)]


# -- the resumes the mutation survivors showed untested -----------------------------------------------
def test_a_collection_resumed_with_another_value_of_a_setting_is_refused(tmp_path, monkeypatch):
    """Decision: a collection's resume compares the settings' values, not only their names: the
    checkpoints of seed 0 never complete a dataset of seed 1."""
    interrupt_after(monkeypatch, 2)
    first = CollectConfig(PLANNING, "mixed", 8, DATASET, root=str(tmp_path), show_progress=False)
    with pytest.raises(Interrupted):
        collect(first)
    monkeypatch.undo()
    with pytest.raises(CollectError, match=r"different settings.*seed: 0 -> 1"):
        collect(dataclasses.replace(first, seed=1))
    with pytest.raises(CollectError, match=r"epsilon: 0\.3 -> 0\.25"):
        collect(dataclasses.replace(first, epsilon=0.25))
    assert collect(first).resumed_episodes == 2


def test_a_bench_resumed_with_another_n_boot_is_refused(tmp_path):
    """Decision: ``n_boot`` sets the intervals and p-values, so a bench interrupted with one number of
    resamples is not finished with another (its finished settings hold the old intervals)."""
    from harness_gym.bench.runner import run

    config = BenchConfig(settings=(PLANNING,), n_boot=2000, out=str(tmp_path), show_progress=False)
    check_manifest(tmp_path / "checkpoints", config.content_key(), "bench")  # as an interrupted run left it
    with pytest.raises(ResumeError, match="n_boot: 2000 -> 3000"):
        run(dataclasses.replace(config, n_boot=3000))


def test_an_evaluation_resumed_with_another_model_or_profile_is_refused(tmp_path, monkeypatch):
    """Decision: an evaluation's checkpoints belong to one trained model (its fingerprint) and one
    executor profile, however the profile was given: another model, another profile or the same name with
    another environment default never resumes them (as ``evaluate``'s docstring promises)."""
    from harness_gym.evaluation.protocol import evaluate
    from harness_gym.policies.scripted import ForcedCheckPolicy

    def run(**kwargs) -> list:
        args = {"seeds": (0,), "rollouts": 1, "checkpoint": tmp_path, "fingerprint": "model-a", **kwargs}
        return evaluate(ForcedCheckPolicy(PLANNING), PLANNING, policy_name="fc", **args)

    monkeypatch.delenv(PROFILE_ENV, raising=False)
    first = run()
    with pytest.raises(ResumeError, match="policy_fingerprint: 'model-a' -> 'model-b'"):
        run(fingerprint="model-b")
    with pytest.raises(ResumeError, match=r"executor_profile\.name: 'default' -> 'weak'"):
        run(executor_profile="weak")
    with pytest.raises(ResumeError, match="token_budget: None -> 500"):
        run(token_budget=500)
    monkeypatch.setenv(PROFILE_ENV, "strong")
    with pytest.raises(ResumeError, match=r"executor_profile\.name: 'default' -> 'strong'"):
        run()
    monkeypatch.delenv(PROFILE_ENV)
    assert run() == first  # the same settings resume


def test_a_refused_collection_resume_names_every_change_and_the_ways_out(tmp_path):
    """The refusal is one line: every changed setting, then what to do."""
    before = CollectConfig(PLANNING, "mixed", 8, DATASET, root=str(tmp_path), show_progress=False)
    after = dataclasses.replace(before, seed=1, epsilon=0.25)
    directory = checkpoint_dir(after)
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(before.content_key(), sort_keys=True))
    with pytest.raises(CollectError) as refused:
        collect_module._open_checkpoints(after)
    assert str(refused.value) == (
        f"an interrupted collection of {DATASET!r} with different settings is at {directory} "
        "(epsilon: 0.3 -> 0.25; seed: 0 -> 1); rerun with the same settings, delete it or pass overwrite "
        "to start again"
    )
