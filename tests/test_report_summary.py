"""The report's first screen (summary table, glossary) and its figures' captions and colours: every number
of the summary is read back from ``results["aggregate"]``."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness_gym.bench.report import FIGURES, colour, summary_section, write_report
from harness_gym.bench.report import document as document_module
from harness_gym.bench.report.glossary import glossary_section
from harness_gym.bench.report.palette import LEARNER_SHADES
from harness_gym.bench.report.summary import POINT_MARK, POINT_NOTE

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "docs" / "bench" / "results.json"


def _entry(estimate: float, low: float | None, high: float | None) -> dict[str, Any]:
    return {"estimate": estimate, "ci_low": low, "ci_high": high}


def _aggregate() -> dict[str, Any]:
    """sac beats Base; awr is worse; bc's interval spans 0; awr-greedy plays Base's actions; iql has a
    point interval that is not 0."""
    metrics = {
        "sac": 70.0,
        "base": 40.0,
        "awr-greedy": 40.0,
        "bc": 38.0,
        "iql": 36.0,
        "awr": 30.0,
    }
    paired_base = {
        "sac": _entry(30.0, 25.0, 35.0),
        "awr-greedy": _entry(0.0, 0.0, 0.0),
        "bc": _entry(2.0, -1.0, 5.0),  # above 0, but its interval is not
        "iql": _entry(-4.0, -4.0, -4.0),
        "awr": _entry(-10.0, -12.0, -8.0),
    }
    return {
        "seeds": [0, 1, 2],
        "settings": ["HarnessPlanning-v0"],
        "runs_per_policy": 3,
        "bootstrap": {"confidence": 0.95},
        "best": "sac",
        "references": [],
        "metrics": {
            name: {"iqm": _entry(iqm, iqm - 3, iqm + 3), "optimality_gap": _entry(100 - iqm, 0, 0)}
            for name, iqm in metrics.items()
        },
        "paired": {
            name: ({"base": {"delta": paired_base[name]}} if name in paired_base else {})
            | ({"best": {"delta": _entry(iqm - 70.0, iqm - 75.0, iqm - 65.0)}} if name != "sac" else {})
            for name, iqm in metrics.items()
        },
    }


def _summary_rows(markdown: str) -> dict[str, dict[str, str]]:
    """The summary table's rows by policy, cells by column header."""
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    headers = [c.strip() for c in lines[0].strip("|").split(" | ")]
    keys = [
        "rank",
        "policy",
        "iqm",
        "iqm_ci",
        "vs_base",
        "vs_base_ci",
        "beat",
        "vs_best",
        "vs_best_ci",
        "gap",
    ]
    assert len(headers) == len(keys)
    rows = {}
    for line in lines[2:]:
        cells = dict(zip(keys, (c.strip() for c in line.strip("|").split(" | ")), strict=True))
        rows[cells["policy"]] = cells
    return rows


def _number(cell: str) -> float:
    return float(cell.rstrip(POINT_MARK))


def _interval(cell: str) -> tuple[float, float]:
    low, high = cell.rstrip(POINT_MARK).strip("[]").split(", ")
    return float(low), float(high)


def _check_against(aggregate: dict[str, Any], markdown: str) -> None:
    """Every cell of the summary table equals the aggregate's number, rounded as printed."""
    rows = _summary_rows(markdown)
    metrics, paired = aggregate["metrics"], aggregate["paired"]
    order = sorted(metrics, key=lambda name: -metrics[name]["iqm"]["estimate"])
    assert list(rows) == order
    for rank, name in enumerate(order, 1):
        row, iqm = rows[name], metrics[name]["iqm"]
        assert int(row["rank"]) == rank
        assert _number(row["iqm"]) == pytest.approx(iqm["estimate"], abs=0.05)
        if iqm["ci_low"] is not None:
            assert _interval(row["iqm_ci"]) == pytest.approx((iqm["ci_low"], iqm["ci_high"]), abs=0.05)
        gap = metrics[name]["optimality_gap"]["estimate"]
        assert _number(row["gap"]) == pytest.approx(gap, abs=0.05)
        for side, column in (("base", "vs_base"), ("best", "vs_best")):
            delta = (paired[name].get(side) or {}).get("delta")
            if delta is None:
                assert row[column] == "—"
                continue
            assert _number(row[column]) == pytest.approx(delta["estimate"], abs=0.05)
            if delta["ci_low"] is None:
                continue
            assert _interval(row[f"{column}_ci"]) == pytest.approx(
                (delta["ci_low"], delta["ci_high"]), abs=0.05
            )
            assert row[f"{column}_ci"].endswith(POINT_MARK) == (delta["ci_low"] == delta["ci_high"])
            if side == "base":
                assert (row["beat"] == "**yes**") == (delta["ci_low"] > 0)
                assert (row["beat"] == "no, worse") == (delta["ci_high"] < 0)


def test_summary_numbers_and_verdicts_are_the_aggregates() -> None:
    aggregate = _aggregate()
    md = summary_section({"aggregate": aggregate})
    _check_against(aggregate, md)
    rows = _summary_rows(md)
    assert {name: row["beat"] for name, row in rows.items()} == {
        "sac": "**yes**",
        "base": "—",
        "awr-greedy": "same as Base",
        "bc": "no, interval spans 0",
        "iql": "no, worse",
        "awr": "no, worse",
    }
    assert rows["awr-greedy"]["vs_base_ci"] == f"[+0.0, +0.0]{POINT_MARK}"
    assert rows["iql"]["vs_base_ci"] == f"[-4.0, -4.0]{POINT_MARK}"
    lead = md.split("\n\n")[1]
    assert lead.startswith("**sac** ranks first with an IQM of 70.0 [67.0, 73.0]")
    assert "Beat Base (paired 95% interval above 0): sac." in lead
    assert POINT_NOTE in md


def test_the_point_note_appears_only_with_a_point_interval() -> None:
    aggregate = _aggregate()
    for name in ("awr-greedy", "iql"):
        aggregate["paired"][name]["base"]["delta"] = _entry(-1.0, -2.0, 0.5)
    md = summary_section({"aggregate": aggregate})
    assert POINT_NOTE not in md and POINT_MARK not in md


def test_one_seed_gives_no_verdict_and_says_why() -> None:
    aggregate = _aggregate()
    for entry in aggregate["paired"].values():
        for side in entry.values():
            side["delta"] |= {"ci_low": None, "ci_high": None}
    md = summary_section({"aggregate": aggregate})
    assert "No intervals: one seed, so no policy can be said to beat Base." in md
    for entry in aggregate["metrics"].values():
        entry["iqm"] |= {"ci_low": None, "ci_high": None}
    lead = summary_section({"aggregate": aggregate, "smoke": True}).split("\n\n")[2]
    assert lead.startswith("**sac** ranks first with an IQM of 70.0 (no interval; normalised score")
    assert {row["beat"] for name, row in _summary_rows(md).items() if name != "base"} == {"no interval"}


def test_without_aggregate_the_summary_says_nothing_is_ranked() -> None:
    assert "nothing is ranked" in summary_section({"settings": {}})


@pytest.mark.skipif(not BENCH.is_file(), reason="no committed full-bench results")
def test_summary_of_the_committed_bench_reads_back_its_aggregate() -> None:
    results = json.loads(BENCH.read_text())
    md = summary_section(results)
    _check_against(results["aggregate"], md)
    assert md.split("\n\n")[1].startswith(f"**{results['aggregate']['best']}** ranks first")


def test_report_opens_with_the_summary_then_the_glossary(tmp_path: Path, monkeypatch) -> None:
    """The first screen answers the question; configuration and timings come last; every figure has a
    caption under it."""

    def fake_figures(results: Any, out: Path) -> dict[str, Path]:
        paths = {key: Path(out) / name for key, name in FIGURES.items()}
        for path in paths.values():
            path.write_bytes(b"")
        return paths

    monkeypatch.setattr(document_module, "write_figures", fake_figures)
    results = {
        "config": {"seeds": [0, 1, 2]},
        "timings": {"total_s": 1.0},
        "settings": {"HarnessPlanning-v0": {}},
        "aggregate": _aggregate(),
    }
    md = write_report(results, tmp_path)["report"].read_text()
    headings = re.findall(r"^## (.+)$", md, flags=re.M)
    assert headings[:2] == ["Summary", "Glossary"] and headings[-1] == "Run"
    assert md.index("Configuration:") > md.index("## Figures")
    lines = md.splitlines()
    for key, name in FIGURES.items():
        at = lines.index(f"![{key}]({name})")
        assert re.fullmatch(r"_Figure \d+\. .{40,}_", lines[at + 2]), key


def test_glossary_defines_every_abbreviation_and_open_loop_letter() -> None:
    from harness_gym.policies.open_loop import LETTERS, open_loop_table

    glossary = glossary_section()
    for term in (
        "AW",
        "BC",
        "FC",
        "CBS",
        "HMS",
        "IQM",
        "σ_D",
        "ESS",
        "FQE",
        "WIS",
        "P(X > Y)",
        "pass^k",
        "Base",
    ):
        assert re.search(rf"\*\*[^*]*{re.escape(term)}[^*]*\*\*", glossary), term
    used = {letter for entry in open_loop_table()["strings"].values() for letter in entry["string"]}
    for letter in used | set(LETTERS):
        assert f"{letter} = " in glossary, letter
    assert "``" not in glossary  # Markdown, not reST


def test_learning_curves_are_labelled_with_their_split() -> None:
    from harness_gym.bench.report.curves import curves_table
    from harness_gym.bench.report.figures import figure_captions
    from harness_gym.bench.runner import CURVE_SPLIT

    setting = {"curves": {"awr": {"0": [[10, 0.4], [20, 0.5]]}}}
    intro = curves_table([("HarnessPlanning-v0", setting)])
    assert f"G on the {CURVE_SPLIT} split" in intro and "Eval G" not in intro
    assert f"G on the {CURVE_SPLIT} split" in figure_captions()["learning_curves"]


def test_every_policy_keeps_one_colour() -> None:
    learners = list(LEARNER_SHADES)
    shades = [colour(name) for name in learners] + [colour(f"{name}-greedy") for name in learners]
    fixed = [colour(name) for name in ("base", "forced-check", "expert", "open-loop")]
    assert len(set(shades + fixed)) == len(shades + fixed)  # no two known policies share a colour
    assert colour("my-algo") == colour("my-algo") and colour("my-algo-greedy") != colour("my-algo")


def test_figures_draw_each_policy_in_its_colour(tmp_path: Path, saved_figures: dict[str, Any]) -> None:
    from matplotlib.colors import to_hex

    from harness_gym.bench.report.score_figures import aggregate_figure, per_setting_figure

    aggregate = copy.deepcopy(_aggregate())
    aggregate["per_setting"] = {"HarnessPlanning-v0": {n: m["iqm"] for n, m in aggregate["metrics"].items()}}
    for m in aggregate["metrics"].values():
        m |= {"mean": m["iqm"]}
    results = {"aggregate": aggregate}
    per_setting_figure(results, tmp_path / FIGURES["per_setting"])
    aggregate_figure(results, tmp_path / FIGURES["aggregate"])
    (panel,) = [ax for ax in saved_figures[FIGURES["per_setting"]].axes if ax.patches]
    labels = [t.get_text() for t in panel.get_yticklabels()]
    bars = sorted(panel.patches, key=lambda bar: -bar.get_y())  # top to bottom, as the labels
    assert [to_hex(b.get_facecolor()) for b in bars] == [colour(name) for name in labels]
    assert labels[0] == "sac" and labels[1:3] == ["awr-greedy", "base"]  # ties by name
    first = saved_figures[FIGURES["aggregate"]].axes[0]
    points = {line.get_xdata()[0]: to_hex(line.get_color()) for line in first.lines}
    assert points[70.0] == colour("sac") and points[30.0] == colour("awr")
