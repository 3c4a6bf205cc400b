"""The bench report: Markdown tables, CSV, JSON and figures from compare() / buffer_stats() output."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness_gym.bench.report import (
    CSV_FIELDS,
    DASH,
    FIGURES,
    HEADINGS,
    colour,
    fmt_pp,
    fmt_signed,
    markdown_tables,
    write_figures,
    write_report,
)
from harness_gym.core.hms import EVENTS
from harness_gym.evaluation.paper import PAPER
from harness_gym.evaluation.protocol import EpisodeResult, buffer_stats, compare

PLANNING, TAU = "HarnessPlanning-v0", "HarnessTauRetail-v0"
CBS_INDEX = EVENTS.index("CheckBeforeSubmit")
TBS_INDEX = EVENTS.index("TestBeforeSubmit")


def _episodes(env_id: str, policy: str, shift: float, cbs_rate: float, seed: int) -> list[EpisodeResult]:
    """20 tasks x 1 seed x 3 rollouts of synthetic results; TestBeforeSubmit never applies."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(20):
        for rollout in range(3):
            fired = [bool(rng.random() < 0.3) for _ in EVENTS]
            fired[CBS_INDEX] = bool(rng.random() < cbs_rate)
            fired[TBS_INDEX] = False
            applicable = [True] * len(EVENTS)
            applicable[TBS_INDEX] = False
            out.append(
                EpisodeResult(
                    env_id=env_id,
                    policy=policy,
                    seed=0,
                    task_id=f"t{t:02d}",
                    rollout=rollout,
                    episode_seed=1000 * t + rollout,
                    G=float(np.clip(0.4 + 0.05 * (t % 5) + shift + rng.normal(0, 0.05), 0, 1)),
                    hms_norm=float(rng.uniform(0.1, 0.5) + shift / 2),
                    fired=tuple(fired),
                    applicable=tuple(applicable),
                    steps=10,
                    termination_reason="submit",
                )
            )
    return out


def _buffer(seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = 64
    return buffer_stats(
        G=rng.uniform(0, 1, n),
        task_index=np.arange(n) % 8,
        hms_fired=rng.random((n, len(EVENTS))) < 0.3,
        hms_norm=rng.uniform(0, 1, n),
    )


def _setting(env_id: str, policies: dict[str, tuple[float, float]], seed: int) -> dict[str, Any]:
    results = {
        name: _episodes(env_id, name, shift, cbs, seed + i)
        for i, (name, (shift, cbs)) in enumerate(policies.items())
    }
    return {
        "compare": compare(results, n_boot=300, n_perm=300),
        "buffer": _buffer(seed),
        "timings": {"total_s": 1.5},
    }


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    full = {"base": (0.0, 0.0), "awr": (0.08, 0.2), "bc": (-0.02, 0.05), "forced-check": (0.01, 1.0)}
    partial = {"base": (0.0, 0.0), "awr": (0.15, 0.3)}  # no bc, no forced-check
    return json.loads(
        json.dumps(
            {
                "config": {"settings": [PLANNING, TAU], "seeds": [0], "rollouts": 3},
                "timings": {"total_s": 12.5, "peak_rss_mb": 300.0},
                "settings": {
                    TAU: _setting(TAU, partial, 10),
                    PLANNING: _setting(PLANNING, full | {"cql": (0.03, 0.1)}, 0),
                },
            }
        )
    )


@pytest.fixture(scope="module")
def written(results: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_report(results, tmp_path_factory.mktemp("report"))


def _table_rows(markdown: str, heading: str) -> list[list[str]]:
    """Cells of the first table after ``## heading`` (the run's, not the paper's)."""
    section = markdown.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows[2:]  # drop header and alignment rows


def _row(rows: list[list[str]], label: str) -> list[str]:
    return next(r for r in rows if r[0] == label)


def test_write_report_writes_every_file(written: dict[str, Path]) -> None:
    expected = {"report", "results", "summary", "view", *FIGURES}
    assert set(written) == expected
    for path in written.values():
        assert path.is_file() and path.stat().st_size > 0
    assert json.loads(written["results"].read_text())["settings"]


def test_markdown_has_every_table_and_row(results: dict[str, Any], written: dict[str, Path]) -> None:
    md = written["report"].read_text()
    assert markdown_tables(results).strip() in md
    for heading in HEADINGS.values():
        assert f"## {heading}" in md
    assert "12.5" in md  # header timings
    for key in ("cbs", "gains", "ablation", "support"):
        labels = [r[0] for r in _table_rows(md, HEADINGS[key])]
        assert PAPER[PLANNING].label in labels and PAPER[TAU].label in labels
    # the controlled-domain table has Planning and the macro mean, not the adapter
    labels = [r[0] for r in _table_rows(md, HEADINGS["controlled"])]
    assert labels == [PAPER[PLANNING].label, "*Macro mean*"]


def test_numbers_come_from_the_dict(results: dict[str, Any]) -> None:
    md = markdown_tables(results)
    aw = results["settings"][PLANNING]["compare"]["policies"]["awr"]
    gains = _row(_table_rows(md, HEADINGS["gains"]), PAPER[PLANNING].label)
    assert gains[3] == fmt_pp(aw["delta_G"]) == f"{100 * aw['delta_G']:+.1f}"
    assert gains[4] == f"[{100 * aw['ci_low']:+.1f}, {100 * aw['ci_high']:+.1f}]"
    controlled = _row(_table_rows(md, HEADINGS["controlled"]), PAPER[PLANNING].label)
    assert controlled[3] == fmt_signed(aw["delta_G"])
    assert controlled[4] == f"{aw['delta_hms']:+.3f}"
    assert controlled[7] == f"{100 * aw['cbs']:.1f}%"
    ablation = _row(_table_rows(md, HEADINGS["ablation"]), PAPER[PLANNING].label)
    lift = results["settings"][PLANNING]["compare"]["lifts"]["aw_minus_bc"]["estimate"]
    assert ablation[4] == fmt_pp(lift)
    support = _row(_table_rows(md, HEADINGS["support"]), PAPER[PLANNING].label)
    assert support[1] == f"{results['settings'][PLANNING]['buffer']['sigma_D']:.3f}"
    others = _table_rows(md, HEADINGS["others"])
    assert [r[:2] for r in others] == [[PAPER[PLANNING].label, "cql"]]
    # the paper's numbers follow each table
    assert "+18.2" in md and "[+15.1, +21.3]" in md and "0.552" in md


def test_missing_policies_render_a_dash(results: dict[str, Any]) -> None:
    md = markdown_tables(results)
    ablation = _row(_table_rows(md, HEADINGS["ablation"]), PAPER[TAU].label)
    assert ablation[2:] == [DASH, DASH, DASH, DASH]
    assert ablation[1] != DASH
    events = _table_rows(md, HEADINGS["events"])
    test_row = _row(events, "TestBeforeSubmit")
    assert test_row[1:] == [DASH, DASH]  # not applicable in either setting
    assert "→" in _row(events, "CheckBeforeSubmit")[1]


def test_missing_settings_and_parts(tmp_path: Path, results: dict[str, Any]) -> None:
    trimmed = json.loads(json.dumps(results))
    del trimmed["settings"][PLANNING]["buffer"]
    trimmed["settings"]["HarnessCoding-v0"] = {}  # nothing ran
    del trimmed["settings"][TAU]["compare"]["policies"]["awr"]
    trimmed["settings"][TAU]["compare"]["lifts"] = {}
    paths = write_report(trimmed, tmp_path)
    md = paths["report"].read_text()
    gains = _table_rows(md, HEADINGS["gains"])
    assert _row(gains, "Coding")[1:] == [DASH] * 5
    assert _row(gains, PAPER[TAU].label)[2:] == [DASH] * 4
    assert _row(_table_rows(md, HEADINGS["support"]), PAPER[PLANNING].label)[1] == DASH
    empty = write_report({"settings": {}}, tmp_path / "empty")
    assert "No settings" in empty["report"].read_text()


def test_summary_csv(written: dict[str, Path], results: dict[str, Any]) -> None:
    with written["summary"].open(newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == CSV_FIELDS
        rows = list(reader)
    pairs = [(r["env"], r["policy"]) for r in rows]
    assert pairs == [
        (PLANNING, "base"),
        (PLANNING, "awr"),
        (PLANNING, "bc"),
        (PLANNING, "forced-check"),
        (PLANNING, "cql"),
        (TAU, "base"),
        (TAU, "awr"),
    ]
    aw = results["settings"][PLANNING]["compare"]["policies"]["awr"]
    row = rows[1]
    for key in CSV_FIELDS[2:]:
        assert float(row[key]) == pytest.approx(aw[key])
    assert rows[0]["ci_low"] == "" and rows[0]["p_value"] == ""
    assert float(rows[0]["delta_G"]) == 0.0


def test_figures_are_valid_pngs(written: dict[str, Path]) -> None:
    from PIL import Image

    for key in FIGURES:
        with Image.open(written[key]) as image:
            image.verify()
        with Image.open(written[key]) as image:
            assert image.format == "PNG"
            width, height = image.size
            assert width > 200 and height > 200


def test_import_does_not_load_matplotlib() -> None:
    code = "import sys, harness_gym, harness_gym.bench.report; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_policy_figure_bars_are_the_lifts_over_base(
    results: dict[str, Any], tmp_path: Path, saved_figures: dict[str, Any]
) -> None:
    write_figures(results, tmp_path)
    fig = saved_figures[FIGURES["policy_comparison"]]
    ax = fig.axes[0]
    bars = sorted(round(bar.get_width(), 9) for bar in ax.patches)
    lifts = [
        100 * s["compare"]["policies"][p]["delta_G"]
        for s in results["settings"].values()
        for p in ("awr", "bc", "forced-check")
        if p in s["compare"]["policies"]
    ]
    assert len(lifts) == 4  # awr, bc, forced-check on planning; awr alone on tau-retail
    assert bars == pytest.approx(sorted(lifts))
    assert [t.get_text() for t in fig.legends[0].get_texts()][:3] == ["AW", "BC", "Forced CHECK"]


def test_g_vs_tokens_figure_and_gap_section(
    results: dict[str, Any], tmp_path: Path, saved_figures: dict[str, Any]
) -> None:
    with_tokens = json.loads(json.dumps(results))
    points = {
        "base": {"G": 0.5, "tokens": 600.0, "kind": "reference"},
        "expert": {"G": 0.8, "tokens": 1600.0, "kind": "reference"},
        "awr": {"G": 0.6, "tokens": 900.0, "kind": "learner"},
        "bc": {"G": 0.55, "tokens": 1000.0, "kind": "learner"},  # awr beats it on both
    }
    gap = {"expert_G": 0.8, "open_loop_G": 0.7, "gap": 0.1, "ci_low": 0.02, "ci_high": 0.19, "pairs": 60}
    with_tokens["settings"][PLANNING] |= {"tokens": points, "state_dependence": gap | {"string": "DCV"}}
    write_figures(with_tokens, tmp_path)
    ax = saved_figures[FIGURES["g_vs_tokens"]].axes[0]  # only Planning has token counts
    plotted = sorted(tuple(c.get_offsets()[0]) for c in ax.collections)
    assert plotted == sorted((p["tokens"], p["G"]) for p in points.values())
    # the references' frontier as a dashed step; the learners' is one point (awr beats bc), so no line
    steps = [(list(line.get_xdata()), list(line.get_ydata()), line.get_linestyle()) for line in ax.lines]
    assert steps == [([600.0, 1600.0], [0.5, 0.8], "--")]
    from matplotlib.colors import to_hex

    figure = saved_figures[FIGURES["g_vs_tokens"]]
    assert sorted(t.get_text() for t in figure.legends[0].get_texts()) == sorted(points)
    assert [to_hex(c.get_facecolor()[0]) for c in ax.collections] == [colour(name) for name in points]
    md = markdown_tables(with_tokens)
    gaps = _table_rows(md, HEADINGS["state_dependence"])
    assert gaps == [[PAPER[PLANNING].label, "0.800", "0.700", "+0.100", "[+0.020, +0.190]", "60", "`DCV`"]]
    section = md.split(f"## {HEADINGS['state_dependence']}\n", 1)[1]
    assert "| Planning | awr | learner | 0.600 | 900 | yes |" in section
    assert "| Planning | bc | learner | 0.550 | 1,000 |  |" in section
    # limit 2 x 1600 (the expert); references: 0.5 over [600, 1600) + 0.8 over [1600, 3200);
    # learners: 0.6 over [900, 3200)
    assert "| Planning | 3,200 | 0.556 | 0.431 |" in section
    assert "_No state-dependence gap in these results._" in markdown_tables(results)
