"""Local harness datasets on disk: finding them and opening them with errors that name the dataset.

Minari reports a missing or truncated HDF5 file as a bare ``OSError`` / ``KeyError`` naming neither the
dataset nor what to do; every failure here is a :class:`DatasetError` whose message does both.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from harness_gym.datasets.collect import dataset_root

if TYPE_CHECKING:
    import minari


class DatasetError(ValueError):
    """A dataset that is missing or cannot be read; the message names it and its path."""


def local_ids(root: str | os.PathLike | None = None) -> list[str]:
    """Ids of the harness datasets under ``root`` (default Minari's directory), sorted."""
    base = dataset_root(root)
    return sorted(p.parent.relative_to(base).as_posix() for p in base.glob("harness/*/*/data"))


def dataset_path(dataset_id: str, root: str | os.PathLike | None = None) -> Path:
    return dataset_root(root) / dataset_id


def open_dataset(dataset_id: str, root: str | os.PathLike | None = None) -> minari.MinariDataset:
    """Load a local dataset by id, or raise :class:`DatasetError` saying what is wrong with it."""
    import minari

    path = dataset_path(dataset_id, root)
    if not (path / "data").is_dir():
        known = local_ids(root)
        hint = f"; local datasets: {', '.join(known)}" if known else ""
        raise DatasetError(f"no dataset {dataset_id!r} under {dataset_root(root)}{hint}")
    try:
        dataset = minari.load_dataset(str(path))  # reads metadata.json only
        first = dataset.episode_indices[:1]
        list(dataset.iterate_episodes(first))  # opens the data file: fails when it is truncated
    except (OSError, KeyError, ValueError, TypeError, AssertionError, EOFError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else ""
        raise DatasetError(
            f"dataset {dataset_id!r} at {path} is truncated or corrupt ({type(exc).__name__}: {reason}); "
            "delete it and collect it again"
        ) from exc
    return dataset
