"""One colour per policy, the same in every figure of the report (the only place colours are chosen).

A learner has a hue of its own (matplotlib's tab20 pairs, plus one from tab20b for the tenth): the
dark shade for the sampling policy, the light one for its ``-greedy`` mode, which is also drawn dashed.
Base is near-black and Forced-CHECK grey, so the baseline reads as a baseline; reference policies have
earth tones. A policy the table does not know (an outside algorithm) gets a colour from ``EXTRA`` picked
by a checksum of its name, so it too keeps its colour from figure to figure and run to run.
"""

from __future__ import annotations

import zlib

GREEDY = "-greedy"

LEARNER_SHADES: dict[str, tuple[str, str]] = {
    "awr": ("#1f77b4", "#aec7e8"),
    "bc": ("#ff7f0e", "#ffbb78"),
    "awr-converged": ("#2ca02c", "#98df8a"),
    "bc-converged": ("#d62728", "#ff9896"),
    "iql": ("#9467bd", "#c5b0d5"),
    "cql": ("#8c564b", "#c49c94"),
    "bcq": ("#e377c2", "#f7b6d2"),
    "dqn": ("#bcbd22", "#dbdb8d"),
    "double-dqn": ("#17becf", "#9edae5"),
    "sac": ("#393b79", "#9c9ede"),
}
"""(sampling, greedy) shades of each learner of the bench."""
FIXED: dict[str, str] = {
    "base": "#262626",
    "forced-check": "#8c8c8c",
    "check-revise": "#7b4173",
    "expert": "#637939",
    "hindsight-submit": "#843c39",
    "open-loop": "#8c6d31",
    "random": "#bdbdbd",
    "exploratory": "#a55194",
}
"""Scripted and reference policies."""
EXTRA = ("#6b6ecf", "#b5cf6b", "#e7ba52", "#d6616b", "#ce6dbd", "#3182bd", "#e6550d", "#31a354")
"""Colours for policies outside the tables (tab20b / tab20c dark shades not used above)."""


def _lighter(hex_colour: str) -> str:
    """Halfway to white: the greedy mode of a policy outside the tables."""
    rgb = [int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{(c + 255) // 2:02x}" for c in rgb)


def colour(policy: str) -> str:
    """The colour of ``policy`` in every figure."""
    if policy in FIXED:
        return FIXED[policy]
    name = policy.removesuffix(GREEDY)
    greedy = name != policy
    if name in LEARNER_SHADES:
        return LEARNER_SHADES[name][greedy]
    own = FIXED.get(name) or EXTRA[zlib.crc32(name.encode()) % len(EXTRA)]
    return _lighter(own) if greedy else own


def linestyle(policy: str) -> str:
    """Dashed for a greedy mode, solid otherwise."""
    return "--" if policy.endswith(GREEDY) else "-"
