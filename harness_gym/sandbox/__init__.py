"""Running untrusted, model-written Python behind an operating-system boundary, with limits.

- ``api``: :func:`run_python`, the one entry point;
- ``detect``: which isolation is in force (:func:`require`, :func:`probe`, ``HARNESS_GYM_SANDBOX``);
- ``boundary``: bubblewrap namespaces, another user, the pools that start sandboxes;
- ``layout``: the read-only file tree a sandbox sees; ``seccomp``: its system-call filter;
- ``runner``: the in-process layer (rlimits, audit hook), inside the boundary and alone in process mode.

See ``docs/sandbox.md`` for the threat model and what is not contained.
"""

from harness_gym.sandbox.api import run_python
from harness_gym.sandbox.boundary import close_pools
from harness_gym.sandbox.detect import Isolation, SandboxUnavailable, probe, require
from harness_gym.sandbox.runner import SandboxLimits, SandboxResult

__all__ = [
    "Isolation",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "close_pools",
    "probe",
    "require",
    "run_python",
]
