"""The bench process imports the heavy libraries its forked setting processes need, and only when it forks."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("d3rlpy")


@pytest.mark.parametrize(("start_method", "loaded"), [("fork", True), ("spawn", False)])
def test_heavy_libraries_are_preloaded_only_for_forked_settings(start_method: str, loaded: bool) -> None:
    code = (
        "import sys; from harness_gym.bench.runner import PRELOADED, _preload; "
        f"_preload({start_method!r}); print(all(m in sys.modules for m in PRELOADED), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(loaded), str(loaded)]
