"""The dataset manifest's decisions on small hand-made files (no dataset is built): what the content
digests see and ignore, how entries are compared and reported, and where the manifest is read from."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import h5py
import numpy as np
import pytest

from harness_gym.datasets import manifest
from harness_gym.datasets.files import DatasetError


def _hdf5(
    path: Path,
    *,
    attr_name: str = "seed",
    attr: object = 1,
    data: object = (1, 2, 3),
    group: str = "episode_0",
    dataset: str = "rewards",
    root_attr: object = "v1",
) -> Path:
    with h5py.File(path, "w") as file:
        file.attrs["version"] = root_attr
        g = file.create_group(group)
        g.attrs[attr_name] = attr
        g.create_dataset(dataset, data=np.asarray(data))
    return path


@pytest.mark.parametrize(
    "change",
    [
        {"attr_name": "seeds"},  # an attribute's name
        {"attr": 2},  # an attribute's value
        {"attr": np.int32(1)},  # its type
        {"data": (1, 2, 4)},  # a dataset's values
        {"data": np.asarray((1, 2, 3), dtype=np.int32)},  # their type
        {"data": ((1, 2, 3),)},  # their shape
        {"group": "episode_1"},  # a group's name
        {"dataset": "reward"},  # a dataset's name
        {"root_attr": "v2"},  # an attribute of the file itself
        {"attr": np.asarray(["a", "b"], dtype=object)},  # a variable-length string array
    ],
)
def test_the_hdf5_digest_sees_every_name_value_and_type(tmp_path: Path, change: dict) -> None:
    base = manifest.hdf5_digest(_hdf5(tmp_path / "a.h5"))
    assert manifest.hdf5_digest(_hdf5(tmp_path / "b.h5", **change)) != base


def test_the_hdf5_digest_follows_content_not_the_file(tmp_path: Path) -> None:
    a = manifest.hdf5_digest(_hdf5(tmp_path / "a.h5"))
    assert manifest.hdf5_digest(_hdf5(tmp_path / "b.h5")) == a
    assert len(a) == 64
    strings = manifest.hdf5_digest(_hdf5(tmp_path / "c.h5", attr=np.asarray(["a", "b"], dtype=object)))
    other = manifest.hdf5_digest(_hdf5(tmp_path / "d.h5", attr=np.asarray(["a", "c"], dtype=object)))
    assert strings != other


PINNED = "4e9dd04d081d6ae693fabef24d13823fde7c7d650c8a6f448021c791deacea9e"


def test_the_hdf5_digest_is_pinned_so_published_digests_stay_valid(tmp_path: Path) -> None:
    """The serialisation itself (tags, separators) is part of every published ``sha256``."""
    assert manifest.hdf5_digest(_hdf5(tmp_path / "a.h5")) == PINNED


def test_update_feeds_a_canonical_typed_serialisation() -> None:
    def fed(value: object) -> bytes:
        class H:
            data = b""

            def update(self, chunk: bytes) -> None:
                H.data += chunk

        manifest._update(H(), value)
        return H.data

    assert fed("ab") == b"s" + (2).to_bytes(8, "little") + b"ab"
    assert fed(b"ab") == fed("ab")
    assert fed(np.asarray([b"x", "y"], dtype=object)) == b"o" + repr(((2,), ["x", "y"])).encode()
    assert fed(np.asarray(["x", "y"])) == b"o" + repr(((2,), ["x", "y"])).encode()
    assert fed(np.asarray([b"x", b"y"])) == b"o" + repr(((2,), ["x", "y"])).encode()
    grid = np.asarray([["a", "b"], ["c", "d"]], dtype=object)
    assert fed(grid) == b"o" + repr(((2, 2), ["a", "b", "c", "d"])).encode()
    arr = np.arange(3, dtype="<i8")
    assert fed(arr) == b"a" + b"<i8(3,)" + arr.tobytes()
    assert (
        fed(np.arange(6, dtype="<i8").reshape(2, 3).T)
        == b"a<i8(3, 2)" + np.arange(6).reshape(2, 3).T.copy().tobytes()
    )


def test_the_metadata_digest_leaves_out_only_the_file_size(tmp_path: Path) -> None:
    def digest(**meta: object) -> str:
        path = tmp_path / "metadata.json"
        path.write_text(json.dumps(meta))
        return manifest.metadata_digest(path)

    two = digest(b=2, a=1)
    assert two == digest(a=1, b=2) == hashlib.sha256(b'{"a":1,"b":2}').hexdigest()
    base = digest(a=1, dataset_size=10)
    assert digest(a=1, dataset_size=99) == base == digest(a=1)
    assert digest(dataset_size=10, a=1) == base
    assert digest(a=2, dataset_size=10) != base
    assert base == hashlib.sha256(b'{"a":1}').hexdigest()


def test_content_digests_name_a_missing_file(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    with pytest.raises(DatasetError, match=r"lacks data/main_data\.hdf5, data/metadata\.json$"):
        manifest.content_digests(tmp_path)
    _hdf5(tmp_path / "data" / "main_data.hdf5")
    with pytest.raises(DatasetError, match=r"lacks data/metadata\.json$"):
        manifest.content_digests(tmp_path)
    (tmp_path / "data" / "metadata.json").write_text("{}")
    found = manifest.content_digests(tmp_path)
    assert found == {
        "data/main_data.hdf5": manifest.hdf5_digest(tmp_path / "data" / "main_data.hdf5"),
        "data/metadata.json": manifest.metadata_digest(tmp_path / "data" / "metadata.json"),
    }


def test_the_combined_digest_is_of_the_sorted_lines() -> None:
    files = {"b": "2", "a": "1"}
    assert manifest.combined_digest(files) == hashlib.sha256(b"a 1\nb 2\n").hexdigest()
    assert manifest.combined_digest({"a": "1", "b": "3"}) != manifest.combined_digest(files)


def test_differences_name_each_compared_field_and_shorten_digests() -> None:
    expected = {key: 1 for key in manifest.COMPARED} | {"sha256": "a" * 64, "mean_G": 1}
    assert manifest.differences(expected, dict(expected)) == []
    found = dict(expected, sha256="b" * 64, episodes=2, mean_G=5)  # mean_G is not compared
    assert manifest.differences(expected, found) == [
        f"sha256: expected {'a' * 12}, found {'b' * 12}",
        "episodes: expected 1, found 2",
    ]
    found = {key: value for key, value in expected.items() if key != "behavior_versions"}
    assert manifest.differences(expected, found) == ["behavior_versions: expected 1, found null"]
    assert manifest._short("x" * 63) == json.dumps("x" * 63)
    assert manifest._short({"b": 1, "a": [2]}) == '{"a": [2], "b": 1}'


def test_known_ids_names_every_unknown_one() -> None:
    entries = {"b/x": {}, "a/x": {}}
    assert manifest.known_ids(entries, iter(["b/x"])) == ["b/x"]
    with pytest.raises(DatasetError, match=r"^not in the manifest: c/x, d/x; known: a/x, b/x$"):
        manifest.known_ids(entries, ["c/x", "a/x", "d/x"])


def test_load_reads_the_entries_or_says_why_not(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "M.json"
    path.write_text(manifest.dumps({"b": {"y": 1, "x": 2}, "a": {}}))
    assert path.read_text() == '{\n "datasets": {\n  "a": {},\n  "b": {\n   "x": 2,\n   "y": 1\n  }\n }\n}\n'
    assert manifest.load(path) == {"a": {}, "b": {"x": 2, "y": 1}}
    assert manifest.load(str(path)) == manifest.load(path)
    with pytest.raises(
        DatasetError,
        match=r"^no dataset manifest at .*nowhere\.json; pass --manifest PATH "
        r"\(or set HARNESS_GYM_DATASETS_MANIFEST\)",
    ):
        manifest.load(tmp_path / "nowhere.json")
    path.write_text("{")
    with pytest.raises(DatasetError, match=r"^cannot read the dataset manifest .*M\.json: "):
        manifest.load(path)
    monkeypatch.setenv(manifest.MANIFEST_ENV, str(path.with_name("N.json")))
    path.with_name("N.json").write_text(manifest.dumps({"c": {}}))
    assert manifest.load() == {"c": {}}  # no path: the default one
    with pytest.raises(DatasetError, match=r"to the repository's datasets/MANIFEST\.json$"):
        manifest.load(tmp_path / "nowhere.json")
    monkeypatch.setenv(manifest.MANIFEST_ENV, "~/elsewhere.json")
    assert manifest.default_path() == Path("~/elsewhere.json").expanduser()
    monkeypatch.setenv(manifest.MANIFEST_ENV, "")
    assert manifest.default_path() == manifest.PACKAGED  # the manifest the package ships


def test_same_parameters_allows_only_the_newer_parameter_to_be_unrecorded() -> None:
    shipped = {"a": 1, "nested": {"b": 2}, "p_break_feedback": 0.1}
    assert manifest._same_parameters(shipped, {"a": 1, "nested": {"b": 2}})
    assert manifest._same_parameters(shipped, dict(shipped))
    assert not manifest._same_parameters(shipped, {"a": 1, "nested": {"b": 3}})
    assert not manifest._same_parameters(shipped, {"a": 2, "nested": {"b": 2}})
    assert not manifest._same_parameters(shipped, {"a": 1})  # nested unrecorded
    assert not manifest._same_parameters(shipped, {"a": 1, "nested": {"b": 2}, "extra": 0})
    assert not manifest._same_parameters({"a": {"b": 2}}, {"a": {"b": 2, "c": 1}})
    assert not manifest._same_parameters({"a": 1}, {"a": {"b": 1}})  # a value where a mapping was


# -- the collection's resume check on its checkpoint directory ------------------------------------------
def _llm_collect(tmp_path: Path, max_tokens: int, **kwargs):
    from harness_gym.datasets.collect import CollectConfig
    from harness_gym.executors.openai_executor import OpenAIConfig

    executor = OpenAIConfig(model="m", base_url="http://127.0.0.1:1/v1", max_tokens=max_tokens)
    return CollectConfig(
        "HarnessPlanning-v0",
        "mixed",
        3,
        "harness/planning/x-v0",
        root=str(tmp_path),
        executor=executor,
        **kwargs,
    )


def test_a_resume_with_another_reply_budget_alone_keeps_the_episodes_and_records_the_change(
    tmp_path: Path, capsys
) -> None:
    from harness_gym.datasets import collect

    first = _llm_collect(tmp_path, 100)
    directory, done = collect._open_checkpoints(first)
    assert directory == tmp_path / collect.CHECKPOINTS / "harness__planning__x-v0" and done == {}
    assert json.loads((directory / "config.json").read_text()) == json.loads(
        json.dumps(first.content_key(), sort_keys=True)
    )
    assert collect._open_checkpoints(first) == (directory, {})  # the same settings: resumed as they are
    for index in (0, 1, 3):
        (directory / f"episode-{index}.npz").write_bytes(b"")
    second = _llm_collect(tmp_path, 200)
    directory, done = collect._open_checkpoints(second)
    assert sorted(done) == [0, 1]  # episode 3 lies beyond the 3 wanted
    assert "resuming 'harness/planning/x-v0' with max_tokens 200 (was 100) after 3 finished episode(s)" in (
        capsys.readouterr().out
    )
    changes = [{"from": 100, "to": 200, "episodes_done": 3}]
    assert collect.max_tokens_changes(second) == changes
    stored = json.loads((directory / "config.json").read_text())
    assert stored == {**json.loads(json.dumps(second.content_key())), collect.MAX_TOKENS_CHANGES: changes}
    third = _llm_collect(tmp_path, 300)
    collect._open_checkpoints(third)
    assert collect.max_tokens_changes(third) == [*changes, {"from": 200, "to": 300, "episodes_done": 3}]


def test_a_resume_with_another_budget_and_another_setting_is_refused(tmp_path: Path) -> None:
    from harness_gym.datasets import collect

    directory, _ = collect._open_checkpoints(_llm_collect(tmp_path, 100))
    (directory / "episode-0.npz").write_bytes(b"")
    other = _llm_collect(tmp_path, 200, seed=5)
    with pytest.raises(
        collect.CollectError, match=r"with different settings is at .* \(.*; .*\); rerun with the same"
    ):
        collect._open_checkpoints(other)
    assert collect.max_tokens_changes(other) == []
    assert collect._open_checkpoints(dataclasses.replace(other, overwrite=True)) == (directory, {})
    assert not (directory / "episode-0.npz").exists()  # overwrite starts again
    assert collect._open_checkpoints(other) == (directory, {})  # its own settings now


def test_an_unreadable_checkpoint_manifest_is_named(tmp_path: Path) -> None:
    from harness_gym.datasets import collect

    config = _llm_collect(tmp_path, 100)
    directory = collect.checkpoint_dir(config)
    directory.mkdir(parents=True)
    (directory / "config.json").write_text("{")
    with pytest.raises(
        collect.CollectError,
        match=r"^the checkpoint manifest .*config\.json cannot be read \(.*\); delete .* or pass "
        r"overwrite to start again$",
    ):
        collect._open_checkpoints(config)
    assert collect.max_tokens_changes(config) == []


def test_a_resume_key_names_unknown_fields_and_takes_a_nested_configs_own_key() -> None:
    from dataclasses import dataclass, field

    from harness_gym.evaluation.engine import config_key

    class Nested:
        def content_key(self) -> dict:
            return {"model": "m"}

    @dataclass
    class Inner:
        x: int = 1

    @dataclass
    class Config:
        a: int = 1
        nested: object = field(default_factory=Nested)
        inner: Inner = field(default_factory=Inner)
        late: int | None = None

    assert config_key(Config()) == {"a": 1, "nested": {"model": "m"}, "inner": {"x": 1}, "late": None}
    assert config_key(Config(), neutral=("a",), added=("late",)) == {
        "nested": {"model": "m"},
        "inner": {"x": 1},
    }
    assert config_key(Config(late=3), added=("late",))["late"] == 3
    for neutral, added in ((("a", "nope"), ()), (("a",), ("nope",)), ((), ("nope", "zz"))):
        with pytest.raises(TypeError, match=r"^Config has no field\(s\) \['nope'"):
            config_key(Config(), neutral, added)


def test_a_checkpoint_directory_without_its_manifest_is_started_afresh(tmp_path: Path) -> None:
    from harness_gym.datasets import collect

    config = _llm_collect(tmp_path, 100)
    collect.checkpoint_dir(config).mkdir(parents=True)  # left by a run stopped before its manifest
    directory, done = collect._open_checkpoints(config)
    assert done == {} and json.loads((directory / "config.json").read_text())["executor"]["max_tokens"] == 100


def test_a_recorded_profile_is_named_by_the_shipped_profile_with_its_parameters() -> None:
    """Each shipped profile's parameters name that profile (not the first or the default one); changed
    parameters are ``custom``."""
    from harness_gym.envs.registry import env_class
    from harness_gym.executors.profiles import PROFILE_NAMES, for_domain

    env_id = "HarnessPlanning-v0"
    domain_cls = env_class(env_id).domain_cls
    for name in PROFILE_NAMES:
        assert manifest._profile_name(dataclasses.asdict(for_domain(name, domain_cls)), env_id) == name
    changed = dataclasses.asdict(for_domain("weak", domain_cls))
    changed["costs"] = {"changed": True}
    assert manifest._profile_name(changed, env_id) == "custom"


def test_verify_by_default_builds_nothing_and_rebuilds_on_one_quiet_worker(tmp_path, monkeypatch) -> None:
    """Without ``rebuild`` nothing is built: a missing local copy is reported. A rebuild runs on one
    worker without progress unless told otherwise, and a failing build is one FAIL line."""
    from harness_gym.datasets import tiers

    dataset_id = tiers.tier_id("HarnessTauRetail-v0", "medium")
    calls: list[dict] = []

    def build(env_id, tier, **kwargs):
        calls.append({"env_id": env_id, "tier": tier, **kwargs})
        raise DatasetError("stopped\nsecond line")

    monkeypatch.setattr(tiers, "build", build)
    missing = manifest.verify(dataset_id, {}, root=tmp_path)
    assert not missing.ok and missing.line.startswith(f"MISSING {dataset_id}: no local copy under ")
    assert calls == []
    rebuilt = manifest.verify(dataset_id, {}, root=tmp_path, rebuild=True)
    assert rebuilt == manifest.Verdict(dataset_id, False, f"FAIL {dataset_id}: stopped")
    assert [call["workers"] for call in calls] == [1] and calls[0]["show_progress"] is False
    assert (calls[0]["env_id"], calls[0]["tier"]) == ("HarnessTauRetail-v0", "medium")


def test_verify_compares_the_copy_it_was_told_to_and_says_which(tmp_path, monkeypatch) -> None:
    """The local copy under ``root`` (a directory with ``data``) or a fresh build in a temporary directory
    is the one compared; the line names the digest, counts and source, each difference, or the first line
    of what went wrong."""
    from harness_gym.datasets import tiers

    dataset_id = tiers.tier_id("HarnessTauRetail-v0", "medium")
    expected = {"sha256": "a" * 64, "episodes": 3, "steps": 7}
    read: list[tuple[str, Path]] = []
    found = dict(expected)

    def entry(name, root):
        read.append((name, Path(root)))
        if isinstance(found.get("raise"), Exception):
            raise found["raise"]
        return found

    built: list[Path] = []
    monkeypatch.setattr(manifest, "entry", entry)
    monkeypatch.setattr(tiers, "build", lambda env_id, tier, root, **kwargs: built.append(Path(root)))
    missing = manifest.verify(dataset_id, expected, root=tmp_path)
    assert missing == manifest.Verdict(
        dataset_id,
        False,
        f"MISSING {dataset_id}: no local copy under {tmp_path} (harness-gym datasets pull {dataset_id}, "
        "or verify --rebuild)",
    )
    (tmp_path / dataset_id / "data").mkdir(parents=True)
    ok = manifest.verify(dataset_id, expected, root=tmp_path)
    assert ok == manifest.Verdict(
        dataset_id, True, f"ok   {dataset_id}  {'a' * 12}  3 episodes  7 steps  (local copy)"
    )
    assert read == [(dataset_id, tmp_path)] and built == []
    found.update(sha256="b" * 64, steps=8)
    differ = manifest.verify(dataset_id, expected, root=tmp_path)
    assert differ == manifest.Verdict(
        dataset_id,
        False,
        f"FAIL {dataset_id}  {'b' * 12}  3 episodes  8 steps  (local copy): sha256: expected {'a' * 12}, "
        f"found {'b' * 12}; steps: expected 7, found 8",
    )
    read.clear()
    rebuilt = manifest.verify(dataset_id, expected, root=tmp_path, rebuild=True)
    assert rebuilt.line.startswith(f"FAIL {dataset_id}  {'b' * 12}  3 episodes  8 steps  (rebuilt): ")
    assert len(built) == 1 and read == [(dataset_id, built[0])] and built[0] != tmp_path
    assert built[0].name.startswith("harness-verify-") and not built[0].exists()  # the build is removed
    for error, reason in ((KeyError("x"), "'x'"), (ValueError(""), "ValueError"), (OSError("a\nb"), "a")):
        found["raise"] = error
        assert manifest.verify(dataset_id, expected, root=tmp_path) == manifest.Verdict(
            dataset_id, False, f"FAIL {dataset_id}: {reason}"
        )


def test_the_entry_names_the_executor_profile_and_hashes_it_in_sorted_key_order(
    tmp_path, monkeypatch
) -> None:
    """A dataset recorded without a profile has none in its entry; a recorded profile is named and hashed
    over its sorted-key JSON, whatever key order the dataset stored it in."""
    from types import SimpleNamespace

    from harness_gym.envs.registry import env_class
    from harness_gym.executors.profiles import for_domain

    env_id = "HarnessTauRetail-v0"
    meta = {
        "algorithm_name": "base",
        "harness_behaviors": ["base"],
        "harness_layout_version": "1",
        "harness_format_version": "1",
        "harness_reference_table_version": "r",
        "ref_min_score": 0.0,
        "ref_max_score": 1.0,
        "num_episodes_average_score": "2",
        "harness_behavior_versions": "{}",
        "harness_version": "v",
        "harness_task_set_version": "t",
        "harness_task_ids": ["a"],
    }
    stats = dict.fromkeys(
        (
            "episodes",
            "steps",
            "mean_G",
            "max_G",
            "buffer_slack",
            "mean_hms_norm",
            "hms_fired",
            "hms_applicable",
            "support",
        ),
        1,
    )
    monkeypatch.setattr(
        manifest, "open_dataset", lambda *a: SimpleNamespace(storage=SimpleNamespace(metadata=meta))
    )
    monkeypatch.setattr(manifest, "dataset_stats", lambda dataset: stats)
    monkeypatch.setattr(manifest, "content_digests", lambda directory: {})
    dataset_id = "harness/tau_retail/medium-v0"
    meta["harness_executor"] = json.dumps({"name": "simulated", "version": 2})
    assert manifest.entry(dataset_id, tmp_path)["executor"] == {
        "name": "simulated",
        "profile": None,
        "profile_sha256": None,
    }
    profile = dataclasses.asdict(for_domain("weak", env_class(env_id).domain_cls))
    reversed_profile = dict(reversed(profile.items()))
    meta["harness_executor"] = json.dumps({"name": "simulated", "version": 2, "profile": reversed_profile})
    canonical = json.dumps(profile, sort_keys=True, separators=(",", ":")).encode()
    assert manifest.entry(dataset_id, tmp_path)["executor"] == {
        "name": "simulated",
        "profile": "weak",
        "profile_sha256": hashlib.sha256(canonical).hexdigest(),
    }
