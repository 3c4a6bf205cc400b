"""The manifest of the published tiers: what each id must hold, checkable against any copy of it.

``datasets/MANIFEST.json`` (written by ``datasets/build.py``, never by hand) maps every published id to its
content digests, episode and step counts, mean G and normalised score, behaviour, executor profile, the
simulator, observation layout, format and reference-table versions, and the statistics its card shows. It
ships in the package as ``harness_gym/data/datasets_manifest.json`` (a link to it in the checkout), so an
installed harness-gym pulls and verifies without a checkout. The
cards and their index (``datasets/*.md``) and the README's dataset table are generated from it
(``card``, ``index``, ``readme_table``), so they cannot disagree with it or with each other.

Checksums are of content, not of bytes. Minari writes HDF5 through h5py, whose files depend on the HDF5
library's version (object header layout, free-space handling) even when the data are equal, and its
``metadata.json`` holds ``dataset_size``, the file size in MB. So the SHA-256 of ``main_data.hdf5`` is taken
over a canonical serialisation of what it holds: every group and dataset by path in sorted order, each
attribute (sorted by name) and each array as dtype, shape and C-order bytes. That of ``metadata.json`` is
over its canonical JSON (sorted keys, no whitespace) without ``dataset_size``. A copy rebuilt on another
machine, pulled from a remote or read back by another h5py has the same digests whenever it has the same
arrays and metadata, and a different one as soon as one value differs. The dataset's ``sha256`` is the
SHA-256 of the lines ``<file> <digest>`` of its files in sorted order.

Nothing in the manifest depends on the machine or the time of the build; ``size_bytes`` (the files as
written) is the one layout-dependent number, shown for disk cost and never compared.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.datasets.collect import CollectError, dataset_root, dataset_stats
from harness_gym.datasets.files import DatasetError, open_dataset
from harness_gym.datasets.tiers import TIERS, parse_id, tier_config
from harness_gym.evaluation.reference_scores import normalized_score

MANIFEST_ENV = "HARNESS_GYM_DATASETS_MANIFEST"
"""Environment variable naming the manifest file (default: the one shipped in the package)."""
PACKAGED = Path(__file__).resolve().parents[1] / "data" / "datasets_manifest.json"
"""The shipped manifest: ``datasets/MANIFEST.json`` as package data (a link in the checkout)."""
DATA_FILES = ("data/main_data.hdf5", "data/metadata.json")
"""The files of a Minari HDF5 dataset, relative to its directory."""
VOLATILE_METADATA = ("dataset_size",)
"""``metadata.json`` keys left out of its digest: they describe the file layout, not the data."""
COMPARED = (
    "sha256",
    "episodes",
    "steps",
    "simulator_version",
    "layout_version",
    "format_version",
    "reference_table_version",
    "behavior_versions",
)
"""What ``verify`` compares: the digest (which covers everything else in the data) and the counts and
versions, so a mismatch says what changed."""


def default_path() -> Path:
    """``$HARNESS_GYM_DATASETS_MANIFEST``, else the manifest shipped in the package."""
    override = os.environ.get(MANIFEST_ENV)
    if override:
        return Path(override).expanduser()
    return PACKAGED


def load(path: str | os.PathLike | None = None) -> dict[str, dict[str, Any]]:
    """The manifest's entries by id (``DatasetError`` when the file is missing or unreadable)."""
    path = Path(path) if path is not None else default_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise DatasetError(
            f"no dataset manifest at {path}; pass --manifest PATH (or set {MANIFEST_ENV}) to the "
            "repository's datasets/MANIFEST.json"
        ) from None
    except (OSError, ValueError) as exc:
        raise DatasetError(f"cannot read the dataset manifest {path}: {exc}") from None
    entries = data.get("datasets") if isinstance(data, dict) else None
    if not isinstance(entries, dict) or not all(isinstance(e, dict) for e in entries.values()):
        found = f"a JSON {type(data).__name__}" if not isinstance(data, dict) else "no 'datasets' table"
        raise DatasetError(
            f'{path} is not a dataset manifest: expected {{"datasets": {{id: entry, ...}}}}, found {found}'
        )
    return entries


def dumps(entries: Mapping[str, Mapping[str, Any]]) -> str:
    """The manifest file's text: entries in id order, sorted keys (a rebuild rewrites it byte for byte)."""
    return json.dumps({"datasets": dict(sorted(entries.items()))}, indent=1, sort_keys=True) + "\n"


# -- content digests -------------------------------------------------------------------------------
def _update(h: Any, value: Any) -> None:
    """Feed one attribute or array value to ``h`` canonically (type, shape and bytes)."""
    if isinstance(value, bytes | str):
        data = value.encode() if isinstance(value, str) else value
        h.update(b"s" + len(data).to_bytes(8, "little") + data)
        return
    arr = np.asarray(value)
    if arr.dtype.kind == "O" or arr.dtype.kind in "SU":  # variable-length strings
        items = [x.decode() if isinstance(x, bytes) else str(x) for x in arr.reshape(-1)]
        h.update(b"o" + repr((arr.shape, items)).encode())
        return
    arr = np.ascontiguousarray(arr)
    h.update(b"a" + f"{arr.dtype.str}{arr.shape}".encode() + arr.tobytes())


def hdf5_digest(path: str | os.PathLike) -> str:
    """SHA-256 of a canonical serialisation of an HDF5 file's groups, datasets and attributes."""
    import h5py

    h = hashlib.sha256()
    with h5py.File(path, "r") as file:
        names: list[str] = [""]
        file.visit(names.append)
        for name in sorted(names):
            obj = file[name] if name else file
            kind = b"D" if isinstance(obj, h5py.Dataset) else b"G"
            h.update(kind + name.encode() + b"\0")
            for key in sorted(obj.attrs):
                h.update(b"@" + key.encode() + b"\0")
                _update(h, obj.attrs[key])
            if kind == b"D":
                _update(h, obj[()])
    return h.hexdigest()


def metadata_digest(path: str | os.PathLike) -> str:
    """SHA-256 of ``metadata.json``'s canonical JSON without ``VOLATILE_METADATA``."""
    metadata = json.loads(Path(path).read_text())
    for key in VOLATILE_METADATA:
        metadata.pop(key, None)
    return hashlib.sha256(json.dumps(metadata, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def content_digests(directory: str | os.PathLike) -> dict[str, str]:
    """``{file: digest}`` for ``DATA_FILES`` of the dataset at ``directory``."""
    directory = Path(directory)
    missing = [name for name in DATA_FILES if not (directory / name).is_file()]
    if missing:
        raise DatasetError(f"dataset at {directory} lacks {', '.join(missing)}")
    return {
        "data/main_data.hdf5": hdf5_digest(directory / "data/main_data.hdf5"),
        "data/metadata.json": metadata_digest(directory / "data/metadata.json"),
    }


def combined_digest(files: Mapping[str, str]) -> str:
    """The dataset's ``sha256``: of the lines ``<file> <digest>`` in sorted order."""
    lines = "".join(f"{name} {digest}\n" for name, digest in sorted(files.items()))
    return hashlib.sha256(lines.encode()).hexdigest()


# -- entries ---------------------------------------------------------------------------------------
def _profile_name(profile: Mapping[str, Any], env_id: str) -> str:
    """The shipped profile whose parameters these are, or ``custom``."""
    from dataclasses import asdict

    from harness_gym.envs.registry import env_class
    from harness_gym.executors.profiles import PROFILE_NAMES, for_domain

    domain_cls = env_class(env_id).domain_cls
    for name in PROFILE_NAMES:
        if _same_parameters(asdict(for_domain(name, domain_cls)), profile):
            return name
    return "custom"


def _same_parameters(shipped: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    """Whether a stored profile has the shipped one's value for every parameter it records: a dataset
    recorded before a parameter existed (``p_break_feedback``, used by MDP v2 only) still names its
    profile."""
    for key, value in stored.items():
        if key not in shipped:
            return False
        mine = shipped[key]
        if isinstance(value, Mapping) and isinstance(mine, Mapping):
            if not _same_parameters(mine, value):
                return False
        elif mine != value:
            return False
    return set(shipped) - set(stored) <= {"p_break_feedback"}


def entry(dataset_id: str, root: str | os.PathLike | None = None) -> dict[str, Any]:
    """The manifest entry of the local copy of ``dataset_id`` under ``root``, from that copy alone."""
    env_id, tier = parse_id(dataset_id)
    directory = dataset_root(root) / dataset_id
    dataset = open_dataset(dataset_id, root)
    meta = dataset.storage.metadata
    stats = dataset_stats(dataset)
    files = content_digests(directory)
    executor = json.loads(meta["harness_executor"])
    profile = executor.get("profile")
    config = tier_config(env_id, tier)
    return {
        "tier": tier,
        "env_id": env_id,
        "behavior": meta["algorithm_name"],
        "behaviors": list(meta["harness_behaviors"]),
        "episodes": stats["episodes"],
        "steps": stats["steps"],
        "mean_G": round(stats["mean_G"], 6),
        "normalized_score": round(normalized_score(env_id, stats["mean_G"]), 3),
        "sha256": combined_digest(files),
        "files": files,
        "size_bytes": sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()),
        "executor": {
            "name": executor.get("name"),
            "profile": _profile_name(profile, env_id) if profile is not None else None,
            "profile_sha256": hashlib.sha256(
                json.dumps(profile, sort_keys=True, separators=(",", ":")).encode()
            ).hexdigest()
            if profile is not None
            else None,
        },
        "simulator_version": executor.get("version"),
        "layout_version": int(meta["harness_layout_version"]),
        "format_version": int(meta["harness_format_version"]),
        "reference_table_version": meta["harness_reference_table_version"],
        "reference_scores": {
            "random": meta["ref_min_score"],
            "expert": meta["ref_max_score"],
            "episodes": int(meta["num_episodes_average_score"]),
        },
        "behavior_versions": json.loads(meta["harness_behavior_versions"]),
        "harness_version": meta["harness_version"],
        "task_set_version": meta["harness_task_set_version"],
        "train_tasks": len(meta["harness_task_ids"]),
        "rebuild": f"harness-gym datasets build --env {env_id} --tier {tier}",
        "seed": config.seed,
        "epsilon": config.epsilon,
        "stats": {
            key: stats[key]
            for key in ("max_G", "buffer_slack", "mean_hms_norm", "hms_fired", "hms_applicable", "support")
        },
    }


def differences(expected: Mapping[str, Any], found: Mapping[str, Any]) -> list[str]:
    """``COMPARED`` fields that differ, as ``field: expected X, found Y``."""
    return [
        f"{key}: expected {_short(expected.get(key))}, found {_short(found.get(key))}"
        for key in COMPARED
        if expected.get(key) != found.get(key)
    ]


def _short(value: Any) -> str:
    return value[:12] if isinstance(value, str) and len(value) == 64 else json.dumps(value, sort_keys=True)


def known_ids(entries: Mapping[str, Any], ids: Iterable[str]) -> list[str]:
    """``ids`` checked against the manifest (``DatasetError`` naming the unknown ones)."""
    ids = list(ids)
    unknown = [dataset_id for dataset_id in ids if dataset_id not in entries]
    if unknown:
        raise DatasetError(f"not in the manifest: {', '.join(unknown)}; known: {', '.join(sorted(entries))}")
    return ids


# -- verification ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    """One id's verification: whether it matches and the line that says so."""

    dataset_id: str
    ok: bool
    line: str


def verify(
    dataset_id: str,
    expected: Mapping[str, Any],
    root: str | os.PathLike | None = None,
    rebuild: bool = False,
    workers: int = 1,
    show_progress: bool = False,
) -> Verdict:
    """Compare the local copy of ``dataset_id`` under ``root`` with its manifest entry ``expected``.

    Without a local copy the verdict says so (``missing``) and nothing is built. With ``rebuild`` the tier
    is built afresh in a temporary directory, deterministically, whether or not a local copy exists, and
    that build is compared (the local copy is left alone)."""
    local = (dataset_root(root) / dataset_id / "data").is_dir()
    if not local and not rebuild:
        return Verdict(
            dataset_id,
            False,
            f"MISSING {dataset_id}: no local copy under {dataset_root(root)} "
            f"(harness-gym datasets pull {dataset_id}, or verify --rebuild)",
        )
    try:
        if not rebuild:
            source, found = "local copy", entry(dataset_id, root)
        else:
            from harness_gym.datasets.tiers import build

            env_id, tier = parse_id(dataset_id)
            with tempfile.TemporaryDirectory(prefix="harness-verify-") as tmp:
                build(env_id, tier, root=tmp, workers=workers, show_progress=show_progress)
                source, found = "rebuilt", entry(dataset_id, tmp)
    except (DatasetError, CollectError, OSError, KeyError, ValueError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return Verdict(dataset_id, False, f"FAIL {dataset_id}: {reason}")
    diffs = differences(expected, found)
    summary = f"{found['sha256'][:12]}  {found['episodes']} episodes  {found['steps']} steps  ({source})"
    if diffs:
        return Verdict(dataset_id, False, f"FAIL {dataset_id}  {summary}: {'; '.join(diffs)}")
    return Verdict(dataset_id, True, f"ok   {dataset_id}  {summary}")


__all__ = [
    "COMPARED",
    "DATA_FILES",
    "TIERS",
    "combined_digest",
    "content_digests",
    "default_path",
    "differences",
    "dumps",
    "entry",
    "hdf5_digest",
    "load",
    "metadata_digest",
    "verify",
]
