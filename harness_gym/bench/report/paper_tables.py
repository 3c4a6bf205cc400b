"""The sections set beside the paper's tables: CBS, gains, ablation, controlled domains, events, support."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_gym.bench.report.access import (
    AW,
    BC,
    FC,
    _base,
    _base_G,
    _get,
    _is_adapter,
    _label,
    _lift_difference,
    _policy,
    _short,
)
from harness_gym.bench.report.format import (
    DASH,
    NOT_REPORTED,
    _mean,
    fmt_ci,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_pp,
    fmt_signed,
    fmt_transition,
    markdown_table,
)
from harness_gym.bench.report.sections import _section
from harness_gym.core.hms import EVENTS
from harness_gym.evaluation.paper import MACRO_MEAN, PAPER, PaperSetting


def cbs_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
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


def gains_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
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


def ablation_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
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


def controlled_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
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


def events_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
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


def support_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
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
