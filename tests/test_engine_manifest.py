"""The engine's resume check (``harness_gym.evaluation.engine.check_manifest``): a checkpoint directory is
resumed only with exactly the settings it was started with, an added or a removed setting included."""

from __future__ import annotations

import json

import pytest

from harness_gym.evaluation.engine import Checkpoints, ResumeError, check_manifest, differences

SETTINGS = {"env": {"id": "HarnessCoding-v0", "executor": {"temperature": 0.0}}, "seeds": [0, 1], "k": 3}


def test_a_new_directory_gets_the_manifest_and_the_same_settings_resume(tmp_path):
    directory = tmp_path / "run" / "checkpoints"
    check_manifest(directory, SETTINGS, "bench")
    assert json.loads((directory / "manifest.json").read_text()) == SETTINGS
    # sorted keys, one space of indent: the file reads the same whatever order the settings came in
    assert (directory / "manifest.json").read_text() == json.dumps(SETTINGS, sort_keys=True, indent=1)
    assert (directory / "manifest.json").read_text().startswith('{\n "env": {\n  "executor"')
    check_manifest(directory, json.loads(json.dumps(SETTINGS)), "bench")  # same settings: no error
    assert sorted(p.name for p in directory.iterdir()) == ["manifest.json"]


@pytest.mark.parametrize(
    ("now", "change"),
    [
        ({**SETTINGS, "workers": 2}, "workers: '<unset>' -> 2"),  # a setting added
        ({k: v for k, v in SETTINGS.items() if k != "k"}, "k: 3 -> '<unset>'"),  # a setting removed
        (
            {**SETTINGS, "env": {"id": "HarnessCoding-v0", "executor": {"temperature": 0.0, "top_p": 1}}},
            "env.executor.top_p: '<unset>' -> 1",
        ),  # a nested setting added
        (
            {**SETTINGS, "env": {"id": "HarnessCoding-v0", "executor": {}}},
            "env.executor.temperature: 0.0 -> ",
        ),
        ({**SETTINGS, "seeds": [0]}, r"seeds: [0, 1] -> [0]"),
        ({**SETTINGS, "k": None}, "k: 3 -> None"),  # None is a value, not an absent setting
    ],
)
def test_a_resume_is_refused_for_any_changed_added_or_removed_setting(tmp_path, now, change):
    check_manifest(tmp_path, SETTINGS, "bench")
    with pytest.raises(ResumeError) as info:
        check_manifest(tmp_path, now, "bench")
    message = str(info.value)
    assert message.startswith(
        f"cannot resume the interrupted bench at {tmp_path}: it was started with different"
    )
    assert change in message
    assert f"delete {tmp_path} to start again" in message
    assert json.loads((tmp_path / "manifest.json").read_text()) == SETTINGS  # the old manifest stays


def test_every_changed_setting_is_named_in_the_one_line_error(tmp_path):
    check_manifest(tmp_path, SETTINGS, "collection")
    with pytest.raises(ResumeError) as info:
        check_manifest(tmp_path, {**SETTINGS, "k": 4, "seeds": [2]}, "collection")
    message = str(info.value)
    assert "different settings (k: 3 -> 4; seeds: [0, 1] -> [2]); rerun with the same settings" in message
    assert "\n" not in message


def test_differences_lists_each_setting_once_sorted_with_dotted_names():
    old = {"b": 1, "a": {"x": 1, "y": 2}, "same": "s"}
    new = {"b": 2, "a": {"x": 1, "z": 3}, "same": "s"}
    assert differences(old, new) == [
        "a.y: 2 -> '<unset>'",
        "a.z: '<unset>' -> 3",
        "b: 1 -> 2",
    ]
    assert differences(old, old) == []
    assert differences({}, {"a": {"b": {"c": 0}}}) == ["a.b.c: '<unset>' -> 0"]


def test_the_manifest_compares_settings_as_json_sees_them(tmp_path):
    check_manifest(tmp_path, {"seeds": (0, 1), "path": tmp_path}, "collection")
    check_manifest(tmp_path, {"seeds": [0, 1], "path": str(tmp_path)}, "collection")
    with pytest.raises(ResumeError, match="interrupted collection"):
        check_manifest(tmp_path, {"seeds": [0, 1], "path": "elsewhere"}, "collection")


def test_checkpoints_keep_episodes_behind_the_manifest(tmp_path):
    cp = Checkpoints(tmp_path / "c", SETTINGS, "bench")
    cp.save("a-0", {"G": 1.0})
    cp.save("b-1", [1, 2])
    assert Checkpoints(tmp_path / "c", SETTINGS, "bench").load() == {"a-0": {"G": 1.0}, "b-1": [1, 2]}
    assert not [p for p in (tmp_path / "c").iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(ResumeError, match=r"^cannot resume the interrupted bench at "):
        Checkpoints(tmp_path / "c", {**SETTINGS, "extra": 1}, "bench")
    cp.remove()
    assert not (tmp_path / "c").exists()
    cp.remove()  # removing what is gone already is no error


def test_a_resume_key_refuses_to_leave_out_a_field_the_config_does_not_have():
    """A neutral or added name that is no field (a typo, a renamed field) is an error naming the config,
    never a silently larger key."""
    import dataclasses

    from harness_gym.evaluation.engine import config_key

    @dataclasses.dataclass
    class Settings:
        k: int = 1

    with pytest.raises(TypeError, match=r"^Settings has no field\(s\) \['typo'\]$"):
        config_key(Settings(), neutral=("typo",))
    with pytest.raises(TypeError, match=r"^Settings has no field\(s\) \['late'\]$"):
        config_key(Settings(), added=("late",))


def test_a_nested_config_enters_the_key_by_its_own_resume_key():
    """Its neutral fields stay out (a nested config's scheduling never refuses the outer resume); another
    dataclass enters as a dict, a class as itself."""
    import dataclasses

    from harness_gym.evaluation.engine import config_key

    @dataclasses.dataclass
    class Inner:
        seed: int = 0
        workers: int = 1

        def content_key(self):
            return config_key(self, neutral=("workers",))

    @dataclasses.dataclass
    class Plain:
        x: int = 1

    @dataclasses.dataclass
    class Outer:
        inner: Inner
        plain: Plain
        kind: type = Plain

    key = config_key(Outer(Inner(3, 8), Plain(2)))
    assert key == {"inner": {"seed": 3}, "plain": {"x": 2}, "kind": Plain}  # another dataclass as a dict


def test_an_env_keyword_json_cannot_hold_is_recorded_by_its_repr() -> None:
    """A profile given as a path (or any value JSON cannot hold) enters the resume manifest as its repr, so
    the manifest can be written and compared, never refused."""
    from pathlib import PurePosixPath

    from harness_gym.evaluation.protocol import env_settings

    assert env_settings({"executor_profile": PurePosixPath("/p/weak.json")}) == {
        "executor_profile": "PurePosixPath('/p/weak.json')"
    }
