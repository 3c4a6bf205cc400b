"""Deterministic generator for ``knowledge_work-v0.jsonl``: 100 business questions over memos, emails
and tables.

Each task asks for a key figure (a budget, a spend total or average, the largest invoice, a count of
invoices), the person behind it (approver or budget owner), a date and the supporting sources. The
sources are a handful of memos, emails and CSV-like tables: the ones that answer the question, and
distractors a careless reader would use instead (another office's memo, last quarter's budget, a
forecast written before the quarter, a mid-quarter snapshot, an unrelated table). Hard tasks add a
conflict: a memo or table export that a later email corrects; the report must use the corrected
value and say which source it supersedes.

Template families (question kind x topic x report format) own disjoint entities (company, offices,
people, topic, vendors) and a report format (style and field labels) no other family uses; the
train/eval split keeps families whole, so held-out tasks differ in template, entities, distractor
content and required format. The flawed pool imitates what a frozen LLM gets wrong; every variant is
scored by the real verifier and kept only if it loses points.
"""

from __future__ import annotations

import calendar
import itertools
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from typing import Any

from harness_gym.core.rubric import g_norm
from harness_gym.core.task import write_generated
from harness_gym.domains.generation import VERSION, Reject, family_records, flawed_pool, task_file
from harness_gym.domains.knowledge_work.entities import (
    CITIES,
    COMPANIES,
    CURRENCIES,
    FIRST,
    LAST,
    TOPICS,
    VENDOR_STEMS,
    check_pools,
)
from harness_gym.domains.knowledge_work.report import Values, render
from harness_gym.domains.knowledge_work.verifier import (
    artifact_scores,
    build_index,
    cents,
    format_figure,
    parse_table,
    table_calc,
)

DOMAIN = "knowledge_work"
OUTPUT = task_file(DOMAIN)
FLAWS = (
    "outdated_value",
    "distractor_value",
    "wrong_aggregation",
    "wrong_person",
    "missing_field",
    "missing_citation",
    "malformed",
)
MAX_ATTEMPTS = 50
PEOPLE_PER_FAMILY = 9
LOOKUP_KINDS = ("memo_lookup", "memo_email_lookup", "lookup_corrected")
TABLE_KINDS = ("table_total", "table_sum", "table_mean", "table_max", "table_count", "table_corrected")


@dataclass(frozen=True)
class Family:
    """A template family: question kind, topic, report format and entity slice."""

    index: int
    difficulty: str
    kind: str
    op: str
    count: int

    @property
    def topic(self) -> str:
        return TOPICS[self.index][0]

    @property
    def category(self) -> str:
        return TOPICS[self.index][1]

    @property
    def template(self) -> str:
        return f"{self.kind}/{self.category}"


def _families() -> tuple[Family, ...]:
    spec = [
        *[("easy", "memo_lookup", "lookup", 2)] * 5,
        *[("easy", "table_total", "sum", 2)] * 5,
        *[("standard", "memo_email_lookup", "lookup", 4)] * 4,
        *[("standard", "table_sum", "sum", 4)] * 4,
        *[("standard", "table_mean", "mean", 4)] * 3,
        *[("standard", "table_max", "max", 4)] * 2,
        *[("standard", "table_count", "count", 4)] * 2,
        *[("hard", "lookup_corrected", "lookup", 2)] * 5,
        *[("hard", "table_corrected", op, 2) for op in ("sum", "mean", "sum", "mean", "sum")],
    ]
    return tuple(Family(i, *row) for i, row in enumerate(spec))


FAMILIES = _families()

# --------------------------------------------------------------------------------------------------
# Report formats: one (style, labels) per family, never shared.

STYLES = ("colon", "equals", "json")
FIGURE_LABELS = ("FIGURE", "AMOUNT", "VALUE", "ANSWER", "KEY_FIGURE", "RESULT", "TOTAL")
PERSON_LABELS = {
    "approver": ("APPROVER", "APPROVED_BY", "SIGNED_OFF_BY", "AUTHORISED_BY"),
    "owner": ("OWNER", "BUDGET_OWNER", "RESPONSIBLE", "ACCOUNTABLE"),
}
DATE_LABELS = {
    "approver": ("APPROVAL_DATE", "APPROVED_ON", "DATE", "SIGNED_ON"),
    "owner": ("AS_OF", "DATA_DATE", "EXPORT_DATE", "REPORT_DATE"),
}
SOURCE_LABELS = ("SOURCES", "CITATIONS", "EVIDENCE", "REFERENCES")
CONFLICT_LABELS = ("CONFLICT", "SUPERSEDED", "DISCREPANCY", "CORRECTION_NOTE")


def _formats() -> dict[int, dict[str, Any]]:
    rng = random.Random(f"{DOMAIN}-{VERSION}/formats")
    combos = list(itertools.product(STYLES, FIGURE_LABELS, SOURCE_LABELS))
    picks = rng.sample(combos, len(FAMILIES))
    out = {}
    for family, (style, figure, sources) in zip(FAMILIES, picks, strict=True):
        who = "approver" if family.kind in LOOKUP_KINDS else "owner"
        labels = [
            ("figure", figure),
            ("person", rng.choice(PERSON_LABELS[who])),
            ("date", rng.choice(DATE_LABELS[who])),
        ]
        if family.difficulty == "hard":
            labels.append(("conflict", rng.choice(CONFLICT_LABELS)))
        labels.append(("sources", sources))
        case = str.upper if style == "colon" else str.lower
        out[family.index] = {
            "style": style,
            "fields": [[role, case(label)] for role, label in labels],
            "figure_kind": "count" if family.kind == "table_count" else "money",
            "person_role": who,
        }
    return out


FORMATS = _formats()

# --------------------------------------------------------------------------------------------------
# Per-task context: entities, dates and wording


DATE_STYLES = ("iso", "dmy", "mdy")


@dataclass
class Ctx:
    family: Family
    rng: random.Random
    cur: str
    date_style: str
    people: list[str]
    cities: list[str]
    year: int
    quarter: int
    used_ids: set[str] = field(default_factory=set)

    @property
    def company(self) -> str:
        return COMPANIES[self.family.index]

    @property
    def topic(self) -> str:
        return self.family.topic

    def new_id(self, kind: str) -> str:
        prefix = {"memo": "MEMO", "email": "EMAIL", "table": "TABLE"}[kind]
        while True:
            sid = f"{prefix}-{self.rng.randint(100, 999)}"
            if sid not in self.used_ids and not any(u[-3:] == sid[-3:] for u in self.used_ids):
                self.used_ids.add(sid)
                return sid

    def d(self, day: date) -> str:
        if self.date_style == "iso":
            return day.isoformat()
        month = calendar.month_name[day.month]
        if self.date_style == "dmy":
            return f"{day.day} {month} {day.year}"
        return f"{month} {day.day}, {day.year}"

    def money(self, x: float) -> str:
        return f"{self.cur} {format_figure(x)}"

    def q(self, year: int | None = None, quarter: int | None = None) -> str:
        return f"Q{quarter or self.quarter} {year or self.year}"

    def prev(self) -> tuple[int, int]:
        return (self.year, self.quarter - 1) if self.quarter > 1 else (self.year - 1, 4)

    def first(self, person: str) -> str:
        return person.split()[0]


def quarter_months(year: int, quarter: int) -> list[tuple[int, int]]:
    return [(year, 3 * quarter - 2 + i) for i in range(3)]


def month_before(year: int, quarter: int) -> tuple[int, int]:
    return (year, 3 * quarter - 3) if quarter > 1 else (year - 1, 12)


def ym(year: int, month: int) -> str:
    return f"{year:04d}-{month:02d}"


def day_in(rng: random.Random, ym_: tuple[int, int], lo: int = 2, hi: int = 26) -> date:
    return date(ym_[0], ym_[1], rng.randint(lo, hi))


def quarter_end(year: int, quarter: int) -> date:
    y, m = quarter_months(year, quarter)[-1]
    return date(y, m, calendar.monthrange(y, m)[1])


# --------------------------------------------------------------------------------------------------
# Sources


def source(sid: str, kind: str, title: str, text: str) -> dict[str, str]:
    return {"id": sid, "kind": kind, "title": title, "text": text}


def memo(sid: str, ctx: Ctx, author: str, to: str, day: date, subject: str, body: str) -> dict[str, str]:
    if ctx.family.index % 2:
        head = f"INTERNAL MEMORANDUM ({ctx.company})\nRef: {sid}\nDate: {ctx.d(day)}"
        text = f"{head}\nAuthor: {author}\nFor: {to}\nRe: {subject}\n\n{body}"
    else:
        text = f"MEMO {sid}\nFrom: {author}\nTo: {to}\nDate: {ctx.d(day)}\nSubject: {subject}\n\n{body}"
    return source(sid, "memo", subject, text)


def email(sid: str, ctx: Ctx, sender: str, to: str, day: date, subject: str, body: str) -> dict[str, str]:
    sign = ctx.first(sender) if ctx.family.index % 2 else sender
    text = (
        f"EMAIL {sid}\nFrom: {sender}\nTo: {to}\nDate: {ctx.d(day)}\nSubject: {subject}\n\n{body}\n\n{sign}"
    )
    return source(sid, "email", subject, text)


def table(sid: str, title: str, header_lines: Sequence[str], columns: Sequence[str], rows) -> dict[str, str]:
    csv = "\n".join([",".join(columns), *(",".join(str(c) for c in row) for row in rows)])
    text = f"TABLE {sid}: {title}\n" + "\n".join(header_lines) + "\n\n" + csv
    return source(sid, "table", title, text)


def budget_memo(
    ctx: Ctx,
    sid: str,
    city: str,
    yq: tuple[int, int],
    amount: float,
    approver: str,
    approved: date,
    author: str,
    day: date,
) -> dict[str, str]:
    qlabel = ctx.q(*yq)
    subject = f"{qlabel} {ctx.topic} budget, {city} office"
    if ctx.family.index % 2:
        body = (
            f"Following the planning round, {approver} signed off a {ctx.topic} budget of "
            f"{ctx.money(amount)} for the {city} office on {ctx.d(approved)}. The budget covers {qlabel} "
            "only; any overrun needs a new approval."
        )
    else:
        body = (
            f"The {ctx.topic} budget of the {city} office for {qlabel} has been set at {ctx.money(amount)}. "
            f"{approver} approved this figure on {ctx.d(approved)}.\nPlease keep spending within this "
            "envelope and flag any expected overrun to finance early."
        )
    return memo(sid, ctx, author, f"{city} office leadership", day, subject, body)


def proposal_memo(
    ctx: Ctx, sid: str, city: str, amount: float, requester: str, approver: str, day: date
) -> dict[str, str]:
    subject = f"Proposed {ctx.q()} {ctx.topic} budget, {city} office"
    body = (
        f"I propose a {ctx.topic} budget of {ctx.money(amount)} for the {city} office in {ctx.q()}. "
        f"The figure follows last quarter's run rate plus the planned initiatives. {approver}, your "
        "approval is needed before the quarter starts."
    )
    return memo(sid, ctx, requester, approver, day, subject, body)


def approval_email(
    ctx: Ctx, sid: str, city: str, memo_id: str, requester: str, approver: str, day: date
) -> dict[str, str]:
    subject = f"Re: Proposed {ctx.q()} {ctx.topic} budget, {city} office"
    body = (
        f"Thanks, {ctx.first(requester)}. The {ctx.topic} budget proposed in your memo {memo_id} is "
        "approved as it stands. Please share it with the team."
    )
    return email(sid, ctx, approver, requester, day, subject, body)


def forecast_memo(
    ctx: Ctx, sid: str, city: str, amount: float, author: str, owner: str, day: date, what: str
) -> dict[str, str]:
    subject = f"{ctx.q()} {ctx.topic} forecast, {city} office"
    body = (
        f"Based on the pipeline, we forecast {what} of {ctx.money(amount)} for the {city} office in "
        f"{ctx.q()}. {owner} will review actuals after the quarter closes. This is a planning figure, "
        "not an actual."
    )
    return memo(sid, ctx, author, f"{city} finance", day, subject, body)


def roster_memo(
    ctx: Ctx, sid: str, owners: dict[tuple[str, str], str], author: str, day: date
) -> dict[str, str]:
    subject = f"Budget owners {ctx.year}"
    lines = [f"Budget owners for {ctx.year} at {ctx.company}, by office and cost category:"]
    for city in ctx.cities:
        parts = [f"{cat}: {owners[(city, cat)]}" for (c, cat) in owners if c == city]
        lines.append(f"- {city}: " + "; ".join(parts))
    lines.append("Owners approve spending in their category and answer questions about actuals.")
    return memo(sid, ctx, author, "All office managers", day, subject, "\n".join(lines))


NOISE_EMAILS: tuple[tuple[str, str], ...] = (
    (
        "IT maintenance in the {city} office",
        "The network in the {city} office will be down on {day} "
        "from 18:00 for about 3 hours. Please save your work and log off before then.",
    ),
    (
        "Parking at the {city} office",
        "From {day} the {city} office car park has 24 spaces instead of 40. "
        "Please book a space at least one day ahead.",
    ),
    (
        "All-hands agenda",
        "The all-hands on {day} starts at 10:00. Agenda: results, the {city} office move, "
        "questions. It should take 90 minutes.",
    ),
    (
        "Expense policy reminder",
        "A reminder that meals on business trips are reimbursed up to "
        "{cur} 45 per day and hotels up to {cur} 180 per night. Submit claims within 30 days ({day}).",
    ),
    (
        "Desk moves in {city}",
        "Desk moves on the second floor of the {city} office happen on {day}. "
        "Crates will be delivered the day before; about 12 people are affected.",
    ),
)


def noise_email(ctx: Ctx, city: str, sender: str) -> dict[str, str]:
    subject, body = ctx.rng.choice(NOISE_EMAILS)
    when = day_in(ctx.rng, quarter_months(ctx.year, ctx.quarter)[1])
    fill = {"city": city, "day": ctx.d(when), "cur": ctx.cur}
    sent = when - timedelta(days=ctx.rng.randint(3, 10))
    return email(
        ctx.new_id("email"), ctx, sender, f"{city} office", sent, subject.format(**fill), body.format(**fill)
    )


def noise_table(ctx: Ctx) -> dict[str, str]:
    sid = ctx.new_id("table")
    months = quarter_months(ctx.year, ctx.quarter)
    if ctx.rng.random() < 0.5:
        title, column, lo, hi = f"Headcount by office ({ctx.company})", "headcount", 20, 140
    else:
        title, column, lo, hi = f"Support tickets by office ({ctx.company})", "tickets", 30, 400
    rows = [(ym(*m), city, ctx.rng.randint(lo, hi)) for m in months for city in ctx.cities]
    exported = quarter_end(ctx.year, ctx.quarter) + timedelta(days=ctx.rng.randint(3, 20))
    return table(sid, title, [f"Exported: {ctx.d(exported)}"], ["month", "office", column], rows)


# --------------------------------------------------------------------------------------------------
# Reports


def generic_flaws(ctx: Ctx, fmt: dict[str, Any], gold: Values) -> list[tuple[str, str]]:
    """Flaws that any report can have: a missing field or citation, a broken format."""
    out: list[tuple[str, str]] = []
    for role in ("person", "date", "conflict"):
        if role in dict(fmt["fields"]):
            out.append(("missing_field", render(fmt, gold, omit=(role,))))
    out.append(("missing_citation", render(fmt, replace(gold, sources=()))))
    if len(gold.sources) > 1:
        out.append(("missing_citation", render(fmt, replace(gold, sources=gold.sources[:1]))))
        out.append(("missing_citation", render(fmt, replace(gold, sources=gold.sources[-1:]))))
    report = render(fmt, gold)
    fence = "json" if fmt["style"] == "json" else ""
    prose = (
        f"Based on {' and '.join(gold.sources)}, the figure is {ctx.money(gold.figure)}; "
        f"{gold.person} is responsible, as of {ctx.d(gold.day)}."
    )
    out.append(("malformed", prose))
    out.append(("malformed", f"Here is the report you asked for.\n\n```{fence}\n{report}\n```"))
    out.append(("malformed", render(fmt, gold, style="json" if fmt["style"] != "json" else "colon")))
    synonym = "Amount (approx.)" if fmt["style"] != "json" else "approx_amount"
    out.append(("malformed", render(fmt, gold, rename={"figure": synonym})))
    if fmt["style"] == "equals":
        out.append(("malformed", render(fmt, gold, sep=": ")))
    elif fmt["style"] == "colon":
        out.append(("malformed", "\n".join(f"- **{line}**" for line in report.splitlines())))
    return out


# --------------------------------------------------------------------------------------------------
# Task kinds. Each returns (question, sources, calc, gold Values, superseded, kind-specific flaws).


@dataclass
class Built:
    question: str
    sources: list[dict[str, str]]
    calc: dict[str, Any]
    gold: Values
    superseded: dict[str, Any] | None
    flaws: list[tuple[str, Values]]
    office: str


def _distinct(*values: float) -> None:
    if len({cents(v) for v in values}) != len(values):
        raise Reject("two figures coincide")


def _question(ctx: Ctx, city: str, head: str, tail: str) -> str:
    if ctx.family.index % 2:
        return f"{ctx.company}, {city} office: {head} in {ctx.q()}, {tail}?"
    return f"For the {city} office of {ctx.company}, {head} in {ctx.q()}, {tail}?"


def build_lookup(ctx: Ctx) -> Built:
    rng, fam = ctx.rng, ctx.family
    city, other = ctx.cities[0], ctx.cities[1]
    p = ctx.people
    approver, author, o_approver, o_author, p_approver, requester, controller = p[:7]
    amount, other_amount, prev_amount = (rng.randrange(40_000, 400_000, 500) for _ in range(3))
    py, pq = ctx.prev()
    approved = day_in(rng, month_before(ctx.year, ctx.quarter))
    p_approved = day_in(rng, month_before(py, pq))
    o_approved = day_in(rng, month_before(ctx.year, ctx.quarter))
    question = _question(ctx, city, f"what is the approved {ctx.topic} budget", "who approved it and when")
    calc = {"op": "filter", "filters": {"office": city}}

    now = (ctx.year, ctx.quarter)

    def quarter_memo(
        office: str, quarter: tuple[int, int], figure: int, by: str, on: date, writer: str
    ) -> dict[str, str]:
        """A budget memo, written up to three days after the approval it reports."""
        sid = ctx.new_id("memo")  # drawn before the writing date
        return budget_memo(
            ctx, sid, office, quarter, figure, by, on, writer, on + timedelta(days=rng.randint(0, 3))
        )

    prev_memo = quarter_memo(city, (py, pq), prev_amount, p_approver, p_approved, author)
    flaws: list[tuple[str, Values]] = [
        ("outdated_value", Values(prev_amount, p_approver, p_approved, (prev_memo["id"],))),
    ]
    superseded = None
    if fam.kind == "memo_lookup":
        gold_memo = quarter_memo(city, now, amount, approver, approved, author)
        o_memo = quarter_memo(other, now, other_amount, o_approver, o_approved, o_author)
        _distinct(amount, other_amount, prev_amount)
        gold = Values(amount, approver, approved, (gold_memo["id"],))
        sources = [gold_memo, o_memo, prev_memo, noise_table(ctx)]
        if rng.random() < 0.5:
            sources.append(noise_email(ctx, rng.choice(ctx.cities), p[7]))
        flaws += [
            ("distractor_value", Values(other_amount, o_approver, o_approved, (o_memo["id"],))),
            ("wrong_person", replace(gold, person=author)),
        ]
    elif fam.kind == "memo_email_lookup":
        asked = approved - timedelta(days=rng.randint(3, 10))
        prop = proposal_memo(ctx, ctx.new_id("memo"), city, amount, requester, approver, asked)
        ok = approval_email(ctx, ctx.new_id("email"), city, prop["id"], requester, approver, approved)
        o_asked = o_approved - timedelta(days=rng.randint(3, 10))
        o_prop = proposal_memo(ctx, ctx.new_id("memo"), other, other_amount, o_author, o_approver, o_asked)
        o_ok = approval_email(ctx, ctx.new_id("email"), other, o_prop["id"], o_author, o_approver, o_approved)
        _distinct(amount, other_amount, prev_amount)
        gold = Values(amount, approver, approved, (prop["id"], ok["id"]))
        sources = [prop, ok, o_prop, o_ok, prev_memo, noise_table(ctx), noise_email(ctx, other, p[7])]
        flaws += [
            ("distractor_value", Values(other_amount, o_approver, o_approved, (o_prop["id"], o_ok["id"]))),
            ("wrong_person", Values(amount, requester, asked, (prop["id"],))),
            ("wrong_person", replace(gold, person=requester)),
        ]
    else:
        wrong = amount + rng.choice([-1, 1]) * rng.randrange(5_000, 40_000, 500)
        o_wrong = other_amount + rng.randrange(5_000, 30_000, 500)
        _distinct(amount, wrong, other_amount, o_wrong, prev_amount)
        old = quarter_memo(city, now, wrong, approver, approved, author)
        fixed = approved + timedelta(days=rng.randint(6, 20))
        fix = email(
            ctx.new_id("email"),
            ctx,
            controller,
            f"{city} office leadership; {approver}",
            fixed,
            f"Correction: {ctx.q()} {ctx.topic} budget, {city} office",
            f"The memo {old['id']} quoted the wrong figure. The {ctx.topic} budget of the {city} office for "
            f"{ctx.q()} is {ctx.money(amount)}, not {ctx.money(wrong)}; {approver}'s approval of "
            f"{ctx.d(approved)} covers the corrected amount. Please update your records.",
        )
        o_old = quarter_memo(other, now, other_amount, o_approver, o_approved, o_author)
        o_fix = email(
            ctx.new_id("email"),
            ctx,
            p[7],
            f"{other} office leadership",
            o_approved + timedelta(days=9),
            f"Correction: {ctx.q()} {ctx.topic} budget, {other} office",
            f"Please note that memo {o_old['id']} is superseded: the {other} {ctx.topic} budget for "
            f"{ctx.q()} is {ctx.money(o_wrong)} after the revised plan, still under {o_approver}'s approval.",
        )
        note = f"{old['id']} gives {ctx.money(wrong)}, superseded by {fix['id']}: {ctx.money(amount)}"
        gold = Values(amount, approver, approved, (old["id"], fix["id"]), note)
        superseded = {"source": old["id"], "figure": wrong}
        sources = [old, fix, o_old, o_fix, prev_memo, noise_table(ctx)]
        if rng.random() < 0.5:
            sources.append(noise_email(ctx, city, p[8]))
        o_note = f"{o_old['id']} gives {ctx.money(other_amount)}, superseded by {o_fix['id']}"
        flaws = [
            ("outdated_value", Values(wrong, approver, approved, (old["id"],), "none")),
            ("outdated_value", Values(prev_amount, p_approver, p_approved, (prev_memo["id"],), "none")),
            ("distractor_value", Values(o_wrong, o_approver, o_approved, (o_old["id"], o_fix["id"]), o_note)),
            ("wrong_person", replace(gold, person=controller)),
            ("wrong_person", Values(amount, controller, fixed, (fix["id"],), note)),
        ]
    return Built(question, sources, calc, gold, superseded, flaws, city)


def _ledger_rows(
    ctx: Ctx, months: Sequence[tuple[int, int]], categories: Sequence[str], lo: int, hi: int
) -> list[list[Any]]:
    return [
        [ym(*m), city, *([cat] if len(categories) > 1 else []), ctx.rng.randrange(lo, hi, 10)]
        for m in months
        for city in ctx.cities
        for cat in categories
    ]


def _calc_over(rows: list[list[Any]], columns: Sequence[str], spec: dict[str, Any]) -> float:
    from harness_gym.domains.knowledge_work.verifier import Table

    tab = Table(tuple(columns), tuple(dict(zip(columns, map(str, r), strict=True)) for r in rows))
    value, n = table_calc(tab, spec)
    if value is None or (spec["op"] != "count" and n == 0):
        raise Reject("empty calculation")
    return value


def build_table(ctx: Ctx) -> Built:
    rng, fam = ctx.rng, ctx.family
    city, other = ctx.cities[0], ctx.cities[1]
    p = ctx.people
    owner, o_owner, cat_owner, planner, hr, author = p[:6]
    amount_col = f"amount_{ctx.cur.lower()}"
    target = [ym(*m) for m in quarter_months(ctx.year, ctx.quarter)]
    py, pq = ctx.prev()
    prev_months = [ym(*m) for m in quarter_months(py, pq)]
    exported = quarter_end(ctx.year, ctx.quarter) + timedelta(days=rng.randint(3, 15))
    op = fam.op
    other_cat = rng.choice(["overhead", "admin", "misc"])
    invoices = fam.kind in ("table_max", "table_count")
    multi = fam.kind in ("table_sum", "table_mean")
    threshold = rng.choice([2_000, 5_000, 8_000]) if fam.kind == "table_count" else None
    spend = {"sum": "total", "mean": "average monthly", "max": "largest single", "count": "number of"}[op]
    if fam.kind == "table_count":
        assert threshold is not None
        head = f"how many {ctx.topic} invoices above {ctx.money(threshold)} were booked"
    elif invoices:
        head = f"what was the largest single {ctx.topic} invoice booked"
    else:
        head = f"what was the {spend} {ctx.topic} spend"
    question = _question(ctx, city, head, f"and who owns the {ctx.topic} budget there")
    # ---- the data table(s)
    if invoices:
        columns = ["invoice", "date", "office", "vendor", amount_col]
        vendors = [
            f"{VENDOR_STEMS[5 * (fam.index % 4) + i]} {s}"
            for i, s in enumerate(("Ltd", "Partners", "Services", "Group", "Supply"))
        ]
        rows = []
        number = rng.randint(1000, 8000)
        for m in [*quarter_months(py, pq), *quarter_months(ctx.year, ctx.quarter)]:
            for c in ctx.cities:
                k = rng.randint(1, 3) if (c == city and ym(*m) in target) else rng.randint(0, 2)
                for _ in range(k):
                    number += rng.randint(1, 40)
                    day = date(m[0], m[1], rng.randint(1, 28)).isoformat()
                    amt = rng.randrange(400, 20_000, 5)
                    rows.append([f"INV-{number}", day, c, rng.choice(vendors), amt])
        rows.sort(key=lambda r: (r[1], r[0]))
        period_col = "date"
        filters: dict[str, Any] = {"office": city}
    else:
        cats = [fam.category, other_cat] if multi else [fam.category]
        columns = ["month", "office", *(["category"] if multi else []), amount_col]
        months = quarter_months(ctx.year, ctx.quarter)
        if multi or fam.kind == "table_corrected":
            months = [*quarter_months(py, pq), *months]
        rows = _ledger_rows(ctx, months, cats, 2_000, 60_000)
        period_col = "month"
        filters = {"office": city, **({"category": fam.category} if multi else {})}
    calc: dict[str, Any] = {
        "op": op,
        "column": amount_col,
        "filters": filters,
        "period": {"column": period_col, "months": target},
    }
    if threshold is not None:
        calc["above"] = threshold
    figure = _calc_over(rows, columns, calc)
    if fam.kind == "table_count" and not 1 <= figure <= 9:
        raise Reject("count outside 1..9")
    variants: dict[str, dict[str, Any]] = {
        "other office": {**calc, "filters": {**filters, "office": other}},
        "all offices": {**calc, "filters": {k: v for k, v in filters.items() if k != "office"}},
        "previous quarter": {**calc, "period": {"column": period_col, "months": prev_months}},
    }
    if multi:
        variants["all categories"] = {**calc, "filters": {"office": city}}
    if op in ("sum", "mean"):
        variants["other op"] = {**calc, "op": "mean" if op == "sum" else "sum"}
    if op == "max":
        variants["other op"] = {**calc, "op": "sum"}
    if op == "count":
        variants["no threshold"] = {k: v for k, v in calc.items() if k != "above"}
    wrong = {
        name: value
        for name, spec in variants.items()
        if _nonempty(rows, columns, spec) and cents(value := _calc_over(rows, columns, spec)) != cents(figure)
    }
    title_what = f"{ctx.topic} invoices" if invoices else f"{ctx.topic} spend by office and month"
    title = f"{title_what[0].upper()}{title_what[1:]} ({ctx.company})"
    first_month = rows[0][1][:7] if invoices else rows[0][0]
    period_text = (
        f"{calendar.month_name[int(first_month[5:])]} {first_month[:4]} to "
        f"{calendar.month_name[quarter_months(ctx.year, ctx.quarter)[-1][1]]} {ctx.year}"
    )
    owners = {(c, fam.category): o for c, o in zip(ctx.cities, (owner, o_owner, p[6]), strict=True)}
    forecast_value = figure * rng.choice([0.8, 0.88, 1.12, 1.25]) if op != "count" else figure + 2
    forecast_value = round(forecast_value, -1) if op != "count" else forecast_value
    forecast_day = day_in(rng, month_before(ctx.year, ctx.quarter))
    flaws: list[tuple[str, Values]] = []
    superseded = None
    sources: list[dict[str, str]] = []
    if fam.kind == "table_total":
        header = [
            f"Period: {period_text}",
            f"Exported: {ctx.d(exported)}",
            "Budget owners: " + "; ".join(f"{c}: {owners[(c, fam.category)]}" for c in ctx.cities),
        ]
        data = table(ctx.new_id("table"), title, header, columns, rows)
        # a second ledger of another cost category, same offices and quarter
        o_rows = _ledger_rows(ctx, quarter_months(ctx.year, ctx.quarter), [other_cat], 2_000, 60_000)
        o_exported = exported + timedelta(days=rng.randint(1, 6))
        o_head = [
            f"Period: {period_text}",
            f"Exported: {ctx.d(o_exported)}",
            "Budget owners: "
            + "; ".join(f"{c}: {x}" for c, x in zip(ctx.cities, (cat_owner, hr, author), strict=True)),
        ]
        o_table = table(
            ctx.new_id("table"),
            f"{other_cat.capitalize()} spend by office and month ({ctx.company})",
            o_head,
            columns,
            o_rows,
        )
        o_value = _calc_over(o_rows, columns, calc)
        gold = Values(figure, owner, exported, (data["id"],))
        fc = forecast_memo(
            ctx, ctx.new_id("memo"), city, forecast_value, planner, owner, forecast_day, f"{ctx.topic} spend"
        )
        sources = [data, o_table, fc, noise_email(ctx, other, p[7])]
        _distinct(figure, o_value, forecast_value)
        flaws += [
            ("outdated_value", Values(forecast_value, owner, forecast_day, (fc["id"],))),
            ("distractor_value", Values(o_value, cat_owner, o_exported, (o_table["id"],))),
        ]
        if "other office" in wrong:
            flaws.append(
                ("distractor_value", Values(wrong["other office"], o_owner, exported, (data["id"],)))
            )
        gold_ids = (data["id"],)
    else:
        if fam.kind == "table_corrected":
            old_rows = [list(r) for r in rows]
            month = target[rng.randrange(3)]
            hit = next(i for i, r in enumerate(old_rows) if r[0] == month and r[1] == city)
            dup = rng.randrange(1_500, 9_000, 5)
            old_rows[hit][-1] += dup
            old_value = _calc_over(old_rows, columns, calc)
            first_export = exported
            exported = first_export + timedelta(days=rng.randint(5, 14))
            old = table(
                ctx.new_id("table"),
                title,
                [f"Period: {period_text}", f"Exported: {ctx.d(first_export)}"],
                columns,
                old_rows,
            )
            data = table(
                ctx.new_id("table"),
                title,
                [f"Period: {period_text}", f"Exported: {ctx.d(exported)}", "Revision: corrected export"],
                columns,
                rows,
            )
            month_name = calendar.month_name[int(old_rows[hit][0][5:])]
            fix = email(
                ctx.new_id("email"),
                ctx,
                owner,
                f"{city} finance; controlling",
                exported + timedelta(days=1),
                f"{ctx.topic.capitalize()} export for {city}: please use the corrected version",
                f"Please disregard {old['id']} (exported {ctx.d(first_export)}): it counted a {month_name} "
                f"{ctx.topic} invoice of {ctx.money(dup)} for {city} twice. {data['id']} (exported "
                f"{ctx.d(exported)}) is the corrected export. I own the {ctx.topic} budget for {city}, so "
                "please send questions to me.",
            )
            gold_ids = (data["id"], fix["id"])
            note = f"{old['id']} gives {ctx.money(old_value)}; superseded by {data['id']} per {fix['id']}"
            gold = Values(figure, owner, exported, gold_ids, note)
            superseded = {"source": old["id"], "figure": old_value}
            fc = forecast_memo(
                ctx,
                ctx.new_id("memo"),
                city,
                forecast_value,
                planner,
                owner,
                forecast_day,
                f"{spend} {ctx.topic} spend",
            )
            sources = [data, old, fix, fc, noise_table(ctx), noise_email(ctx, other, p[7])]
            o_budget_amount = rng.randrange(40_000, 400_000, 500)
            o_approved = day_in(rng, month_before(ctx.year, ctx.quarter))
            if rng.random() < 0.5:
                sources.append(
                    budget_memo(
                        ctx,
                        ctx.new_id("memo"),
                        other,
                        (ctx.year, ctx.quarter),
                        o_budget_amount,
                        o_owner,
                        o_approved,
                        author,
                        o_approved,
                    )
                )
            _distinct(figure, old_value, forecast_value)
            flaws += [
                ("outdated_value", Values(old_value, owner, first_export, (old["id"],), "none")),
                ("outdated_value", Values(old_value, owner, first_export, (old["id"], fix["id"]), "none")),
                ("outdated_value", Values(forecast_value, owner, forecast_day, (fc["id"],), "none")),
            ]
            if "other office" in wrong:
                flaws.append(("distractor_value", replace(gold, figure=wrong["other office"])))
        else:
            if multi:
                owners.update(
                    {(c, other_cat): o for c, o in zip(ctx.cities, (cat_owner, hr, p[7]), strict=True)}
                )
            roster_day = date(ctx.year, 1, rng.randint(5, 25))
            roster = roster_memo(ctx, ctx.new_id("memo"), owners, author, roster_day)
            header = [f"Period: {period_text}", f"Exported: {ctx.d(exported)}"]
            data = table(ctx.new_id("table"), title, header, columns, rows)
            gold_ids = (data["id"], roster["id"])
            gold = Values(figure, owner, exported, gold_ids)
            if invoices:
                y1, m1 = quarter_months(ctx.year, ctx.quarter)[0]
                cutoff = date(y1, m1, calendar.monthrange(y1, m1)[1]) + timedelta(days=rng.randint(1, 4))
                early = {**calc, "period": {"column": "date", "months": target[:1]}}
                snap = _calc_over(rows, columns, early) if _nonempty(rows, columns, early) else 0.0
                status_what = (
                    f"the largest {ctx.topic} invoice booked so far is {ctx.money(snap)}"
                    if op == "max"
                    else f"{round(snap)} {ctx.topic} invoices above {ctx.money(threshold or 0)} "
                    "have been booked so far"
                )
                fc = email(
                    ctx.new_id("email"),
                    ctx,
                    owner,
                    f"{city} office leadership",
                    cutoff,
                    f"{ctx.q()} {ctx.topic} status, {city} office",
                    f"Quick status for {ctx.q()}: as of {ctx.d(cutoff)}, {status_what} for the {city} "
                    "office. Final numbers come with the quarter-end export.",
                )
                outdated = Values(snap, owner, cutoff, (fc["id"],))
                _distinct(figure, snap)
            else:
                fc = forecast_memo(
                    ctx,
                    ctx.new_id("memo"),
                    city,
                    forecast_value,
                    planner,
                    owner,
                    forecast_day,
                    f"{spend} {ctx.topic} spend",
                )
                outdated = Values(forecast_value, owner, forecast_day, (fc["id"],))
                _distinct(figure, forecast_value)
            sources = [data, roster, fc, noise_table(ctx), noise_email(ctx, city, p[8])]
            flaws += [
                ("outdated_value", outdated),
                ("wrong_person", replace(gold, person=owners.get((city, other_cat), o_owner))),
            ]
            if "other office" in wrong:
                flaws.append(("distractor_value", Values(wrong["other office"], o_owner, exported, gold_ids)))
    for name, value in wrong.items():
        kind = "distractor_value" if name == "other office" else "wrong_aggregation"
        if kind == "wrong_aggregation":
            flaws.append((kind, replace(gold, figure=value)))
    return Built(question, sources, calc, gold, superseded, flaws, city)


def _nonempty(rows: list[list[Any]], columns: Sequence[str], spec: dict[str, Any]) -> bool:
    try:
        _calc_over(rows, columns, spec)
    except Reject:
        return False
    return True


BUILDERS: dict[str, Callable[[Ctx], Built]] = {
    **dict.fromkeys(LOOKUP_KINDS, build_lookup),
    **dict.fromkeys(TABLE_KINDS, build_table),
}

# --------------------------------------------------------------------------------------------------
# Prompts

ROLE_TEXT = {
    ("figure", "money"): "the figure asked for, in {cur}: a number (thousands separators allowed)",
    ("figure", "count"): "the number asked for: a whole number",
    ("person", "approver"): "full name of the person who approved it",
    ("person", "owner"): "full name of the budget owner",
    ("date", "approver"): "the approval date, as YYYY-MM-DD",
    ("date", "owner"): "the export date of the data your figure is computed from, as YYYY-MM-DD",
    ("conflict", None): "if sources disagree: the id and figure of the superseded source and the id of "
    "the source that supersedes it; otherwise none",
    ("sources", None): "the ids of every source your answer relies on",
}


def format_instructions(fmt: dict[str, Any], cur: str) -> str:
    lines = []
    for role, label in fmt["fields"]:
        key = (role, fmt["figure_kind"] if role == "figure" else fmt["person_role"])
        text = ROLE_TEXT.get(key) or ROLE_TEXT[(role, None)]
        lines.append(f"- {label}: {text.format(cur=cur)}")
    example = {"figure": 1234.0, "person": "First Last", "day": date(2000, 1, 31)}
    sample = render(
        fmt, Values(example["figure"], example["person"], example["day"], ("MEMO-000", "TABLE-000"), "none")
    )
    if fmt["style"] == "json":
        how = "a single JSON object with exactly these keys, and nothing else (no code fences, no prose)"
    else:
        sep = "LABEL: value" if fmt["style"] == "colon" else "label = value"
        how = f"one field per line as '{sep}', these fields in this order, and nothing else"
    return f"Write the report as {how}. Fields:\n" + "\n".join(lines) + f"\nShape of the report:\n{sample}"


def build_prompt(question: str, sources: Sequence[dict[str, str]], fmt: dict[str, Any], cur: str) -> str:
    catalogue = "\n".join(f"- {s['id']} ({s['kind']}): {s['title']}" for s in sources)
    return (
        f"{question}\n\nSources you can open ({len(sources)}; some are irrelevant, outdated or about other "
        f"offices):\n{catalogue}\n\nAnswer with a short report. {format_instructions(fmt, cur)}"
    )


# --------------------------------------------------------------------------------------------------
# Tasks


def family_people(i: int) -> tuple[str, ...]:
    """Nine people per family, no first or last name repeated within it and no full name shared with
    another family: first names cycle through ``FIRST``, last names are shifted by a third of ``LAST``
    on each pass so a pair never recurs."""
    out = []
    for j in range(PEOPLE_PER_FAMILY):
        k = PEOPLE_PER_FAMILY * i + j
        a, lap = k % len(FIRST), k // len(FIRST)
        out.append(f"{FIRST[a]} {LAST[(a + lap * len(LAST) // 3) % len(LAST)]}")
    return tuple(out)


def _context(family: Family, rng: random.Random) -> Ctx:
    i = family.index
    people = list(family_people(i))
    rng.shuffle(people)
    cities = list(CITIES[3 * i : 3 * i + 3])
    rng.shuffle(cities)
    return Ctx(
        family=family,
        rng=rng,
        cur=CURRENCIES[i % len(CURRENCIES)],
        date_style=DATE_STYLES[i % len(DATE_STYLES)],
        people=people,
        cities=cities,
        year=2022 + i % 3,
        quarter=rng.randint(1, 4),
    )


def build_pool(ctx: Ctx, fmt: dict[str, Any], built: Built, payload: dict[str, Any]) -> list[dict[str, str]]:
    """Five to eight flawed reports, each scored by the verifier and kept only if it loses points."""
    reference = payload["reference"]
    index = build_index(payload)
    candidates: dict[str, list[str]] = {kind: [] for kind in FLAWS}
    for kind, values in built.flaws:
        candidates[kind].append(render(fmt, values))
    for kind, text in generic_flaws(ctx, fmt, built.gold):
        candidates[kind].append(text)
    return flawed_pool(
        candidates,
        FLAWS,
        reference,
        lambda _, text: g_norm(artifact_scores(payload, text, index).rubric) < 1.0,
        ctx.rng,
    )


def build_task(family: Family, rng: random.Random) -> tuple[str, dict[str, Any]]:
    ctx = _context(family, rng)
    built = BUILDERS[family.kind](ctx)
    sources = built.sources
    rng.shuffle(sources)
    fmt = FORMATS[family.index]
    gold = built.gold
    payload: dict[str, Any] = {
        "kind": family.kind,
        "question": built.question,
        "company": ctx.company,
        "office": built.office,
        "offices": sorted(ctx.cities),
        "people": sorted(ctx.people),
        "currency": ctx.cur,
        "format": fmt,
        "sources": sources,
        "calc": built.calc,
        "gold": {
            "figure": gold.figure,
            "person": gold.person,
            "date": gold.day.isoformat(),
            "sources": list(gold.sources),
            "superseded": built.superseded,
        },
        "reference": render(fmt, gold),
        "pool": [],
    }
    for src in sources:
        if src["kind"] == "table" and parse_table(src["text"]) is None:
            raise AssertionError(f"table {src['id']} does not parse")
    scores = artifact_scores(payload, payload["reference"])
    if g_norm(scores.rubric) != 1.0:
        raise AssertionError(f"reference scores {scores.rubric}")
    payload["pool"] = build_pool(ctx, fmt, built, payload)
    return build_prompt(built.question, sources, fmt, ctx.cur), payload


def generate_records() -> list[dict[str, Any]]:
    """All task records in id order, with splits assigned; deterministic for a given code version."""
    check_pools()
    return family_records(DOMAIN, FAMILIES, build_task, MAX_ATTEMPTS)


def main(argv: Sequence[str] | None = None) -> int:
    return write_generated(generate_records, OUTPUT, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
