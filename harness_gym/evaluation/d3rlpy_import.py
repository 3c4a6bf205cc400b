"""d3rlpy without the old-gym banner: ``import_d3rlpy``.

d3rlpy 2.8.1 imports the unmaintained ``gym`` for its type hints only, and importing ``gym`` prints a
deprecation notice on stderr (``gym_notices``, once per process). The project's ways into d3rlpy
(``to_d3rlpy`` and ``harness-gym train``, loading a saved model) import ``gym`` first with that one notice
caught, so d3rlpy's own import says nothing; nothing of ``gym`` is used. A script that imports d3rlpy
before any of these still sees it.
"""

from __future__ import annotations

import contextlib
import io
import sys
from types import ModuleType


def silence_gym_notice() -> None:
    """Import ``gym`` (if installed and not yet imported) with stderr caught for that import only."""
    if "gym" in sys.modules:
        return
    with contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(ImportError):
        import gym  # noqa: F401


def import_d3rlpy() -> ModuleType:
    """``import d3rlpy``, without the banner."""
    silence_gym_notice()
    import d3rlpy

    return d3rlpy
