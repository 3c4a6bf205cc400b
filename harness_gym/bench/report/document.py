"""The report's files: report.md (header, every section, figures), summary.csv and results.json."""

from __future__ import annotations

import csv
import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness_gym.bench.report.access import _label, _ordered_settings, _policies
from harness_gym.bench.report.aggregate import aggregate_section
from harness_gym.bench.report.curves import curves_table
from harness_gym.bench.report.diagnostics import diagnostics_table
from harness_gym.bench.report.figures import figure_captions, write_figures
from harness_gym.bench.report.format import DASH, _missing, fmt_num, markdown_table
from harness_gym.bench.report.glossary import glossary_section
from harness_gym.bench.report.ope import ope_tables
from harness_gym.bench.report.others import others_table
from harness_gym.bench.report.paper_tables import (
    ablation_table,
    cbs_table,
    controlled_table,
    events_table,
    gains_table,
    support_table,
)
from harness_gym.bench.report.sections import SMOKE_NOTE
from harness_gym.bench.report.state_dependence import state_dependence_tables
from harness_gym.bench.report.summary import summary_section
from harness_gym.evaluation.results import json_default

CSV_FIELDS = (
    "env",
    "policy",
    "G",
    "delta_G",
    "ci_low",
    "ci_high",
    "p_value",
    "hms_norm",
    "delta_hms",
    "cbs",
    "early_submit",
)


def markdown_tables(results: Mapping[str, Any]) -> str:
    """Every table of the report (run first, the paper's numbers below each), as Markdown."""
    settings = _ordered_settings(results)
    if not settings:
        return "_No settings in these results._\n"
    builders = (
        cbs_table,
        gains_table,
        ablation_table,
        controlled_table,
        events_table,
        support_table,
        others_table,
        curves_table,
        lambda settings: aggregate_section(results, settings),
        ope_tables,
        state_dependence_tables,
        diagnostics_table,
    )
    tables = [build(settings).rstrip() for build in builders]
    if results.get("smoke"):  # every section says so, not only the report's title
        tables = [table.replace("\n\n", f"\n\n_{SMOKE_NOTE}_\n\n", 1) for table in tables]
    return "\n\n".join(tables) + "\n"


def _title(results: Mapping[str, Any]) -> str:
    lines = ["# harness-gym bench report" + (" (smoke run)" if results.get("smoke") else "")]
    if results.get("smoke"):
        lines += ["", SMOKE_NOTE]
    return "\n".join(lines)


def _run_details(results: Mapping[str, Any]) -> str:
    """## Run: settings, sandbox, timings and configuration (last: how the numbers were made)."""
    settings = _ordered_settings(results)
    config = results.get("config") or {}
    timings = results.get("timings") or {}
    lines = ["## Run", ""]
    lines.append(f"Settings: {', '.join(e for e, _ in settings) or DASH}.")
    if results.get("sandbox") not in (None, "none"):
        lines.append(f"Model-written code ran under sandbox: {results['sandbox']}.")
    if timings:
        parts = [
            f"{k} {v:.1f}" if isinstance(v, int | float) and not isinstance(v, bool) else f"{k} {v}"
            for k, v in timings.items()
        ]
        lines.append(f"Timings: {', '.join(parts)}.")
    if config:
        rows = [[str(k), f"`{json.dumps(v, default=json_default)}`"] for k, v in config.items()]
        lines += ["", "Configuration:", "", markdown_table(["Key", "Value"], rows, left=2)]
    per_setting = [(e, s.get("timings") or {}) for e, s in settings]
    keys = list(dict.fromkeys(k for _, t in per_setting for k in t))
    if keys:
        rows = [[_label(e), *(fmt_num(t.get(k), 1) for k in keys)] for e, t in per_setting]
        lines += ["", "Time per setting (s):", "", markdown_table(["Setting", *keys], rows)]
    return "\n".join(lines)


def _figures_section(figure_paths: Mapping[str, Path]) -> str:
    """## Figures: each figure with its caption under it."""
    captions = figure_captions()
    parts = ["## Figures"]
    for number, (key, path) in enumerate(figure_paths.items(), 1):
        parts += [f"![{key}]({path.name})", f"_Figure {number}. {captions[key]}_"]
    return "\n\n".join(parts)


def _csv_value(x: Any) -> str:
    return "" if _missing(x) else repr(x) if isinstance(x, float) else str(x)


def summary_rows(results: Mapping[str, Any]) -> list[dict[str, str]]:
    """One row per setting x policy with ``CSV_FIELDS`` (empty string where missing)."""
    rows = []
    for env_id, setting in _ordered_settings(results):
        for name, entry in _policies(setting).items():
            values = {"env": env_id, "policy": name} | {k: entry.get(k) for k in CSV_FIELDS[2:]}
            rows.append({k: _csv_value(values[k]) for k in CSV_FIELDS})
    return rows


def write_report(results: Mapping[str, Any], out_dir: str | Path, figures: bool = True) -> dict[str, Path]:
    """report.md, results.json, summary.csv and the PNG figures under ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"results": out / "results.json", "summary": out / "summary.csv", "report": out / "report.md"}
    paths["results"].write_text(json.dumps(results, indent=1, default=json_default) + "\n")
    with paths["summary"].open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(summary_rows(results))
    figure_paths: dict[str, Path] = {}
    if figures:
        try:
            figure_paths = write_figures(results, out)
        except ImportError as exc:  # the tables are still worth having
            warnings.warn(f"figures skipped: {exc}", stacklevel=2)
    body = [_title(results), summary_section(results), glossary_section(), markdown_tables(results).rstrip()]
    from harness_gym.evaluation.shift import shift_markdown

    if shift := shift_markdown(results).rstrip():
        body.append(shift)
    if figure_paths:
        body.append(_figures_section(figure_paths))
    from harness_gym.bench.viewer import write_view  # the episodes page (results.json and any kept datasets)

    paths["view"] = write_view(out, out / "view.html")
    body.append("Episodes, step by step: [view.html](view.html) (`harness-gym view RESULTS_DIR`).")
    body.append(_run_details(results))
    paths["report"].write_text("\n\n".join(body) + "\n")
    return paths | figure_paths
