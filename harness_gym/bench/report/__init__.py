"""Markdown tables, CSV and figures from a ``harness-gym bench`` results dict, beside the paper's numbers.

The input is ``{"config": ..., "timings": ..., "settings": {env_id: {"compare": ..., "buffer": ...}}}``
where ``compare`` is ``harness_gym.evaluation.protocol.compare`` output and ``buffer`` is ``buffer_stats``
output. Any setting, policy or buffer may be missing; its cells then read "—". Each table is followed by the
paper's numbers for the same rows and columns (``harness_gym.evaluation.paper``).

The report opens with the answer (``summary``: the ranking, what beat Base, the gaps) and a glossary
(``glossary``), then has one module per section (``paper_tables``, ``others``, ``curves``, ``aggregate``,
``ope``, ``state_dependence``, ``diagnostics``), one per group of figures (``paper_figures``,
``score_figures``; colours from ``palette``), and ``document``, which puts them together into report.md,
summary.csv and results.json. ``python -m harness_gym.bench.report RESULTS_JSON`` renders the report of
a finished run again.

matplotlib is imported only inside the figure functions (Agg canvas, no pyplot state).
"""

from harness_gym.bench.report.access import AW, BC, FC, SCRIPTED
from harness_gym.bench.report.document import CSV_FIELDS, markdown_tables, summary_rows, write_report
from harness_gym.bench.report.figures import FIGURES, LEADERBOARD_FIGURES, leaderboard_figures, write_figures
from harness_gym.bench.report.format import (
    DASH,
    NOT_REPORTED,
    _count,  # noqa: F401  (harness_gym.bench.leaderboard counts seeds and settings the same way)
    fmt_ci,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_pp,
    fmt_signed,
    fmt_transition,
    markdown_table,
)
from harness_gym.bench.report.ope import G_MAX, OPE_ESTIMATORS, ope_errors
from harness_gym.bench.report.palette import colour
from harness_gym.bench.report.plot import POLICY_COLOURS, POLICY_LABELS
from harness_gym.bench.report.score_figures import AGGREGATE_PANELS
from harness_gym.bench.report.sections import HEADINGS, SMOKE_NOTE
from harness_gym.bench.report.summary import summary_section

__all__ = [
    "AGGREGATE_PANELS",
    "AW",
    "BC",
    "CSV_FIELDS",
    "DASH",
    "FC",
    "FIGURES",
    "G_MAX",
    "HEADINGS",
    "LEADERBOARD_FIGURES",
    "NOT_REPORTED",
    "OPE_ESTIMATORS",
    "POLICY_COLOURS",
    "POLICY_LABELS",
    "SCRIPTED",
    "SMOKE_NOTE",
    "colour",
    "fmt_ci",
    "fmt_num",
    "fmt_p",
    "fmt_pct",
    "fmt_pp",
    "fmt_signed",
    "fmt_transition",
    "leaderboard_figures",
    "markdown_table",
    "markdown_tables",
    "ope_errors",
    "summary_rows",
    "summary_section",
    "write_figures",
    "write_report",
]
