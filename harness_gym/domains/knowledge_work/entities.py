"""Name pools for the knowledge-work generator: each template family owns a disjoint slice.

Family ``i`` gets company ``COMPANIES[i]``, offices ``CITIES[3i:3i+3]``, people built from
``FIRST[3i:3i+3]`` x ``LAST[3i:3i+3]`` and topic ``TOPICS[i]``, so no company, office, person or
topic is shared by two families, and hence none by the train and eval splits.
"""

from __future__ import annotations

N_FAMILIES = 35

COMPANIES: tuple[str, ...] = (
    "Norvik Logistics", "Altamira Foods", "Brightwell Pharma", "Calder Finch", "Duskmoor Textiles",
    "Everbay Insurance", "Fernhill Robotics", "Glenmark Shipping", "Halden Analytics", "Ironvale Mining",
    "Juniper Retail", "Kestrel Aviation", "Lumen Health", "Marlow Bank", "Northgate Media",
    "Orchid Hotels", "Pellucid Optics", "Quayside Energy", "Redfern Consulting", "Saltmarsh Brewing",
    "Tidewater Telecom", "Umbra Security", "Verdant Agritech", "Westbrook Legal", "Yarrow Software",
    "Zephyr Mobility", "Ashcombe Builders", "Bramble Cosmetics", "Coldwater Seafood", "Driftwood Furniture",
    "Emberly Games", "Foxglove Publishing", "Granite Peak Outdoor", "Harbourlight Events", "Inkwell Printing",
)  # fmt: skip

CITIES: tuple[str, ...] = (
    "Lisbon", "Porto", "Madrid", "Seville", "Valencia", "Bilbao", "Lyon", "Marseille", "Toulouse",
    "Bordeaux", "Nantes", "Lille", "Brussels", "Antwerp", "Ghent", "Rotterdam", "Utrecht", "Eindhoven",
    "Hamburg", "Munich", "Cologne", "Leipzig", "Dresden", "Stuttgart", "Zurich", "Geneva", "Basel",
    "Vienna", "Graz", "Salzburg", "Prague", "Brno", "Warsaw", "Krakow", "Gdansk", "Wroclaw",
    "Budapest", "Debrecen", "Bratislava", "Ljubljana", "Zagreb", "Rijeka", "Belgrade", "Sofia", "Bucharest",
    "Cluj", "Athens", "Thessaloniki", "Milan", "Turin", "Bologna", "Naples", "Florence", "Genoa",
    "Dublin", "Cork", "Galway", "Edinburgh", "Glasgow", "Leeds", "Bristol", "Manchester", "Cardiff",
    "Belfast", "Oslo", "Bergen", "Stockholm", "Gothenburg", "Malmo", "Copenhagen", "Aarhus", "Helsinki",
    "Tampere", "Tallinn", "Riga", "Vilnius", "Reykjavik", "Toronto", "Montreal", "Vancouver", "Calgary",
    "Boston", "Denver", "Austin", "Seattle", "Chicago", "Atlanta", "Phoenix", "Portland", "Miami",
    "Dallas", "Detroit", "Nashville", "Monterrey", "Guadalajara", "Bogota", "Quito", "Santiago",
    "Montevideo", "Sydney", "Melbourne", "Brisbane", "Perth", "Auckland", "Singapore",
)  # fmt: skip

FIRST: tuple[str, ...] = (
    "Ana", "Bruno", "Clara", "Diego", "Elena", "Felix", "Greta", "Hugo", "Ines", "Jonas", "Karin",
    "Luca", "Marta", "Nils", "Olga", "Pablo", "Quinn", "Rosa", "Stefan", "Tilda", "Umar", "Vera",
    "Willem", "Xenia", "Yusuf", "Zora", "Aldo", "Beatriz", "Cyril", "Dagny", "Emil", "Fatima",
    "Gustav", "Helga", "Ivo", "Jana", "Kasper", "Lena", "Mateo", "Nadia", "Oskar", "Petra", "Rafael",
    "Sanna", "Tomas", "Ulla", "Viktor", "Wanda", "Yannick", "Zeynep", "Anders", "Bianca", "Conrad",
    "Delia", "Erik", "Freya", "Gideon", "Hanna", "Igor", "Jorun", "Kenji", "Lotte", "Marius", "Noor",
    "Otto", "Paula", "Ruben", "Selma", "Teodor", "Ursula", "Valter", "Wiebke", "Xavier", "Yara",
    "Zeno", "Agnes", "Basil", "Celine", "Dario", "Edith", "Filip", "Gisela", "Henrik", "Irene",
    "Joaquin", "Katya", "Lorenz", "Mirja", "Nuno", "Odile", "Piet", "Renata", "Soren", "Thea", "Uwe",
    "Viola", "Wout", "Ximena", "Yves", "Zita", "Arvid", "Brigitte", "Cosmin", "Dorota", "Elias",
)  # fmt: skip

LAST: tuple[str, ...] = (
    "Amaral", "Whitfield", "Okafor", "Brandt", "Castell", "Duarte", "Eriksen", "Fontaine", "Galvez",
    "Hartmann", "Ilves", "Jansen", "Kowalski", "Lindqvist", "Moreau", "Novak", "Oliveira", "Petrov",
    "Quist", "Rossi", "Schreiber", "Takahashi", "Urquhart", "Varga", "Weiss", "Xu", "Yilmaz", "Zimmer",
    "Abbott", "Bellamy", "Cardoso", "Dekker", "Ekdahl", "Ferrante", "Gallo", "Holm", "Ibsen",
    "Jovanovic", "Keller", "Lund", "Marchetti", "Nyberg", "Ortega", "Pereira", "Rasmussen", "Sandoval",
    "Toivonen", "Ueda", "Vidal", "Wolff", "Yamada", "Zeller", "Achterberg", "Barros", "Cimino",
    "Dalgaard", "Esposito", "Falk", "Grieve", "Hoffmann", "Ivanova", "Juhl", "Kaur", "Laine", "Mendes",
    "Nakamura", "Olsen", "Pacheco", "Renner", "Salo", "Tanaka", "Ulrich", "Valente", "Wagner",
    "Yusupov", "Zanetti", "Arnesen", "Bauer", "Coelho", "Dragan", "Engel", "Fischer", "Gomes", "Haas",
    "Iversen", "Jaeger", "Kraus", "Lorenzi", "Meyer", "Nilsen", "Ostrowski", "Pihl", "Richter",
    "Strand", "Thorsen", "Ulvestad", "Vos", "Winter", "Youngblood", "Zorn", "Aalto", "Bergmann",
    "Conti", "Dahl", "Eklund",
)  # fmt: skip

TOPICS: tuple[tuple[str, str], ...] = (
    ("marketing", "marketing"), ("travel", "travel"), ("training", "training"),
    ("software licence", "software"), ("consulting", "consulting"), ("recruitment", "recruitment"),
    ("equipment", "equipment"), ("events", "events"), ("facilities", "facilities"), ("legal", "legal"),
    ("catering", "catering"), ("shipping", "shipping"), ("cloud hosting", "cloud"),
    ("client entertainment", "entertainment"), ("maintenance", "maintenance"),
    ("office supplies", "supplies"), ("translation", "translation"), ("security", "security"),
    ("insurance", "insurance"), ("utilities", "utilities"), ("printing", "printing"),
    ("market research", "research"), ("sponsorship", "sponsorship"), ("telecom", "telecom"),
    ("courier", "courier"), ("fleet", "fleet"), ("advertising", "advertising"), ("cleaning", "cleaning"),
    ("audit", "audit"), ("data subscription", "data"), ("relocation", "relocation"),
    ("conference", "conference"), ("hardware", "hardware"), ("design agency", "design"),
    ("temp staffing", "staffing"),
)  # fmt: skip
"""(topic as written in prose, category as written in table cells)."""

VENDOR_STEMS: tuple[str, ...] = (
    "Apex", "Borealis", "Cobalt", "Deltaline", "Evergreen", "Fjordlight", "Goldcrest", "Helix",
    "Indigo", "Jetstream", "Keystone", "Lighthouse", "Meridian", "Nimbus", "Orbital", "Pinnacle",
    "Quartzite", "Riverside", "Summitview", "Tangent", "Umberline", "Vantage", "Windrose", "Zenith",
)  # fmt: skip
"""Vendors on invoice tables: five per invoice family, disjoint between families."""

CURRENCIES: tuple[str, ...] = ("EUR", "USD", "GBP", "CHF", "SEK", "CAD", "AUD", "NOK", "DKK", "SGD")


def check_pools() -> None:
    for name, pool, size in (
        ("COMPANIES", COMPANIES, N_FAMILIES),
        ("CITIES", CITIES, 3 * N_FAMILIES),
        ("FIRST", FIRST, 3 * N_FAMILIES),
        ("LAST", LAST, 3 * N_FAMILIES),
        ("TOPICS", TOPICS, N_FAMILIES),
    ):
        if len(pool) != size or len(set(pool)) != size:
            raise AssertionError(f"{name} needs {size} distinct entries, has {len(set(pool))}/{len(pool)}")
