"""Publishing to and pulling from a Minari remote, and pulling offline.

No Minari remote can run on this machine (Minari knows only Hugging Face and Google Cloud storage, and no
loopback server of either API is available), so these tests replace one thing: the storage class Minari's
remote layer picks for ``hf://`` (its ``minari.storage.remotes`` registry) is ``DirectoryStorage``, which
keeps the remote in a local directory. Everything above it is Minari's own code (``upload_dataset``,
``download_dataset``, namespace upload and download, version checks) and ours.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import minari
import pytest
from minari.storage import get_dataset_path
from minari.storage.remotes import _registry
from minari.storage.remotes.cloud_storage import CloudStorage

from harness_gym.cli.main import main
from harness_gym.datasets import manifest, remote, tiers
from harness_gym.datasets.files import DatasetError

TAU = "HarnessTauRetail-v0"
MEDIUM = tiers.tier_id(TAU, "medium")


class DirectoryStorage(CloudStorage):
    """Minari's remote storage interface over a local directory (``REMOTES / <name>``)."""

    root: Path
    offline = False

    def __init__(self, name: str, token: str | None) -> None:
        if self.offline:
            raise ConnectionError("the remote does not answer")
        self.dir = self.root / name
        self.token = token

    def upload_dataset(self, dataset_id: str) -> None:
        shutil.copytree(get_dataset_path(dataset_id), self.dir / "datasets" / dataset_id)

    def list_datasets(self, prefix: str | None = None) -> list[str]:
        base = self.dir / "datasets"
        ids = [str(p.parent.parent.relative_to(base)) for p in base.glob("**/data/metadata.json")]
        return sorted(i for i in ids if prefix is None or i.startswith(prefix))

    def get_dataset_metadata(self, dataset_id: str) -> dict:
        return json.loads((self.dir / "datasets" / dataset_id / "data" / "metadata.json").read_text())

    def download_dataset(self, dataset_id: str, path: Path) -> None:
        shutil.copytree(self.dir / "datasets" / dataset_id, Path(path) / dataset_id)

    def list_namespaces(self) -> list[str]:
        base = self.dir / "namespaces"
        return sorted(str(p.parent.relative_to(base)) for p in base.glob("**/namespace_metadata.json"))

    def download_namespace_metadata(self, namespace: str, path: Path) -> None:
        target = Path(path) / namespace / "namespace_metadata.json"
        shutil.copyfile(self.dir / "namespaces" / namespace / "namespace_metadata.json", target)

    def upload_namespace(self, namespace: str) -> None:
        target = self.dir / "namespaces" / namespace / "namespace_metadata.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(get_dataset_path() / namespace / "namespace_metadata.json", target)


@pytest.fixture
def storage(tmp_path, monkeypatch):
    """``hf://`` served from ``tmp_path / "remote"``: the one replaced piece (module docstring)."""
    monkeypatch.setattr(DirectoryStorage, "root", tmp_path / "remote", raising=False)
    monkeypatch.setitem(_registry, "hf", lambda: DirectoryStorage)
    monkeypatch.delenv(remote.REMOTE_ENV, raising=False)
    return tmp_path / "remote" / "org"


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """tau-retail's medium tier at its published size and a manifest holding its entry."""
    root = tmp_path_factory.mktemp("published")
    tiers.build(TAU, "medium", root=root)
    entries = {MEDIUM: manifest.entry(MEDIUM, root)}
    path = root / "MANIFEST.json"
    path.write_text(manifest.dumps(entries))
    return root, path, entries


def test_publish_then_pull_through_minaris_remote(tmp_path, storage, published):
    root, _, entries = published
    log: list[str] = []
    assert remote.publish([MEDIUM], "hf://org/harness", "tok", root, entries, log.append) == [MEDIUM]
    assert (storage / "datasets" / MEDIUM / "data" / "main_data.hdf5").is_file()
    uploaded = {
        ns: json.loads((storage / "namespaces" / ns / "namespace_metadata.json").read_text())
        for ns in ("harness", "harness/tau_retail")
    }
    assert uploaded["harness/tau_retail"]["display_name"] == TAU
    assert uploaded["harness"]["description"]
    assert remote.publish([MEDIUM], "hf://org", "tok", root, entries, log.append) == []
    assert log == [f"{MEDIUM}: uploaded to hf://org", f"{MEDIUM}: already on hf://org, left as it is"]

    fresh = tmp_path / "fresh"
    (pulled,) = remote.pull([MEDIUM], "hf://org", entries, fresh)
    assert pulled.source == "downloaded from hf://org" and pulled.verdict.ok
    assert pulled.verdict.line.startswith(f"ok   {MEDIUM}  {entries[MEDIUM]['sha256'][:12]}")
    namespace = json.loads((fresh / "harness" / "tau_retail" / "namespace_metadata.json").read_text())
    assert namespace == uploaded["harness/tau_retail"]
    loaded = minari.load_dataset(str(fresh / MEDIUM))
    assert loaded.total_episodes == entries[MEDIUM]["episodes"]


def test_publish_refuses_a_wrong_remote_or_a_copy_that_differs(storage, published):
    root, _, entries = published
    with pytest.raises(DatasetError, match="give --remote hf://org"):
        remote.publish([MEDIUM], "hf://org/elsewhere", None, root, entries)
    with pytest.raises(DatasetError, match="expected hf://ORG or gcp://BUCKET"):
        remote.publish([MEDIUM], "s3://bucket", None, root, entries)
    changed = {MEDIUM: {**entries[MEDIUM], "steps": entries[MEDIUM]["steps"] + 1}}
    with pytest.raises(DatasetError, match="differs from the manifest"):
        remote.publish([MEDIUM], "hf://org", None, root, changed)
    assert not (storage / "datasets").exists()


def test_pull_builds_and_verifies_when_no_remote_answers(tmp_path, storage, published, monkeypatch, capsys):
    _, path, entries = published
    monkeypatch.setattr(DirectoryStorage, "offline", True)
    (pulled,) = remote.pull([MEDIUM], "hf://org", entries, tmp_path / "offline")
    assert pulled.source.startswith("built locally: hf://org did not serve it (ConnectionError")
    assert pulled.verdict.ok
    argv = ["datasets", "pull", MEDIUM, "--root", str(tmp_path / "none"), "--manifest", str(path)]
    assert main(argv) == 0
    out = capsys.readouterr()
    line = out.out.strip()
    assert line.startswith(f"ok   {MEDIUM}") and line.endswith(
        "[built locally: no remote configured (--remote or $MINARI_REMOTE)]"
    )
    progress = [line for line in out.err.splitlines() if line.startswith(MEDIUM)]  # before the work
    assert progress == [
        f"{MEDIUM}: building locally (no remote configured (--remote or $MINARI_REMOTE))",
        f"{MEDIUM}: verifying against the manifest",
    ]
    assert "collect harness/tau_retail/medium-v0" in out.err  # the build's progress bar
    with pytest.raises(DatasetError, match="not a published id"):
        list(remote.pull(["harness/tau_retail/mine-v0"], "hf://org", entries, tmp_path / "mine"))


def test_a_remote_without_its_client_is_one_line_before_any_work(tmp_path, published, monkeypatch, capsys):
    """Minari's own loader of the ``hf://`` storage fails as it does without ``huggingface_hub``."""
    _, path, _ = published
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import huggingface_hub -> ImportError
    monkeypatch.delitem(sys.modules, "minari.storage.remotes.huggingface", raising=False)
    monkeypatch.delenv(remote.REMOTE_ENV, raising=False)
    empty = str(tmp_path / "empty")  # no local copy: an error about it would mean work began first
    for argv in (
        ["datasets", "publish", MEDIUM, "--remote", "hf://org", "--root", empty],
        ["datasets", "pull", MEDIUM, "--remote", "hf://org", "--root", empty, "--manifest", str(path)],
    ):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "remote hf://org needs a client library" in err
        assert "pip install 'harness-gym[hub]'" in err
    assert not (tmp_path / "empty" / "harness").exists()
