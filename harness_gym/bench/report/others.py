"""The section on offline RL algorithms other than the scripted policies (no paper numbers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness_gym.bench.report.access import _get, _label, _other_algorithms, _policy
from harness_gym.bench.report.format import (
    fmt_ci,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_pp,
    fmt_signed,
    markdown_table,
)
from harness_gym.bench.report.sections import _section


def others_table(settings: list[tuple[str, Mapping[str, Any]]]) -> str:
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
