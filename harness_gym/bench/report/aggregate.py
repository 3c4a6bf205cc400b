"""The aggregate section: IQM and friends across settings and seeds, probability of improvement, pass^k."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from harness_gym.bench.report.access import _get, _short
from harness_gym.bench.report.format import _count, _mean, fmt_ci, fmt_num, markdown_table
from harness_gym.bench.report.sections import _section
from harness_gym.bench.report.summary import POINT_MARK, POINT_NOTE, is_point


def _ci_cell(entry: Mapping[str, Any] | None, digits: int) -> str:
    """[low, high], marked when the interval is a single point (``POINT_NOTE`` says why)."""
    cell = fmt_ci(_get(entry, "ci_low"), _get(entry, "ci_high"), lambda v: fmt_num(v, digits))
    return cell + POINT_MARK if is_point(entry) else cell


def _with_point_note(table: str) -> str:
    return f"{table}\n\n{POINT_NOTE}" if POINT_MARK in table else table


def _aggregate_metrics(aggregate: Mapping[str, Any]) -> str:
    """IQM, mean, median and optimality gap with their intervals per policy, best IQM first."""
    seeds, envs, runs = len(aggregate["seeds"]), len(aggregate["settings"]), aggregate["runs_per_policy"]
    boot = aggregate.get("bootstrap") or {}
    middle = runs - 2 * math.floor(0.25 * runs)
    intro = (
        "Normalised scores (random = 0, expert = 100, fixed per env id) of every policy's runs: "
        f"{_count(seeds, 'seed')} x {_count(envs, 'setting')} = {runs} runs per policy "
        f"(rliable: runs = seeds, tasks = settings). The IQM is the mean of the middle 50% of those runs "
        f"(here the middle {middle}); the optimality gap is the mean shortfall below the expert (scores "
        f"clipped at 100). Intervals ({100 * boot.get('confidence', 0.95):.0f}%, percentile, "
        f"{boot.get('reps')} replications, seed {boot.get('seed')}): for a policy with one model per seed, "
        "rliable's stratified bootstrap of its runs within each setting (seed-to-seed variation); for a "
        "policy that plays every seed itself (Base, Forced-CHECK, the references), a bootstrap of its "
        "episodes within each run, the only variation it has; none from a single seed. Neither covers "
        "the choice of settings."
    )
    left_out = [f"setting {e} (no scores)" for e in aggregate.get("unscored_settings") or ()]
    left_out += [
        f"{p} (incomplete on {', '.join(e)})" for p, e in (aggregate.get("dropped_policies") or {}).items()
    ]
    left_out += [
        f"setting {e} (incomplete for {', '.join(p)})"
        for e, p in (aggregate.get("dropped_settings") or {}).items()
    ]
    if left_out:
        intro += f" Left out: {'; '.join(left_out)}."
    metrics = aggregate["metrics"]
    order = sorted(metrics, key=lambda name: -metrics[name]["iqm"]["estimate"])
    headers = ["Policy"]
    for label in ("IQM", "Mean", "Median", "Optimality gap"):
        headers += [label, "95% CI"]
    rows = []
    for name in order:
        row = [name]
        for key in ("iqm", "mean", "median", "optimality_gap"):
            row += [fmt_num(_get(metrics[name].get(key), "estimate"), 1), _ci_cell(metrics[name].get(key), 1)]
        rows.append([*row, metrics[name].get("interval") or "none"])
    headers.append("Interval over")
    return f"{intro}\n\n{_with_point_note(markdown_table(headers, rows))}"


def _improvement_table(aggregate: Mapping[str, Any]) -> str:
    """P(X > Y) with its interval per compared pair."""
    pairs = aggregate.get("improvement") or []
    if not pairs:
        return ""
    reps = (aggregate.get("bootstrap") or {}).get("poi_reps")
    intro = (
        "**Probability of improvement.** P(X > Y), averaged over settings; 0.5 is no difference. Against "
        "Base it is paired, as the design is (every policy plays Base's episodes): the share of runs "
        "(setting, seed) in which X scores above Base on the same episodes, its interval resampling "
        "those pairs. Between learners it is rliable's: the chance that a run of X scores above a run of "
        "Y on the same setting (ties count half; Mann-Whitney U), with an independent stratified "
        f"bootstrap of both policies' runs. {reps} replications; no interval from a single seed."
    )
    rows = [
        [
            p["x"],
            p["y"],
            fmt_num(p.get("estimate"), 2),
            _ci_cell(p, 2),
            "paired" if p.get("paired") else "runs",
        ]
        for p in pairs
    ]
    headers = ["X", "Y", "P(X > Y)", "95% CI", "Compared"]
    return f"{intro}\n\n{_with_point_note(markdown_table(headers, rows, left=2))}"


def _pass_k_tables(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    """One table per k: pass^k of every policy on every setting, and its mean over the settings shown."""
    from harness_gym.core.rubric import SOLVED_G

    scored = [(e, s["pass_k"]) for e, s in settings if s.get("pass_k")]
    if not scored:
        return ""
    policies = list(dict.fromkeys(name for _, by_policy in scored for name in by_policy))
    ks = sorted({int(k) for _, by_policy in scored for v in by_policy.values() for k in v})
    parts = [
        f"**pass^k.** The chance that k i.i.d. rollouts of a task all succeed (success: G >= {SOLVED_G}, "
        "`harness_gym.core.rubric.SOLVED_G`), estimated per task and seed as C(c, k) / C(n, k) "
        "from c successes "
        "in n rollouts (tau-bench's estimator), then averaged over tasks and seeds; pass^1 is the success "
        "rate."
    ]
    for k in ks:
        rows = []
        for name in policies:
            cells = [(by_policy.get(name) or {}).get(str(k)) for _, by_policy in scored]
            rows.append([name, *(fmt_num(c) for c in cells), fmt_num(_mean(cells))])
        headers = ["Policy", *(_short(e) for e, _ in scored), "Mean"]
        parts += [f"pass^{k}:", markdown_table(headers, rows)]
    return "\n\n".join(parts)


def aggregate_section(results: Mapping[str, Any], settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    """``results["aggregate"]`` (``harness_gym.evaluation.aggregate.summarize``) and each setting's
    ``pass_k``."""
    aggregate = results.get("aggregate") or {}
    parts = [_aggregate_metrics(aggregate)] if aggregate.get("metrics") else []
    parts += [part for part in (_improvement_table(aggregate), _pass_k_tables(settings)) if part]
    if not parts:
        return _section("aggregate", "_No aggregate statistics in these results._", "", None)
    return _section(
        "aggregate",
        "Across settings and seeds, computed by `harness-gym bench` "
        "(`harness_gym.evaluation.aggregate`, rliable).",
        "\n\n".join(parts),
        None,
    )
