"""The documentation site: its generated pages come from the code, and it builds with warnings as errors."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from conftest import unavailable

from harness_gym.core.state import feature_table
from harness_gym.envs.registry import ALL_ENV_IDS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _gen_pages():
    spec = importlib.util.spec_from_file_location("gen_pages", DOCS / "_scripts" / "gen_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_id_has_a_page_from_its_docstring(tmp_path: Path) -> None:
    gen = _gen_pages()
    written = gen.write(tmp_path, gen.environment_pages())
    assert sorted(path.stem for path in written) == sorted(ALL_ENV_IDS)
    page = (tmp_path / "HarnessCoding-v0.md").read_text()
    assert "## Description" in page and "## Observation Space" in page
    for line in feature_table().splitlines():
        assert line in page
    assert "| Base harness | OBSERVE → DRAFT → CALL_TOOL → SUBMIT |" in page


def test_dataset_cards_are_copied_unchanged(tmp_path: Path) -> None:
    gen = _gen_pages()
    written = gen.write(tmp_path, gen.dataset_cards())
    assert (tmp_path / "index.md").read_text() == (ROOT / "datasets" / "README.md").read_text()
    cards = sorted((ROOT / "datasets").glob("*-v0.md"))
    assert cards and all((tmp_path / card.name).read_text() == card.read_text() for card in cards)
    assert len(written) == len(cards) + 1


def test_site_builds_without_warnings(tmp_path: Path) -> None:
    missing = [name for name in ("sphinx", "furo", "myst_parser") if importlib.util.find_spec(name) is None]
    if missing:
        unavailable(f"{', '.join(missing)} not installed (the docs extra: pip install -e '.[docs]')")
    out = tmp_path / "html"
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    command += ["-d", str(tmp_path / "doctrees"), str(DOCS), str(out)]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-6000:]
    for page in (
        "index",
        "environments/HarnessCoding-v0",
        "environments/HarnessHumanEval-v0",
        "datasets/published/coding-mixed-v0",
        "bench/report",
        "api/_autosummary/harness_gym.envs.env",
        "api/_autosummary/baselines.awr",
    ):
        assert (out / f"{page}.html").is_file(), page
