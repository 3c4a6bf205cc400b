"""Rank every policy of one or more results files: ``harness-gym leaderboard FILE...``.

The files (``harness_gym.evaluation.results``: the bench's ``results.json``, ``harness-gym evaluate
--results-out``, ``evaluate_policy(...).write_results``) are merged when they share the protocol and the
simulator (else refused in one line), and the aggregate statistics are recomputed from the merged per-seed
and per-episode scores with ``harness_gym.evaluation.aggregate.summarize``, at the bench's settings: on
the bench's own ``results.json`` alone they reproduce its report's numbers exactly.

The ranked table orders the policies by IQM (95% interval: stratified bootstrap over seeds for policies
with one model per seed, over episodes for one policy playing every seed; none from a single seed) and
gives each one's paired probability of improvement over Base and over the best policy (highest IQM, the
references left out). The figures are the aggregate intervals, the probabilities of improvement and the
performance profiles (``harness_gym.bench.report``). A smoke run's numbers are marked as such everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["leaderboard", "markdown", "ranking", "write_leaderboard"]


def leaderboard(
    paths: Sequence[str | os.PathLike],
    reps: int | None = None,
    poi_reps: int | None = None,
    missing: str = "drop-policy",
) -> dict[str, Any]:
    """The merged results document of ``paths`` with its ``aggregate`` recomputed (``ResultsError`` for a
    file that is unreadable, breaks the schema or cannot be merged).

    ``reps`` / ``poi_reps``: bootstrap replications, by default the bench's (``aggregate.REPS`` and
    ``POI_REPS``; a bench with ``n_boot`` below them used ``n_boot``). ``missing``: a policy without
    scores on every setting is left out of the ranking (``drop-policy``, the bench's rule), or the
    ranking keeps only the settings every policy has (``drop-setting``); the table says which."""
    from harness_gym.evaluation import results
    from harness_gym.evaluation.aggregate import POI_REPS, REPS, summarize

    reps, poi_reps = REPS if reps is None else reps, POI_REPS if poi_reps is None else poi_reps
    if min(reps, poi_reps) < 1:  # before reading anything; 0 is no default
        raise ValueError(f"bootstrap replications must be at least 1, got reps={reps}, poi_reps={poi_reps}")
    merged = results.merge([(str(path), results.load(path)) for path in paths])
    merged["aggregate"] = summarize(merged, reps, poi_reps, missing=missing)
    return merged


def ranking(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per policy, best IQM first: name, kind, metrics and the paired comparisons."""
    aggregate = doc["aggregate"]
    metrics, paired = aggregate["metrics"], aggregate["paired"]
    policies = doc.get("policies") or {}
    order = sorted(metrics, key=lambda name: -metrics[name]["iqm"]["estimate"])
    return [
        {
            "rank": rank,
            "policy": name,
            "kind": (policies.get(name) or {}).get("kind"),
            **{key: metrics[name][key] for key in ("iqm", "mean", "optimality_gap", "interval")},
            "poi_base": (paired[name].get("base") or {}).get("poi"),
            "poi_best": (paired[name].get("best") or {}).get("poi"),
        }
        for rank, name in enumerate(order, 1)
    ]


def _cell(entry: Mapping[str, Any] | None, digits: int) -> str:
    from harness_gym.bench.report import DASH, fmt_num

    if not entry:
        return DASH
    if entry.get("ci_low") is None:
        return fmt_num(entry["estimate"], digits)
    from harness_gym.bench.report.summary import interval

    return f"{fmt_num(entry['estimate'], digits)} {interval(entry, digits)}"


def markdown(doc: Mapping[str, Any], sources: Sequence[str] = ()) -> str:
    """The ranked table as Markdown, with what it was computed from."""
    from harness_gym.bench.report import SMOKE_NOTE, _count, markdown_table
    from harness_gym.bench.report.summary import POINT_MARK, POINT_NOTE

    aggregate = doc["aggregate"]
    protocol = doc["protocol"]
    title = "# Leaderboard" + (" (smoke run)" if doc.get("smoke") else "")
    lines = [title, ""]
    if doc.get("smoke"):
        lines += [SMOKE_NOTE, ""]
    seeds = ", ".join(map(str, protocol["seeds"]))
    lines.append(
        f"{_count(len(aggregate['settings']), 'setting')} ({', '.join(aggregate['settings'])}); protocol v"
        f"{protocol['version']}: {protocol['split']} split x seeds ({seeds}) x {protocol['rollouts']} "
        f"rollout{'' if protocol['rollouts'] == 1 else 's'}; "
        f"simulator v{doc['simulator']['version']}." + (f" Files: {', '.join(sources)}." if sources else "")
    )
    left_out = [
        f"{name} (no scores on {', '.join(settings)}; `--missing drop-setting` ranks every policy on the "
        "settings all of them have)"
        for name, settings in (aggregate.get("dropped_policies") or {}).items()
    ]
    left_out += [
        f"setting {env_id} (no scores for {', '.join(names)})"
        for env_id, names in (aggregate.get("dropped_settings") or {}).items()
    ]
    if left_out:
        lines += ["", f"Left out: {'; '.join(left_out)}."]
    lines += [
        "",
        "Normalised scores (random = 0, expert = 100). IQM, mean and optimality gap with 95% bootstrap "
        "intervals: over seeds (stratified within settings) for one model per seed, over episodes for one "
        "policy playing every seed; no interval from a single seed. P(> Base) and P(> best): the share of "
        f"paired runs (same setting and seed) scoring higher, with its paired interval; best = "
        f"{aggregate.get('best')} (highest IQM; references left out).",
        "",
    ]
    rows = [
        [
            str(row["rank"]),
            row["policy"],
            row["kind"] or "",
            _cell(row["iqm"], 1),
            _cell(row["mean"], 1),
            _cell(row["optimality_gap"], 1),
            row["interval"] or "none",
            _cell(row["poi_base"], 2),
            _cell(row["poi_best"], 2),
        ]
        for row in ranking(doc)
    ]
    headers = [
        "#",
        "Policy",
        "Kind",
        "IQM",
        "Mean",
        "Optimality gap",
        "Interval over",
        "P(> Base)",
        "P(> best)",
    ]
    table = markdown_table(headers, rows, left=3)
    lines.append(table)
    if POINT_MARK in table:
        lines.append(f"\n{POINT_NOTE}")
    return "\n".join(lines) + "\n"


def write_leaderboard(
    doc: Mapping[str, Any], out_dir: str | os.PathLike, sources: Sequence[str] = (), figures: bool = True
) -> dict[str, Path]:
    """leaderboard.md, results.json (the merged document with its aggregate) and the figures."""
    from harness_gym.bench.report import leaderboard_figures
    from harness_gym.evaluation.results import write

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"leaderboard": out / "leaderboard.md", "results": out / "results.json"}
    write(doc, paths["results"])
    figure_paths = leaderboard_figures(doc, out) if figures else {}
    text = markdown(doc, sources)
    if figure_paths:
        text += "\n" + "\n".join(f"![{key}]({path.name})" for key, path in figure_paths.items()) + "\n"
    paths["leaderboard"].write_text(text)
    return paths | figure_paths
