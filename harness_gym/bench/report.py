"""Markdown tables, CSV and figures from a ``harness-gym bench`` results dict, beside the paper's numbers.

The input is ``{"config": ..., "timings": ..., "settings": {env_id: {"compare": ..., "buffer": ...}}}``
where ``compare`` is ``harness_gym.evaluation.protocol.compare`` output and ``buffer`` is ``buffer_stats``
output. Any setting, policy or buffer may be missing; its cells then read "—". Each table is followed by the
paper's numbers for the same rows and columns (``harness_gym.evaluation.paper``).

matplotlib is imported only inside the figure functions (Agg canvas, no pyplot state).
"""

from __future__ import annotations

import csv
import json
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness_gym.core.hms import EVENTS
from harness_gym.evaluation.paper import MACRO_MEAN, PAPER, SETTING_ORDER, PaperSetting
from harness_gym.evaluation.results import json_default

AW, BC, FC = "awr", "bc", "forced-check"
SCRIPTED = frozenset({"base", AW, BC, FC, "exploratory", "random"})
"""Policies with a column of their own; every other policy counts as another offline RL algorithm."""

DASH = "—"
NOT_REPORTED = "n/r"
"""Paper cell for something the paper does not report (versus "—": not applicable)."""

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

HEADINGS = {
    "cbs": "CheckBeforeSubmit: Base → AW",
    "gains": "Final-quality change per setting",
    "ablation": "Ablation: AW vs BC vs Forced CHECK",
    "controlled": "Controlled-domain results",
    "events": "Event-level decomposition (Base → AW)",
    "support": "Buffer slack and outcome change per setting",
    "others": "Other offline RL algorithms",
    "curves": "Learning curves",
    "aggregate": "Aggregate statistics",
    "state_dependence": "State-dependence gap and token cost",
}
"""Section titles of ``markdown_tables``, in order."""

Row = list[str]

SMOKE_NOTE = (
    "**Smoke run** (`--quick`): a check that everything runs, on far fewer episodes, seeds and training "
    "steps than the protocol; these numbers are not comparable with the paper's or the full bench's."
)
"""Opens the report and every table of a smoke run (``results["smoke"]``)."""


# -- access ----------------------------------------------------------------------------------------
def _ordered_settings(results: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Settings in the paper's order, unknown ids after them alphabetically."""
    settings = results.get("settings") or {}
    rank = {env_id: i for i, env_id in enumerate(SETTING_ORDER)}
    ids = sorted(settings, key=lambda e: (rank.get(e, len(rank)), e))
    return [(env_id, settings[env_id] or {}) for env_id in ids]


def _policies(setting: Mapping[str, Any]) -> Mapping[str, Any]:
    return (setting.get("compare") or {}).get("policies") or {}


def _policy(setting: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    return _policies(setting).get(name)


def _base(setting: Mapping[str, Any]) -> Mapping[str, Any] | None:
    compare = setting.get("compare") or {}
    return _policy(setting, compare.get("base", "base"))


def _base_G(setting: Mapping[str, Any]) -> float | None:
    base = _base(setting)
    if base is not None:
        return base.get("G")
    for entry in _policies(setting).values():  # every entry carries the paired Base mean
        if entry.get("base_G") is not None:
            return entry["base_G"]
    return None


def _get(entry: Mapping[str, Any] | None, key: str) -> Any:
    return None if entry is None else entry.get(key)


def _lift_difference(setting: Mapping[str, Any], label: str, other: str) -> float | None:
    """ΔΔ from ``compare``'s lifts, else from the two lifts when both policies are present."""
    lift = ((setting.get("compare") or {}).get("lifts") or {}).get(label)
    if lift is not None and lift.get("estimate") is not None:
        return lift["estimate"]
    aw, oth = _get(_policy(setting, AW), "delta_G"), _get(_policy(setting, other), "delta_G")
    return None if aw is None or oth is None else aw - oth


def _is_adapter(env_id: str) -> bool:
    from harness_gym.envs.registry import ADAPTERS

    return env_id in ADAPTERS


def _label(env_id: str) -> str:
    return PAPER[env_id].label if env_id in PAPER else env_id


def _short(env_id: str) -> str:
    return PAPER[env_id].short if env_id in PAPER else env_id


def _other_algorithms(setting: Mapping[str, Any]) -> list[str]:
    base = (setting.get("compare") or {}).get("base", "base")
    return [name for name in _policies(setting) if name not in SCRIPTED and name != base]


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None and not _isnan(v)]
    return sum(kept) / len(kept) if kept else None


def _isnan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


# -- formatting ------------------------------------------------------------------------------------
def _missing(x: Any) -> bool:
    return x is None or _isnan(x)


def _no_negative_zero(x: float, digits: int) -> float:
    """-0.0004 shows as +0.000, not -0.000."""
    return round(x, digits) + 0.0


def fmt_num(x: float | None, digits: int = 3) -> str:
    """0.450; "—" when missing."""
    return DASH if _missing(x) else f"{x:.{digits}f}"


def fmt_signed(x: float | None, digits: int = 3) -> str:
    """+0.014 / -0.003; "—" when missing."""
    return DASH if _missing(x) else f"{_no_negative_zero(x, digits):+.{digits}f}"


def fmt_pp(x: float | None, digits: int = 1) -> str:
    """G units as signed percentage points: 0.182 -> +18.2."""
    return DASH if _missing(x) else f"{_no_negative_zero(100 * x, digits):+.{digits}f}"


def fmt_pct(x: float | None, digits: int = 1) -> str:
    """A rate as a percentage: 0.056 -> 5.6%."""
    return DASH if _missing(x) else f"{100 * x:.{digits}f}%"


def fmt_ci(low: float | None, high: float | None, fmt: Callable[[float | None], str] = fmt_signed) -> str:
    """[low, high] with ``fmt``; "—" when either end is missing."""
    return DASH if _missing(low) or _missing(high) else f"[{fmt(low)}, {fmt(high)}]"


def fmt_p(p: float | None, below: bool = False) -> str:
    """0.097; <0.001 below that (or when the paper gives only the bound)."""
    if _missing(p):
        return DASH
    if below:
        return f"<{p:.3f}"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def fmt_transition(base: float | None, other: float | None) -> str:
    """Base → policy rates: 0.0% → 5.6%."""
    return f"{fmt_pct(base)} → {fmt_pct(other)}"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """A GitHub-flavoured Markdown table, the first ``left`` columns left-aligned, the others right."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    align = [":---"] * left + ["---:"] * (len(headers) - left)
    return "\n".join([line(headers), line(align), *(line(r) for r in rows)])


def _section(key: str, intro: str, run: str, paper: str | None, paper_note: str = "") -> str:
    parts = [f"## {HEADINGS[key]}", "", intro, "", run]
    if paper is not None:
        parts += ["", f"**Paper.** {paper_note}".rstrip(), "", paper]
    return "\n".join(parts)


# -- the tables ------------------------------------------------------------------------------------
def _cbs_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    headers = ["Setting", "Base CBS", "AW CBS"]
    run = [
        [_label(e), fmt_pct(_get(_base(s), "cbs")), fmt_pct(_get(_policy(s, AW), "cbs"))] for e, s in settings
    ]
    paper = [
        [_label(e), fmt_pct(p.base_cbs), fmt_pct(p.cbs)] if (p := PAPER.get(e)) else [_label(e), DASH, DASH]
        for e, _ in settings
    ]
    return _section(
        "cbs",
        "Fraction of evaluation episodes in which a CHECK precedes the submit.",
        markdown_table(headers, run),
        markdown_table(headers, paper),
        "Table `cbs`.",
    )


def _gains_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    headers = ["Setting", "Base G", "AW G", "ΔG (pp)", "95% CI (pp)", "CBS"]
    run = []
    for e, s in settings:
        aw = _policy(s, AW)
        run.append(
            [
                _label(e),
                fmt_num(_base_G(s)),
                fmt_num(_get(aw, "G")),
                fmt_pp(_get(aw, "delta_G")),
                fmt_ci(_get(aw, "ci_low"), _get(aw, "ci_high"), fmt_pp),
                fmt_pct(_get(aw, "cbs")),
            ]
        )
    paper = []
    for e, _ in settings:
        p = PAPER.get(e)
        if p is None:
            paper.append([_label(e)] + [DASH] * 5)
            continue
        ci = fmt_ci(*p.ci, fmt_pp) if p.ci else NOT_REPORTED
        paper.append([p.label, fmt_num(p.base_G), fmt_num(p.aw_G), fmt_pp(p.delta_G), ci, fmt_pct(p.cbs)])
    return _section(
        "gains",
        "AW against the Base harness; ΔG and its paired bootstrap interval in percentage points.",
        markdown_table(headers, run),
        markdown_table(headers, paper),
        "Table `benchmarks` (adapters, coding); other rows from Table `main-synthetic`.",
    )


def _ablation_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    headers = ["Setting", "AW lift", "BC lift", "FC lift", "ΔΔ AW−BC", "ΔΔ AW−FC"]
    run = [
        [
            _label(e),
            fmt_pp(_get(_policy(s, AW), "delta_G")),
            fmt_pp(_get(_policy(s, BC), "delta_G")),
            fmt_pp(_get(_policy(s, FC), "delta_G")),
            fmt_pp(_lift_difference(s, "aw_minus_bc", BC)),
            fmt_pp(_lift_difference(s, "aw_minus_fc", FC)),
        ]
        for e, s in settings
    ]
    keys = ("aw", "bc", "fc", "aw_minus_bc", "aw_minus_fc")
    paper = [
        [_label(e), *(fmt_pp(PAPER[e].lifts.get(k)) if e in PAPER else DASH for k in keys)]
        for e, _ in settings
    ]
    return _section(
        "ablation",
        "Lifts are ΔG over Base in percentage points; ΔΔ > 0 means AW beats the baseline.",
        markdown_table(headers, run),
        markdown_table(headers, paper),
        "Table `bc-fc`.",
    )


def _controlled_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    headers = ["Domain", "Base G", "AW G", "ΔG", "ΔHMS", "95% CI", "p", "CBS", "N"]
    controlled = [(e, s) for e, s in settings if not _is_adapter(e)]
    if not controlled:
        return _section("controlled", "_No controlled-domain settings in these results._", "", None)
    run = []
    for e, s in controlled:
        aw = _policy(s, AW)
        run.append(
            [
                _label(e),
                fmt_num(_base_G(s)),
                fmt_num(_get(aw, "G")),
                fmt_signed(_get(aw, "delta_G")),
                fmt_signed(_get(aw, "delta_hms")),
                fmt_ci(_get(aw, "ci_low"), _get(aw, "ci_high")),
                fmt_p(_get(aw, "p_value")),
                fmt_pct(_get(aw, "cbs")),
                str(_get(aw, "pairs")) if _get(aw, "pairs") is not None else DASH,
            ]
        )
    aws = [_policy(s, AW) for _, s in controlled]
    run.append(
        [
            "*Macro mean*",
            DASH,
            DASH,
            fmt_signed(_mean(_get(a, "delta_G") for a in aws)),
            fmt_signed(_mean(_get(a, "delta_hms") for a in aws)),
            DASH,
            DASH,
            fmt_pct(_mean(_get(a, "cbs") for a in aws)),
            DASH,
        ]
    )
    paper = []
    for e, _ in controlled:
        p = PAPER.get(e)
        if p is None:
            paper.append([_label(e)] + [DASH] * 8)
            continue
        paper.append(
            [
                p.label,
                fmt_num(p.base_G),
                fmt_num(p.aw_G),
                fmt_signed(p.delta_G),
                fmt_signed(p.delta_hms),
                fmt_ci(*p.ci) if p.ci else NOT_REPORTED,
                fmt_p(p.p_value, p.p_below) if p.p_value is not None else NOT_REPORTED,
                fmt_pct(p.cbs),
                "180",
            ]
        )
    macro = [
        "*Macro mean*",
        DASH,
        DASH,
        fmt_signed(MACRO_MEAN["delta_G"]),
        fmt_signed(MACRO_MEAN["delta_hms"]),
    ]
    paper.append([*macro, DASH, DASH, fmt_pct(MACRO_MEAN["cbs"]), DASH])
    return _section(
        "controlled",
        "AW against Base on the six controlled domains (G units); p is the paired sign-flip permutation "
        "test; the macro mean averages the domains shown.",
        markdown_table(headers, run),
        markdown_table(headers, paper),
        "Table `main-synthetic` (macro mean over all six domains).",
    )


def _event_cell(setting: Mapping[str, Any], event: str) -> str:
    aw, base = _policy(setting, AW), _base(setting)
    entry = (aw or base or {}).get("events", {}).get(event)
    if entry is None:
        return DASH
    if not entry.get("applicable", True):
        return DASH
    return fmt_transition(entry.get("base"), entry.get("policy") if aw is not None else None)


def _paper_event_cell(env_id: str, event: str) -> str:
    p = PAPER.get(env_id)
    if p is None or event not in p.events:
        return NOT_REPORTED
    rates = p.events[event]
    return DASH if rates is None else fmt_transition(*rates)


def _events_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    headers = ["Event", *(_short(e) for e, _ in settings)]
    run = [[event, *(_event_cell(s, event) for _, s in settings)] for event in EVENTS]
    run.append(["ΔHMS", *(fmt_signed(_get(_policy(s, AW), "delta_hms")) for _, s in settings)])
    paper = [[event, *(_paper_event_cell(e, event) for e, _ in settings)] for event in EVENTS]
    paper.append(["ΔHMS", *(fmt_signed(PAPER[e].delta_hms) if e in PAPER else DASH for e, _ in settings)])
    return _section(
        "events",
        'Share of episodes in which each event fired, Base → AW; "—" where the event does not apply. '
        "EarlySubmit is a penalty: a rise is a regression.",
        markdown_table(headers, run),
        markdown_table(headers, paper),
        f'Table `full-hms`; adapters from the appendix text ("{NOT_REPORTED}": not reported).',
    )


def _support_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    headers = ["Setting", "σ_D", "Base G", "ΔG", "ΔHMS", "Buffer N", "Buffer Δ_Q"]
    run = []
    for e, s in settings:
        buffer, aw = s.get("buffer") or {}, _policy(s, AW)
        hms_check = (buffer.get("checks") or {}).get("HMS") or {}
        run.append(
            [
                _label(e),
                fmt_num(buffer.get("sigma_D")),
                fmt_num(_base_G(s)),
                fmt_signed(_get(aw, "delta_G")),
                fmt_signed(_get(aw, "delta_hms")),
                str(buffer["N"]) if buffer.get("N") is not None else DASH,
                fmt_signed(hms_check.get("delta_Q")),
            ]
        )
    aws = [_policy(s, AW) for e, s in settings if not _is_adapter(e)]
    if aws:
        mean_g, mean_hms = (_mean(_get(a, key) for a in aws) for key in ("delta_G", "delta_hms"))
        run.append(["*Macro mean*", DASH, DASH, fmt_signed(mean_g), fmt_signed(mean_hms), DASH, DASH])
    paper = []
    for e, _ in settings:
        p: PaperSetting | None = PAPER.get(e)
        if p is None:
            paper.append([_label(e)] + [DASH] * 6)
            continue
        sigma = NOT_REPORTED if p.sigma_D is None else fmt_num(p.sigma_D)
        paper.append(
            [p.label, sigma, fmt_num(p.base_G), fmt_signed(p.delta_G), fmt_signed(p.delta_hms), DASH, DASH]
        )
    if aws:
        macro = [fmt_signed(MACRO_MEAN["delta_G"]), fmt_signed(MACRO_MEAN["delta_hms"])]
        paper.append(["*Macro mean*", DASH, DASH, *macro, DASH, DASH])
    return _section(
        "support",
        "σ_D = max G − mean G of the training buffer: no reweighting of it can lift mean G by more. "
        "Buffer Δ_Q is the outcome shift of the AW-reweighted buffer itself (β from the buffer statistics). "
        "The macro mean covers the controlled domains shown.",
        markdown_table(headers, run),
        markdown_table(headers, paper),
        "Table `calibrated-support` (controlled domains only).",
    )


def _others_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    headers = ["Setting", "Algorithm", "G", "ΔG (pp)", "95% CI (pp)", "p", "ΔHMS", "CBS"]
    rows = []
    for e, s in settings:
        for name in _other_algorithms(s):
            entry = _policy(s, name)
            rows.append(
                [
                    _label(e),
                    name,
                    fmt_num(_get(entry, "G")),
                    fmt_pp(_get(entry, "delta_G")),
                    fmt_ci(_get(entry, "ci_low"), _get(entry, "ci_high"), fmt_pp),
                    fmt_p(_get(entry, "p_value")),
                    fmt_signed(_get(entry, "delta_hms")),
                    fmt_pct(_get(entry, "cbs")),
                ]
            )
    if not rows:
        return _section("others", "_No other algorithms in these results._", "", None)
    return _section(
        "others",
        "Other d3rlpy algorithms trained on the same buffer, against the same Base episodes. "
        "The paper reports no numbers for them.",
        markdown_table(headers, rows, left=2),
        None,
    )


def _state_dependence_tables(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    """Expert minus open-loop per setting (``state_dependence``), then every policy's mean G beside its
    mean executor tokens per episode (``tokens``; the G-versus-tokens figure's points)."""
    gap_rows = []
    for e, s in settings:
        gap = s.get("state_dependence")
        if gap:
            gap_rows.append(
                [
                    _label(e),
                    fmt_num(gap["expert_G"]),
                    fmt_num(gap["open_loop_G"]),
                    fmt_signed(gap["gap"]),
                    fmt_ci(gap["ci_low"], gap["ci_high"]),
                    str(gap["pairs"]),
                    f"`{gap['string']}`",
                ]
            )
    token_rows = [
        [_label(e), name, point["kind"], fmt_num(point["G"]), f"{point['tokens']:,.0f}"]
        for e, s in settings
        for name, point in (s.get("tokens") or {}).items()
    ]
    parts = [
        "The expert (reads the state) and the open-loop reference (the setting's best fixed action string, "
        "`harness_gym/data/open_loop.json`) play the same evaluation episodes as Base; the gap is their mean "
        "paired difference in G with a 95% percentile bootstrap interval over the episode pairs "
        "(`harness_gym.evaluation.headroom.paired_gap`). A measurement, not a target."
    ]
    headers = ["Setting", "expert G", "open-loop G", "gap", "95% CI", "pairs", "open-loop string"]
    parts.append(
        markdown_table(headers, gap_rows) if gap_rows else "_No state-dependence gap in these results._"
    )
    if token_rows:
        parts += [
            "Mean G and mean executor tokens (prompt + completion) per evaluation episode of every "
            "evaluated policy (figure: G versus tokens).",
            markdown_table(["Setting", "Policy", "kind", "G", "tokens / episode"], token_rows, left=3),
        ]
    return _section("state_dependence", parts[0], "\n\n".join(parts[1:]), None)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _ci_cell(entry: Mapping[str, Any] | None, digits: int) -> str:
    return fmt_ci(_get(entry, "ci_low"), _get(entry, "ci_high"), lambda v: fmt_num(v, digits))


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
    return f"{intro}\n\n{markdown_table(headers, rows)}"


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
    return f"{intro}\n\n{markdown_table(headers, rows, left=2)}"


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


def _aggregate_section(results: Mapping[str, Any], settings: list[tuple[str, Mapping[str, Any]]]) -> str:
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


# -- off-policy evaluation -------------------------------------------------------------------------
OPE_ESTIMATORS = {"fqe": "FQE", "is": "IS", "wis": "WIS", "pdis": "PDIS", "dr": "DR"}
"""Keys of ``out["ope"]`` entries (``harness_gym.bench.runner.off_policy_evaluation``) and their labels."""
G_MAX = 1.0
"""The highest G any task can score (``harness_gym.envs.env``: G lies in [0, 1])."""


def _ope_entries(setting: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(policy, seed, entry) of every OPE entry with a true value."""
    return [
        (name, seed, entry)
        for name, per_seed in (setting.get("ope") or {}).items()
        for seed, entry in per_seed.items()
        if not _missing(entry.get("true"))
    ]


def ope_errors(entries: Sequence[tuple[str, str, Mapping[str, Any]]], key: str) -> dict[str, Any]:
    """Mean absolute error of estimator ``key`` against the truth over (policy, seed) entries where it
    is defined, and Spearman's rho across policies of the seed means (estimate vs truth).

    ``{"mae", "rho", "n", "undefined"}``; ``rho`` is None with fewer than 2 policies or a constant side."""
    from scipy.stats import spearmanr

    defined = [(name, e[key], e["true"]) for name, _, e in entries if not _missing(e.get(key))]
    mae = _mean(abs(est - true) for _, est, true in defined)
    by_policy: dict[str, list[tuple[float, float]]] = {}
    for name, est, true in defined:
        by_policy.setdefault(name, []).append((est, true))
    points = [tuple(sum(v) / len(v) for v in zip(*pairs, strict=True)) for pairs in by_policy.values()]
    rho = None
    if len(points) >= 2 and len({p[0] for p in points}) > 1 and len({p[1] for p in points}) > 1:
        rho = float(spearmanr([p[0] for p in points], [p[1] for p in points]).statistic)
    return {"mae": mae, "rho": rho, "n": len(points), "undefined": len(entries) - len(defined)}


def _ope_tables(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    heading = "## Off-policy evaluation"
    per_setting = [(e, _ope_entries(s)) for e, s in settings]
    per_setting = [(e, entries) for e, entries in per_setting if entries]
    if not per_setting:
        return f"{heading}\n\n_No off-policy evaluation in these results._"
    rows = [(_label(e), entries) for e, entries in per_setting]
    pooled = [(f"{e}:{name}", seed, entry) for e, entries in per_setting for name, seed, entry in entries]
    mae_rows, rho_rows = [], []
    for label, entries in [*rows, ("Pooled", pooled)]:
        errors = {k: ope_errors(entries, k) for k in OPE_ESTIMATORS}
        mae_cells = [
            fmt_num(err["mae"]) + (f" ({err['undefined']} undef.)" if err["undefined"] else "")
            for err in errors.values()
        ]
        unsupported = sum(not _missing(e.get("ess")) and e["ess"] == 0 for _, _, e in entries)
        truth_se = _mean(e.get("true_se") for _, _, e in entries)
        mae_rows.append(
            [label, str(len(entries)), *mae_cells, fmt_num(truth_se), f"{unsupported}/{len(entries)}"]
        )
        rho_rows.append(
            [label, str(errors["fqe"]["n"]), *(fmt_signed(err["rho"], 2) for err in errors.values())]
        )
    support_rows = []
    for label, keep in (("ESS > 0", lambda x: x > 0), ("ESS = 0", lambda x: x == 0)):
        subset = [t for t in pooled if not _missing(t[2].get("ess")) and keep(t[2]["ess"])]
        if subset:
            cells = [fmt_num(ope_errors(subset, k)["mae"]) for k in OPE_ESTIMATORS]
            support_rows.append([label, str(len(subset)), *cells])
    mean_rho = [_mean(ope_errors(entries, k)["rho"] for _, entries in rows) for k in OPE_ESTIMATORS]
    rho_rows.append(["Mean of settings", DASH, *(fmt_signed(r, 2) for r in mean_rho)])
    labels = list(OPE_ESTIMATORS.values())
    intro = (
        "Every trained acting policy (algorithm x seed x mode) estimated from the buffer by each estimator "
        "and set beside its true value: the policy played once on every train-split task, the tasks the "
        "buffer's episodes start from (`Truth SE`: the standard error of that mean, the floor below which "
        "an error cannot be told from noise). FQE's Q-function is DR's model. `ESS = 0`: no logged "
        "episode follows the policy (IS, PDIS give 0 and WIS is undefined). Spearman's ρ ranks the "
        "policies by their mean over seeds; the pooled row ranks (setting, policy) pairs together, so "
        "it also credits telling settings apart."
    )
    parts = [
        heading,
        "",
        intro,
        "",
        "Mean absolute error against the true value (G units):",
        "",
        markdown_table(["Setting", "Runs", *labels, "Truth SE", "ESS = 0"], mae_rows),
        "",
        "Pooled mean absolute error, split by whether some logged episode follows the policy:",
        "",
        markdown_table(["Runs", "n", *labels], support_rows),
        "",
        "Spearman rank correlation with the true value across policies:",
        "",
        markdown_table(["Setting", "Policies", *labels], rho_rows),
        "",
        _own_q_table(settings),
    ]
    return "\n".join(parts)


def _seed_mean(per_seed: Mapping[str, Mapping[str, Any]], key: str) -> float | None:
    return _mean(entry.get(key) for entry in per_seed.values())


def _own_q_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    """Each Q-learner's own value of its start state beside the truth and FQE, and why BCQ / CQL fall
    below BC where they do, read from these numbers."""
    headers = ["Setting", "Algorithm", "Own Q at start", "True", "Own − true", "FQE", "Eval G", "BC eval G"]
    rows, notes = [], []
    for e, s in settings:
        bc_G = _get(_policy(s, BC), "G")
        for name, per_seed in (s.get("ope") or {}).items():
            own, true = _seed_mean(per_seed, "own_q"), _seed_mean(per_seed, "true")
            if own is None:
                continue
            fqe, policy = _seed_mean(per_seed, "fqe"), _policy(s, name)
            gap = None if true is None else own - true
            rows.append(
                [_label(e), name, fmt_num(own), fmt_num(true), fmt_signed(gap), fmt_num(fqe),
                 fmt_num(_get(policy, "G")), fmt_num(bc_G)]
            )  # fmt: skip
            if name in ("bcq", "cql"):
                notes.append(_below_bc_note(e, name, policy, bc_G, own, true, fqe, per_seed))
    if not rows:
        return "_No Q-learner with its own value estimates in these results._"
    explained = [n for n in notes if n]
    if explained:
        verdict = " ".join(explained)
    elif notes:
        verdict = "BCQ and CQL are nowhere below BC by more than their interval."
    else:
        verdict = "Neither BCQ nor CQL is in these results."
    return "\n".join(
        [
            "Q-learners' own value estimates vs true value (means over seeds; `Own Q at start`: the "
            "learner's Q of the actions its acting policy takes at the buffer's start states; `Eval G`: "
            "the evaluation split, as in the tables above):",
            "",
            markdown_table(headers, rows, left=2),
            "",
            verdict,
        ]
    )


def _below_bc_note(
    env_id: str,
    name: str,
    policy: Mapping[str, Any] | None,
    bc_G: float | None,
    own: float,
    true: float | None,
    fqe: float | None,
    per_seed: Mapping[str, Mapping[str, Any]],
) -> str:
    """A sentence when ``name`` is below BC by more than its ΔG interval's half-width, else ''."""
    G, low, high = (_get(policy, k) for k in ("G", "ci_low", "ci_high"))
    if any(_missing(x) for x in (G, low, high, bc_G, true)):
        return ""
    half = (high - low) / 2
    if bc_G - G <= half:
        return ""
    se = _mean(entry.get("true_se") for entry in per_seed.values()) or 0.0
    gap = own - true
    head = (
        f"{_label(env_id)}: {name} (eval G {G:.3f}) is below BC ({bc_G:.3f}) by {bc_G - G:.3f}, more than "
        f"its interval (±{half:.3f})."
    )
    ess = [entry.get("ess") for entry in per_seed.values()]
    support = (
        " No logged episode follows its policy (ESS 0 on every seed), so the buffer cannot value it either."
        if ess and all(x == 0 for x in ess)
        else ""
    )
    if abs(gap) <= 2 * se:
        return (
            f"{head} Its own Q at the start state ({own:.3f}) is within two standard errors of its true "
            f"value on the train tasks ({true:.3f} ± {se:.3f}): the Q-function is right about its own "
            f"policy there, so a wrong Q-function does not explain the shortfall.{support}"
        )
    direction = "overestimates" if gap > 0 else "underestimates"
    beyond = f", above {G_MAX:g}, the highest G a task can score" if own > G_MAX else ""
    in_se = f", {abs(gap) / se:.0f} standard errors of the truth" if se else ""
    return (
        f"{head} Its Q-function {direction} what its policy achieves: own Q {own:.3f}{beyond}, against a "
        f"true value of {true:.3f} on the train tasks ({gap:+.3f}{in_se}; FQE of the same policy: "
        f"{fmt_num(fqe)}).{support}"
    )


def markdown_tables(results: Mapping[str, Any]) -> str:
    """Every table of the report (run first, the paper's numbers below each), as Markdown."""
    settings = _ordered_settings(results)
    if not settings:
        return "_No settings in these results._\n"
    builders = (
        _cbs_table,
        _gains_table,
        _ablation_table,
        _controlled_table,
        _events_table,
        _support_table,
        _others_table,
        _curves_table,
        lambda settings: _aggregate_section(results, settings),
        _ope_tables,
        _state_dependence_tables,
    )
    tables = [build(settings).rstrip() for build in builders]
    if results.get("smoke"):  # every section says so, not only the report's title
        tables = [table.replace("\n\n", f"\n\n_{SMOKE_NOTE}_\n\n", 1) for table in tables]
    return "\n\n".join(tables) + "\n"


# -- learning curves -------------------------------------------------------------------------------
def _curve_runs(setting: Mapping[str, Any]) -> dict[str, list[list[tuple[int, float]]]]:
    """{algo: one [(step, G), ...] per seed} from a setting's ``curves`` (``harness_gym.bench.runner``)."""
    runs = {}
    for algo, per_seed in (setting.get("curves") or {}).items():
        curves = [[(int(step), float(g)) for step, g in points] for points in per_seed.values() if points]
        if curves:
            runs[algo] = curves
    return runs


def _curve_stats(curves: list[list[tuple[int, float]]]) -> list[tuple[int, float, float, float]]:
    """(step, mean, min, max) of G over seeds at each checkpoint (seeds share their checkpoint steps)."""
    out = []
    for k in range(min(len(c) for c in curves)):
        gs = [c[k][1] for c in curves]
        out.append((curves[0][k][0], sum(gs) / len(gs), min(gs), max(gs)))
    return out


def _curves_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    rows_in = [(e, algo, _curve_stats(c)) for e, s in settings for algo, c in _curve_runs(s).items()]
    if not rows_in:
        return _section("curves", "_No learning curves in these results._", "", None)
    k = max(len(stats) for _, _, stats in rows_in)
    headers = ["Setting", "Algorithm", "Steps", *(f"{100 * (i + 1) / k:.0f}%" for i in range(k)), "Last ΔG"]
    rows = []
    for e, algo, stats in rows_in:
        gs = [fmt_num(g) for _, g, _, _ in stats] + [DASH] * (k - len(stats))
        last = fmt_signed(stats[-1][1] - stats[-2][1]) if len(stats) > 1 else DASH
        rows.append([_label(e), algo, str(stats[-1][0]), *gs, last])
    return _section(
        "curves",
        "Eval G of each trained policy at evenly spaced points of its training run (columns: share of "
        "the run's gradient steps; Steps: its length), mean over seeds. A point plays every eval task "
        "once with the run's seed, the same episodes at every point; stochastic learners sample. "
        "Last ΔG is the change over the final stretch: a large positive value marks a run still improving.",
        markdown_table(headers, rows, left=2),
        None,
    )


# -- files -----------------------------------------------------------------------------------------
def _header(results: Mapping[str, Any]) -> str:
    settings = _ordered_settings(results)
    config = results.get("config") or {}
    timings = results.get("timings") or {}
    lines = ["# harness-gym bench report" + (" (smoke run)" if results.get("smoke") else ""), ""]
    if results.get("smoke"):
        lines += [SMOKE_NOTE, ""]
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
    body = [_header(results), markdown_tables(results).rstrip()]
    from harness_gym.evaluation.shift import shift_markdown

    if shift := shift_markdown(results).rstrip():
        body.append(shift)
    if figure_paths:
        body.append("## Figures\n\n" + "\n".join(f"![{k}]({p.name})" for k, p in figure_paths.items()))
    from harness_gym.bench.viewer import write_view  # the episodes page (results.json and any kept datasets)

    paths["view"] = write_view(out, out / "view.html")
    body.append("Episodes, step by step: [view.html](view.html) (`harness-gym view RESULTS_DIR`).")
    paths["report"].write_text("\n\n".join(body) + "\n")
    return paths | figure_paths


# -- figures ---------------------------------------------------------------------------------------
FIGURES = {
    "aggregate": "fig_aggregate.png",
    "improvement": "fig_improvement.png",
    "performance_profile": "fig_performance_profile.png",
    "per_setting": "fig_per_setting.png",
    "outcome_process": "fig_outcome_process.png",
    "policy_comparison": "fig_policy_comparison.png",
    "sigma_delta_g": "fig_sigma_vs_delta_g.png",
    "events": "fig_events.png",
    "learning_curves": "fig_learning_curves.png",
    "g_vs_tokens": "fig_g_vs_tokens.png",
}
"""The figures, comparison first (aggregate intervals, probability of improvement, performance profiles,
per-setting scores), then the paper-comparison figures."""
LEADERBOARD_FIGURES = ("aggregate", "improvement", "performance_profile")
"""The figures ``harness-gym leaderboard`` draws (from the aggregate alone)."""
POLICY_COLOURS = {AW: "#1f77b4", BC: "#ff7f0e", FC: "#2ca02c"}
POLICY_LABELS = {AW: "AW", BC: "BC", FC: "Forced CHECK"}
PAPER_MARKER = {"marker": "D", "facecolor": "white", "s": 28, "zorder": 4, "linewidths": 1.2}


def _new_figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _no_data(ax: Any, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")
    ax.set_xticks([])
    ax.set_yticks([])


def _paper_legend_handle() -> Any:
    from matplotlib.lines import Line2D

    return Line2D(
        [], [], marker="D", linestyle="", markerfacecolor="white", markeredgecolor="black", label="paper"
    )


def _outcome_process_figure(settings: list[tuple[str, Mapping[str, Any]]], path: Path) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig = _new_figure(11, 0.45 * max(len(settings), 3) + 1.6)
    axes = fig.subplots(1, 2, sharey=True)
    labels = [_label(e) for e, _ in settings]
    ys = list(range(len(settings)))[::-1]
    for ax, key, scale, title, xlabel in (
        (axes[0], "delta_G", 100.0, "Outcome: ΔG of AW vs Base", "ΔG (percentage points)"),
        (axes[1], "delta_hms", 1.0, "Process: ΔHMS of AW vs Base", "ΔHMS (normalised score)"),
    ):
        for y, (e, s) in zip(ys, settings, strict=True):
            aw = _policy(s, AW)
            value = _get(aw, key)
            if _missing(value):
                ax.text(0, y, " no AW", va="center", fontsize=8, color="grey")
            else:
                colour = "#1f77b4" if value >= 0 else "#d62728"
                ax.barh(y, scale * value, color=colour, alpha=0.85, height=0.6)
                if (
                    key == "delta_G"
                    and not _missing(_get(aw, "ci_low"))
                    and not _missing(_get(aw, "ci_high"))
                ):
                    lo, hi = scale * aw["ci_low"], scale * aw["ci_high"]
                    ax.errorbar(
                        scale * value,
                        y,
                        xerr=[[scale * value - lo], [hi - scale * value]],
                        fmt="none",
                        ecolor="black",
                        capsize=3,
                        lw=1,
                    )
            ref = getattr(PAPER.get(e), key, None)
            if ref is not None:
                ax.scatter([scale * ref], [y], edgecolor="black", **PAPER_MARKER)
        ax.axvline(0, color="black", lw=0.8)
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(ys, labels)
    handles = [
        Patch(color="#1f77b4", label="this run, gain"),
        Patch(color="#d62728", label="this run, loss"),
        Line2D([], [], color="black", marker="|", linestyle="-", label="95% bootstrap CI"),
        _paper_legend_handle(),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8)
    fig.suptitle("Outcome and process gain of AW per setting")
    fig.savefig(path)


def _policy_figure(settings: list[tuple[str, Mapping[str, Any]]], path: Path) -> None:
    from matplotlib.patches import Patch

    fig = _new_figure(8, 0.7 * max(len(settings), 3) + 1.4)
    ax = fig.subplots()
    ys = list(range(len(settings)))[::-1]
    height = 0.26
    keys = {AW: "aw", BC: "bc", FC: "fc"}
    for k, policy in enumerate((AW, BC, FC)):
        offset = (1 - k) * height
        for y, (e, s) in zip(ys, settings, strict=True):
            lift = _get(_policy(s, policy), "delta_G")
            if not _missing(lift):
                ax.barh(y + offset, 100 * lift, height=height, color=POLICY_COLOURS[policy], alpha=0.85)
            ref = PAPER[e].lifts.get(keys[policy]) if e in PAPER else None
            if ref is not None:
                ax.scatter([100 * ref], [y + offset], edgecolor=POLICY_COLOURS[policy], **PAPER_MARKER)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_yticks(ys, [_label(e) for e, _ in settings])
    ax.set_xlabel("Lift over Base: ΔG (percentage points)")
    ax.set_title("Policy comparison: AW vs BC vs Forced CHECK")
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color=POLICY_COLOURS[p], label=POLICY_LABELS[p]) for p in (AW, BC, FC)]
    fig.legend(handles=[*handles, _paper_legend_handle()], loc="outside lower center", ncols=4, fontsize=8)
    fig.savefig(path)


def _sigma_figure(settings: list[tuple[str, Mapping[str, Any]]], path: Path) -> None:
    fig = _new_figure(7, 5)
    ax = fig.subplots()
    points = []
    for e, s in settings:
        sigma = (s.get("buffer") or {}).get("sigma_D")
        delta = _get(_policy(s, AW), "delta_G")
        if not _missing(sigma) and not _missing(delta):
            points.append((e, sigma, 100 * delta))
    paper = [(e, p.sigma_D, 100 * p.delta_G) for e, p in PAPER.items() if p.sigma_D is not None]
    if not points and not paper:
        _no_data(ax, "no buffer statistics")
    if paper:
        ax.scatter(
            [p[1] for p in paper],
            [p[2] for p in paper],
            facecolor="white",
            edgecolor="grey",
            s=50,
            label="paper (calibrated verifier)",
            zorder=3,
        )
        for e, x, y in paper:
            ax.annotate(
                PAPER[e].short, (x, y), textcoords="offset points", xytext=(5, -10), fontsize=7, color="grey"
            )
    if points:
        ax.scatter(
            [p[1] for p in points],
            [p[2] for p in points],
            color="#1f77b4",
            s=50,
            label="this run (AW)",
            zorder=4,
        )
        for e, x, y in points:
            ax.annotate(_short(e), (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel("Buffer slack σ_D = max G − mean G")
    ax.set_ylabel("ΔG of AW vs Base (percentage points)")
    ax.set_title("Buffer slack vs final-quality change")
    ax.grid(alpha=0.3)
    if points or paper:
        ax.legend(loc="best", fontsize=8)
    fig.savefig(path)


def _events_figure(settings: list[tuple[str, Mapping[str, Any]]], path: Path) -> None:
    from matplotlib.patches import Patch

    shown = [(e, s) for e, s in settings if _policies(s)]
    ncols = max(1, min(4, len(shown)))
    nrows = max(1, math.ceil(len(shown) / ncols))
    fig = _new_figure(3.4 * ncols + 1.6, 2.9 * nrows + 0.9)
    axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False).ravel()
    ys = list(range(len(EVENTS)))[::-1]
    colours = {"base": "#7f7f7f", "policy": "#1f77b4"}
    for ax, (e, s) in zip(axes, shown, strict=False):
        aw = _policy(s, AW)
        entries = (aw or _base(s) or {}).get("events", {})
        ref = PAPER[e].events if e in PAPER else {}
        for y, event in zip(ys, EVENTS, strict=True):
            entry = entries.get(event)
            if entry is None or not entry.get("applicable", True):
                ax.text(2, y, "n/a", va="center", fontsize=7, color="grey")
                continue
            for k, side in enumerate(("base", "policy")):
                rate = entry.get(side) if (side == "base" or aw is not None) else None
                offset = 0.18 if k == 0 else -0.18
                if not _missing(rate):
                    ax.barh(y + offset, 100 * rate, height=0.34, color=colours[side])
                rates = ref.get(event)
                if rates is not None:
                    ax.scatter([100 * rates[k]], [y + offset], edgecolor=colours[side], **PAPER_MARKER)
        ax.set_xlim(-4, 105)
        ax.set_title(_label(e), fontsize=10)
        ax.set_xlabel("episodes with event (%)", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.set_yticks(ys, EVENTS, fontsize=8)
    for ax in axes[len(shown) :]:
        _no_data(ax, "")
        ax.set_axis_off()
    if not shown:
        _no_data(axes[0], "no evaluation results")
    handles = [
        Patch(color=colours["base"], label="Base"),
        Patch(color=colours["policy"], label="AW"),
        _paper_legend_handle(),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    fig.suptitle("Event-level decomposition: rate per event, Base vs AW (n/a: event does not apply)")
    fig.savefig(path)


def _curves_figure(settings: list[tuple[str, Mapping[str, Any]]], path: Path) -> None:
    from matplotlib.lines import Line2D

    shown = [(e, _curve_runs(s), _base_G(s)) for e, s in settings]
    shown = [row for row in shown if row[1]] or shown[:1]
    algos = list(dict.fromkeys(algo for _, runs, _ in shown for algo in runs))
    colours = {algo: f"C{i % 10}" for i, algo in enumerate(algos)}
    styles = {algo: "-" if i < 10 else "--" for i, algo in enumerate(algos)}
    ncols = max(1, min(4, len(shown)))
    nrows = max(1, math.ceil(len(shown) / ncols))
    fig = _new_figure(max(6.0, 3.6 * ncols + 0.6), 2.9 * nrows + 1.0)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax, (e, runs, base) in zip(axes, shown, strict=False):
        if not runs:
            _no_data(ax, "no learning curves")
            continue
        for algo, curves in runs.items():
            stats = _curve_stats(curves)
            steps, mean, low, high = zip(*stats, strict=True)
            ax.plot(steps, mean, styles[algo], color=colours[algo], marker="o", ms=3, lw=1.3)
            ax.fill_between(steps, low, high, color=colours[algo], alpha=0.15)
        if not _missing(base):
            ax.axhline(base, color="black", lw=0.9, ls=":")
        ax.set_title(_label(e), fontsize=10)
        ax.set_xlabel("gradient steps", fontsize=8)
        ax.set_ylabel("eval G", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[len(shown) :]:
        ax.set_axis_off()
    handles = [Line2D([], [], color=colours[a], ls=styles[a], marker="o", ms=3, label=a) for a in algos]
    handles.append(Line2D([], [], color="black", ls=":", label="Base (main evaluation)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(6, len(handles)), fontsize=8)
    fig.suptitle("Learning curves: eval G vs gradient steps (mean over seeds; band: min–max)", fontsize=10)
    fig.savefig(path)


def _tokens_figure(settings: list[tuple[str, Mapping[str, Any]]], path: Path) -> None:
    """Per setting, one point per evaluated policy: mean executor tokens per episode against mean G."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    shown = [(e, s["tokens"]) for e, s in settings if s.get("tokens")]
    ncols = max(1, min(4, len(shown)))
    nrows = max(1, math.ceil(len(shown) / ncols))
    fig = _new_figure(max(6.0, 3.6 * ncols + 0.6), 3.0 * nrows + 0.9)
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    markers = {"reference": "s", "learner": "o"}
    for ax, (e, points) in zip(axes, shown, strict=False):
        at: dict[tuple[float, float], list[str]] = {}  # policies on the same point share one label
        for k, (name, point) in enumerate(points.items()):
            ax.scatter(
                [point["tokens"]], [point["G"]], color=f"C{k % 10}", marker=markers[point["kind"]], s=30
            )
            at.setdefault((point["tokens"], point["G"]), []).append(name)
        for xy, names in at.items():
            label = ", ".join(names) if len(names) <= 2 else f"{names[0]} +{len(names) - 1} more"
            ax.annotate(label, xy, fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.xaxis.set_major_locator(MaxNLocator(nbins=3))
        ax.set_title(_label(e), fontsize=10)
        ax.set_xlabel("mean tokens per episode", fontsize=8)
        ax.set_ylabel("mean G", fontsize=8)
        ax.grid(alpha=0.3)
    for ax in axes[len(shown) :]:
        ax.set_axis_off()
    if not shown:
        _no_data(axes[0], "no token counts in these results")
    handles = [
        Line2D([], [], color="grey", marker=marker, ls="", label=kind) for kind, marker in markers.items()
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8)
    fig.suptitle("G versus executor tokens per episode (one point per policy)", fontsize=10)
    fig.savefig(path)


def _performance_profile_figure(results: Mapping[str, Any], out: Path) -> Path:
    """rliable's performance profiles (share of runs above each normalised score) with their bands."""
    aggregate, path = results.get("aggregate") or {}, out / FIGURES["performance_profile"]
    fig = _new_figure(9, 5)
    ax = fig.subplots()
    profile = aggregate.get("profile") or {}
    policies = profile.get("policies") or {}
    if not policies:
        _no_data(ax, "no aggregate statistics")
        fig.savefig(path)
        return path
    import numpy as np
    from matplotlib import colormaps
    from rliable import plot_utils

    palette = colormaps["tab20"]  # an algorithm in a dark shade, its greedy mode in the light one
    algos = list(dict.fromkeys(name.removesuffix("-greedy") for name in policies))
    shade = {n: 2 * algos.index(n.removesuffix("-greedy")) + n.endswith("-greedy") for n in policies}
    plot_utils.plot_performance_profiles(
        {name: np.asarray(p["fraction"]) for name, p in policies.items()},
        np.asarray(profile["tau"]),
        performance_profile_cis={name: np.array([p["ci_low"], p["ci_high"]]) for name, p in policies.items()},
        ax=ax,
        colors={name: palette(shade[name] % palette.N) for name in policies},
        linestyles={name: "dashed" if name.endswith("-greedy") else "solid" for name in policies},
        xlabel="Normalised score τ (random = 0, expert = 100)",
        ylabel="Fraction of runs with score > τ",
        labelsize="medium",
        ticklabelsize="small",
    )
    for tau in (0, 100):
        ax.axvline(tau, color="grey", lw=0.8, ls=":")
    runs, seeds, envs = aggregate["runs_per_policy"], len(aggregate["seeds"]), len(aggregate["settings"])
    ax.set_title(
        _smoke_title(
            results,
            f"Performance profiles: {runs} runs per policy ({_count(seeds, 'seed')} x "
            f"{_count(envs, 'setting')})",
        )
    )
    fig.legend(loc="outside right upper", fontsize=7)
    fig.savefig(path)
    return path


def _smoke_title(results: Mapping[str, Any], title: str) -> str:
    return f"{title} (smoke run)" if results.get("smoke") else title


def _estimate_and_error(entry: Mapping[str, Any]) -> tuple[float, list[float]]:
    """An {estimate, ci_low, ci_high} entry as a point and matplotlib's (below, above) error (0 without)."""
    point = entry["estimate"]
    if entry.get("ci_low") is None:
        return point, [0.0, 0.0]
    return point, [max(point - entry["ci_low"], 0.0), max(entry["ci_high"] - point, 0.0)]


AGGREGATE_PANELS = {"iqm": "IQM", "mean": "Mean", "optimality_gap": "Optimality gap"}


def _aggregate_figure(results: Mapping[str, Any], path: Path) -> Path:
    """IQM, mean and optimality gap of every policy with their 95% intervals (as rliable draws them)."""
    metrics = (results.get("aggregate") or {}).get("metrics") or {}
    fig = _new_figure(11, 0.32 * max(len(metrics), 3) + 1.4)
    axes = fig.subplots(1, len(AGGREGATE_PANELS), sharey=True)
    if not metrics:
        _no_data(axes[0], "no aggregate statistics")
        fig.savefig(path)
        return path
    order = sorted(metrics, key=lambda name: metrics[name]["iqm"]["estimate"])
    ys = range(len(order))
    for ax, (key, label) in zip(axes, AGGREGATE_PANELS.items(), strict=True):
        for y, name in zip(ys, order, strict=True):
            point, error = _estimate_and_error(metrics[name][key])
            ax.errorbar(point, y, xerr=[[error[0]], [error[1]]], fmt="o", ms=4, capsize=3, color="#1f77b4")
        ax.set_title(label)
        ax.set_xlabel("Normalised score")
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(list(ys), order)
    fig.suptitle(_smoke_title(results, "Aggregate scores with 95% intervals (random = 0, expert = 100)"))
    fig.savefig(path)
    return path


def _improvement_figure(results: Mapping[str, Any], path: Path) -> Path:
    """Probability of improvement of each compared pair with its interval (rliable's plot)."""
    pairs = [
        p for p in (results.get("aggregate") or {}).get("improvement") or [] if p.get("estimate") is not None
    ]
    fig = _new_figure(8, 0.35 * max(len(pairs), 3) + 1.4)
    ax = fig.subplots()
    if not pairs:
        _no_data(ax, "no pairs compared")
        fig.savefig(path)
        return path
    import numpy as np
    from matplotlib import colormaps
    from rliable import plot_utils

    keys = [f"{p['x']};{p['y']}" for p in pairs]
    palette = colormaps["tab10"]
    plot_utils.plot_probability_of_improvement(
        {key: p["estimate"] for key, p in zip(keys, pairs, strict=True)},
        {
            key: np.array(
                [p["estimate"] if p.get("ci_low") is None else p["ci_low"], p["ci_high"] or p["estimate"]]
            )
            for key, p in zip(keys, pairs, strict=True)
        },
        pair_separator=";",
        ax=ax,
        colors=[palette(i % palette.N) for i in range(len(pairs))],
        labelsize="medium",
        ticklabelsize="small",
    )
    ax.axvline(0.5, color="grey", lw=0.8, ls=":")
    ax.set_title(_smoke_title(results, "Probability of improvement P(X > Y) with 95% intervals"))
    fig.savefig(path)
    return path


def _per_setting_figure(results: Mapping[str, Any], path: Path) -> Path:
    """Every policy's mean normalised score on each setting, with its 95% interval as error bars."""
    aggregate = results.get("aggregate") or {}
    per_setting = aggregate.get("per_setting") or {}
    settings = [e for e in aggregate.get("settings") or [] if per_setting.get(e)]
    fig = _new_figure(12, 4.5)
    ax = fig.subplots()
    if not settings:
        _no_data(ax, "no per-setting scores")
        fig.savefig(path)
        return path
    from matplotlib import colormaps

    metrics = aggregate.get("metrics") or {}
    policies = sorted(
        {name for e in settings for name in per_setting[e]},
        key=lambda name: -(metrics.get(name) or {}).get("iqm", {}).get("estimate", 0.0),
    )
    palette = colormaps["tab20"]
    width = 0.8 / len(policies)
    for i, name in enumerate(policies):
        xs, points, errors = [], [], [[], []]
        for j, env_id in enumerate(settings):
            if name in per_setting[env_id]:
                point, error = _estimate_and_error(per_setting[env_id][name])
                xs.append(j - 0.4 + (i + 0.5) * width)
                points.append(point)
                errors[0].append(error[0])
                errors[1].append(error[1])
        ax.bar(xs, points, width, yerr=errors, capsize=2, label=name, color=palette(i % palette.N))
    ax.set_xticks(range(len(settings)), [_label(e) for e in settings], rotation=20, ha="right")
    ax.set_ylabel("Normalised score (random = 0, expert = 100)")
    ax.axhline(0, color="black", lw=0.6)
    ax.set_title(_smoke_title(results, "Per-setting normalised scores with 95% intervals"))
    fig.legend(loc="outside right upper", fontsize=7)
    fig.savefig(path)
    return path


def leaderboard_figures(results: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """``LEADERBOARD_FIGURES`` of a document with an ``aggregate`` under ``out_dir``."""
    out = Path(out_dir)
    builders = {
        "aggregate": _aggregate_figure,
        "improvement": _improvement_figure,
        "performance_profile": lambda results, path: _performance_profile_figure(results, path.parent),
    }
    return {key: builders[key](results, out / FIGURES[key]) for key in LEADERBOARD_FIGURES}


def write_figures(results: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """The PNG figures (``FIGURES``) under ``out_dir``; needs matplotlib (and rliable for the profiles)."""
    import matplotlib  # noqa: F401  (fail early, before any file is written)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    settings = _ordered_settings(results)
    paths = leaderboard_figures(results, out)
    paths["per_setting"] = _per_setting_figure(results, out / FIGURES["per_setting"])
    builders = {
        "outcome_process": _outcome_process_figure,
        "policy_comparison": _policy_figure,
        "sigma_delta_g": _sigma_figure,
        "events": _events_figure,
        "learning_curves": _curves_figure,
        "g_vs_tokens": _tokens_figure,
    }
    for key, build in builders.items():
        paths[key] = out / FIGURES[key]
        build(settings, paths[key])
    return paths
