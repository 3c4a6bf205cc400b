"""The manifest: deterministic builds, content digests that see values and ignore file layout, verification
in one line per id, and documents generated from the manifest alone."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest

from harness_gym.cli.main import main
from harness_gym.datasets import cards, manifest, tiers
from harness_gym.executors.simulated import SIMULATOR_VERSION

ROOT = Path(__file__).resolve().parents[1]
TAU = "HarnessTauRetail-v0"
"""The smallest published tier: 16 train tasks x 20 episodes, built in about a second."""
MEDIUM = tiers.tier_id(TAU, "medium")


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """tau-retail's medium tier at its published size, and a manifest holding its entry."""
    root = tmp_path_factory.mktemp("published")
    tiers.build(TAU, "medium", root=root)
    entries = {MEDIUM: manifest.entry(MEDIUM, root)}
    path = root / "MANIFEST.json"
    path.write_text(manifest.dumps(entries))
    return root, path, entries


def test_builds_are_deterministic_for_any_worker_count(tmp_path, published):
    root, _, entries = published
    tiers.build(TAU, "medium", root=tmp_path, workers=2)
    assert manifest.entry(MEDIUM, tmp_path) == entries[MEDIUM]
    for name in manifest.DATA_FILES:  # the same h5py writes the same bytes; the digests do not rely on it
        assert (tmp_path / MEDIUM / name).read_bytes() == (root / MEDIUM / name).read_bytes()
    assert manifest.dumps(entries) == manifest.dumps(json.loads(manifest.dumps(entries))["datasets"])


def _rewrite(source: Path, target: Path) -> None:
    """The same groups, datasets and attributes in another HDF5 layout: contiguous arrays, reverse
    creation order, time stamps kept."""
    with h5py.File(source, "r") as src, h5py.File(target, "w", track_order=False) as dst:
        names: list[str] = []
        src.visit(names.append)
        for name in reversed(names):
            obj = src[name]
            if isinstance(obj, h5py.Dataset):
                dst.create_dataset(name, data=obj[()], track_times=True)
            else:
                dst.require_group(name)
        for name in names:
            for key, value in src[name].attrs.items():
                dst[name].attrs[key] = value
        for key, value in src.attrs.items():
            dst.attrs[key] = value


def test_the_hdf5_digest_follows_content_not_layout(tmp_path, published):
    root, _, _ = published
    original = root / MEDIUM / "data" / "main_data.hdf5"
    relaid = tmp_path / "relaid.hdf5"
    _rewrite(original, relaid)
    assert relaid.read_bytes() != original.read_bytes()
    assert manifest.hdf5_digest(relaid) == manifest.hdf5_digest(original)
    with h5py.File(relaid, "a") as file:  # one reward of one episode
        rewards = file["episode_3/rewards"]
        rewards[-1] = rewards[-1] + 1e-6
    assert manifest.hdf5_digest(relaid) != manifest.hdf5_digest(original)
    _rewrite(original, relaid)
    with h5py.File(relaid, "a") as file:  # one episode-metadata attribute
        file["episode_3"].attrs["seed"] = 99
    assert manifest.hdf5_digest(relaid) != manifest.hdf5_digest(original)
    _rewrite(original, relaid)
    with h5py.File(relaid, "a") as file:  # one attribute renamed, its value kept
        attrs = file["episode_3"].attrs
        attrs["seed_renamed"] = attrs["seed"]
        del attrs["seed"]
    with h5py.File(original, "r") as old, h5py.File(relaid, "r") as new:  # in the same sorted place
        assert sorted(old["episode_3"].attrs).index("seed") == sorted(new["episode_3"].attrs).index(
            "seed_renamed"
        )
    assert manifest.hdf5_digest(relaid) != manifest.hdf5_digest(original)


def test_the_metadata_digest_ignores_the_file_size_only(tmp_path, published):
    root, _, _ = published
    meta = json.loads((root / MEDIUM / "data" / "metadata.json").read_text())
    path = tmp_path / "metadata.json"
    digest = manifest.metadata_digest(root / MEDIUM / "data" / "metadata.json")
    path.write_text(json.dumps({**meta, "dataset_size": 123.4}, indent=3))
    assert manifest.metadata_digest(path) == digest
    path.write_text(json.dumps({**meta, "ref_max_score": 0.5}))
    assert manifest.metadata_digest(path) != digest


def test_the_entry_holds_what_the_manifest_promises(published):
    _, _, entries = published
    entry = entries[MEDIUM]
    assert entry["episodes"] == 320 and entry["tier"] == "medium" and entry["behavior"] == "base"
    assert entry["executor"]["name"] == "simulated" and entry["executor"]["profile"] == "default"
    assert entry["simulator_version"] == SIMULATOR_VERSION and entry["layout_version"] == 1
    assert entry["reference_scores"]["episodes"] == 180
    assert len(entry["reference_table_version"]) == 12
    assert entry["sha256"] == manifest.combined_digest(entry["files"])
    assert entry["rebuild"] == f"harness-gym datasets build --env {TAU} --tier medium"


def test_verify_reads_local_copies_and_reports_a_missing_one_without_building(tmp_path, published, capsys):
    root, path, entries = published
    for extra in (["--all"], [MEDIUM], []):  # plain verify: every local copy of a published id
        assert main(["datasets", "verify", *extra, "--root", str(root), "--manifest", str(path)]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"ok   {MEDIUM}") and "(local copy)" in lines[0]
        assert entries[MEDIUM]["sha256"][:12] in lines[0]
    assert main(["datasets", "verify", MEDIUM, "--root", str(tmp_path), "--manifest", str(path)]) == 1
    out = capsys.readouterr()
    assert out.out.startswith(f"MISSING {MEDIUM}: no local copy under {tmp_path}")
    assert f"harness-gym datasets pull {MEDIUM}" in out.out and "1 of 1 dataset(s) missing" in out.err
    assert not (tmp_path / "harness").exists()  # reported, not built
    assert main(["datasets", "verify", "--root", str(tmp_path), "--manifest", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"no local copies of published datasets under {tmp_path}")
    argv = ["datasets", "verify", MEDIUM, "--rebuild", "--quiet", "--root", str(tmp_path)]
    assert main([*argv, "--manifest", str(path)]) == 0
    assert "(rebuilt)" in capsys.readouterr().out
    assert not (tmp_path / MEDIUM).exists()  # a rebuild for checking leaves nothing behind


def test_verify_rebuild_builds_afresh_even_beside_a_local_copy(tmp_path, published, capsys):
    root, path, entries = published
    shutil.copytree(root / "harness", tmp_path / "harness")
    local = tmp_path / MEDIUM / "data" / "main_data.hdf5"
    with h5py.File(local, "a") as file:  # the local copy no longer matches the manifest
        file["episode_0/rewards"][-1] = 0.5
    before = local.read_bytes()
    base = ["datasets", "verify", MEDIUM, "--root", str(tmp_path), "--manifest", str(path), "--quiet"]
    assert main(base) == 1
    assert capsys.readouterr().out.startswith(f"FAIL {MEDIUM}")
    assert main([*base, "--rebuild"]) == 0  # the fresh build is what is checked
    out = capsys.readouterr().out
    assert out.startswith(f"ok   {MEDIUM}  {entries[MEDIUM]['sha256'][:12]}") and "(rebuilt)" in out
    assert local.read_bytes() == before  # and the local copy is left as it was


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("[1, 2]", "found a JSON list"),
        ('{"results": {}}', "found no 'datasets' table"),
        ('{"datasets": [1]}', "found no 'datasets' table"),
        ('{"datasets": {"a": 3}}', "no 'datasets' table"),
    ],
)
def test_a_foreign_manifest_is_one_line(tmp_path, capsys, text, found):
    path = tmp_path / "foreign.json"
    path.write_text(text)
    assert main(["datasets", "verify", "--all", "--manifest", str(path), "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path} is not a dataset manifest" in err and found in err


def test_verify_names_what_differs(tmp_path, published, capsys):
    root, path, entries = published
    shutil.copytree(root / "harness", tmp_path / "harness")
    with h5py.File(tmp_path / MEDIUM / "data" / "main_data.hdf5", "a") as file:
        file["episode_0/rewards"][-1] = 0.123
    changed = {MEDIUM: {**entries[MEDIUM], "simulator_version": SIMULATOR_VERSION + 1}}
    other = tmp_path / "MANIFEST.json"
    other.write_text(manifest.dumps(changed))
    assert main(["datasets", "verify", MEDIUM, "--root", str(tmp_path), "--manifest", str(other)]) == 1
    out = capsys.readouterr()
    assert out.out.startswith(f"FAIL {MEDIUM}")
    assert "sha256: expected" in out.out
    assert f"simulator_version: expected {SIMULATOR_VERSION + 1}, found {SIMULATOR_VERSION}" in out.out
    assert "1 of 1 dataset(s) missing or differing from the manifest" in out.err
    assert main(["datasets", "verify", "harness/planning/nothing-v0", "--manifest", str(path)]) == 1
    assert "not in the manifest: harness/planning/nothing-v0" in capsys.readouterr().err
    assert main(["datasets", "verify", "--manifest", str(tmp_path / "missing.json"), "--all"]) == 1
    assert "no dataset manifest at" in capsys.readouterr().err


def test_build_reports_against_the_manifest(tmp_path, published, capsys):
    _, path, _ = published
    argv = ["datasets", "build", "--env", TAU, "--tier", "medium", "--root", str(tmp_path), "--quiet"]
    assert main([*argv, "--manifest", str(path)]) == 0
    assert "matches the manifest" in capsys.readouterr().out
    assert main([*argv, "--manifest", str(path), "--episodes-per-task", "1"]) == 0
    assert "a reduced build (no manifest entry)" in capsys.readouterr().out


def test_cards_and_index_come_from_the_entries(published):
    _, _, entries = published
    entry = entries[MEDIUM]
    card = cards.card(MEDIUM, entry)
    assert f"`{entry['sha256']}`" in card and f"| episodes | {entry['episodes']} |" in card
    assert f"harness-gym datasets pull {MEDIUM}" in card and "recover_environment(eval_env=True)" in card
    index = cards.index(entries)
    assert f"[`{MEDIUM}`](tau_retail-medium-v0.md)" in index and entry["sha256"][:12] in index
    table = cards.readme_table(entries)
    assert f"| `harness/tau_retail/*-v0` | {entry['episodes']} |" in table  # one row per setting
    assert f"{entry['mean_G']:.3f} ({entry['normalized_score']:.1f})" in table
    readme = f"intro\n{cards.README_START}\nold\n{cards.README_END}\nrest\n"
    assert cards.replace_readme_table(readme, entries) == f"intro\n{table}\nrest\n"
    with pytest.raises(ValueError, match="no dataset table markers"):
        cards.replace_readme_table("no markers", entries)


def _build_script():
    spec = importlib.util.spec_from_file_location("build", ROOT / "datasets" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_documents_are_generated_from_the_committed_manifest():
    build = _build_script()
    entries = manifest.load(build.MANIFEST)
    assert set(entries) == set(tiers.all_ids())  # every published tier, built
    assert {e["simulator_version"] for e in entries.values()} == {SIMULATOR_VERSION}  # not stale
    for path, text in build.documents(entries).items():
        assert path.read_text() == text, (
            f"{path} differs from the manifest: run python datasets/build.py --docs-only"
        )
    stale = {p.name for p in (ROOT / "datasets").glob("*-v[0-9]*.md")} - {cards.card_name(i) for i in entries}
    assert not stale
    for entry in entries.values():
        assert entry["episodes"] == 20 * entry["train_tasks"]
        assert np.isclose(
            entry["normalized_score"],
            100
            * (entry["mean_G"] - entry["reference_scores"]["random"])
            / (entry["reference_scores"]["expert"] - entry["reference_scores"]["random"]),
            atol=1e-3,
        )


def test_the_package_ships_the_committed_manifest(monkeypatch):
    """An installed copy (no checkout beside it) verifies against the same manifest."""
    monkeypatch.delenv(manifest.MANIFEST_ENV, raising=False)
    assert manifest.default_path() == manifest.PACKAGED
    assert manifest.PACKAGED.parent == Path(manifest.__file__).resolve().parents[1] / "data"
    assert manifest.PACKAGED.read_bytes() == (ROOT / "datasets" / "MANIFEST.json").read_bytes()


def test_a_published_tier_rebuilds_to_the_shipped_manifest(published):
    """What `datasets pull` and `verify` promise a user: this tree rebuilds a published tier to the entry
    the package ships (a new executor parameter or metadata key recorded in v1 datasets changes the
    checksum of every tier, and every user's verify would fail)."""
    _, _, entries = published
    shipped = manifest.load(manifest.PACKAGED)
    assert entries[MEDIUM] == shipped[MEDIUM]
