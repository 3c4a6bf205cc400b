"""Publishing datasets to a Minari remote and pulling them back, through Minari's own remote layer.

``publish`` wraps ``minari.upload_dataset``: the remote is Minari's (``hf://ORG`` for a Hugging Face
organisation or user, ``gcp://BUCKET``), and the namespace metadata it uploads beside the data
(``harness`` and ``harness/<domain>``: display name and description) is filled in first. Minari's Hugging
Face remote keeps each top-level namespace in a dataset repository of its own, so every ``harness/...`` id
goes to the repository ``ORG/harness``: ``--remote hf://ORG`` and ``--remote hf://ORG/harness`` are the same
remote, and no other repository name is possible for these ids.

``pull`` wraps ``minari.download_dataset``. A published id (one in the manifest) that no remote serves,
because none is configured, none answers (offline) or it lacks the id, is built locally instead
(deterministically, ``harness_gym.datasets.tiers``); either way the copy is then verified against the
manifest, so a pulled dataset is the one the tables used or the command fails.

Minari, huggingface_hub and the HTTP client are imported here only, inside the functions.
"""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness_gym.datasets.collect import dataset_root, namespace_metadata
from harness_gym.datasets.files import DatasetError, open_dataset
from harness_gym.datasets.manifest import Verdict, verify

REMOTE_ENV = "MINARI_REMOTE"
"""Minari's own setting for the remote (``hf://ORG``); ``--remote`` overrides it."""


def normalize_remote(remote: str, dataset_ids: Sequence[str] = ()) -> str:
    """``remote`` as Minari's remote layer takes it: ``hf://ORG`` (``hf://ORG/<namespace>`` accepted when
    ``<namespace>`` is the datasets' top-level namespace) or ``gcp://BUCKET``."""
    kind, sep, name = remote.partition("://")
    if not sep or kind not in ("hf", "gcp") or not name.strip("/"):
        raise DatasetError(f"remote {remote!r}: expected hf://ORG or gcp://BUCKET (Minari's remotes)")
    if kind == "gcp":
        return remote.rstrip("/")
    org, _, repo = name.strip("/").partition("/")
    tops = {dataset_id.split("/", 1)[0] for dataset_id in dataset_ids}
    if repo and tops - {repo}:
        raise DatasetError(
            f"remote {remote!r}: Minari's Hugging Face remote keeps ids {', '.join(sorted(tops))}/... in the "
            f"repository {org}/{'|'.join(sorted(tops))}; give --remote hf://{org}"
        )
    return f"hf://{org}"


def check_client(remote: str) -> None:
    """Refuse, in one line, a remote whose client library Minari cannot import (``hf://`` needs
    ``huggingface_hub``, the ``[hub]`` extra; ``gcp://`` needs ``google-cloud-storage``), before any work."""
    from minari.storage.remotes import _registry

    kind = remote.partition("://")[0]
    try:
        _registry[kind]()  # Minari's own loader of the storage class: imports the client or raises
    except ImportError as exc:
        extra = "harness-gym[hub]" if kind == "hf" else "minari[gcs]"
        raise DatasetError(
            f"remote {remote} needs a client library Minari cannot import ({_first_line(exc)}); "
            f"pip install '{extra}'"
        ) from None


@contextlib.contextmanager
def _minari_env(root: str | os.PathLike | None, remote: str | None) -> Iterator[None]:
    """Minari's settings for the block: the datasets directory and the remote (restored afterwards)."""
    wanted = {"MINARI_DATASETS_PATH": str(dataset_root(root)), REMOTE_ENV: remote}
    previous = {key: os.environ.get(key) for key in wanted}
    try:
        for key, value in wanted.items():
            if value is not None:
                os.environ[key] = value
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def fill_namespaces(dataset_id: str, root: str | os.PathLike | None = None) -> list[Path]:
    """Write the namespace metadata of every namespace above ``dataset_id`` where it is missing or empty."""
    base = dataset_root(root)
    parts = dataset_id.split("/")[:-1]
    written = []
    for depth in range(1, len(parts) + 1):
        namespace = "/".join(parts[:depth])
        path = base / namespace / "namespace_metadata.json"
        try:
            current = json.loads(path.read_text())
        except (OSError, ValueError):
            current = {}
        if not current.get("description"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({**current, **namespace_metadata(namespace)}, sort_keys=True))
            written.append(path)
    return written


def publish(
    dataset_ids: Sequence[str],
    remote: str,
    token: str | None = None,
    root: str | os.PathLike | None = None,
    expected: Mapping[str, Mapping[str, Any]] | None = None,
    log: Callable[[str], None] = print,
) -> list[str]:
    """Upload local datasets to ``remote`` with ``minari.upload_dataset``; returns the ids uploaded.

    ``expected`` (the manifest's entries): an id found there is uploaded only if the local copy matches it.
    An id already on the remote is left alone (Minari never overwrites a remote version; bump ``-vN``).
    ``token``: the remote's credential (Hugging Face: a write token; default ``$HF_TOKEN`` or the one
    ``huggingface-cli login`` stored)."""
    import minari

    remote = normalize_remote(remote, dataset_ids)
    check_client(remote)
    for dataset_id in dataset_ids:
        open_dataset(dataset_id, root)  # names a missing or corrupt copy before anything is sent
        if expected is not None and dataset_id in expected:
            verdict = verify(dataset_id, expected[dataset_id], root)
            if not verdict.ok:
                raise DatasetError(
                    f"not publishing {dataset_id}: the local copy differs from the manifest: {verdict.line}"
                )
        fill_namespaces(dataset_id, root)
    uploaded = []
    with _minari_env(root, remote):
        for dataset_id in dataset_ids:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                minari.upload_dataset(dataset_id, token)
            if any("already in remote" in str(w.message) for w in caught):
                log(f"{dataset_id}: already on {remote}, left as it is")
                continue
            uploaded.append(dataset_id)
            log(f"{dataset_id}: uploaded to {remote}")
    return uploaded


@dataclass(frozen=True)
class Pulled:
    """How one id was obtained (``downloaded`` or ``built``, and why) and its verification."""

    dataset_id: str
    source: str
    verdict: Verdict | None


def pull(
    dataset_ids: Sequence[str],
    remote: str | None,
    expected: Mapping[str, Mapping[str, Any]],
    root: str | os.PathLike | None = None,
    workers: int = 1,
    force: bool = False,
    log: Callable[[str], None] | None = None,
    show_progress: bool = False,
) -> Iterator[Pulled]:
    """Get each id from ``remote`` (``minari.download_dataset``) or, failing that, build it; verify both.

    Yields one ``Pulled`` per id as soon as that id is done. An id already present locally is only verified
    unless ``force``. An id that is neither in ``expected`` nor on the remote is an error. ``log`` gets a
    line before each download or build, ``show_progress`` shows a build's progress bar."""
    import minari

    from harness_gym.datasets.tiers import build, parse_id

    remote = normalize_remote(remote, dataset_ids) if remote else None
    if remote is not None:
        check_client(remote)
    say = log or (lambda line: None)
    for dataset_id in dataset_ids:
        path = dataset_root(root) / dataset_id
        source = "local copy"
        if force or not (path / "data").is_dir():
            reason = "no remote configured (--remote or $MINARI_REMOTE)"
            if remote is not None:
                say(f"{dataset_id}: downloading from {remote}")
                try:
                    with _minari_env(root, remote), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        minari.download_dataset(dataset_id, force_download=force)
                    source = f"downloaded from {remote}"
                except Exception as exc:  # the remote layer raises what its client raises: name it
                    reason = f"{remote} did not serve it ({type(exc).__name__}: {_first_line(exc)})"
            if not source.startswith("downloaded"):
                if dataset_id not in expected:
                    raise DatasetError(f"cannot pull {dataset_id}: {reason}, and it is not a published id")
                env_id, tier = parse_id(dataset_id)
                say(f"{dataset_id}: building locally ({reason})")
                build(env_id, tier, root=root, workers=workers, show_progress=show_progress)
                source = f"built locally: {reason}"
        if dataset_id in expected:
            say(f"{dataset_id}: verifying against the manifest")
        verdict = verify(dataset_id, expected[dataset_id], root) if dataset_id in expected else None
        yield Pulled(dataset_id, source, verdict)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "no message"
