"""Deterministic generator for ``multi_tool-v0.jsonl``: 100 numeric questions over tabular documents.

Each task gives a catalogue of documents (reports with tables: freight, fuel logs, stock lists, energy
meters, travel claims, harvest records) and a numeric question whose answer needs a chain of tools:

- easy (2 tools): ``extract_table -> calculator`` or ``extract_table -> convert``; the question names the
  document and the table;
- standard (3 tools): ``read_document -> extract_table -> calculator`` (the question names only the
  document; which table to use, and any surcharge or levy, is in the document's notes) or
  ``extract_table -> calculator -> convert``;
- hard (4 tools): ``read_document -> extract_table -> calculator -> convert``; the document holds a
  superseded table next to the current one, and the catalogue holds an older report of the same company.

A template family fixes the scenario, the question wording, the computation (sum, mean, difference,
lookup, quantity x price, surcharge, levy), the tool chain and the answer format (label, decimals, unit
placement; unique per family); scenarios and families are data, in ``families.toml``. Families own
disjoint place/person/field names, company names and id prefixes. The train/eval split keeps families
whole, and units and currencies come from disjoint pools (``UNIT_POOLS``): a held-out family never
shares a unit, a format or an entity with a training family.

Per task the payload holds the documents, the gold tool chain (each step's canonical call, what a
successful result of that step looks like, and wrong candidate calls the executor may pick instead:
wrong tool, invalid arguments, wrong-but-valid arguments), the answer spec, the reference artifact and
the flawed artifact pool. Every candidate call and every flawed artifact is run through the real tools
and verifier here, and kept only if it behaves as its label says.
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from harness_gym.core.task import write_generated
from harness_gym.domains.base import read_toml
from harness_gym.domains.generation import (
    VERSION,
    Reject,
    family_records,
    family_splits,
    flawed_pool,
    task_file,
)
from harness_gym.domains.multi_tool.tools import (
    RATES,
    bindings,
    canonical_call,
    convert_value,
    evaluate,
    fmt_number,
    names_in_context,
    read_result,
    run_call,
    step_done,
)
from harness_gym.domains.multi_tool.verifier import CRITERIA, AnswerSpec, artifact_scores

OUTPUT = task_file("multi_tool")
MAX_ATTEMPTS = 60
DRAFT_FLAWS = ("wrong_unit", "missing_conversion", "arithmetic_slip", "distractor_value", "malformed")
INVALID_CALL_FLAWS = frozenset(
    {
        "bad_document", "bad_table", "bad_column", "malformed_call", "malformed_expression", "unknown_name",
        "unsupported_unit", "incompatible_unit", "bad_value",
    }
)  # fmt: skip
VALID_CALL_FLAWS = frozenset({"distractor_table", "wrong_expression", "wrong_target_unit"})
EITHER_CALL_FLAWS = frozenset({"wrong_document", "wrong_tool"})
"""Calls of these kinds may be valid (reading the wrong document) or refused (a premature extraction)."""

CHAINS: dict[str, tuple[str, ...]] = {
    "E1": ("extract_table", "calculator"),
    "E2": ("extract_table", "convert"),
    "S1": ("read_document", "extract_table", "calculator"),
    "S2": ("extract_table", "calculator", "convert"),
    "H": ("read_document", "extract_table", "calculator", "convert"),
}

UNIT_POOLS: dict[str, dict[str, tuple[str, ...]]] = {
    "train": {
        "mass": ("lb", "kg", "oz"),
        "length": ("mi", "km", "ft"),
        "volume": ("gal", "L", "qt"),
        "energy": ("kWh", "MJ", "BTU"),
        "currency": ("USD", "EUR", "GBP", "JPY", "CAD"),
    },
    "eval": {
        "mass": ("st", "t", "g"),
        "length": ("nmi", "yd", "m"),
        "volume": ("bbl", "m3"),
        "energy": ("therm", "GJ"),
        "currency": ("CHF", "SEK", "AUD", "NOK"),
    },
}
UNIT_WORDS = {
    "lb": "pounds", "kg": "kilograms", "oz": "ounces", "g": "grams", "t": "tonnes", "st": "stone",
    "mi": "miles", "km": "kilometres", "ft": "feet", "yd": "yards", "nmi": "nautical miles", "m": "metres",
    "gal": "gallons", "L": "litres", "qt": "quarts", "bbl": "barrels", "m3": "cubic metres",
    "kWh": "kilowatt hours", "MJ": "megajoules", "BTU": "british thermal units", "therm": "therms",
    "GJ": "gigajoules", "USD": "US dollars", "EUR": "euros", "GBP": "pounds sterling", "JPY": "yen",
    "CAD": "Canadian dollars", "CHF": "Swiss francs", "SEK": "Swedish kronor", "AUD": "Australian dollars",
    "NOK": "Norwegian kroner",
}  # fmt: skip
OTHER_DIMENSION = {
    "mass": "currency",
    "length": "volume",
    "volume": "mass",
    "energy": "length",
    "currency": "mass",
}
MIN_RESOLUTION = 200
"""An answer must have at least this many steps of its last required decimal (so rounding stays small)."""


# --------------------------------------------------------------------------------------------------
# Scenarios and families


@dataclass(frozen=True)
class Measure:
    stem: str
    dimension: str
    """A key of ``RATES`` or ``"count"``."""
    low: float
    high: float
    """Per-row range in the dimension's base unit (kg, m, L, MJ, USD) or as a count."""
    noun: str


@dataclass(frozen=True)
class Scenario:
    name: str
    stem: str
    key: str
    category: str
    pool: str
    measures: tuple[Measure, ...]
    kind: str
    suffix: str
    notes: str

    def measure(self, stem: str) -> Measure:
        return next(m for m in self.measures if m.stem == stem)


def _scenario(entry: dict[str, Any]) -> Scenario:
    measures = tuple(Measure(**m) for m in entry["measures"])
    return Scenario(**{**entry, "measures": measures})


_DEFINITIONS = read_toml(__package__, "families.toml")
SCENARIOS: dict[str, Scenario] = {s.name: s for s in map(_scenario, _DEFINITIONS["scenario"])}
"""The kinds of tabular document (``families.toml``)."""


@dataclass(frozen=True)
class Family:
    code: str
    difficulty: str
    scenario: str
    chain: str
    shape: str
    """sum | mean | diff | lookup | weighted | surcharge | levy"""
    measure: str
    question: str
    names: bool = False
    """The gold calculator expression uses names bound by extract_table instead of literal numbers."""
    versions: tuple[str, str] = ("prelim", "final")
    """Hard families: suffixes of the superseded and the current table."""
    period: str = "quarter"
    count: int = 4

    @property
    def template(self) -> str:
        return f"{self.scenario}/{self.shape}/{self.chain}/{self.measure}"

    @property
    def tools(self) -> tuple[str, ...]:
        return CHAINS[self.chain]


FAMILIES: tuple[Family, ...] = tuple(
    Family(**{**entry, "versions": tuple(entry.get("versions", Family.versions))})
    for entry in _DEFINITIONS["family"]
)
"""The template families (``families.toml``), in task order."""

ROWS = {"easy": (5, 6), "standard": (6, 8), "hard": (7, 9)}
OTHER_DOCS = {"easy": 1, "standard": 2, "hard": 2}
LABELS: dict[str, tuple[str, ...]] = {
    "train": ("ANSWER", "RESULT", "TOTAL", "FINAL"),
    "eval": ("VALUE", "OUTPUT"),
}
"""Answer-line labels; held-out families use labels no training family uses."""
SURCHARGES = (2.5, 4.0, 5.5, 6.5, 7.5, 9.0, 12.0)
LEVIES = (1.5, 2.0, 3.5, 4.0, 5.0, 6.0)

CITIES: tuple[str, ...] = (
    "Lyon", "Porto", "Turin", "Ghent", "Bonn", "Graz", "Cork", "Malmo", "Tartu", "Riga", "Kaunas", "Brno",
    "Pecs", "Varna", "Kotor", "Bari", "Nice", "Leeds", "York", "Bath", "Derby", "Lille", "Nantes", "Basel",
    "Bern", "Linz", "Ulm", "Kiel", "Trier", "Aarhus", "Odense", "Turku", "Espoo", "Gdansk", "Poznan",
    "Krakow", "Zadar", "Mostar", "Ohrid", "Sibiu", "Cluj", "Plovdiv", "Patras", "Faro", "Braga", "Bilbao",
    "Leon", "Cadiz", "Girona", "Parma", "Lecce", "Siena", "Pisa", "Genoa", "Split", "Pula", "Rijeka", "Celje",
    "Maribor", "Kosice", "Zilina", "Olomouc", "Plzen", "Liberec", "Tromso", "Bodo", "Molde", "Vaasa", "Oulu",
    "Lahti", "Umea", "Lulea", "Kalmar", "Visby", "Esbjerg", "Vejle", "Aalborg", "Galway", "Sligo", "Derry",
    "Exeter", "Truro", "Dover", "Hull", "Wigan", "Ayr", "Perth", "Inverness", "Dundee", "Stirling",
    "Rennes", "Brest", "Metz", "Nancy", "Dijon", "Arles", "Pau", "Tours",
)  # fmt: skip
PEOPLE: tuple[str, ...] = (
    "A. Moreau", "B. Lindqvist", "C. Okafor", "D. Novak", "E. Haddad", "F. Tanaka", "G. Rossi", "H. Jensen",
    "I. Petrov", "J. Alvarez", "K. Mensah", "L. Dubois", "M. Kowalski", "N. Fischer", "O. Byrne",
    "P. Santos", "R. Varga", "S. Larsen",
)  # fmt: skip
FIELDS: tuple[str, ...] = (
    "Longacre", "Brookside", "Hollow Oak", "Sandpit", "Windmill", "Millrace", "Stonebridge", "Heathfield",
    "Copse End", "Marsh Lane", "Redbarn", "Highmoor", "Fernhill", "Old Orchard", "Saltings", "Beacon",
    "Chalkpit", "Riverbend", "Kingsmead", "Larkrise", "Ashgrove", "Foxcover",
)  # fmt: skip
COMPANY_WORDS: tuple[str, ...] = (
    "Nordhavn", "Alderic", "Brightwater", "Castellan", "Dunmore", "Eastgate", "Fjordline", "Greyfield",
    "Halcyon", "Ironbridge", "Juniper", "Kestrel", "Lowland", "Meridian", "Northstar", "Oakhurst",
    "Pinecrest", "Quayside", "Redwood", "Silverton", "Tidewater", "Upland", "Valemont", "Westmark",
    "Yarrow", "Zephyr", "Ambervale", "Birchwood", "Coldharbour", "Deepdale", "Elmstead", "Foxglove",
    "Glenrock", "Hartwell", "Islington", "Jadeport", "Kingsbury", "Larchmont", "Millbrook", "Netherby",
    "Orchard", "Portland", "Queensway", "Ravensworth", "Stanmore", "Thornbury", "Underhill", "Vantage",
    "Whitecliff", "Ashby", "Bramley", "Crestwood", "Dovecote", "Evergreen", "Fairhaven", "Goldcrest",
    "Hawthorn", "Ivybridge", "Kelso", "Lindley", "Marlow", "Newhaven", "Otterburn", "Pemberton", "Riverside",
    "Sherwood", "Trent", "Vickers", "Wexford", "Arden", "Belmont", "Clifton", "Dalton", "Easton",
    "Fulham", "Grafton", "Holloway", "Kirkby",
)  # fmt: skip
PERIODS: dict[str, tuple[tuple[str, str], ...]] = {
    "quarter": tuple((f"q{q}_{y}", f"Q{q} {y}") for y in (2022, 2023, 2024) for q in (1, 2, 3, 4)),
    "month": tuple(
        (f"{m[:3].lower()}_{y}", f"{m} {y}")
        for y in (2023, 2024)
        for m in ("January", "March", "May", "July", "September", "November")
    ),
    "week": tuple(
        (f"w{w:02d}_{y}", f"week {w} of {y}") for y in (2023, 2024) for w in (6, 14, 23, 31, 40, 48)
    ),
    "half": tuple(
        (f"h{h}_{y}", f"the {'first' if h == 1 else 'second'} half of {y}")
        for y in (2021, 2022, 2023, 2024)
        for h in (1, 2)
    ),
    "season": tuple(
        (f"{s}_{y}", f"the {s} {y} season")
        for y in (2022, 2023, 2024)
        for s in ("spring", "summer", "autumn")
    ),
}


# --------------------------------------------------------------------------------------------------
# Per-family assets: split, entities, formats


@dataclass(frozen=True)
class Assets:
    """What a family owns exclusively: entity names, id prefixes and its answer format."""

    categories: tuple[str, ...]
    companies: tuple[str, ...]
    key_prefix: str
    doc_prefix: str
    label: str
    decimals: int
    unit_first: bool
    split: str


@cache
def family_assets() -> dict[str, Assets]:
    splits = family_splits("multi_tool", FAMILIES)
    pools = {"cities": list(CITIES), "people": list(PEOPLE), "fields": list(FIELDS)}
    rng = random.Random(f"multi_tool-{VERSION}/assets")
    formats = {
        split: [(label, d, first) for label in labels for d in (1, 2, 3) for first in (False, True)]
        for split, labels in LABELS.items()
    }
    for combos in formats.values():
        rng.shuffle(combos)
    letters = "ABCDEFGHJKLMNPRSTVWXZ"
    pairs = [a + b for a in letters for b in letters if a != b]
    triples = [a + b + c for a in letters for b in letters for c in letters if len({a, b, c}) == 3]
    key_prefixes = rng.sample(pairs, len(FAMILIES))
    doc_prefixes = rng.sample(triples, len(FAMILIES))
    companies = list(COMPANY_WORDS)
    out: dict[str, Assets] = {}
    for i, family in enumerate(FAMILIES):
        scenario = SCENARIOS[family.scenario]
        pool = pools[scenario.pool]
        take = 5 if scenario.pool == "cities" else 5 if scenario.pool == "fields" else 4
        categories, pools[scenario.pool] = tuple(pool[:take]), pool[take:]
        mine, companies = tuple(f"{w} {scenario.suffix}" for w in companies[:3]), companies[3:]
        label, decimals, first = formats[splits[family.template]].pop()
        out[family.template] = Assets(
            categories,
            mine,
            key_prefixes[i],
            doc_prefixes[i],
            label,
            decimals,
            first,
            splits[family.template],
        )
    return out


# --------------------------------------------------------------------------------------------------
# Tables and documents


def column_decimals(dimension: str, unit: str | None, low: float, high: float) -> int:
    if dimension == "count":
        return 0
    if dimension == "currency":
        return 0 if unit == "JPY" else 2
    typical = math.sqrt(low * high) / RATES[dimension][unit]
    return max(0, min(3, 3 - math.floor(math.log10(typical))))


def _columns(scenario: Scenario, units: dict[str, str]) -> list[dict[str, Any]]:
    cols: list[dict[str, Any]] = [{"name": scenario.key}, {"name": scenario.category}]
    for m in scenario.measures:
        if m.dimension == "count":
            cols.append({"name": m.stem, "decimals": 0})
        else:
            unit = units[m.stem]
            cols.append(
                {
                    "name": f"{m.stem}_{unit.lower()}",
                    "unit": unit,
                    "decimals": column_decimals(m.dimension, unit, m.low, m.high),
                }
            )
    return cols


def _value(m: Measure, unit: str | None, decimals: int, rng: random.Random) -> float | int:
    if m.dimension == "count":
        return rng.randint(int(m.low), int(m.high))
    base = math.exp(rng.uniform(math.log(m.low), math.log(m.high)))
    value = round(base / RATES[m.dimension][unit], decimals)
    return int(value) if decimals == 0 else value


def _rows(
    scenario: Scenario,
    cols: list[dict[str, Any]],
    keys: list[str],
    categories: list[str],
    rng: random.Random,
) -> list[list[Any]]:
    rows = []
    for key, cat in zip(keys, categories, strict=True):
        row: list[Any] = [key, cat]
        for m, col in zip(scenario.measures, cols[2:], strict=True):
            row.append(_value(m, col.get("unit"), col["decimals"], rng))
        rows.append(row)
    return rows


def _category_column(target: str, others: Sequence[str], n: int, rng: random.Random) -> list[str]:
    hits = rng.randint(2, min(4, n - 2))
    cats = [target] * hits + [rng.choice(others) for _ in range(n - hits)]
    rng.shuffle(cats)
    return cats


def _keys(prefix: str, n: int, rng: random.Random, taken: set[str]) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        key = f"{prefix}-{rng.randint(100, 999)}"
        if key not in taken:
            taken.add(key)
            out.append(key)
    return out


def _table(
    scenario: Scenario,
    name: str,
    caption: str,
    cols: list[dict[str, Any]],
    rows: list[list[Any]],
) -> dict[str, Any]:
    return {"name": name, "caption": caption, "columns": cols, "rows": rows}


def _perturb(
    rows: list[list[Any]], cols: list[dict[str, Any]], rng: random.Random, must: Sequence[int]
) -> list[list[Any]]:
    """A superseded version of a table: some measure cells differ (always in the rows ``must`` lists)."""
    out = [list(row) for row in rows]
    chosen = set(must) | set(rng.sample(range(len(rows)), max(1, len(rows) // 3)))
    for r in sorted(chosen):
        for c in range(2, len(cols)):
            if rng.random() < 0.7 or r in must:
                value = out[r][c]
                factor = rng.choice((0.82, 0.88, 0.93, 1.07, 1.12, 1.19))
                d = cols[c]["decimals"]
                new = round(value * factor, d) if d else max(1, round(value * factor))
                out[r][c] = new if new != value else round(value + 10.0**-d, d) if d else value + 1
    return out


# --------------------------------------------------------------------------------------------------
# The computation


def expression(
    family: Family,
    table: dict[str, Any],
    selection: Sequence[int],
    factor: float | None,
    use_names: bool,
    *,
    divisor: int | None = None,
    mode: str = "normal",
) -> str:
    """The calculator expression of a shape over the selected rows (literal numbers or bound names)."""
    cols = table["columns"]
    index = {c["name"]: i for i, c in enumerate(cols)}
    scenario = SCENARIOS[family.scenario]

    def term(stem: str, r: int) -> str:
        name = _measure_column(scenario, cols, stem)
        if use_names:
            return f"{name}_{r + 1}"
        col = cols[index[name]]
        return f"{table['rows'][r][index[name]]:.{col['decimals']}f}"

    shape = family.shape
    if shape == "weighted":
        parts = [
            f"{term('quantity', r)} {'+' if mode == 'plus' and k == 0 else '*'} {term(family.measure, r)}"
            for k, r in enumerate(selection)
        ]
        return " + ".join(parts)
    terms = [term(family.measure, r) for r in selection]
    if shape == "diff":
        return f"{terms[0]} - {terms[1]}"
    if shape == "lookup":
        return terms[0]
    total = " + ".join(terms)
    if shape == "mean":
        return f"({total}) / {divisor if divisor is not None else len(terms)}"
    if shape in ("surcharge", "levy") and factor is not None:
        return f"({total}) * {fmt_number(factor)}"
    return total


def _measure_column(scenario: Scenario, cols: Sequence[dict[str, Any]], stem: str) -> str:
    """The column holding a measure: ``<stem>`` for counts, ``<stem>_<unit>`` otherwise."""
    for col in cols[2:]:
        base = col["name"][: -(len(col["unit"]) + 1)] if "unit" in col else col["name"]
        if base == stem:
            return col["name"]
    raise KeyError(stem)


def _factor(family: Family, rate: float | None) -> float | None:
    if rate is None:
        return None
    return 1 + rate / 100 if family.shape == "surcharge" else 1 - rate / 100


def _transpose(token: str, rng: random.Random) -> str | None:
    digits = [
        i
        for i in range(len(token) - 1)
        if token[i].isdigit() and token[i + 1].isdigit() and token[i] != token[i + 1]
    ]
    if not digits:
        return None
    i = rng.choice(digits)
    out = token[:i] + token[i + 1] + token[i] + token[i + 2 :]
    return None if len(out) > 1 and out[0] == "0" and out[1].isdigit() else out


# --------------------------------------------------------------------------------------------------
# Building one task


def _doc_id(prefix: str, rng: random.Random, taken: set[str]) -> str:
    while True:
        doc_id = f"{prefix}-{rng.randint(100, 999)}"
        if doc_id not in taken:
            taken.add(doc_id)
            return doc_id


def _notes(scenario: Scenario, units: dict[str, str]) -> str:
    return scenario.notes.format(**{m.stem: units.get(m.stem, "units") for m in scenario.measures})


def build_task(family: Family, rng: random.Random) -> tuple[str, dict[str, Any]]:
    assets = family_assets()[family.template]
    scenario = SCENARIOS[family.scenario]
    pool = UNIT_POOLS[assets.split]
    units = {m.stem: rng.choice(pool[m.dimension]) for m in scenario.measures if m.dimension != "count"}
    asked = scenario.measure(family.measure)
    src_unit = units[asked.stem]
    converts = "convert" in family.tools
    dst_unit = rng.choice([u for u in pool[asked.dimension] if u != src_unit]) if converts else src_unit
    company = rng.choice(assets.companies)
    periods = PERIODS[family.period]
    period, other_period = rng.sample(periods, 2)
    cats = list(assets.categories)
    target_cat = rng.choice(cats)
    other_cats = [c for c in cats if c != target_cat]
    n = rng.randint(*ROWS[family.difficulty])
    cols = _columns(scenario, units)
    taken_keys: set[str] = set()
    taken_docs: set[str] = set()

    def make_rows(count: int) -> list[list[Any]]:
        keys = _keys(assets.key_prefix, count, rng, taken_keys)
        return _rows(scenario, cols, keys, _category_column(target_cat, other_cats, count, rng), rng)

    rows = make_rows(n)
    table_name = f"{scenario.stem}_{period[0]}"
    caption = f"{scenario.kind} for {period[1]}"
    rate = None
    if family.shape in ("surcharge", "levy"):
        rate = rng.choice(SURCHARGES if family.shape == "surcharge" else LEVIES)
    factor = _factor(family, rate)

    # selection
    if family.shape in ("diff", "lookup"):
        mcol = [c["name"] for c in cols].index(_measure_column(scenario, cols, family.measure))
        a, b = rng.sample(range(n), 2)
        if rows[a][mcol] < rows[b][mcol]:
            a, b = b, a
        selection: tuple[int, ...] = (a, b) if family.shape == "diff" else (a,)
    else:
        selection = tuple(r for r in range(n) if rows[r][1] == target_cat)

    target_tables: list[dict[str, Any]] = []
    distractor: dict[str, Any] | None = None
    notes = [_notes(scenario, units)]
    if family.chain == "H":
        old, new = family.versions
        table_name = f"{scenario.stem}_{period[0]}_{new}"
        superseded = _perturb(rows, cols, rng, must=selection)
        distractor = _table(
            scenario, f"{scenario.stem}_{period[0]}_{old}", f"{old} {caption}", cols, superseded
        )
        current = _table(scenario, table_name, f"{new} {caption}", cols, rows)
        target_tables = [distractor, current] if rng.random() < 0.5 else [current, distractor]
        notes.append(
            f"Table {distractor['name']} holds the {old} figures; they are superseded by table {table_name}, "
            "which is the one in force."
        )
    elif family.chain in ("S1", "S2"):
        other_rows = make_rows(rng.randint(*ROWS[family.difficulty]))
        other_name = f"{scenario.stem}_{other_period[0]}"
        distractor = _table(scenario, other_name, f"{scenario.kind} for {other_period[1]}", cols, other_rows)
        current = _table(scenario, table_name, caption, cols, rows)
        target_tables = [distractor, current] if rng.random() < 0.5 else [current, distractor]
    else:
        target_tables = [_table(scenario, table_name, caption, cols, rows)]
    if rate is not None:
        if family.shape == "surcharge":
            notes.append(
                f"A fuel surcharge of {fmt_number(rate)}% applies to every charge; the tables list charges "
                "before it."
            )
        else:
            notes.append(
                f"A marketing levy of {fmt_number(rate)}% is deducted from revenue; the tables list revenue "
                "before it."
            )
    target_doc = {
        "id": _doc_id(assets.doc_prefix, rng, taken_docs),
        "title": f"{company} {scenario.kind}, {period[1].removeprefix('the ')}",
        "text": " ".join(notes),
        "tables": target_tables,
    }
    docs = [target_doc]
    owners = [c for c in assets.companies if c != company]
    if family.chain == "H":
        owners = [company, owners[0]]  # an older report of the same company is the distractor document
    for o_company in owners[: OTHER_DOCS[family.difficulty]]:
        o_rows = make_rows(rng.randint(*ROWS[family.difficulty]))
        o_name = f"{scenario.stem}_{other_period[0]}"
        docs.append(
            {
                "id": _doc_id(assets.doc_prefix, rng, taken_docs),
                "title": f"{o_company} {scenario.kind}, {other_period[1].removeprefix('the ')}",
                "text": _notes(scenario, units),
                "tables": [_table(scenario, o_name, f"{scenario.kind} for {other_period[1]}", cols, o_rows)],
            }
        )
    docs_sorted = sorted(docs, key=lambda d: d["id"])

    # gold values
    table = next(t for t in target_tables if t["name"] == table_name)
    names_bound = bindings(table, [c["name"] for c in cols])
    literal = expression(family, table, selection, factor, use_names=False)
    gold_expr = expression(family, table, selection, factor, use_names=family.names)
    calc_value = evaluate(literal)
    if abs(evaluate(gold_expr, names_bound) - calc_value) > 1e-9 * max(1.0, abs(calc_value)):
        raise AssertionError("named and literal expressions disagree")
    # convert takes the calculator's output as printed, the way a caller copies it
    final = convert_value(float(fmt_number(calc_value)), src_unit, dst_unit) if converts else calc_value
    spec = AnswerSpec(assets.label, assets.decimals, assets.unit_first, dst_unit, family.tools, final)
    if abs(final) * 10**assets.decimals < MIN_RESOLUTION or final <= 0:
        raise Reject("answer too small for the required decimals")

    needed = [scenario.key, scenario.category] if family.shape not in ("diff", "lookup") else [scenario.key]
    needed += [c["name"] for c in cols[2:] if _uses(family, scenario, c["name"], cols)]
    chain = _chain(family, scenario, docs_sorted, target_doc, table, distractor, cols, needed, gold_expr,
                   literal, calc_value, final, src_unit, dst_unit, selection, factor, pool, rng)  # fmt: skip
    reference = f"{spec.line(final)}\nTOOLS: {', '.join(family.tools)}"
    drafts = _draft_pool(family, scenario, spec, table, distractor, cols, selection, factor, calc_value,
                         src_unit, dst_unit, rows, target_cat, pool, rng)  # fmt: skip
    fill = {
        "doc": target_doc["id"],
        "table": table_name,
        "cat": target_cat,
        "a": rows[selection[0]][0],
        "b": rows[selection[1]][0] if len(selection) > 1 and family.shape == "diff" else "",
        "unit": dst_unit,
        "company": company,
        "period": period[1],
    }
    question = family.question.format(**fill)
    payload = {
        "documents": docs_sorted,
        "chain": chain,
        "answer": {
            "label": spec.label,
            "decimals": spec.decimals,
            "unit_first": spec.unit_first,
            "unit": spec.unit,
            "tools": list(spec.tools),
            "value": final,
        },
        "reference": reference,
        "pool": drafts,
    }
    return prompt(question, docs_sorted, spec), payload


def _uses(family: Family, scenario: Scenario, col: str, cols: Sequence[dict[str, Any]]) -> bool:
    stems = {family.measure} | ({"quantity"} if family.shape == "weighted" else set())
    return any(_measure_column(scenario, cols, s) == col for s in stems)


def prompt(question: str, docs: Sequence[dict[str, Any]], spec: AnswerSpec) -> str:
    catalogue = "\n".join(f"- {d['id']}: {d['title']}" for d in docs)
    return (
        f"{question}\n\n"
        f"Documents:\n{catalogue}\n\n"
        'Tools (one call per tool request, written as one JSON object {"tool": NAME, "args": {...}}):\n'
        '- read_document {"doc": ID}: the document\'s notes and the names, columns and sizes of its tables\n'
        '- extract_table {"doc": ID, "table": NAME} (optional "columns": [NAME, ...]): the rows of a table; '
        "each numeric cell is bound to the name <column>_<row> (rows numbered from 1)\n"
        '- calculator {"expression": TEXT}: arithmetic with numbers, + - * / **, parentheses and '
        "bound names\n"
        '- convert {"value": NUMBER, "from_unit": UNIT, "to_unit": UNIT}: fixed-rate unit and currency '
        "conversion\n"
        f"Required tool chain: {' -> '.join(spec.tools)}\n\n"
        "Answer with exactly two lines:\n"
        f"{spec.example()}\n"
        "TOOLS: <the tools you used, in order, separated by commas>\n"
        f"Write the number with exactly {spec.decimals} decimal(s) and no thousands separators; the unit is "
        f"{spec.unit}."
    )


# --------------------------------------------------------------------------------------------------
# Gold chain and candidate calls


def _call(tool: str, **args: Any) -> str:
    return canonical_call(tool, args)


def _chain(
    family: Family,
    scenario: Scenario,
    docs: Sequence[dict[str, Any]],
    target_doc: dict[str, Any],
    table: dict[str, Any],
    distractor: dict[str, Any] | None,
    cols: Sequence[dict[str, Any]],
    needed: Sequence[str],
    gold_expr: str,
    literal: str,
    calc_value: float,
    final: float,
    src: str,
    dst: str,
    selection: Sequence[int],
    factor: float | None,
    units: dict[str, tuple[str, ...]],
    rng: random.Random,
) -> list[dict[str, Any]]:
    doc_id = target_doc["id"]
    others = [d for d in docs if d["id"] != doc_id]
    other = others[0]
    steps: list[dict[str, Any]] = []
    measure_col = _measure_column(scenario, cols, family.measure)
    dim = next(m.dimension for m in scenario.measures if m.stem == family.measure)
    for tool in family.tools:
        cands: list[tuple[str, str]] = []
        if tool == "read_document":
            call = _call("read_document", doc=doc_id)
            match: dict[str, Any] = {"doc": doc_id}
            cands += [
                ("bad_document", _call("read_document", doc=doc_id.replace("-", ""))),
                ("wrong_document", _call("read_document", doc=other["id"])),
                ("wrong_tool", _call("extract_table", doc=doc_id, table=scenario.stem)),
                ("malformed_call", f'read_document(doc="{doc_id}")'),
            ]
        elif tool == "extract_table":
            call = _call("extract_table", doc=doc_id, table=table["name"])
            match = {"doc": doc_id, "table": table["name"], "columns": list(needed)}
            wrong_unit = next(u for u in units[dim] if u != src)
            cands += [
                ("bad_table", _call("extract_table", doc=doc_id, table=table["name"].replace("_", " "))),
                (
                    "bad_column",
                    _call(
                        "extract_table",
                        doc=doc_id,
                        table=table["name"],
                        columns=[scenario.key, f"{family.measure}_{wrong_unit.lower()}"],
                    ),
                ),
                ("bad_document", _call("extract_table", doc=doc_id.lower(), table=table["name"])),
                ("wrong_tool", _call("read_document", doc=doc_id)),
            ]
            if distractor is not None:
                cands.append(
                    ("distractor_table", _call("extract_table", doc=doc_id, table=distractor["name"]))
                )
            if family.chain not in ("S1", "H"):
                cands.append(("wrong_document", _call("extract_table", doc=other["id"], table=table["name"])))
        elif tool == "calculator":
            call = _call("calculator", expression=gold_expr)
            match = {"value": calc_value}
            terms = literal.replace("(", "").replace(")", "")
            cands += [
                ("malformed_expression", _call("calculator", expression=f"sum({literal})")),
                ("malformed_expression", _call("calculator", expression=f"{gold_expr} +")),
                ("unknown_name", _call("calculator", expression=f"total_{measure_col} * 1")),
            ]
            slip = _slips(family, table, selection, factor, rng)
            if slip:
                cands.append(("wrong_expression", _call("calculator", expression=slip[0][1])))
            if "convert" in family.tools:
                first = float(terms.split(" ")[0])
                cands.append(("wrong_tool", _call("convert", value=first, from_unit=src, to_unit=dst)))
            else:
                cands.append(("wrong_tool", _call("read_document", doc=doc_id)))
        else:
            value = float(fmt_number(calc_value)) if "calculator" in family.tools else float(literal)
            call = _call("convert", value=value, from_unit=src, to_unit=dst)
            match = {"value": final, "unit": dst}
            third = [u for u in units[dim] if u not in (src, dst)] or [src]
            guess = round(RATES[dim][src] / RATES[dim][dst], 1) or 0.1
            cands += [
                ("unsupported_unit", _call("convert", value=value, from_unit=src, to_unit=UNIT_WORDS[dst])),
                (
                    "incompatible_unit",
                    _call("convert", value=value, from_unit=src, to_unit=units[OTHER_DIMENSION[dim]][0]),
                ),
                (
                    "bad_value",
                    _call("convert", value=f"{fmt_number(value)} {src}", from_unit=src, to_unit=dst),
                ),
                (
                    "wrong_target_unit",
                    _call("convert", value=value, from_unit=src, to_unit=rng.choice(third)),
                ),
                ("wrong_tool", _call("calculator", expression=f"{fmt_number(value)} * {fmt_number(guess)}")),
            ]
        steps.append(
            {
                "tool": tool,
                "call": call,
                "match": match,
                "candidates": [{"flaw": f, "source": s} for f, s in cands],
            }
        )
    _verify_chain(steps, docs, family)
    return steps


def _verify_chain(steps: list[dict[str, Any]], docs: Sequence[dict[str, Any]], family: Family) -> None:
    """Run every gold and candidate call with the gold prefix done; each must behave as labelled."""
    names: dict[str, float] = {}
    for step in steps:
        gold = run_call(docs, step["call"], names)
        seen = read_result(gold.text)
        if not (gold.valid and gold.ok and step_done(step, seen.tool, seen.value)):
            raise AssertionError(f"{family.code}: gold call fails: {gold.text}")
        for cand in step["candidates"]:
            result = run_call(docs, cand["source"], names)
            seen = read_result(result.text)
            flaw = cand["flaw"]
            if flaw in INVALID_CALL_FLAWS and result.valid:
                raise AssertionError(f"{family.code}: {flaw} candidate is valid: {cand['source']}")
            if flaw in VALID_CALL_FLAWS and not (result.valid and result.ok):
                raise AssertionError(f"{family.code}: {flaw} candidate is refused: {result.text}")
            if result.ok and step_done(step, seen.tool, seen.value):
                raise AssertionError(f"{family.code}: {flaw} candidate does the gold step: {cand['source']}")
        if step["tool"] == "extract_table":
            names = names_in_context(docs, [read_result(gold.text)])


# --------------------------------------------------------------------------------------------------
# Flawed drafts


def _slips(
    family: Family, table: dict[str, Any], selection: Sequence[int], factor: float | None, rng: random.Random
) -> list[tuple[str, str]]:
    """Arithmetic slips as (description, literal expression)."""
    out: list[tuple[str, str]] = []
    sel = list(selection)
    if family.shape == "lookup":
        return out
    if family.shape == "diff":
        out.append(("reversed", expression(family, table, sel[::-1], factor, False)))
    elif family.shape == "weighted":
        out.append(("plus", expression(family, table, sel, factor, False, mode="plus")))
    if len(sel) >= 2 and family.shape not in ("diff",):
        drop = rng.randrange(len(sel))
        kept = sel[:drop] + sel[drop + 1 :]
        out.append(
            (
                "dropped",
                expression(
                    family, table, kept, factor, False, divisor=len(sel) if family.shape == "mean" else None
                ),
            )
        )
    if family.shape == "mean":
        out.append(("divisor", expression(family, table, sel, factor, False, divisor=len(sel) + 1)))
    if family.shape in ("surcharge", "levy"):
        out.append(("no_factor", expression(family, table, sel, None, False)))
    literal = expression(family, table, sel, factor, False)
    tokens = literal.split(" ")
    numeric = [
        i for i, t in enumerate(tokens) if t.replace(".", "").isdigit() and len(t.replace(".", "")) >= 3
    ]
    if numeric:
        i = rng.choice(numeric)
        swapped = _transpose(tokens[i], rng)
        if swapped is not None:
            out.append(("transposed", " ".join([*tokens[:i], swapped, *tokens[i + 1 :]])))
    return out


def _draft_pool(
    family: Family,
    scenario: Scenario,
    spec: AnswerSpec,
    table: dict[str, Any],
    distractor: dict[str, Any] | None,
    cols: Sequence[dict[str, Any]],
    selection: Sequence[int],
    factor: float | None,
    calc_value: float,
    src: str,
    dst: str,
    rows: Sequence[Sequence[Any]],
    target_cat: str,
    units: dict[str, tuple[str, ...]],
    rng: random.Random,
) -> list[dict[str, str]]:
    converts = "convert" in family.tools
    tools_line = f"TOOLS: {', '.join(spec.tools)}"
    dim = next(m.dimension for m in scenario.measures if m.stem == family.measure)

    def artifact(number: float, unit: str = dst) -> str:
        other = AnswerSpec(spec.label, spec.decimals, spec.unit_first, unit, spec.tools, number)
        return f"{other.line(number)}\n{tools_line}"

    def finish(x: float) -> float:
        return convert_value(x, src, dst) if converts else x

    cands: dict[str, list[str]] = {k: [] for k in DRAFT_FLAWS}
    # arithmetic slips (then converted correctly)
    for _, expr in _slips(family, table, selection, factor, rng):
        cands["arithmetic_slip"].append(artifact(finish(evaluate(expr))))
    if family.shape == "lookup":
        token = f"{calc_value:.{_decimals_of(table, scenario, family)}f}"
        swapped = _transpose(token, rng)
        if swapped:
            cands["arithmetic_slip"].append(artifact(finish(float(swapped))))
    # distractor values: the superseded / other-period table, or a wrong selection
    sel = list(selection)
    if distractor is not None and family.chain == "H":
        cands["distractor_value"].append(
            artifact(finish(evaluate(expression(family, distractor, sel, factor, False))))
        )
    if family.shape in ("diff", "lookup"):
        n = len(rows)
        wrong = [r for r in range(n) if r not in sel]
        alt = list(sel)
        alt[-1] = rng.choice(wrong)
        cands["distractor_value"].append(
            artifact(finish(evaluate(expression(family, table, alt, factor, False))))
        )
    else:
        outside = [r for r in range(len(rows)) if r not in sel]
        if outside:
            extra = sorted([*sel, rng.choice(outside)])
            cands["distractor_value"].append(
                artifact(finish(evaluate(expression(family, table, extra, factor, False))))
            )
        if distractor is not None and family.chain == "S1":
            other_sel = [r for r, row in enumerate(distractor["rows"]) if row[1] == target_cat]
            if other_sel:
                cands["distractor_value"].append(
                    artifact(finish(evaluate(expression(family, distractor, other_sel, factor, False))))
                )
    # units
    final = finish(calc_value)
    if converts:
        cands["wrong_unit"].append(artifact(calc_value, src))
        third = [u for u in units[dim] if u not in (src, dst)]
        if third:
            u = rng.choice(third)
            cands["wrong_unit"].append(artifact(convert_value(calc_value, src, u), u))
        cands["missing_conversion"].append(artifact(calc_value, dst))
    else:
        others = [u for u in units[dim] if u != dst]
        cands["wrong_unit"].append(artifact(final, rng.choice(others)))
    # malformed: right number, wrong form
    line = spec.line(final)
    number_text = f"{final:.{spec.decimals}f}"
    swapped = f"{spec.label}: " + (f"{number_text} {dst}" if spec.unit_first else f"{dst} {number_text}")
    precise = f"{final:.{spec.decimals + 1}f}"
    cands["malformed"] += [
        f"{spec.label}: "
        + (f"{dst} {precise}" if spec.unit_first else f"{precise} {dst}")
        + f"\n{tools_line}",
        f"{swapped}\n{tools_line}",
        line,
        f"The answer is {number_text} {dst}.\n{line}\n{tools_line}",
        f"{spec.label.lower()}: {line.split(': ', 1)[1]}\n{tools_line}",
    ]
    if final >= 1000:
        grouped = f"{final:,.{spec.decimals}f}"
        body = f"{dst} {grouped}" if spec.unit_first else f"{grouped} {dst}"
        cands["malformed"].append(f"{spec.label}: {body}\n{tools_line}")

    payload = {"answer": {"label": spec.label, "decimals": spec.decimals, "unit_first": spec.unit_first,
                          "unit": spec.unit, "tools": list(spec.tools), "value": spec.value}}  # fmt: skip
    reference = f"{line}\n{tools_line}"
    top = sum(CRITERIA[c] for c in ("numeric_answer", "format"))

    def fails_as_labelled(flaw: str, text: str) -> bool:
        """Loses points, and only on the format if it is malformed (only on the number otherwise)."""
        scores = artifact_scores(payload, text)
        numeric_ok = scores["numeric_answer"][0] == CRITERIA["numeric_answer"]
        return sum(s for s, _ in scores.values()) < top and (flaw == "malformed") == numeric_ok

    pool = flawed_pool(cands, DRAFT_FLAWS, reference, fails_as_labelled, rng)
    if not any(item["flaw"] == "malformed" for item in pool) or len({i["flaw"] for i in pool}) < 3:
        raise Reject("flawed drafts too uniform")
    return pool


def _decimals_of(table: dict[str, Any], scenario: Scenario, family: Family) -> int:
    name = _measure_column(scenario, table["columns"], family.measure)
    return next(c["decimals"] for c in table["columns"] if c["name"] == name)


# --------------------------------------------------------------------------------------------------
# Records


def generate_records() -> list[dict[str, Any]]:
    """All task records in id order, with splits assigned; deterministic for a given code version."""
    return family_records("multi_tool", FAMILIES, build_task, MAX_ATTEMPTS, lambda family: family.code)


def main(argv: Sequence[str] | None = None) -> int:
    return write_generated(generate_records, OUTPUT, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
