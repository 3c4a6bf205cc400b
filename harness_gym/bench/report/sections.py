"""The report's section titles and the shape every section shares: intro, this run, the paper."""

from __future__ import annotations

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
    "diagnostics": "Learner diagnostics: fixed strings and use of the check verdict",
}
"""Section titles of ``markdown_tables``, in order."""

SMOKE_NOTE = (
    "**Smoke run** (`--quick`): a check that everything runs, on far fewer episodes, seeds and training "
    "steps than the protocol; these numbers are not comparable with the paper's or the full bench's."
)
"""Opens the report and every table of a smoke run (``results["smoke"]``)."""


def _section(key: str, intro: str, run: str, paper: str | None, paper_note: str = "") -> str:
    parts = [f"## {HEADINGS[key]}", "", intro, "", run]
    if paper is not None:
        parts += ["", f"**Paper.** {paper_note}".rstrip(), "", paper]
    return "\n".join(parts)
