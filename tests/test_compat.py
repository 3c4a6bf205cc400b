"""The old import paths of moved modules: each one still imports, warns, and is the new module itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_IMPORT_OLD_PATHS = """
import importlib, json, warnings
from harness_gym._compat import MOVED
out = {}
for old, new in MOVED.items():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    out[old] = [module is importlib.import_module(new), any(w.category is DeprecationWarning for w in caught)]
print(json.dumps(out))
"""


def test_every_old_path_is_the_new_module_with_a_warning() -> None:
    """An alias whose old path is still a real module (so the finder never sees it) fails here."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_OLD_PATHS], capture_output=True, text=True, env=env, check=True
    )
    results = json.loads(done.stdout)
    assert results
    assert {old: r for old, r in results.items() if r != [True, True]} == {}
