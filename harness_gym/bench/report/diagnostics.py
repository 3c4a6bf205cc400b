"""The section on how much each policy's actions depend on what it sees (``diagnostics`` per setting)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_gym.bench.report.access import _label
from harness_gym.bench.report.format import fmt_num, fmt_pct, markdown_table
from harness_gym.bench.report.sections import _section


def diagnostics_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
    """Per setting and evaluated policy: the top-string share and the action-verdict MI
    (``harness_gym.evaluation.diagnostics``), the references (expert, Base, open-loop) beside the learners."""
    rows = [
        [
            _label(e),
            name,
            fmt_pct(d["top_share"]),
            f"`{d['top_string']}`",
            fmt_num(d["mi_bits"]),
            fmt_num(d["mi_bias_bits"]),
            fmt_num(d["mi_checked_bits"]),
            str(d["episodes"]),
            str(d["steps"]),
        ]
        for e, s in settings
        for name, d in (s.get("diagnostics") or {}).items()
    ]
    intro = (
        "From every evaluation episode of each policy (`harness_gym.evaluation.diagnostics`). "
        "**Top-string share**: the share of episodes that play the policy's most common action string "
        "(open-loop letters; 100% is a policy that ignores the state). **Verdict MI**: the mutual "
        "information in bits between the action at a step and the last check verdict before it (none "
        "before the first CHECK report, else pass or fail by whether that check raised a failure), pooled "
        "over all steps; at most log2 3 = 1.585. A plug-in estimate, biased upward for small counts by "
        "about the bias column (Miller-Madow): an MI not well above it is no evidence of dependence. "
        "`none` holds only before the first check, so a fixed string that checks mid-episode scores above "
        "0 from position alone; **MI after a check** is over the steps after a check (pass versus fail)."
    )
    headers = [
        "Setting",
        "Policy",
        "top-string share",
        "top string",
        "verdict MI (bits)",
        "MI bias",
        "MI after a check",
        "episodes",
        "steps",
    ]
    run = markdown_table(headers, rows, left=2) if rows else "_No learner diagnostics in these results._"
    return _section("diagnostics", intro, run, None)
