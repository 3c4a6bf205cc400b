"""The fictional world a research task's corpus describes: names, entities and their documents.

Every name is invented (so no executor can answer from memory) and drawn from split-specific pools:
training and held-out families never share a syllable inventory, a first name or a title word, and no
generated word is used twice in the whole task set, except on purpose in a near-miss pair ("Mara Quell"
and "Mara Quill", "Veltrix Labs" and "Veltrix Systems").

Documents state facts one per sentence and always name their subject in the sentence, so that whether a
document supports a fact can be read off its text. An entity's document mentions what it points to (a
company names its founder) but never what points to it (a person's page does not name the companies
they founded): the next hop of a question is only findable once the previous hop's document was read.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

ENTITY_TYPES: tuple[str, ...] = ("product", "film", "book", "ship", "company", "person", "university", "city")

_SYLLABLES = {
    "train": (
        "ka", "lo", "ver", "tris", "mar", "del", "quen", "sor", "bel", "dan", "tor", "vin", "rel", "mos",
        "fen", "gar", "hal", "jor", "lin", "nar", "pel", "ros", "sal", "tam", "wen", "zor", "bri", "cal",
        "dor", "bra",
    ),
    "eval": (
        "ash", "bek", "cu", "dru", "ev", "fim", "gis", "hes", "ith", "jun", "kev", "lum", "mir", "nox", "ob",
        "pry", "quo", "rin", "sev", "tul", "ur", "vak", "wyn", "xan", "yol", "zeg", "ama", "bu", "cin", "dih",
    ),
}  # fmt: skip
_ENDINGS = {"train": ("", "", "n", "s", "k"), "eval": ("", "", "a", "is", "on")}
_FIRST_NAMES = {
    "train": (
        "Mara", "Tomas", "Ilse", "Dario", "Nadia", "Oskar", "Lena", "Piet", "Rosa", "Anton", "Greta", "Hugo",
        "Ines", "Jonas", "Klara", "Luca", "Marta", "Nils", "Olga", "Pavel", "Rita", "Sven", "Tanja", "Viktor",
        "Wanda", "Yusuf", "Zora", "Bruno", "Carla", "Emil",
    ),
    "eval": (
        "Amara", "Bastian", "Celine", "Dmitri", "Elif", "Farid", "Gemma", "Hakon", "Ingrid", "Jasper", "Kaia",
        "Leandro", "Mirela", "Nikolai", "Orla", "Priya", "Quentin", "Runa", "Soren", "Talia", "Ulrich",
        "Vera", "Wilhelm", "Xenia", "Yara", "Zeno", "Alma", "Boris", "Chiara", "Desmond",
    ),
}  # fmt: skip
_FILM_WORDS = {
    "train": (
        (
            "Silent", "Crimson", "Hollow", "Distant", "Broken", "Golden", "Quiet", "Northern", "Hidden",
            "Burning",
        ),
        ("Harbor", "Orchard", "Lantern", "Meadow", "Citadel", "Garden", "River", "Tower", "Valley", "Mirror"),
    ),
    "eval": (
        (
            "Amber", "Frozen", "Restless", "Scarlet", "Endless", "Pale", "Wandering", "Silver", "Bitter",
            "Sunken",
        ),
        (
            "Bridge", "Harvest", "Compass", "Island", "Cathedral", "Canyon", "Signal", "Forest", "Theater",
            "Beacon",
        ),
    ),
}  # fmt: skip
_BOOK_NOUNS = {
    "train": ("Lanterns", "Letters", "Shadows", "Voices", "Keepers"),
    "eval": ("Echoes", "Maps", "Gardens", "Ashes", "Tides"),
}
_MODEL_LETTERS = {"train": "KTRX", "eval": "MVZQ"}
_SHIP_PREFIXES = {"train": ("MV", "MS"), "eval": ("SS", "RV")}
_COMPANY_SUFFIXES = ("Labs", "Systems", "Works", "Group", "Industries", "Dynamics", "Holdings", "Instruments")
_SHIPYARD_SUFFIXES = ("Shipyards", "Shipworks", "Marine", "Dockyards")
_UNIVERSITY_PATTERNS = (
    "{} University",
    "{} State University",
    "{} Institute of Technology",
    "{} Polytechnic",
)
GENERIC_NAME_WORDS: frozenset[str] = frozenset(
    {"The", "of", *_COMPANY_SUFFIXES, *_SHIPYARD_SUFFIXES, "University", "State", "Institute", "Technology"}
    | {"Polytechnic"}
)
"""Words names in any split may use (company suffixes, "University", ...); all others are split-specific."""

PROFESSIONS = (
    "materials chemist", "structural engineer", "economist", "film editor", "marine biologist",
    "software architect", "historian", "architect", "physician", "statistician", "journalist", "geologist",
)  # fmt: skip
INDUSTRIES = ("robotics", "logistics", "food processing", "textile", "battery", "medical devices", "software")
CATEGORIES = ("drone", "e-bike", "espresso machine", "smartwatch", "heat pump", "camera", "synthesizer")
GENRES = ("drama", "thriller", "comedy", "documentary", "science fiction")
BOOK_GENRES = ("historical", "crime", "fantasy", "coming-of-age", "mystery")
VESSELS = ("container ship", "research vessel", "ferry", "icebreaker", "bulk carrier")
PAPERS = ("Daily Ledger", "Evening Courier", "Morning Herald", "Weekly Review", "Trade Gazette")
TOPICS = ("regional industry", "design awards", "export figures", "cultural life", "new technology")
_VOWELS = "aeiou"


class NameBank:
    """Invented names for one split; ``used`` is shared by both splits so no word is ever reused."""

    def __init__(self, split: str, used: set[str]) -> None:
        self.split = split
        self.used = used

    def word(self, rng: random.Random) -> str:
        syllables = _SYLLABLES[self.split]
        for _ in range(200):
            parts = rng.sample(syllables, rng.choice((2, 2, 3)))
            word = ("".join(parts) + rng.choice(_ENDINGS[self.split])).capitalize()
            if word not in self.used and len(word) <= 11:
                self.used.add(word)
                return word
        raise RuntimeError("name space exhausted")

    def mutate(self, word: str, rng: random.Random) -> str:
        """A near-miss spelling: one vowel (not the first letter) changed; unused anywhere."""
        spots = [i for i, ch in enumerate(word) if i > 0 and ch in _VOWELS]
        rng.shuffle(spots)
        for i in spots:
            for vowel in rng.sample(_VOWELS, len(_VOWELS)):
                new = word[:i] + vowel + word[i + 1 :]
                if vowel != word[i] and new not in self.used:
                    self.used.add(new)
                    return new
        raise RuntimeError(f"no near-miss spelling left for {word}")


@dataclass
class Entity:
    type: str
    name: str
    attrs: dict[str, Any] = field(default_factory=dict)


class TaskWorld:
    """The entities of one task; hands out names unique within the task."""

    def __init__(self, bank: NameBank, rng: random.Random) -> None:
        self.bank = bank
        self.rng = rng
        self.first_names: set[str] = set()
        self.names: set[str] = set()
        self.shipyards: set[str] = set()

    def _claim(self, name: str) -> str:
        if name in self.names:
            raise ValueError(f"duplicate name {name}")
        self.names.add(name)
        return name

    # -- names -------------------------------------------------------------------------------
    def fresh_name(self, kind: str) -> str:
        rng, bank = self.rng, self.bank
        for _ in range(100):
            if kind == "person":
                first = rng.choice(_FIRST_NAMES[bank.split])
                if first in self.first_names:
                    continue
                self.first_names.add(first)
                name = f"{first} {bank.word(rng)}"
            elif kind == "company":
                name = f"{bank.word(rng)} {rng.choice(_COMPANY_SUFFIXES)}"
            elif kind == "shipyard":
                name = f"{bank.word(rng)} {rng.choice(_SHIPYARD_SUFFIXES)}"
                self.shipyards.add(name)
            elif kind in ("city", "region"):
                name = bank.word(rng)
            elif kind == "university":
                name = rng.choice(_UNIVERSITY_PATTERNS).format(bank.word(rng))
            elif kind == "product":
                name = f"{bank.word(rng)} {rng.choice(_MODEL_LETTERS[bank.split])}{rng.randint(2, 9)}"
            elif kind == "film":
                adjectives, nouns = _FILM_WORDS[bank.split]
                name = f"The {rng.choice(adjectives)} {rng.choice(nouns)}"
            elif kind == "book":
                name = f"The {rng.choice(_BOOK_NOUNS[bank.split])} of {bank.word(rng)}"
            elif kind == "ship":
                name = f"{rng.choice(_SHIP_PREFIXES[bank.split])} {bank.word(rng)}"
            else:
                raise ValueError(f"unknown name kind {kind!r}")
            if name not in self.names:
                return self._claim(name)
        raise RuntimeError(f"could not find a fresh {kind} name")

    def near_miss_name(self, entity: Entity) -> str:
        """A confusable name of the same type that neither contains nor is contained in the original."""
        rng, bank, name = self.rng, self.bank, entity.name
        words = name.split()
        for _ in range(50):
            if entity.type == "person":
                new = f"{words[0]} {bank.mutate(words[1], rng)}"
            elif entity.type == "company":
                suffixes = _SHIPYARD_SUFFIXES if name in self.shipyards else _COMPANY_SUFFIXES
                new = f"{words[0]} {rng.choice([s for s in suffixes if s != words[-1]])}"
                if name in self.shipyards:
                    self.shipyards.add(new)
            elif entity.type == "city":
                new = bank.mutate(name, rng)
            elif entity.type == "university":
                stem = words[0]
                patterns = [p for p in _UNIVERSITY_PATTERNS if p.format(stem) != name]
                new = rng.choice(patterns).format(stem)
            elif entity.type == "product":
                digit = int(words[1][1:])
                new = f"{words[0]} {words[1][0]}{rng.choice([d for d in range(2, 10) if d != digit])}"
            elif entity.type == "film":
                nouns = _FILM_WORDS[bank.split][1]
                new = f"{words[0]} {words[1]} {rng.choice([n for n in nouns if n != words[2]])}"
            elif entity.type == "book":
                new = " ".join([*words[:-1], bank.mutate(words[-1], rng)])
            elif entity.type == "ship":
                new = f"{words[0]} {bank.mutate(words[1], rng)}"
            else:
                raise ValueError(f"no near-miss names for {entity.type}")
            if new not in self.names:
                return self._claim(new)
        raise RuntimeError(f"could not find a near-miss name for {name}")

    # -- entities ----------------------------------------------------------------------------
    def new(self, kind: str, name: str | None = None, need: tuple[str, ...] = ()) -> Entity:
        """An entity with every attribute filled; references to other entities are fresh names."""
        rng = self.rng
        if name is None:
            name = self.fresh_name(kind)
        attrs: dict[str, Any]
        if kind == "product":
            attrs = {"maker": self.fresh_name("company"), "year": rng.randint(1996, 2022)}
            attrs["category"] = rng.choice(CATEGORIES)
        elif kind == "film":
            attrs = {"director": self.fresh_name("person"), "year": rng.randint(1962, 2021)}
            attrs |= {"genre": rng.choice(GENRES), "minutes": rng.randint(84, 171)}
        elif kind == "book":
            attrs = {"author": self.fresh_name("person"), "year": rng.randint(1905, 2021)}
            attrs |= {"genre": rng.choice(BOOK_GENRES), "languages": rng.randint(3, 31)}
        elif kind == "ship":
            attrs = {"builder": self.fresh_name("shipyard"), "year": rng.randint(1958, 2021)}
            attrs["vessel"] = rng.choice(VESSELS)
        elif kind == "company":
            founded = rng.randint(1902, 2012)
            attrs = {
                "founder": self.fresh_name("person"),
                "founded": founded,
                "industry": "shipbuilding" if name in self.shipyards else rng.choice(INDUSTRIES),
                "hq": self.fresh_name("city"),
                "chief": self.fresh_name("person"),
                "chief_since": rng.randint(max(founded + 3, 1990), 2022),
                "employees": rng.randrange(120, 40_000, 10),
                "parent": None,
                "moved_from": None,
                "prev_chief": None,
            }
            if "parent" in need or rng.random() < 0.25:
                attrs["parent"] = self.fresh_name("company")
                attrs["parent_since"] = rng.randint(max(founded, 1980), 2022)
        elif kind == "person":
            born = rng.randint(1931, 1994)
            attrs = {
                "birthplace": self.fresh_name("city"),
                "birth_year": born,
                "alma_mater": self.fresh_name("university"),
                "graduated": born + rng.randint(21, 27),
                "profession": rng.choice(PROFESSIONS),
                "residence": self.fresh_name("city") if rng.random() < 0.5 else None,
                "residence_since": born + rng.randint(28, 40),
            }
        elif kind == "university":
            attrs = {
                "location": self.fresh_name("city"),
                "founded": rng.randint(1801, 1989),
                "students": rng.randrange(2_000, 60_000, 100),
            }
        elif kind == "city":
            attrs = {
                "region": self.fresh_name("region"),
                "population": rng.randrange(12_000, 950_000, 100),
                "census": rng.choice((2020, 2021, 2022)),
                "prev_population": None,
            }
        else:
            raise ValueError(f"unknown entity type {kind!r}")
        return Entity(kind, name, attrs)

    def change(self, entity: Entity, attr: str) -> None:
        """Give a changeable fact a superseded earlier value (moved HQ, former chief, old census)."""
        rng, a = self.rng, entity.attrs
        if attr == "hq":
            a["moved_from"] = self.fresh_name("city")
            a["move_year"] = rng.randint(max(a["founded"] + 2, 1995), 2022)
            a["profile_year"] = rng.randint(max(a["founded"] + 1, 1990), a["move_year"] - 1)
        elif attr == "chief":
            a["prev_chief"] = self.fresh_name("person")
            a["chief_since"] = max(a["chief_since"], a["founded"] + 6, 1996)
            a["prev_since"] = rng.randint(max(a["founded"] + 1, 1985), a["chief_since"] - 2)
        elif attr == "population":
            a["prev_population"] = int(a["population"] * rng.uniform(0.7, 0.93)) // 100 * 100
            a["prev_census"] = a["census"] - 10
        else:
            raise ValueError(f"{attr} does not change over time")


def _article(word: str) -> str:
    return "an" if word[0] in _VOWELS else "a"


def value_text(entity: Entity, attr: str) -> str:
    """An attribute as it is written in answers: names as they are, populations with separators."""
    value = entity.attrs[attr]
    if attr == "population":
        return f"{value:,}"
    return str(value)


def entity_doc(entity: Entity, rng: random.Random) -> tuple[str, str]:
    """(title, text) of an entity's own page. The first sentence introduces it; others follow shuffled."""
    n, a = entity.name, entity.attrs
    rest: list[str]
    if entity.type == "company":
        industry = f"{_article(a['industry'])} {a['industry']}"
        first = f"{n} is {industry} company founded in {a['founded']} by {a['founder']}."
        if a["moved_from"]:
            hq = f"In {a['move_year']}, {n} moved its headquarters from {a['moved_from']} to {a['hq']}."
        else:
            hq = f"{n} is headquartered in {a['hq']}."
        succeeding = f", succeeding {a['prev_chief']}" if a["prev_chief"] else ""
        chief = f"{a['chief']} has been chief executive of {n} since {a['chief_since']}{succeeding}."
        rest = [hq, chief, f"{n} employs about {a['employees']:,} people."]
        if a["parent"]:
            rest.append(f"{n} has been a subsidiary of {a['parent']} since {a['parent_since']}.")
    elif entity.type == "person":
        first = f"{n} is {_article(a['profession'])} {a['profession']}."
        birth = rng.choice(
            (
                f"{n} was born in {a['birthplace']} in {a['birth_year']}.",
                f"Born in {a['birthplace']} in {a['birth_year']}, {n} grew up there.",
            )
        )
        study = rng.choice(
            (
                f"{n} studied at {a['alma_mater']}.",
                f"{n} graduated from {a['alma_mater']} in {a['graduated']}.",
            )
        )
        rest = [birth, study]
        if a["residence"]:
            rest.append(f"{n} has lived in {a['residence']} since {a['residence_since']}.")
    elif entity.type == "university":
        first = rng.choice(
            (
                f"{n} is a university in {a['location']}, founded in {a['founded']}.",
                f"Founded in {a['founded']}, {n} is located in {a['location']}.",
            )
        )
        rest = [f"{n} has about {a['students']:,} students."]
    elif entity.type == "city":
        first = f"{n} is a city in the province of {a['region']}."
        rest = [f"At the {a['census']} census, {n} had a population of {a['population']:,}."]
        if a["prev_population"]:
            rest.append(f"{n} has grown steadily since the {a['prev_census']} census.")
    elif entity.type == "product":
        first = f"The {n} is {_article(a['category'])} {a['category']} made by {a['maker']}."
        rest = [f"The {n} was launched in {a['year']}."]
    elif entity.type == "film":
        first = f"{n} is a {a['year']} {a['genre']} film directed by {a['director']}."
        rest = [f"{n} runs for {a['minutes']} minutes."]
    elif entity.type == "book":
        genre = f"{_article(a['genre'])} {a['genre']}"
        first = f"{n} is {genre} novel by {a['author']}, first published in {a['year']}."
        rest = [f"{n} has been translated into {a['languages']} languages."]
    elif entity.type == "ship":
        first = f"The {n} is {_article(a['vessel'])} {a['vessel']} built by {a['builder']}."
        rest = [f"The {n} was launched in {a['year']}."]
    else:
        raise ValueError(f"unknown entity type {entity.type!r}")
    rng.shuffle(rest)
    return n, " ".join([first, *rest])


def superseded_doc(entity: Entity, attr: str, rng: random.Random) -> tuple[str, str]:
    """An older document stating the value a changeable fact had before."""
    n, a = entity.name, entity.attrs
    if attr == "hq":
        year = a["profile_year"]
        staff = max(50, int(a["employees"] * rng.uniform(0.5, 0.9)) // 10 * 10)
        return (
            f"{n} company profile, {year}",
            f"This company profile was published in {year}. {n} is headquartered in {a['moved_from']}. "
            f"{n} employs about {staff:,} people.",
        )
    if attr == "chief":
        year = a["prev_since"]
        return (
            f"Business news, {year}",
            f"{a['prev_chief']} was appointed chief executive of {n} in {year}. "
            f"The board of {n} announced the appointment at its annual meeting.",
        )
    if attr == "population":
        year = a["prev_census"]
        return (
            f"{n} census report, {year}",
            f"At the {year} census, {n} had a population of {a['prev_population']:,}. "
            f"The report also covers housing in {n}.",
        )
    raise ValueError(f"{attr} has no superseded documents")


def reference_phrase(entity: Entity) -> str:
    """How running text refers to an entity (products and ships take an article)."""
    return f"the {entity.name}" if entity.type in ("product", "ship") else entity.name


def decoy_doc(entity: Entity, world: TaskWorld) -> tuple[str, str]:
    """A news item that names the entity but states none of its facts (a keyword match, no answer)."""
    rng = world.rng
    year = rng.randint(1999, 2023)
    paper = rng.choice(PAPERS)
    ref = reference_phrase(entity)
    ref = ref[0].upper() + ref[1:]
    return (
        f"{paper}, {year}",
        f"{ref} was featured in a {year} article in the {paper} about {rng.choice(TOPICS)}. "
        f"The article quoted {world.fresh_name('person')}.",
    )
