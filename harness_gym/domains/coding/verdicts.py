"""Test-run verdicts kept on disk, shared by every process of one user: a sandbox run happens once.

The coding and HumanEval settings judge drafts by running tests in the sandbox (tens of milliseconds per
run). A simulated executor draws its drafts from finite pools, so the same few thousand (source, tests)
pairs come back in every process: the bench's setting processes, engine workers, a learner's env. Each
``verifier.run_tests`` result is written here once and read back by later processes; only new sources
(e.g. a real model's) pay for a run.

- **Key**: SHA-256 of :func:`version`, everything ``run_tests`` keys its in-process cache by (the
  source's digest, the function, the tests and allowed calls, the sandbox limits) and the sandbox's
  settings (``HARNESS_GYM_SANDBOX``, ``HARNESS_GYM_SANDBOX_POOL``).
- **Version**: SHA-256 of the code that decides a verdict (this package's ``verifier``, ``child`` and
  ``values``, the ``harness_gym.sandbox`` package) and the interpreter's ``major.minor`` (the child
  process's semantics, e.g. float reprs): any change to them starts a fresh directory, so no stale
  verdict is read.
- **Timeouts are never kept**: they depend on the machine's load, not on the code. Passes, failures,
  crashes and safety rejections are functions of the key and are kept.
- **Where**: ``$HARNESS_GYM_CACHE/verdicts/<version>/`` (default ``$XDG_CACHE_HOME/harness-gym``, else
  ``~/.cache/harness-gym``), one small JSON file per verdict written atomically (``os.replace``), so
  concurrent processes need no lock (two may compute the same verdict, which is harmless).
  ``HARNESS_GYM_CACHE=off`` turns it off; an unwritable directory is skipped silently.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["cache_root", "load", "store", "verdict_key", "version"]

_SOURCES = (
    Path(__file__).with_name("verifier.py"),
    Path(__file__).with_name("child.py"),
    Path(__file__).with_name("values.py"),
    *sorted((Path(__file__).parents[2] / "sandbox").glob("*.py")),
)
_SANDBOX_SETTINGS = ("HARNESS_GYM_SANDBOX", "HARNESS_GYM_SANDBOX_POOL")


@cache
def version() -> str:
    """SHA-256 over the verdict-deciding sources and the interpreter's major.minor version."""
    digest = hashlib.sha256(f"python {sys.version_info[0]}.{sys.version_info[1]}\n".encode())
    for path in _SOURCES:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_root() -> Path | None:
    """The directory of this version's verdicts, or None when turned off (``HARNESS_GYM_CACHE=off``)."""
    root = os.environ.get("HARNESS_GYM_CACHE")
    if root is not None and root.strip().lower() == "off":
        return None
    if not root:
        root = str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "harness-gym")
    return Path(root) / "verdicts" / version()[:16]


def verdict_key(*parts: Any) -> str:
    """The file name of a verdict: SHA-256 of the version, the sandbox's settings and ``parts`` (JSON,
    reprs for the rest)."""
    settings = [os.environ.get(name, "").strip().lower() for name in _SANDBOX_SETTINGS]
    return hashlib.sha256(json.dumps([version(), settings, *parts], default=repr).encode()).hexdigest()


def load(key: str) -> dict[str, Any] | None:
    """The kept verdict (as ``store`` got it), or None."""
    root = cache_root()
    if root is None:
        return None
    try:
        return json.loads((root / key[:2] / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None


def store(key: str, verdict: dict[str, Any]) -> None:
    """Keep a JSON-able verdict; a failure to write (read-only or full disk) only skips keeping it."""
    root = cache_root()
    if root is None:
        return
    directory = root / key[:2]
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            json.dump(verdict, handle)
        os.replace(tmp, directory / f"{key}.json")
    except OSError:
        return
