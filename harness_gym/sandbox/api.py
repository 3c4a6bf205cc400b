"""``run_python``: run an untrusted program under the isolation in force (``sandbox.detect``)."""

from __future__ import annotations

from collections.abc import Mapping

from harness_gym.sandbox import boundary
from harness_gym.sandbox.detect import require
from harness_gym.sandbox.runner import DEFAULT_LIMITS, SandboxLimits, SandboxResult, run_in_process


def run_python(
    source: str,
    *,
    stdin: str = "",
    limits: SandboxLimits = DEFAULT_LIMITS,
    files: Mapping[str, str] | None = None,
    trusted_source: bool = False,
) -> SandboxResult:
    """Run ``source`` as a script in a fresh interpreter with an empty scratch directory as its working
    directory, behind the operating-system boundary (or, with ``HARNESS_GYM_SANDBOX=process``, with the
    in-process layer alone).

    Args:
        source: the program.
        stdin: its standard input.
        limits: time, CPU, memory, file size, process and output limits.
        files: text files to place in the scratch directory first (relative POSIX paths, sub-directories
            allowed); the directory is on ``sys.path``, so the program can import them.
        trusted_source: ``source`` is the harness's own (e.g. a verifier's runner that loads the untrusted
            code itself), so it may be compiled once here instead of in every run.

    Returns:
        A :class:`SandboxResult`; output is decoded as UTF-8 with replacement.

    Raises:
        SandboxUnavailable: the boundary is required and cannot be had here (one line naming the cause).
    """
    if require().mode == "process":
        return run_in_process(source, stdin=stdin, limits=limits, files=files)
    return boundary.run(source, stdin=stdin, limits=limits, files=files, trusted_source=trusted_source)
