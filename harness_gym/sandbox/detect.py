"""Which isolation is in force: the boundary where it can be had, else a one-line refusal.

``HARNESS_GYM_SANDBOX`` decides, read on every call:

- unset or ``namespaces``: untrusted code runs behind the operating-system boundary
  (:mod:`harness_gym.sandbox.boundary`). Where it cannot be had (not Linux, bubblewrap missing, a kernel
  or container that allows no user namespaces) :func:`require` raises :class:`SandboxUnavailable` with
  one line naming the cause and the setting below;
- ``process``: the weaker in-process sandbox (:mod:`harness_gym.sandbox.runner`) is accepted. A warning
  is printed once per process, and environments record ``sandbox: process`` in their results.

Whether the boundary can be had is found out once per process by starting one real sandbox
(:func:`probe`, some tens of milliseconds). ``harness-gym doctor`` prints :meth:`Isolation.line`.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from dataclasses import dataclass

from harness_gym.sandbox import bwrap, seccomp
from harness_gym.sandbox.boundary import SANDBOX_UID, plan, run_once
from harness_gym.sandbox.layout import layout
from harness_gym.sandbox.runner import SandboxLimits

ENV_MODE = "HARNESS_GYM_SANDBOX"
"""``namespaces`` (default: the boundary is required) or ``process`` (accept the in-process sandbox)."""
MODES = ("namespaces", "process")


class SandboxUnavailable(RuntimeError):
    """The operating-system boundary cannot be had here and the weaker mode was not accepted."""


@dataclass(frozen=True)
class Isolation:
    """The isolation untrusted code runs under."""

    mode: str
    """``namespaces`` or ``process``."""
    plan: str | None = None
    """``root`` or ``user`` (mode ``namespaces`` only; see :mod:`harness_gym.sandbox.boundary`)."""
    cause: str | None = None
    """Why the boundary is not in force (mode ``process``)."""
    seccomp: bool = False
    bwrap: str | None = None
    """Which bubblewrap binary (mode ``namespaces``): its version, source and path."""

    def line(self) -> str:
        """One line for people: what ``harness-gym doctor`` prints."""
        if self.mode == "namespaces":
            extra = "seccomp" if self.seccomp else f"no seccomp: {seccomp.program()[1]}"
            return f"sandbox: namespaces ({self.bwrap}; plan {self.plan}, uid {SANDBOX_UID}, {extra})"
        return f"sandbox: process ({self.cause})"


def refusal(cause: str) -> str:
    """The one-line refusal for ``cause``."""
    return (
        f"cannot run untrusted code behind an operating-system boundary: {cause}; "
        f"set {ENV_MODE}=process to accept the weaker in-process sandbox"
    )


@functools.cache
def probe() -> Isolation:
    """Whether the boundary can be had here, found by starting one sandbox (once per process)."""
    if not sys.platform.startswith("linux"):
        return Isolation("process", cause=f"namespaces need Linux, this is {sys.platform}")
    chosen, why = bwrap.find()
    if chosen is None:
        return Isolation("process", cause=why)
    try:
        tree = layout()
    except OSError as exc:
        return Isolation("process", cause=f"cannot lay out the interpreter's files ({exc})")
    if plan() == "root" and set(tree.tools) != {"setpriv", "bwrap"}:
        return Isolation("process", cause="setpriv is not installed (Debian's util-linux)")
    try:
        result = run_once("print(6 * 7)", SandboxLimits(wall_time_s=10.0))
    except OSError as exc:
        return Isolation("process", cause=f"bwrap could not be started ({exc})")
    if result.stdout != "42\n":
        lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
        cause = lines[0] if lines else f"a test sandbox exited with {result.returncode}"
        if cause.startswith("bwrap:") and any(w in cause for w in ("namespace", "uid map", "not permitted")):
            cause += " (this kernel or container does not allow user namespaces)"
        return Isolation("process", cause=cause)
    on = seccomp.program()[0] is not None
    return Isolation("namespaces", plan=plan(), seccomp=on, bwrap=chosen.describe())


_warned: list[bool] = []


def wanted() -> str:
    """The mode ``HARNESS_GYM_SANDBOX`` asks for; a bad value is a one-line error."""
    mode = os.environ.get(ENV_MODE, "").strip().lower() or "namespaces"
    if mode not in MODES:
        raise SandboxUnavailable(f"{ENV_MODE} must be 'namespaces' or 'process', got {mode!r}")
    return mode


def require() -> Isolation:
    """The isolation in force. Raises :class:`SandboxUnavailable` (one line) when the boundary is
    required and cannot be had; in process mode warns once per process."""
    if wanted() == "process":
        if not _warned:
            _warned.append(True)
            warnings.warn(
                f"sandbox: process mode ({ENV_MODE}=process): untrusted code runs without an "
                "operating-system boundary",
                RuntimeWarning,
                stacklevel=2,
            )
        return Isolation("process", cause=f"{ENV_MODE}=process")
    found = probe()
    if found.mode != "namespaces":
        raise SandboxUnavailable(refusal(found.cause or "unknown cause"))
    return found
