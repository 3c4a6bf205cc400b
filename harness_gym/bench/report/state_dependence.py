"""The section on the expert-minus-open-loop gap and every policy's G beside its token cost."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_gym.bench.report.access import _label
from harness_gym.bench.report.format import fmt_ci, fmt_num, fmt_signed, markdown_table
from harness_gym.bench.report.sections import _section
from harness_gym.evaluation.frontier import hypervolume, pareto_front

TOKEN_LIMIT_PER_REFERENCE = 2
"""The hypervolume's token limit in multiples of the most expensive reference's mean tokens per episode
(references: Base and the scripted or searched policies, whose spend no training decides): every reference
counts, and a learner may spend up to twice what the most expensive one does (a stated rule)."""


def state_dependence_tables(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
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
    token_rows, volume_rows = [], []
    for e, s in settings:
        points = s.get("tokens") or {}
        front = set(pareto_front((p["tokens"], p["G"]) for p in points.values()))
        token_rows += [
            [_label(e), name, point["kind"], fmt_num(point["G"]), f"{point['tokens']:,.0f}",
             "yes" if (point["tokens"], point["G"]) in front else ""]
            for name, point in points.items()
        ]  # fmt: skip
        spent = [p["tokens"] for p in points.values() if p["kind"] == "reference"]
        if spent and max(spent) > 0:
            limit = TOKEN_LIMIT_PER_REFERENCE * max(spent)
            volume = {
                kind: hypervolume(
                    [(p["tokens"], p["G"]) for p in points.values() if p["kind"] == kind], limit
                )
                for kind in ("reference", "learner")
            }
            volume_rows.append(
                [_label(e), f"{limit:,.0f}", fmt_num(volume["reference"]), fmt_num(volume["learner"])]
            )
    parts = [
        "The expert (reads the state) and the open-loop reference (the setting's best fixed action string, "
        "`harness_gym/data/open_loop.json`) play the same evaluation episodes as Base; the gap is their mean "
        "paired difference in G with a 95% percentile bootstrap interval resampling whole tasks "
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
            markdown_table(
                ["Setting", "Policy", "kind", "G", "tokens / episode", "on the frontier"], token_rows, left=3
            ),
        ]
    if volume_rows:
        parts += [
            "Hypervolume of each class's G-versus-tokens frontier (`harness_gym.evaluation.frontier`): the "
            "mean, over token budgets spread evenly up to the limit, of the best G a policy of the class "
            f"reaches within the budget. The limit is {TOKEN_LIMIT_PER_REFERENCE}x the mean tokens per "
            "episode of the most expensive reference (a stated rule, the same for every class); a policy "
            "spending more counts for nothing.",
            markdown_table(["Setting", "token limit", "references", "learners"], volume_rows),
        ]
    return _section("state_dependence", parts[0], "\n\n".join(parts[1:]), None)
