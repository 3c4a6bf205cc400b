"""Sphinx configuration of the harness-gym site: ``sphinx-build -W --keep-going -b html docs OUT``.

Pages are MyST Markdown. Generated on every build and not committed: one page per environment id from
its class docstring and the published buffers' cards from ``datasets/`` (``_scripts/gen_pages.py``),
and the API reference from the docstrings (autosummary, ``api/_autosummary/``). ``docs/bench/`` is the
bench's own output, shown as it was written.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_scripts"))

import gen_pages  # noqa: E402

import harness_gym  # noqa: E402
from harness_gym.envs.env import HarnessEnv  # noqa: E402

gen_pages.main()

# autosummary imports every submodule while it lists a package; importing ``harness_gym.cli.__main__``
# would run the command (with sphinx-build's arguments). A placeholder stands in for it.
sys.modules.setdefault("harness_gym.cli.__main__", types.ModuleType("harness_gym.cli.__main__"))

project = "harness-gym"
release = version = harness_gym.__version__
extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "_scripts", "_templates"]
templates_path = ["_templates"]
html_theme = "furo"
html_title = f"harness-gym {release}"
html_show_copyright = False

myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

autosummary_generate = True
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# Document what a module defines, not what its __init__ re-exports (one entry per object), and no
# docstrings inherited from Gymnasium or d3rlpy (theirs are not written for this site).
autodoc_default_options = {"ignore-module-all": True}
autodoc_inherit_docstrings = False
napoleon_google_docstring = True
napoleon_numpy_docstring = False

_ENV_PAGES = {gen_pages.entry_point(env_id): env_id for env_id in harness_gym.ALL_ENV_IDS}


def _env_class_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """An environment class's docstring is Markdown, rendered as its environment page: the API entry keeps
    what precedes the first section and links to the page."""
    if what != "class" or not isinstance(obj, type) or not issubclass(obj, HarnessEnv):
        return
    env_id = _ENV_PAGES.get(f"{obj.__module__}:{obj.__qualname__}")
    if env_id is not None:
        pointer = f"Documented on its environment page, :doc:`/environments/{env_id}`."
    else:
        pointer = "The interface and the sections every environment shares: :doc:`/environments/index`."
    cut = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
    lines[cut:] = [pointer, ""]


def _bench_report_source(app: Any, docname: str, source: list[str]) -> None:
    """The report links ``view.html``, which the bench writes beside it in a results directory;
    ``docs/bench/`` keeps only the report, CSV and figures, so the link is shown as a name here."""
    if docname == "bench/report":
        source[0] = source[0].replace("[view.html](view.html)", "`view.html`")


def setup(app: Any) -> None:
    app.connect("autodoc-process-docstring", _env_class_docstring)
    app.connect("source-read", _bench_report_source)
