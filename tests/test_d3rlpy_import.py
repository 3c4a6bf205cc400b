"""The project's ways into d3rlpy import it without the old-gym banner (``evaluation.d3rlpy_import``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

BANNER = "Gym has been unmaintained"


def _stderr(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr


def test_d3rlpy_through_the_project_prints_no_banner():
    pytest.importorskip("d3rlpy")
    if BANNER not in _stderr("import d3rlpy"):  # the control: without the project's import, gym prints it
        pytest.skip("this gym prints no banner: nothing to silence")
    assert BANNER not in _stderr("import harness_gym.datasets.d3rlpy_bridge; import d3rlpy")
    assert BANNER not in _stderr(
        "from harness_gym.evaluation.d3rlpy_import import import_d3rlpy; "
        "import_d3rlpy().algos.DiscreteCQLConfig"
    )
