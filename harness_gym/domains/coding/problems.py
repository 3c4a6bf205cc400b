"""Problem families of the coding domain: one kind of function each, in two concrete variants.

A family is data: a signature, a one-line docstring, a spec and a reference body, all ``string.Template``
texts with ``$name`` placeholders, plus the inputs its tests use. A variant fills the placeholders with
its own entities (function and parameter names, constants such as a window size or a unit table, the
output container). Inputs are shared by both variants; a variant may rewrite the characters of string
inputs (``translate``) where its format uses other delimiters. Expected outputs are never written here:
the generator computes them by running the reference.
"""

from __future__ import annotations

import ast
import random
import string
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

Args = tuple[Any, ...]


@dataclass(frozen=True)
class Family:
    """One kind of function. ``gen`` draws random (typical or tricky) inputs for hidden tests."""

    name: str
    difficulty: str
    signature: str
    summary: str
    spec: str
    body: str
    variants: tuple[Mapping[str, Any], Mapping[str, Any]]
    visible: tuple[Args, Args, Args]
    edge: tuple[Args, ...]
    gen: Callable[[random.Random], Args]
    imports: str = ""


@dataclass(frozen=True)
class Problem:
    """A family rendered with one variant's entities: everything the task record needs but the tests."""

    family: Family
    variant: int
    function_name: str
    signature: str
    prompt: str
    starter_code: str
    reference: str
    translate: Mapping[int, str] = field(default_factory=dict)

    def adapt(self, args: Args) -> Args:
        """The family's shared inputs in this variant's format."""
        return _map_strings(args, self.translate) if self.translate else args


def _map_strings(value: Any, table: Mapping[int, str]) -> Any:
    if isinstance(value, str):
        return value.translate(table)
    if isinstance(value, list):
        return [_map_strings(item, table) for item in value]
    if isinstance(value, tuple):
        return tuple(_map_strings(item, table) for item in value)
    if isinstance(value, dict):
        return {_map_strings(k, table): _map_strings(v, table) for k, v in value.items()}
    return value


def variant_values(variant: Mapping[str, Any]) -> dict[str, str]:
    """A variant's placeholder values as text; a value may name other placeholders (``$text[:n]``)."""
    raw = {key: str(value) for key, value in variant.items() if key != "translate"}
    return {key: string.Template(value).safe_substitute(raw) for key, value in raw.items()}


def render(family: Family, index: int) -> Problem:
    """Fill a family's templates with variant ``index``; unknown placeholders raise, so typos fail loudly."""
    variant = variant_values(family.variants[index])
    signature = string.Template(family.signature).substitute(variant)
    summary = string.Template(family.summary).substitute(variant)
    spec = string.Template(" ".join(family.spec.split())).substitute(variant)
    body = string.Template(textwrap.dedent(family.body).strip("\n")).substitute(variant)
    func = ast.parse(signature + "\n    pass").body[0]
    assert isinstance(func, ast.FunctionDef)
    call = f"{func.name}({', '.join(arg.arg for arg in func.args.args)})"
    docstring = f'    """{summary}"""\n'
    header = family.imports + "\n\n\n" if family.imports else ""
    reference = header + signature + "\n" + docstring + textwrap.indent(body, "    ") + "\n"
    starter = signature + "\n" + docstring + "    raise NotImplementedError\n"
    prompt = f"Implement `{call}` in Python (standard library only).\n\n{spec}"
    source, target = family.variants[index].get("translate", ("", ""))
    return Problem(
        family=family,
        variant=index,
        function_name=func.name,
        signature=signature,
        prompt=prompt,
        starter_code=starter,
        reference=reference,
        translate=str.maketrans(source, target) if source else {},
    )


# ---------------------------------------------------------------------------------------------------------
# Input generators: small, seeded, and biased toward the cases where implementations tend to go wrong.

_WORDS = ("the", "cat", "sat", "on", "a", "mat", "elephant", "runs", "quickly", "to", "zebra", "dog", "I")


def _letters(rng: random.Random, alphabet: str, low: int, high: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(low, high)))


def _int_list(rng: random.Random, low: int, high: int, max_len: int, min_len: int = 0) -> list[int]:
    return [rng.randint(low, high) for _ in range(rng.randint(min_len, max_len))]


def _gen_sentence(rng: random.Random) -> Args:
    words = [_letters(rng, "abcdefghij", 1, 9) for _ in range(rng.randint(0, 8))]
    text = ""
    for word in words:
        text += rng.choice((" ", " ", "  ", "\t", "\n")) + word
    return (text.strip() if rng.random() < 0.7 else text,)


def _gen_temperatures(rng: random.Random) -> Args:
    return ([round(rng.uniform(-50, 120), rng.choice((0, 1, 2))) for _ in range(rng.randint(0, 6))],)


def _gen_palindrome(rng: random.Random) -> Args:
    if rng.random() < 0.5:
        return (_letters(rng, "abAB1 ,!", 0, 9),)
    half = _letters(rng, "abcAB1", 1, 4)
    middle = rng.choice(("", "x", " ", "!"))
    mirrored = "".join(ch.swapcase() if rng.random() < 0.3 else ch for ch in half[::-1])
    punct = rng.choice(("", ",", " ", "'"))
    return (half + punct + middle + mirrored,)


def _gen_clamp(rng: random.Random) -> Args:
    return (_int_list(rng, -20, 20, 7), rng.randint(-10, 10), rng.randint(-10, 10))


def _gen_nested(rng: random.Random, depth: int = 0) -> list[Any]:
    out: list[Any] = []
    for _ in range(rng.randint(0, 3)):
        if depth < 3 and rng.random() < 0.4:
            out.append(_gen_nested(rng, depth + 1))
        else:
            out.append(rng.randint(0, 9))
    return out


def _gen_anagrams(rng: random.Random) -> Args:
    bases = ("listen", "rat", "abc", "stop", "Note")
    words = []
    for _ in range(rng.randint(0, 7)):
        letters = list(rng.choice(bases))
        rng.shuffle(letters)
        word = "".join(letters)
        words.append(word.capitalize() if rng.random() < 0.2 else word)
    return (words,)


def _gen_top_words(rng: random.Random) -> Args:
    vocab = ("apple", "Apple", "pear", "plum", "fig,", "pear!", "(plum)", "...")
    return (" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 12))),)


def _gen_kv(rng: random.Random) -> Args:
    parts = []
    for _ in range(rng.randint(0, 5)):
        key = rng.choice(("a", "b", "host", " port ", "", "x y"))
        value = rng.choice(("1", "two", " 3 ", "", "k=v"))
        parts.append(key + "=" + value if rng.random() < 0.85 else key)
    return (";".join(parts),)


def _gen_brackets(rng: random.Random) -> Args:
    if rng.random() < 0.5:
        return (_letters(rng, "()[]{}<>x", 0, 10),)
    pairs = ("()", "[]", "{}", "<>")
    text = ""
    for _ in range(rng.randint(1, 4)):
        opener, closer = rng.choice(pairs)
        text = opener + text + closer if rng.random() < 0.5 else text + opener + closer
    return (text,)


def _gen_matrix(rng: random.Random) -> Args:
    rows, cols = rng.randint(1, 4), rng.randint(1, 4)
    return ([[rng.randint(0, 20) for _ in range(cols)] for _ in range(rows)],)


def _gen_tags(rng: random.Random) -> Args:
    return ([rng.choice(("a", "A", "b", "B", "c", "ß", "SS")) for _ in range(rng.randint(0, 9))],)


def _gen_search(rng: random.Random) -> Args:
    return (sorted(_int_list(rng, -5, 10, 9)), rng.randint(-6, 11))


def _gen_ipv4(rng: random.Random) -> Args:
    parts = []
    for _ in range(rng.choice((3, 4, 4, 4, 4, 5))):
        number = rng.choice((rng.randint(0, 255), rng.randint(0, 300)))
        parts.append(("0" if rng.random() < 0.1 else "") + str(number))
    return (".".join(parts),)


def _gen_ranges(rng: random.Random) -> Args:
    values = rng.sample(range(-5, 15), rng.randint(0, 9))
    if values and rng.random() < 0.3:
        values.append(values[0])
    return (values,)


def _gen_grid(rng: random.Random) -> Args:
    rows, cols = rng.randint(1, 5), rng.randint(1, 5)
    return (["".join("#" if rng.random() < 0.45 else "." for _ in range(cols)) for _ in range(rows)],)


def _gen_identifier(rng: random.Random) -> Args:
    pieces = rng.sample(("get", "user", "ID", "http", "HTTP", "Response", "value", "2", "X", "json"), 3)
    name = ""
    for piece in pieces:
        name += piece if not name or piece.isupper() or piece.isdigit() else piece.capitalize()
    return (name,)


def _gen_prefix(rng: random.Random) -> Args:
    stem = rng.choice(("", "in", "inter", "pre", "é"))
    return ([stem + _letters(rng, "aeb", 0, 3) for _ in range(rng.randint(1, 4))],)


def _gen_password(rng: random.Random) -> Args:
    return (_letters(rng, "abcXYZ019 #", 0, 14),)


def _gen_gcd(rng: random.Random) -> Args:
    base = rng.choice((1, 2, 3, 6, 7))
    return ([base * rng.randint(-6, 12) for _ in range(rng.randint(0, 5))],)


def _gen_words_text(rng: random.Random) -> Args:
    return (" ".join(_letters(rng, "abcdefgh", 1, 8) for _ in range(rng.randint(0, 8))),)


def _gen_duration(rng: random.Random) -> Args:
    text = ""
    for _ in range(rng.randint(0, 3)):
        text += str(rng.randint(0, 90)) + rng.choice("hms") + rng.choice(("", "", " "))
    if rng.random() < 0.15:
        text += rng.choice(("7", "x", "m"))
    return (text,)


def _gen_size(rng: random.Random) -> Args:
    return (int(10 ** rng.uniform(0, 13)),)


def _gen_pairs(rng: random.Random) -> Args:
    return (_int_list(rng, -5, 5, 8), rng.randint(-5, 5))


def _gen_intervals(rng: random.Random) -> Args:
    out = []
    for _ in range(rng.randint(0, 6)):
        start = rng.randint(-10, 20)
        end = start + rng.randint(0, 6)
        out.append((end, start) if rng.random() < 0.15 else (start, end))
    return (out,)


def _gen_expression(rng: random.Random, depth: int = 0) -> str:
    if depth >= 3 or rng.random() < 0.35:
        return str(rng.randint(0, 20))
    left, right = _gen_expression(rng, depth + 1), _gen_expression(rng, depth + 1)
    op = rng.choice("+-*/")
    text = f"{left} {op} {right}"
    if rng.random() < 0.4:
        text = f"({text})"
    return f"-{text}" if rng.random() < 0.1 else text


def _gen_edit(rng: random.Random) -> Args:
    return (_letters(rng, "abc", 0, 7), _letters(rng, "abc", 0, 7))


def _gen_busy(rng: random.Random) -> Args:
    busy = []
    for _ in range(rng.randint(0, 4)):
        start = rng.randrange(420, 1080, 5)
        busy.append((start, start + rng.randrange(10, 120, 5)))
    return (busy, 480, 1020)


def _gen_unique(rng: random.Random) -> Args:
    return (_letters(rng, "abcAB", 0, 12),)


def _gen_deps(rng: random.Random) -> Args:
    nodes = rng.sample("abcdef", rng.randint(1, 6))
    deps: dict[str, list[str]] = {}
    for i, node in enumerate(nodes):
        if rng.random() < 0.8:
            deps[node] = sorted(rng.sample(nodes[:i], rng.randint(0, min(2, i))))
    if len(nodes) > 1 and rng.random() < 0.25:
        deps.setdefault(nodes[0], []).append(nodes[-1])
    return (deps,)


def _gen_csv(rng: random.Random) -> Args:
    fields = []
    for _ in range(rng.randint(1, 4)):
        value = _letters(rng, 'ab ,"', 0, 5)
        if '"' in value or "," in value or rng.random() < 0.2:
            value = '"' + value.replace('"', '""') + '"'
        fields.append(value)
    return (",".join(fields),)


def _gen_glob(rng: random.Random) -> Args:
    text = _letters(rng, "ab", 0, 6)
    pattern = "".join(rng.choice((ch, ch, "?", "*")) for ch in text)
    if rng.random() < 0.3:
        pattern += rng.choice(("a", "*", "?"))
    return (pattern, text)


def _gen_encoded(rng: random.Random, depth: int = 0) -> str:
    out = ""
    for _ in range(rng.randint(1, 3)):
        if depth < 2 and rng.random() < 0.45:
            count = rng.choice(("", "0", "1", "2", "3", "12"))
            out += count + "[" + _gen_encoded(rng, depth + 1) + "]"
        else:
            out += _letters(rng, "abc", 1, 2)
    return out


# ---------------------------------------------------------------------------------------------------------
# Easy families

EASY: tuple[Family, ...] = (
    Family(
        name="count_long_words",
        difficulty="easy",
        signature="def $fn($text: str) -> int:",
        summary="Count the words of $text longer than $k characters.",
        spec="""
            Return how many words in the string `$text` have more than $k characters. Words are separated by
            any run of whitespace (spaces, tabs, newlines); punctuation attached to a word counts toward its
            length. An empty or all-whitespace string contains no words.
        """,
        body="""
            count = 0
            for word in $text.split():
                if len(word) > $k:
                    count += 1
            return count
        """,
        variants=(
            {"fn": "count_long_words", "text": "text", "k": 5},
            {"fn": "num_words_over", "text": "sentence", "k": 3},
        ),
        visible=(
            ("the quick brown fox jumps over the lazy dog",),
            ("Elephants are enormous creatures",),
            ("a bb ccc dddd eeeee ffffff",),
        ),
        edge=(
            ("",),
            ("   \t\n ",),
            ("abc abcd abcde abcdef",),
            ("tab\tseparated\nwords here",),
            ("wait...",),
        ),
        gen=_gen_sentence,
    ),
    Family(
        name="celsius_to_fahrenheit",
        difficulty="easy",
        signature="def $fn($temps: list[float]) -> $rtype:",
        summary="Convert Celsius temperatures to Fahrenheit, rounded to $digits decimal place(s).",
        spec="""
            Convert each Celsius temperature in `$temps` to Fahrenheit (F = C * 9 / 5 + 32) and round it with
            `round(value, $digits)`. Return the converted values as a $container, in input order. An empty
            input gives an empty $container. Temperatures may be negative or fractional.
        """,
        body="""
            converted = []
            for celsius in $temps:
                converted.append(round(celsius * 9 / 5 + 32, $digits))
            return $ret
        """,
        variants=(
            {
                "fn": "c_to_f",
                "temps": "temps",
                "rtype": "list[float]",
                "ret": "converted",
                "digits": 1,
                "container": "list",
            },
            {
                "fn": "to_fahrenheit",
                "temps": "readings",
                "rtype": "tuple[float, ...]",
                "ret": "tuple(converted)",
                "digits": 2,
                "container": "tuple",
            },
        ),
        visible=(([0, 100, 37],), ([-40, 21.5],), ([36.6, 15.25, -3.3],)),
        edge=(([],), ([-273.15],), ([0.05, -0.05],), ([1000],), ([-17.78],)),
        gen=_gen_temperatures,
    ),
    Family(
        name="sum_of_multiples",
        difficulty="easy",
        signature="def $fn($limit: int) -> int:",
        summary="Sum the positive integers below $limit divisible by $a or $b.",
        spec="""
            Return the sum of all positive integers strictly below `$limit` that are divisible by $a or by $b.
            A number divisible by both is counted once. For `$limit` of 1 or less (including negative values)
            the sum is 0.
        """,
        body="""
            if $limit <= 1:
                return 0
            total = 0
            for number in range(1, $limit):
                if number % $a == 0 or number % $b == 0:
                    total += number
            return total
        """,
        variants=(
            {"fn": "sum_multiples", "limit": "limit", "a": 3, "b": 5},
            {"fn": "sum_of_multiples_below", "limit": "n", "a": 4, "b": 7},
        ),
        visible=((10,), (20,), (16,)),
        edge=((0,), (1,), (-5,), (4,), (5,), (8,), (29,)),
        gen=lambda rng: (rng.randint(2, 200),),
    ),
    Family(
        name="is_palindrome",
        difficulty="easy",
        signature="def $fn($s: str) -> $rtype:",
        summary="Tell whether $s is a palindrome, looking only at letters and digits.",
        spec="""
            Decide whether the string `$s` reads the same forwards and backwards when only its letters and
            digits (`str.isalnum`) are considered and letter case is ignored. Return $yes_desc if it does and
            $no_desc otherwise. A string with no letters or digits (including the empty string) counts as a
            palindrome.
        """,
        body="""
            left, right = 0, len($s) - 1
            while left < right:
                if not $s[left].isalnum():
                    left += 1
                    continue
                if not $s[right].isalnum():
                    right -= 1
                    continue
                if $s[left].lower() != $s[right].lower():
                    return $no
                left += 1
                right -= 1
            return $yes
        """,
        variants=(
            {
                "fn": "is_palindrome",
                "s": "text",
                "rtype": "bool",
                "yes": True,
                "no": False,
                "yes_desc": "True",
                "no_desc": "False",
            },
            {
                "fn": "palindrome_check",
                "s": "phrase",
                "rtype": "str",
                "yes": '"yes"',
                "no": '"no"',
                "yes_desc": 'the string "yes"',
                "no_desc": 'the string "no"',
            },
        ),
        visible=(("racecar",), ("A man, a plan, a canal: Panama",), ("hello",)),
        edge=(("",), ("!!",), ("Ab",), ("0P",), ("No 'x' in Nixon",), ("12321",), ("1231",), ("Été",)),
        gen=_gen_palindrome,
    ),
    Family(
        name="clamp_values",
        difficulty="easy",
        signature="def $fn($values: list[int], $lo: int, $hi: int) -> $rtype:",
        summary="Clamp every value into the closed range [$lo, $hi].",
        spec="""
            Return the values of `$values` clamped into the closed range [`$lo`, `$hi`]: a value below `$lo`
            becomes `$lo`, a value above `$hi` becomes `$hi`, others stay unchanged. If `$lo` is greater than
            `$hi`, swap the two bounds first. The result is a $container in input order; an empty input gives
            an empty $container.
        """,
        body="""
            if $lo > $hi:
                $lo, $hi = $hi, $lo
            clamped = []
            for value in $values:
                if value < $lo:
                    clamped.append($lo)
                elif value > $hi:
                    clamped.append($hi)
                else:
                    clamped.append(value)
            return $ret
        """,
        variants=(
            {
                "fn": "clamp_all",
                "values": "values",
                "lo": "lo",
                "hi": "hi",
                "rtype": "list[int]",
                "ret": "clamped",
                "container": "list",
            },
            {
                "fn": "clip_readings",
                "values": "readings",
                "lo": "low",
                "hi": "high",
                "rtype": "tuple[int, ...]",
                "ret": "tuple(clamped)",
                "container": "tuple",
            },
        ),
        visible=(([1, 5, 10], 2, 8), ([-3, 0, 3], -1, 1), ([50, 150, 99], 0, 100)),
        edge=(([], 0, 1), ([5, 5], 5, 5), ([1, 9, 4], 8, 2), ([-10, 10], -5, -5), ([3, 7], 3, 7)),
        gen=_gen_clamp,
    ),
    Family(
        name="count_vowels",
        difficulty="easy",
        signature="def $fn($word: str) -> int:",
        summary="Count the vowels ($desc) in $word, ignoring case.",
        spec="""
            Return the number of vowels in `$word`, where the vowels are $desc, in either case. Every other
            character (consonants, digits, spaces, punctuation, accented letters such as "é") is not a vowel.
        """,
        body="""
            vowels = "$vowels"
            total = 0
            for ch in $word.lower():
                if ch in vowels:
                    total += 1
            return total
        """,
        variants=(
            {"fn": "count_vowels", "word": "text", "vowels": "aeiou", "desc": "a, e, i, o and u"},
            {"fn": "vowel_total", "word": "word", "vowels": "aeiouy", "desc": "a, e, i, o, u and y"},
        ),
        visible=(("hello world",), ("AEIOU",), ("rhythm and blues",)),
        edge=(("",), ("bcd fgh",), ("Yellow sky",), ("éèa",), ("12345!?",), ("YyY",)),
        gen=lambda rng: (_letters(rng, "abeiouyxzAEY ", 0, 12),),
    ),
    Family(
        name="second_extreme",
        difficulty="easy",
        signature="def $fn($nums: list[int]) -> int | None:",
        summary="The second $word distinct value of $nums, or None.",
        spec="""
            Return the second $word distinct value in `$nums`. Duplicates count once, so for [5, 5, 3] the
            answer is $example. If there are fewer than two distinct values (including an empty list), return
            None. Values may be negative.
        """,
        body="""
            best = None
            second = None
            for value in $nums:
                if best is None or value $better best:
                    if best is not None:
                        second = best
                    best = value
                elif value != best and (second is None or value $better second):
                    second = value
            return second
        """,
        variants=(
            {"fn": "second_largest", "nums": "numbers", "better": ">", "word": "largest", "example": 3},
            {"fn": "second_smallest", "nums": "values", "better": "<", "word": "smallest", "example": 5},
        ),
        visible=(([3, 1, 4, 1, 5],), ([10, 20],), ([7, 2, 9, 4],)),
        edge=(([],), ([4],), ([2, 2, 2],), ([-1, -5, -3],), ([5, 5, 3],), ([3, 5, 5],), ([0, -1],)),
        gen=lambda rng: (_int_list(rng, -9, 9, 7),),
    ),
    Family(
        name="digit_sum",
        difficulty="easy",
        signature="def $fn($n: int) -> int:",
        summary="Sum of the $desc digits of |$n|.",
        spec="""
            Return the sum of the $desc digits of the integer `$n`. For a negative number use its absolute
            value; 0 has digit sum 0.
        """,
        body="""
            $n = abs($n)
            total = 0
            while $n > 0:
                total += $n % $base
                $n //= $base
            return total
        """,
        variants=(
            {"fn": "digit_sum", "n": "n", "base": 10, "desc": "decimal"},
            {"fn": "octal_digit_sum", "n": "number", "base": 8, "desc": "base-8 (octal)"},
        ),
        visible=((123,), (9999,), (40,)),
        edge=((0,), (-123,), (7,), (8,), (10,), (10**12,), (-1,)),
        gen=lambda rng: (rng.randint(-(10**6), 10**6),),
    ),
    Family(
        name="chunk_list",
        difficulty="easy",
        signature="def $fn($items: list[int]) -> list[$chunk_t]:",
        summary="Split $items into consecutive chunks of $size.",
        spec="""
            Split `$items` into consecutive chunks of $size elements and return them as a list of $desc, in
            order. The last chunk holds whatever is left and may be shorter. An empty input gives an empty
            list (no chunks).
        """,
        body="""
            chunks = []
            for start in range(0, len($items), $size):
                chunks.append($wrap($items[start:start + $size]))
            return chunks
        """,
        variants=(
            {
                "fn": "chunk",
                "items": "items",
                "size": 4,
                "chunk_t": "list[int]",
                "wrap": "list",
                "desc": "lists",
            },
            {
                "fn": "batches",
                "items": "records",
                "size": 3,
                "chunk_t": "tuple[int, ...]",
                "wrap": "tuple",
                "desc": "tuples",
            },
        ),
        visible=(
            ([1, 2, 3, 4, 5, 6, 7, 8],),
            ([10, 20, 30, 40, 50, 60],),
            ([5, 4, 3, 2, 1, 0, 9, 8, 7, 6, 5, 4],),
        ),
        edge=(([],), ([1],), ([1, 2, 3],), ([1, 2, 3, 4],), ([0, 0, 0, 0, 0],), ([9, 8, 7, 6, 5, 4, 3],)),
        gen=lambda rng: (_int_list(rng, 0, 99, 11),),
    ),
    Family(
        name="fizzbuzz",
        difficulty="easy",
        signature="def $fn($n: int) -> list[str]:",
        summary="The $wa$wb sequence from 1 to $n.",
        spec="""
            Return a list of strings for the numbers 1 to `$n` inclusive: "$wa" for multiples of $a, "$wb" for
            multiples of $b, "$wa$wb" for multiples of both, and otherwise the number itself as a string (e.g.
            "1"). For `$n` below 1 return an empty list.
        """,
        body="""
            out = []
            for i in range(1, $n + 1):
                word = ""
                if i % $a == 0:
                    word += "$wa"
                if i % $b == 0:
                    word += "$wb"
                out.append(word or str(i))
            return out
        """,
        variants=(
            {"fn": "fizzbuzz", "n": "n", "a": 3, "wa": "Fizz", "b": 5, "wb": "Buzz"},
            {"fn": "ping_pong", "n": "count", "a": 2, "wa": "Ping", "b": 7, "wb": "Pong"},
        ),
        visible=((15,), (6,), (14,)),
        edge=((0,), (1,), (-3,), (2,), (5,), (7,), (35,)),
        gen=lambda rng: (rng.randint(3, 40),),
    ),
)


# ---------------------------------------------------------------------------------------------------------
# Standard families

STANDARD: tuple[Family, ...] = (
    Family(
        name="run_length_encode",
        difficulty="standard",
        signature="def $fn($text: str) -> $rtype:",
        summary="Run-length encode $text.",
        spec="""
            Run-length encode the string `$text`: every maximal run of the same character becomes $format.
            Runs are case-sensitive ("aA" is two runs), counts may have several digits, and any character
            (spaces, punctuation, non-ASCII letters) can form a run. An empty string encodes to $empty_desc.
        """,
        body="""
            if not $text:
                return $empty
            runs = []
            current = $text[0]
            count = 1
            for ch in $text[1:]:
                if ch == current:
                    count += 1
                else:
                    runs.append((current, count))
                    current = ch
                    count = 1
            runs.append((current, count))
            return $ret
        """,
        variants=(
            {
                "fn": "rle_encode",
                "text": "text",
                "rtype": "str",
                "empty": '""',
                "empty_desc": "an empty string",
                "ret": '"".join(f"{ch}{n}" for ch, n in runs)',
                "format": 'the character followed by the run length, all concatenated ("aaab" gives "a3b1")',
            },
            {
                "fn": "run_lengths",
                "text": "s",
                "rtype": "list[tuple[str, int]]",
                "empty": "[]",
                "empty_desc": "an empty list",
                "ret": "runs",
                "format": 'a (character, length) tuple, in order ("aaab" gives [("a", 3), ("b", 1)])',
            },
        ),
        visible=(("aaabccdddd",), ("abc",), ("zzzzzyy",)),
        edge=(("",), ("a",), ("aaaaaaaaaaaa",), ("aAaA",), ("  !!",), ("ééé",)),
        gen=lambda rng: ("".join(rng.choice("ab") * rng.randint(1, 4) for _ in range(rng.randint(0, 5))),),
    ),
    Family(
        name="top_words",
        difficulty="standard",
        signature="def $fn($text: str) -> $rtype:",
        summary="The $k most frequent words of $text.",
        spec="""
            Find the $k most frequent words in `$text`. Split the text on whitespace, lower-case each token
            and strip the punctuation characters .,;:!?"'() from both of its ends; tokens that are empty after
            stripping are ignored. Order words by descending count, breaking ties alphabetically. If there are
            fewer than $k distinct words, return all of them. Return $format.
        """,
        body="""
            counts = {}
            for raw in $text.lower().split():
                word = raw.strip(".,;:!?\\"'()")
                if not word:
                    continue
                counts[word] = counts.get(word, 0) + 1
            ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
            return $ret
        """,
        variants=(
            {
                "fn": "top_words",
                "text": "text",
                "k": 3,
                "rtype": "list[str]",
                "ret": "[word for word, _ in ranked[:3]]",
                "format": "a list of the words",
            },
            {
                "fn": "most_frequent_words",
                "text": "document",
                "k": 2,
                "rtype": "list[tuple[str, int]]",
                "ret": "ranked[:2]",
                "format": "a list of (word, count) tuples",
            },
        ),
        visible=(
            ("the cat and the hat and the bat",),
            ("Red red RED blue, blue! green",),
            ("one two three two three three",),
        ),
        edge=(("",), ("!!! ...",), ("b a c",), ("a, A. a! b",), ("x y x y z z",), ("Straße straße",)),
        gen=_gen_top_words,
    ),
    Family(
        name="flatten_to_depth",
        difficulty="standard",
        signature="def $fn($nested: list, $depth: int) -> $rtype:",
        summary="Flatten nested lists in $nested up to $depth levels.",
        spec="""
            Flatten the nested list `$nested` by up to `$depth` levels: each inner list reached within that
            many levels is replaced by its elements, in order; lists nested deeper are kept as they are. Only
            lists are flattened (tuples and other values are kept as single elements). A `$depth` of 0 or less
            gives a shallow copy of the top level. Return the result as $container.
        """,
        body="""
            flat = []

            def walk(value, level):
                for item in value:
                    if isinstance(item, list) and level < $depth:
                        walk(item, level + 1)
                    else:
                        flat.append(item)

            walk($nested, 0)
            return $ret
        """,
        variants=(
            {
                "fn": "flatten",
                "nested": "nested",
                "depth": "depth",
                "rtype": "list",
                "ret": "flat",
                "container": "a list",
            },
            {
                "fn": "flatten_levels",
                "nested": "items",
                "depth": "max_depth",
                "rtype": "tuple",
                "ret": "tuple(flat)",
                "container": "a tuple",
            },
        ),
        visible=(([1, [2, 3], [4, [5]]], 1), ([[1, [2, [3, [4]]]]], 10), ([[1, 2], [3, [4, 5]], 6], 2)),
        edge=(([], 3), ([[], [[]]], 5), ([1, [2]], 0), ([[[[1]]]], 2), ([1, (2, [3])], 2), ([[1], 2], -1)),
        gen=lambda rng: (_gen_nested(rng), rng.randint(0, 3)),
    ),
    Family(
        name="group_anagrams",
        difficulty="standard",
        signature="def $fn($words: list[str]) -> list[list[str]]:",
        summary="Group the anagrams in $words.",
        spec="""
            Group the words of `$words` that are anagrams of each other, comparing letters case-insensitively
            ("Tea" and "eat" are anagrams). Sort each group with `sorted()` (so case-sensitive order), and
            order the groups by descending size, then by their first word. $size_rule Repeated words stay in
            their group as many times as they occur.
        """,
        body="""
            groups = {}
            for word in $words:
                key = "".join(sorted(word.lower()))
                groups.setdefault(key, []).append(word)
            result = [sorted(group) for group in groups.values() if len(group) >= $min_size]
            result.sort(key=lambda group: (-len(group), group[0]))
            return result
        """,
        variants=(
            {
                "fn": "group_anagrams",
                "words": "words",
                "min_size": 1,
                "size_rule": "Single words form groups too.",
            },
            {
                "fn": "anagram_sets",
                "words": "vocabulary",
                "min_size": 2,
                "size_rule": "Only groups of at least two words are returned.",
            },
        ),
        visible=(
            (["listen", "silent", "enlist", "google", "gooegl"],),
            (["abc", "bca", "cab", "xyz"],),
            (["rat", "tar", "art", "star", "tars"],),
        ),
        edge=(([],), (["a"],), (["Tea", "eat", "ATE"],), (["ab", "ab", "ba"],), (["", ""],), (["b", "a"],)),
        gen=_gen_anagrams,
    ),
    Family(
        name="rotate_list",
        difficulty="standard",
        signature="def $fn($items: list[int], $k: int) -> list[int]:",
        summary="Rotate $items $direction by $k positions.",
        spec="""
            Return a new list with the elements of `$items` rotated $direction by `$k` positions ($example).
            `$k` may be larger than the length, and a negative `$k` rotates the other way. An empty list stays
            empty. Do not modify the input.
        """,
        body="""
            if not $items:
                return []
            n = len($items)
            shift = $k % n
            rotated = []
            for i in range(n):
                rotated.append($items[(i $op shift) % n])
            return rotated
        """,
        variants=(
            {
                "fn": "rotate_right",
                "items": "items",
                "k": "k",
                "direction": "to the right",
                "op": "-",
                "example": "[1, 2, 3] by 1 gives [3, 1, 2]",
            },
            {
                "fn": "rotate_left",
                "items": "values",
                "k": "steps",
                "direction": "to the left",
                "op": "+",
                "example": "[1, 2, 3] by 1 gives [2, 3, 1]",
            },
        ),
        visible=(([1, 2, 3, 4, 5], 2), ([10, 20, 30], 1), ([4, 8, 15, 16, 23, 42], 3)),
        edge=(
            ([], 3),
            ([1], 100),
            ([1, 2, 3], 0),
            ([1, 2, 3], -1),
            ([1, 2, 3], 3),
            ([1, 2, 3, 4], 10),
            ([1, 2], -5),
        ),
        gen=lambda rng: (_int_list(rng, 0, 9, 7), rng.randint(-10, 10)),
    ),
    Family(
        name="moving_average",
        difficulty="standard",
        signature="def $fn($values: list[int]) -> list[float]:",
        summary="Moving averages of $values over windows of $window.",
        spec="""
            Return the averages of every window of $window consecutive values of `$values` (the first window
            starts at index 0, and windows advance by one), each rounded with `round(x, 2)`. If there are
            fewer than $window values, return an empty list.
        """,
        body="""
            if len($values) < $window:
                return []
            averages = []
            window_sum = sum($values[:$window])
            averages.append(round(window_sum / $window, 2))
            for i in range($window, len($values)):
                window_sum += $values[i] - $values[i - $window]
                averages.append(round(window_sum / $window, 2))
            return averages
        """,
        variants=(
            {"fn": "moving_average", "values": "values", "window": 3},
            {"fn": "rolling_mean", "values": "series", "window": 2},
        ),
        visible=(([1, 2, 3, 4, 5],), ([10, 20, 30, 40],), ([3, 8, 1, 9, 4, 7],)),
        edge=(([],), ([5],), ([1, 2],), ([-3, 3, -3, 3],), ([0, 0, 0],), ([1, 2, 2],)),
        gen=lambda rng: (_int_list(rng, -20, 50, 8),),
    ),
    Family(
        name="parse_key_values",
        difficulty="standard",
        signature="def $fn($spec: str) -> dict[str, str]:",
        summary="Parse '$pair_sep'-separated key${kv_sep}value pairs from $spec.",
        spec="""
            Parse `$spec`, a list of entries separated by "$pair_sep", into a dict. An entry is split at its
            first "$kv_sep" into key and value (the value may itself contain "$kv_sep"); both are stripped of
            surrounding whitespace. Entries without "$kv_sep" and entries whose key is empty are ignored. When
            a key occurs more than once, the last value wins.
        """,
        body="""
            result = {}
            for part in $spec.split("$pair_sep"):
                if "$kv_sep" not in part:
                    continue
                key, _, value = part.partition("$kv_sep")
                key = key.strip()
                if not key:
                    continue
                result[key] = value.strip()
            return result
        """,
        variants=(
            {"fn": "parse_settings", "spec": "text", "pair_sep": ";", "kv_sep": "="},
            {
                "fn": "parse_header_fields",
                "spec": "line",
                "pair_sep": ",",
                "kv_sep": ":",
                "translate": (";=", ",:"),
            },
        ),
        visible=(("host=localhost;port=8080",), ("a=1; b=2 ;c=3",), ("name=Ann;name=Bob;age=30",)),
        edge=(
            ("",),
            (";;;",),
            ("novalue;x=1",),
            ("=orphan;y=2",),
            ("url=a=b;k= v ",),
            ("k=",),
            ("  key  =  spaced value  ",),
        ),
        gen=_gen_kv,
    ),
    Family(
        name="caesar_shift",
        difficulty="standard",
        signature="def $fn($message: str) -> str:",
        summary="Shift the ASCII letters of $message $desc.",
        spec="""
            Shift every ASCII letter of `$message` $desc in the alphabet, wrapping around ("$wrap_example"),
            and keep its case. Every other character (digits, spaces, punctuation, non-ASCII letters such as
            "é") is kept unchanged.
        """,
        body="""
            out = []
            for ch in $message:
                if "a" <= ch <= "z":
                    out.append(chr((ord(ch) - ord("a") + $shift) % 26 + ord("a")))
                elif "A" <= ch <= "Z":
                    out.append(chr((ord(ch) - ord("A") + $shift) % 26 + ord("A")))
                else:
                    out.append(ch)
            return "".join(out)
        """,
        variants=(
            {
                "fn": "caesar_encrypt",
                "message": "plaintext",
                "shift": 3,
                "desc": "forward by 3 positions",
                "wrap_example": "x becomes a",
            },
            {
                "fn": "caesar_decrypt",
                "message": "ciphertext",
                "shift": -5,
                "desc": "back by 5 positions",
                "wrap_example": "c becomes x",
            },
        ),
        visible=(("hello world",), ("Attack at Dawn!",), ("xyz",)),
        edge=(("",), ("ABC xyz",), ("123 !?",), ("Zebra-Ähre",), ("aZ",), ("{[`@]}",)),
        gen=lambda rng: (_letters(rng, "abxyzABXYZ 1!é", 0, 12),),
    ),
    Family(
        name="balanced_brackets",
        difficulty="standard",
        signature="def $fn($expr: str) -> bool:",
        summary="Whether the brackets $kinds in $expr are balanced.",
        spec="""
            Return True if the brackets $kinds in `$expr` are balanced: every closing bracket matches the most
            recent unmatched opening bracket of the same kind, and none is left open at the end. All other
            characters (including other bracket kinds) are ignored. A string with no brackets is balanced.
        """,
        body="""
            pairs = {$pairs}
            openers = set(pairs.values())
            stack = []
            for ch in $expr:
                if ch in openers:
                    stack.append(ch)
                elif ch in pairs:
                    if not stack or stack[-1] != pairs[ch]:
                        return False
                    stack.pop()
            return not stack
        """,
        variants=(
            {
                "fn": "is_balanced",
                "expr": "expr",
                "pairs": '")": "(", "]": "[", "}": "{"',
                "kinds": "(), [] and {}",
            },
            {"fn": "brackets_match", "expr": "source", "pairs": '")": "(", ">": "<"', "kinds": "() and <>"},
        ),
        visible=(("(a[b]<c>{d})",), ("(]>",), ("{[()()]}<<>>",)),
        edge=(("",), ("(",), (")",), ("([)]",), ("<(>)",), ("no brackets",), ("(((",), ("()()())",)),
        gen=_gen_brackets,
    ),
    Family(
        name="spiral_order",
        difficulty="standard",
        signature="def $fn($matrix: list[list[int]]) -> $rtype:",
        summary="The elements of $matrix in clockwise spiral order.",
        spec="""
            Return the elements of the rectangular matrix `$matrix` (a list of equally long rows) in clockwise
            spiral order: along the top row left to right, down the right column, along the bottom row right
            to left, up the left column, then the same for the inner matrix. The matrix need not be square.
            Return $format. A matrix with no rows or with empty rows gives $empty_desc.
        """,
        body="""
            result = []
            if not $matrix or not $matrix[0]:
                return $empty
            top, bottom = 0, len($matrix) - 1
            left, right = 0, len($matrix[0]) - 1
            while top <= bottom and left <= right:
                for col in range(left, right + 1):
                    result.append($matrix[top][col])
                top += 1
                for row in range(top, bottom + 1):
                    result.append($matrix[row][right])
                right -= 1
                if top <= bottom:
                    for col in range(right, left - 1, -1):
                        result.append($matrix[bottom][col])
                    bottom -= 1
                if left <= right:
                    for row in range(bottom, top - 1, -1):
                        result.append($matrix[row][left])
                    left += 1
            return $ret
        """,
        variants=(
            {
                "fn": "spiral_order",
                "matrix": "matrix",
                "rtype": "list[int]",
                "ret": "result",
                "empty": "[]",
                "format": "a list of the elements",
                "empty_desc": "an empty list",
            },
            {
                "fn": "spiral_string",
                "matrix": "grid",
                "rtype": "str",
                "empty": '""',
                "ret": '" ".join(str(value) for value in result)',
                "format": 'a string of the elements separated by single spaces (e.g. "1 2 4 3")',
                "empty_desc": "an empty string",
            },
        ),
        visible=(
            ([[1, 2, 3], [4, 5, 6], [7, 8, 9]],),
            ([[1, 2, 3, 4], [5, 6, 7, 8]],),
            ([[1, 2], [3, 4], [5, 6]],),
        ),
        edge=(
            ([],),
            ([[]],),
            ([[7]],),
            ([[1, 2, 3]],),
            ([[1], [2], [3]],),
            ([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]],),
        ),
        gen=_gen_matrix,
    ),
    Family(
        name="limit_repeats",
        difficulty="standard",
        signature="def $fn($items: list[str]) -> $rtype:",
        summary="Drop repeated entries of $items beyond the first $limit.",
        spec="""
            Return the entries of `$items` in their original order, keeping $keep_desc of each entry and
            dropping later repeats. $compare Return $container.
        """,
        body="""
            seen = {}
            kept = []
            for item in $items:
                key = $key
                if seen.get(key, 0) < $limit:
                    kept.append(item)
                    seen[key] = seen.get(key, 0) + 1
            return $ret
        """,
        variants=(
            {
                "fn": "dedupe",
                "keep_desc": "only the first occurrence",
                "items": "items",
                "key": "item",
                "limit": 1,
                "rtype": "list[str]",
                "ret": "kept",
                "compare": "Entries are compared exactly (case matters).",
                "container": "a list",
            },
            {
                "fn": "cap_repeats",
                "keep_desc": "at most the first two occurrences",
                "items": "tags",
                "key": "item.casefold()",
                "limit": 2,
                "rtype": "tuple[str, ...]",
                "ret": "tuple(kept)",
                "container": "a tuple",
                "compare": 'Entries are compared case-insensitively with str.casefold() ("ß" equals "SS"), '
                "but kept as written.",
            },
        ),
        visible=((["a", "b", "a", "c", "b"],), (["x", "y", "z"],), (["red", "Red", "red", "blue", "RED"],)),
        edge=(
            ([],),
            (["a"],),
            (["a", "a", "a", "a", "a"],),
            (["Straße", "STRASSE", "strasse"],),
            (["", "", ""],),
        ),
        gen=_gen_tags,
    ),
    Family(
        name="first_index_sorted",
        difficulty="standard",
        signature="def $fn($sorted_values: list[int], $target: int) -> $rtype:",
        summary="Index of the first occurrence of $target in a sorted list.",
        spec="""
            `$sorted_values` is sorted in non-decreasing order and may contain duplicates. Return the index of
            the first occurrence of `$target`, or $missing_desc if it does not occur. Use binary search (O(log
            n) comparisons).
        """,
        body="""
            lo, hi = 0, len($sorted_values)
            while lo < hi:
                mid = (lo + hi) // 2
                if $sorted_values[mid] < $target:
                    lo = mid + 1
                else:
                    hi = mid
            if lo < len($sorted_values) and $sorted_values[lo] == $target:
                return lo
            return $missing
        """,
        variants=(
            {
                "fn": "find_first",
                "sorted_values": "values",
                "target": "target",
                "rtype": "int",
                "missing": -1,
                "missing_desc": "-1",
            },
            {
                "fn": "first_index_of",
                "sorted_values": "arr",
                "target": "x",
                "rtype": "int | None",
                "missing": None,
                "missing_desc": "None",
            },
        ),
        visible=(([1, 3, 5, 7, 9], 7), ([2, 4, 4, 4, 8], 4), ([10, 20, 30], 25)),
        edge=(
            ([], 1),
            ([5], 5),
            ([5], 4),
            ([1, 1, 1, 1], 1),
            ([1, 2, 3], 0),
            ([1, 2, 3], 4),
            ([-5, -3, -3, 0], -3),
        ),
        gen=_gen_search,
    ),
    Family(
        name="pascal_row",
        difficulty="standard",
        signature="def $fn($n: int) -> $rtype:",
        summary="Row $n of Pascal's triangle.",
        spec="""
            Return row `$n` of Pascal's triangle (the binomial coefficients C($n, 0) .. C($n, $n)) as a
            $container; row 0 is $row0. For a negative `$n` return an empty $container.
        """,
        body="""
            if $n < 0:
                return $empty
            row = [1]
            for _ in range($n):
                row = [1] + [row[i] + row[i + 1] for i in range(len(row) - 1)] + [1]
            return $ret
        """,
        variants=(
            {
                "fn": "pascal_row",
                "n": "n",
                "rtype": "list[int]",
                "empty": "[]",
                "ret": "row",
                "container": "list",
                "row0": "[1]",
            },
            {
                "fn": "binomial_coefficients",
                "n": "power",
                "rtype": "tuple[int, ...]",
                "empty": "()",
                "ret": "tuple(row)",
                "container": "tuple",
                "row0": "(1,)",
            },
        ),
        visible=((4,), (1,), (6,)),
        edge=((0,), (-1,), (2,), (10,), (20,), (-7,)),
        gen=lambda rng: (rng.randint(0, 15),),
    ),
    Family(
        name="int_to_roman",
        difficulty="standard",
        signature="def $fn($number: int) -> str:",
        summary="Roman numeral for $number.",
        spec="""
            Return the Roman numeral for `$number` in standard subtractive form (4 is IV, 9 is IX, 40 is XL,
            90 is XC, 400 is CD, 900 is CM), written in $case letters. Numbers outside 1..3999 cannot be
            written and give an empty string.
        """,
        body="""
            if $number <= 0 or $number >= 4000:
                return ""
            numerals = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
                        (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
            parts = []
            for value, symbol in numerals:
                while $number >= value:
                    parts.append(symbol)
                    $number -= value
            return $ret
        """,
        variants=(
            {"fn": "to_roman", "number": "number", "case": "upper-case", "ret": '"".join(parts)'},
            {"fn": "roman_lower", "number": "n", "case": "lower-case", "ret": '"".join(parts).lower()'},
        ),
        visible=((1994,), (58,), (9,)),
        edge=((0,), (-5,), (4000,), (3999,), (4,), (40,), (1,), (444,)),
        gen=lambda rng: (rng.randint(1, 3999),),
    ),
    Family(
        name="parse_ipv4",
        difficulty="standard",
        signature="def $fn($address: str) -> $rtype:",
        summary="Validate the dotted-quad IPv4 address $address.",
        spec="""
            Check whether `$address` is a dotted-quad IPv4 address: exactly four parts separated by ".", each
            made only of ASCII digits 0-9, with a value from 0 to 255 and no leading zero (except "0" itself).
            Nothing else is allowed (no spaces, signs or empty parts). Return $good_desc when valid and
            $bad_desc otherwise.
        """,
        body="""
            parts = $address.split(".")
            if len(parts) != 4:
                return $bad
            for part in parts:
                if not part.isdigit() or not part.isascii():
                    return $bad
                if len(part) > 1 and part[0] == "0":
                    return $bad
                if int(part) > 255:
                    return $bad
            return $good
        """,
        variants=(
            {
                "fn": "is_valid_ipv4",
                "address": "address",
                "rtype": "bool",
                "good": True,
                "bad": False,
                "good_desc": "True",
                "bad_desc": "False",
            },
            {
                "fn": "parse_ipv4",
                "address": "text",
                "rtype": "tuple[int, int, int, int] | None",
                "good": "tuple(int(part) for part in parts)",
                "bad": None,
                "good_desc": "the four numbers as a tuple of ints",
                "bad_desc": "None",
            },
        ),
        visible=(("192.168.1.1",), ("256.1.1.1",), ("10.0.0",)),
        edge=(
            ("",),
            ("0.0.0.0",),
            ("255.255.255.255",),
            ("01.2.3.4",),
            ("1.2.3.4.",),
            ("1..2.3",),
            ("1.2.3.-4",),
            ("١.2.3.4",),
            (" 1.2.3.4",),
        ),
        gen=_gen_ipv4,
    ),
    Family(
        name="compress_ranges",
        difficulty="standard",
        signature="def $fn($numbers: list[int]) -> $rtype:",
        summary="Summarise the integers of $numbers as ranges.",
        spec="""
            Summarise the integers in `$numbers` (any order, duplicates allowed) as sorted ranges of
            consecutive values. A run of two or more consecutive values is written "start${dash}end" and a
            lone value as just the number, e.g. [5, 1, 2, 3, 7] gives $example. Negative numbers are written
            with their minus sign. Return $format; no numbers give $empty_desc.
        """,
        body="""
            values = sorted(set($numbers))
            pieces = []
            i = 0
            while i < len(values):
                j = i
                while j + 1 < len(values) and values[j + 1] == values[j] + 1:
                    j += 1
                if j == i:
                    pieces.append(str(values[i]))
                else:
                    pieces.append(f"{values[i]}$dash{values[j]}")
                i = j + 1
            return $ret
        """,
        variants=(
            {
                "fn": "compress_ranges",
                "numbers": "numbers",
                "dash": "-",
                "rtype": "str",
                "ret": '",".join(pieces)',
                "example": '"1-3,5,7"',
                "format": 'one string with the pieces joined by ","',
                "empty_desc": "an empty string",
            },
            {
                "fn": "summarize_ids",
                "numbers": "ids",
                "dash": "..",
                "rtype": "list[str]",
                "ret": "pieces",
                "example": '["1..3", "5", "7"]',
                "format": "a list of the pieces",
                "empty_desc": "an empty list",
            },
        ),
        visible=(([1, 2, 3, 5, 7, 8, 9],), ([4, 2, 3],), ([10, 12, 14],)),
        edge=(([],), ([5],), ([3, 3, 3],), ([-3, -2, -1, 1],), ([2, 1],), ([1, 2, 4, 5, 7],)),
        gen=_gen_ranges,
    ),
    Family(
        name="count_islands",
        difficulty="standard",
        signature="def $fn($grid: list[str]) -> int:",
        summary="Count the islands of '$land' cells in $grid.",
        spec="""
            `$grid` is a list of equally long strings; "$land" marks land and "$water" water. Count the
            islands: groups of land cells connected $connect. An empty grid (no rows, or empty rows) has no
            islands.
        """,
        body="""
            rows = len($grid)
            cols = len($grid[0]) if rows else 0
            seen = set()
            islands = 0
            for r in range(rows):
                for c in range(cols):
                    if $grid[r][c] != "$land" or (r, c) in seen:
                        continue
                    islands += 1
                    stack = [(r, c)]
                    seen.add((r, c))
                    while stack:
                        cr, cc = stack.pop()
                        for dr, dc in $moves:
                            nr, nc = cr + dr, cc + dc
                            inside = 0 <= nr < rows and 0 <= nc < cols
                            if inside and (nr, nc) not in seen and $grid[nr][nc] == "$land":
                                seen.add((nr, nc))
                                stack.append((nr, nc))
            return islands
        """,
        variants=(
            {
                "fn": "count_islands",
                "grid": "grid",
                "land": "#",
                "water": ".",
                "moves": "((1, 0), (-1, 0), (0, 1), (0, -1))",
                "connect": "horizontally or vertically (diagonal neighbours are not connected)",
            },
            {
                "fn": "count_regions",
                "grid": "rows_of_cells",
                "land": "1",
                "water": "0",
                "moves": "((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))",
                "connect": "horizontally, vertically or diagonally (8 neighbours)",
                "translate": ("#.", "10"),
            },
        ),
        visible=((["##..", "#...", "..##"],), (["#.#", ".#.", "#.#"],), (["###", "#.#", "###"],)),
        edge=(([],), ([""],), (["...."],), (["#"],), (["#.", ".#"],), (["##", "##"],), (["#.#.#"],)),
        gen=_gen_grid,
    ),
    Family(
        name="camel_to_snake",
        difficulty="standard",
        signature="def $fn($name: str) -> str:",
        summary="Convert the camelCase identifier $name to $style.",
        spec="""
            Convert the camelCase or PascalCase identifier `$name` to $style: lower-case everything and put a
            "$sep" before each upper-case letter that starts a new word. An upper-case letter starts a word
            when it is not the first character and either follows a lower-case letter or a digit, or is
            followed by a lower-case letter (so acronyms stay together: "parseHTTPResponse" becomes
            "parse${sep}http${sep}response", "userID" becomes "user${sep}id").
        """,
        body="""
            out = []
            for i, ch in enumerate($name):
                if ch.isupper():
                    after_word = i > 0 and ($name[i - 1].islower() or $name[i - 1].isdigit())
                    starts_word = i > 0 and i + 1 < len($name) and $name[i + 1].islower()
                    if after_word or starts_word:
                        out.append("$sep")
                    out.append(ch.lower())
                else:
                    out.append(ch)
            return "".join(out)
        """,
        variants=(
            {"fn": "camel_to_snake", "name": "name", "sep": "_", "style": "snake_case"},
            {"fn": "to_kebab_case", "name": "identifier", "sep": "-", "style": "kebab-case"},
        ),
        visible=(("camelCase",), ("parseHttpResponse",), ("userID",)),
        edge=(
            ("",),
            ("a",),
            ("HTTPServer",),
            ("getX",),
            ("version2Update",),
            ("Already",),
            ("ABC",),
            ("parseHTTPResponse",),
        ),
        gen=_gen_identifier,
    ),
    Family(
        name="histogram_buckets",
        difficulty="standard",
        signature="def $fn($values: list[int]) -> $rtype:",
        summary="Count $values in buckets of width $width.",
        spec="""
            Count the integers of `$values` in buckets of width $width aligned at multiples of $width: a value
            v falls in the bucket starting at the largest multiple of $width not greater than v (so -1 falls
            in the bucket starting at -$width). Return $format, including only non-empty buckets.
        """,
        body="""
            counts = {}
            for value in $values:
                start = (value // $width) * $width
                counts[start] = counts.get(start, 0) + 1
            return $ret
        """,
        variants=(
            {
                "fn": "bucket_counts",
                "values": "values",
                "width": 10,
                "rtype": "dict[int, int]",
                "ret": "dict(sorted(counts.items()))",
                "format": "a dict mapping bucket start to count",
            },
            {
                "fn": "histogram",
                "values": "samples",
                "width": 5,
                "rtype": "list[tuple[int, int]]",
                "ret": "sorted(counts.items())",
                "format": "a list of (bucket start, count) tuples sorted by start",
            },
        ),
        visible=(([1, 5, 12, 18, 25],), ([0, 9, 10, 19, 20],), ([33, 31, 47],)),
        edge=(([],), ([-1, -10, -11],), ([0],), ([5, 5, 5],), ([4, 5, 9, 10],)),
        gen=lambda rng: (_int_list(rng, -30, 60, 9),),
    ),
    Family(
        name="common_prefix",
        difficulty="standard",
        signature="def $fn($words: list[str]) -> $rtype:",
        summary="Longest common prefix of $words.",
        spec="""
            Return the longest string that is a prefix of every string in `$words` (case-sensitive, character
            by character). If the list is empty or the strings share no prefix, return $none_desc.
        """,
        body="""
            if not $words:
                return $none
            prefix = $words[0]
            for word in $words[1:]:
                i = 0
                while i < len(prefix) and i < len(word) and prefix[i] == word[i]:
                    i += 1
                prefix = prefix[:i]
                if not prefix:
                    break
            return $ret
        """,
        variants=(
            {
                "fn": "longest_common_prefix",
                "words": "words",
                "rtype": "str",
                "none": '""',
                "ret": "prefix",
                "none_desc": "an empty string",
            },
            {
                "fn": "shared_prefix",
                "words": "names",
                "rtype": "str | None",
                "none": "None",
                "ret": "prefix or None",
                "none_desc": "None",
            },
        ),
        visible=(
            (["flower", "flow", "flight"],),
            (["interview", "internet", "interval"],),
            (["dog", "racecar", "car"],),
        ),
        edge=(
            ([],),
            (["alone"],),
            (["", "abc"],),
            (["same", "same"],),
            (["ab", "a"],),
            (["Apple", "apple"],),
            (["héllo", "hélium"],),
        ),
        gen=_gen_prefix,
    ),
    Family(
        name="longest_run",
        difficulty="standard",
        signature="def $fn($values: list[int]) -> int:",
        summary="Length of the longest $kind run in $values.",
        spec="""
            Return the length of the longest contiguous run of `$values` in which each element is $relation
            the one before it. A single element is a run of length 1; an empty list gives 0.
        """,
        body="""
            if not $values:
                return 0
            best = 1
            current = 1
            for i in range(1, len($values)):
                if $values[i] $cmp $values[i - 1]:
                    current += 1
                    best = max(best, current)
                else:
                    current = 1
            return best
        """,
        variants=(
            {
                "fn": "longest_increasing_run",
                "values": "values",
                "cmp": ">",
                "kind": "strictly increasing",
                "relation": "strictly greater than",
            },
            {
                "fn": "longest_non_decreasing_streak",
                "values": "prices",
                "cmp": ">=",
                "kind": "non-decreasing",
                "relation": "greater than or equal to",
            },
        ),
        visible=(([1, 2, 3, 1, 2],), ([5, 4, 3],), ([1, 3, 5, 4, 7, 8, 9],)),
        edge=(([],), ([7],), ([2, 2, 2],), ([1, 2, 2, 3],), ([-3, -2, -1, -1],), ([3, 2, 1, 2, 3, 4],)),
        gen=lambda rng: (_int_list(rng, 0, 5, 9),),
    ),
    Family(
        name="most_common_char",
        difficulty="standard",
        signature="def $fn($text: str) -> str | None:",
        summary="The most frequent non-whitespace character of $text.",
        spec="""
            Return the most frequent character of `$text`, ignoring whitespace. $case_rule If several
            characters are equally frequent, return the one that appears first in the text. Return None if
            there is no non-whitespace character.
        """,
        body="""
            counts = {}
            first_seen = {}
            for i, ch in enumerate($text):
                if ch.isspace():
                    continue
                key = $key
                counts[key] = counts.get(key, 0) + 1
                if key not in first_seen:
                    first_seen[key] = i
            if not counts:
                return None
            return min(counts, key=lambda k: (-counts[k], first_seen[k]))
        """,
        variants=(
            {
                "fn": "most_common_char",
                "text": "text",
                "key": "ch",
                "case_rule": "Characters are compared exactly (case-sensitive).",
            },
            {
                "fn": "dominant_letter",
                "text": "sample",
                "key": "ch.lower()",
                "case_rule": "Case is ignored: count ch.lower() and return the lower-case form.",
            },
        ),
        visible=(("hello world",), ("Mississippi",), ("abcabcab",)),
        edge=(("",), ("   ",), ("aAbB",), ("ba",), ("xyyx",), ("ÉéE",), ("!!??",), ("AaBbb",)),
        gen=lambda rng: (_letters(rng, "aAbBc ", 0, 10),),
    ),
    Family(
        name="password_problems",
        difficulty="standard",
        signature="def $fn($password: str) -> $rtype:",
        summary="The rules that $password breaks.",
        spec="""
            Check `$password` against these rules, in this order, and report each rule it breaks with the
            given message: at least $min_len characters ("too short"); at least one digit ("no digit"); at
            least one upper-case letter ("no uppercase"); at least one lower-case letter ("no lowercase"); no
            whitespace at the start or end ("$space_msg"). Unicode letters and digits count (use str.isdigit,
            str.isupper, str.islower). Return $format.
        """,
        body="""
            problems = []
            if len($password) < $min_len:
                problems.append("too short")
            if not any(ch.isdigit() for ch in $password):
                problems.append("no digit")
            if not any(ch.isupper() for ch in $password):
                problems.append("no uppercase")
            if not any(ch.islower() for ch in $password):
                problems.append("no lowercase")
            if $password.strip() != $password:
                problems.append("$space_msg")
            return $ret
        """,
        variants=(
            {
                "fn": "password_problems",
                "password": "password",
                "min_len": 8,
                "space_msg": "edge whitespace",
                "rtype": "list[str]",
                "ret": "problems",
                "format": "the list of messages (empty when all rules hold)",
            },
            {
                "fn": "audit_password",
                "password": "secret",
                "min_len": 12,
                "space_msg": "padded",
                "rtype": "str",
                "ret": '"; ".join(problems) or "ok"',
                "format": 'the messages joined by "; ", or "ok" when all rules hold',
            },
        ),
        visible=(("abc",), ("Password123",), ("ALLUPPERCASE1",)),
        edge=(
            ("",),
            (" Secret123 ",),
            ("Abcdefg1",),
            ("Abcdefghijk1",),
            ("Abcdefghij1",),
            ("12345678",),
            ("ÄÖÜäöü123456",),
        ),
        gen=_gen_password,
    ),
    Family(
        name="primes_below",
        difficulty="standard",
        signature="def $fn($limit: int) -> $rtype:",
        summary="The primes below $limit.",
        spec="""
            Using the sieve of Eratosthenes, find the prime numbers strictly below `$limit` and return
            $format. For `$limit` of 2 or less (including negative values) there are none.
        """,
        body="""
            if $limit < 3:
                return $empty
            is_prime = [True] * $limit
            is_prime[0] = is_prime[1] = False
            for i in range(2, int($limit ** 0.5) + 1):
                if is_prime[i]:
                    for j in range(i * i, $limit, i):
                        is_prime[j] = False
            primes = [i for i in range($limit) if is_prime[i]]
            return $ret
        """,
        variants=(
            {
                "fn": "primes_below",
                "limit": "limit",
                "rtype": "list[int]",
                "empty": "[]",
                "ret": "primes",
                "format": "them as an increasing list",
            },
            {
                "fn": "count_primes",
                "limit": "n",
                "rtype": "int",
                "empty": 0,
                "ret": "len(primes)",
                "format": "how many there are",
            },
        ),
        visible=((10,), (30,), (20,)),
        edge=((0,), (1,), (2,), (3,), (-7,), (4,), (49,), (100,)),
        gen=lambda rng: (rng.randint(0, 120),),
    ),
    Family(
        name="gcd_of_list",
        difficulty="standard",
        signature="def $fn($numbers: list[int]) -> int:",
        summary="Greatest common divisor of $numbers.",
        spec="""
            Return the greatest common divisor of all integers in `$numbers`, computed with Euclid's
            algorithm. Signs are ignored (the result is never negative), zeros do not change the result
            (gcd(0, n) = |n|), and an empty list or a list of zeros gives 0.
        """,
        body="""
            result = 0
            for value in $numbers:
                a, b = abs(result), abs(value)
                while b:
                    a, b = b, a % b
                result = a
            return result
        """,
        variants=({"fn": "gcd_all", "numbers": "numbers"}, {"fn": "common_divisor", "numbers": "values"}),
        visible=(([12, 18, 24],), ([7, 13],), ([100, 75, 50],)),
        edge=(([],), ([0],), ([0, 0],), ([-4, 6],), ([5],), ([0, 9],), ([-8],)),
        gen=_gen_gcd,
    ),
    Family(
        name="word_wrap",
        difficulty="standard",
        signature="def $fn($text: str) -> $rtype:",
        summary="Greedily wrap $text to lines of at most $width characters.",
        spec="""
            Wrap the words of `$text` (split on any whitespace) greedily into lines of at most $width
            characters: put words on the current line, separated by single spaces, while the line stays within
            $width characters, then start a new line. A word longer than $width goes alone on its own line.
            Return $format; text without words gives $empty_desc.
        """,
        body="""
            lines = []
            current = ""
            for word in $text.split():
                if not current:
                    current = word
                elif len(current) + 1 + len(word) <= $width:
                    current += " " + word
                else:
                    lines.append(current)
                    current = word
            if current:
                lines.append(current)
            return $ret
        """,
        variants=(
            {
                "fn": "wrap_words",
                "text": "text",
                "width": 10,
                "rtype": "list[str]",
                "ret": "lines",
                "format": "the list of lines",
                "empty_desc": "an empty list",
            },
            {
                "fn": "wrap_paragraph",
                "text": "paragraph",
                "width": 16,
                "rtype": "str",
                "ret": '"\\n".join(lines)',
                "format": 'the lines joined with "\\n"',
                "empty_desc": "an empty string",
            },
        ),
        visible=(
            ("the quick brown fox jumps over the lazy dog",),
            ("hello world",),
            ("a bb ccc dddd eeeee ffffff ggggggg",),
        ),
        edge=(
            ("",),
            ("   ",),
            ("supercalifragilistic",),
            ("exactlyten",),
            ("aaaa bbbbb",),
            ("a\nb\tc",),
            ("sixteen chars ok x",),
        ),
        gen=_gen_words_text,
    ),
    Family(
        name="parse_duration",
        difficulty="standard",
        signature="def $fn($spec: str) -> int:",
        summary="Total $result_unit in the duration $spec.",
        spec="""
            `$spec` is a duration such as "$example": numbers, each followed by a unit ($units_desc). Spaces
            are ignored and units may repeat (their amounts add up). Return the total in $result_unit. An
            empty string is 0. Return -1 if the text is malformed: a unit without a number, a number without a
            unit, or any other character.
        """,
        body="""
            units = {$units}
            total = 0
            number = ""
            for ch in $spec.replace(" ", ""):
                if "0" <= ch <= "9":
                    number += ch
                elif ch in units:
                    if not number:
                        return -1
                    total += int(number) * units[ch]
                    number = ""
                else:
                    return -1
            if number:
                return -1
            return total
        """,
        variants=(
            {
                "fn": "duration_seconds",
                "spec": "text",
                "units": '"h": 3600, "m": 60, "s": 1',
                "units_desc": "h for hours, m for minutes, s for seconds",
                "result_unit": "seconds",
                "example": "1h 30m 15s",
            },
            {
                "fn": "duration_minutes",
                "spec": "duration",
                "units": '"d": 1440, "h": 60, "m": 1',
                "units_desc": "d for days, h for hours, m for minutes",
                "result_unit": "minutes",
                "example": "2d 4h 30m",
                "translate": ("hms", "dhm"),
            },
        ),
        visible=(("1h30m",), ("45s",), ("2h 5m 10s",)),
        edge=(("",), ("10",), ("h",), ("1x",), ("0s",), ("1h1h",), ("90m",), ("3 h",), ("1h-5m",)),
        gen=_gen_duration,
    ),
    Family(
        name="human_size",
        difficulty="standard",
        signature="def $fn($num_bytes: int) -> str:",
        summary="Human-readable size of $num_bytes bytes ($base-based units).",
        spec="""
            Format the non-negative byte count `$num_bytes` for humans using $base-based units $units_desc.
            Divide by $base while the value is at least $base and a larger unit exists. A size in plain bytes
            is written as an integer and the unit (e.g. "512 B"); larger units get one decimal place and the
            unit (e.g. "$example").
        """,
        body="""
            units = [$units]
            scaled = float($num_bytes)
            index = 0
            while scaled >= $base and index < len(units) - 1:
                scaled /= $base
                index += 1
            if index == 0:
                return f"{$num_bytes} {units[0]}"
            return f"{scaled:.1f} {units[index]}"
        """,
        variants=(
            {
                "fn": "format_bytes",
                "num_bytes": "num_bytes",
                "base": 1024,
                "units": '"B", "KiB", "MiB", "GiB", "TiB"',
                "units_desc": "B, KiB, MiB, GiB, TiB",
                "example": "1.5 KiB",
            },
            {
                "fn": "human_size",
                "num_bytes": "size",
                "base": 1000,
                "units": '"B", "kB", "MB", "GB"',
                "units_desc": "B, kB, MB, GB",
                "example": "1.5 kB",
            },
        ),
        visible=((512,), (1536,), (5000000,)),
        edge=((0,), (1023,), (1024,), (1000,), (999,), (10**15,), (1048575,)),
        gen=_gen_size,
    ),
    Family(
        name="pairs_with_sum",
        difficulty="standard",
        signature="def $fn($numbers: list[int], $target: int) -> $rtype:",
        summary="Distinct pairs of $numbers that add up to $target.",
        spec="""
            Find the distinct pairs of values (a, b) with a <= b and a + b == `$target`, where a and b are
            elements at two different positions of `$numbers`. Each pair of values counts once however often
            it occurs. Return $format.
        """,
        body="""
            seen = set()
            pairs = set()
            for value in $numbers:
                complement = $target - value
                if complement in seen:
                    pairs.add((min(value, complement), max(value, complement)))
                seen.add(value)
            return $ret
        """,
        variants=(
            {
                "fn": "pairs_with_sum",
                "numbers": "numbers",
                "target": "target",
                "rtype": "list[tuple[int, int]]",
                "ret": "sorted(pairs)",
                "format": "the pairs as a sorted list of tuples",
            },
            {
                "fn": "count_sum_pairs",
                "numbers": "amounts",
                "target": "total",
                "rtype": "int",
                "ret": "len(pairs)",
                "format": "how many such pairs there are",
            },
        ),
        visible=(([1, 2, 3, 4, 5], 6), ([0, -1, 2, -3, 1], -2), ([3, 3, 4, 2], 6)),
        edge=(([], 5), ([5], 10), ([5, 5], 10), ([1, 1, 1], 2), ([-2, 2, 0, 0], 0), ([1, 2], 4)),
        gen=_gen_pairs,
    ),
    Family(
        name="rotate_matrix",
        difficulty="standard",
        signature="def $fn($matrix: list[list[int]]) -> list[list[int]]:",
        summary="Rotate $matrix by 90 degrees $direction.",
        spec="""
            Return a new matrix that is `$matrix` (a list of equally long rows, not necessarily square)
            rotated by 90 degrees $direction: $example. An empty matrix gives an empty list.
        """,
        body="""
            if not $matrix:
                return []
            rows, cols = len($matrix), len($matrix[0])
            rotated = []
            for c in $col_range:
                new_row = []
                for r in $row_range:
                    new_row.append($matrix[r][c])
                rotated.append(new_row)
            return rotated
        """,
        variants=(
            {
                "fn": "rotate_clockwise",
                "matrix": "matrix",
                "direction": "clockwise",
                "col_range": "range(cols)",
                "row_range": "range(rows - 1, -1, -1)",
                "example": "[[1, 2], [3, 4]] becomes [[3, 1], [4, 2]]",
            },
            {
                "fn": "rotate_counterclockwise",
                "matrix": "grid",
                "direction": "counter-clockwise",
                "col_range": "range(cols - 1, -1, -1)",
                "row_range": "range(rows)",
                "example": "[[1, 2], [3, 4]] becomes [[2, 4], [1, 3]]",
            },
        ),
        visible=(([[1, 2], [3, 4]],), ([[1, 2, 3], [4, 5, 6], [7, 8, 9]],), ([[1, 2, 3], [4, 5, 6]],)),
        edge=(([],), ([[5]],), ([[1, 2, 3]],), ([[1], [2], [3]],), ([[0, 0], [0, 0]],)),
        gen=_gen_matrix,
    ),
)


# ---------------------------------------------------------------------------------------------------------
# Hard families

HARD: tuple[Family, ...] = (
    Family(
        name="merge_intervals",
        difficulty="hard",
        signature="def $fn($ranges: list[tuple[int, int]]) -> $rtype:",
        summary="Merge the $kind ranges of $ranges.",
        spec="""
            Merge the integer ranges in `$ranges` (given in any order) and return the merged ranges sorted by
            start, as $format. A range given backwards, like (5, 2), means (2, 5). $rule No ranges give an
            empty list.
        """,
        body="""
            cleaned = []
            for start, end in $ranges:
                if start > end:
                    start, end = end, start
                cleaned.append((start, end))
            cleaned.sort()
            merged = []
            for start, end in cleaned:
                if merged and $overlaps:
                    merged[-1] = (merged[-1][0], max(merged[-1][1], end))
                else:
                    merged.append((start, end))
            return $ret
        """,
        variants=(
            {
                "fn": "merge_ranges",
                "ranges": "ranges",
                "kind": "closed",
                "rtype": "list[tuple[int, int]]",
                "overlaps": "start <= merged[-1][1] + 1",
                "ret": "merged",
                "format": "a list of (start, end) tuples",
                "rule": "Ranges are closed (both ends included), so overlapping ranges and ranges that are "
                "merely adjacent, like (1, 3) and (4, 6), merge into one.",
            },
            {
                "fn": "merge_spans",
                "ranges": "spans",
                "kind": "half-open",
                "rtype": "list[list[int]]",
                "overlaps": "start < merged[-1][1]",
                "ret": "[list(pair) for pair in merged]",
                "format": "a list of [start, end] lists",
                "rule": "Ranges are half-open [start, end): two ranges merge only if they share at least one "
                "point, so (1, 3) and (3, 6) stay separate, while (1, 4) and (3, 6) merge into (1, 6).",
            },
        ),
        visible=(([(1, 3), (2, 6), (8, 10), (15, 18)],), ([(1, 4), (4, 5)],), ([(5, 7), (1, 2)],)),
        edge=(
            ([],),
            ([(3, 1)],),
            ([(1, 2), (3, 4)],),
            ([(1, 10), (2, 3), (4, 5)],),
            ([(-5, -1), (-2, 0)],),
            ([(1, 1), (1, 1)],),
            ([(0, 2), (2, 4), (5, 6)],),
            ([(4, 6), (1, 3)],),
        ),
        gen=_gen_intervals,
    ),
    Family(
        name="evaluate_expression",
        difficulty="hard",
        signature="def $fn($expression: str) -> int:",
        summary="Evaluate the integer arithmetic expression $expression.",
        spec="""
            Evaluate `$expression`, an arithmetic expression over non-negative integer literals with the
            binary operators + - * /, unary minus and parentheses, without using eval. * and / bind tighter
            than + and -, operators of equal precedence associate to the left, and spaces may appear anywhere
            between tokens. / is $division. Raise ValueError on any other character. Inputs never divide by
            zero.
        """,
        body="""
            tokens = []
            i = 0
            while i < len($expression):
                ch = $expression[i]
                if ch.isspace():
                    i += 1
                elif "0" <= ch <= "9":
                    j = i
                    while j < len($expression) and "0" <= $expression[j] <= "9":
                        j += 1
                    tokens.append(int($expression[i:j]))
                    i = j
                elif ch in "+-*/()":
                    tokens.append(ch)
                    i += 1
                else:
                    raise ValueError(f"unexpected character {ch!r}")
            pos = 0

            def peek():
                return tokens[pos] if pos < len(tokens) else None

            def parse_sum():
                nonlocal pos
                value = parse_product()
                while peek() in ("+", "-"):
                    op = tokens[pos]
                    pos += 1
                    rhs = parse_product()
                    value = value + rhs if op == "+" else value - rhs
                return value

            def parse_product():
                nonlocal pos
                value = parse_factor()
                while peek() in ("*", "/"):
                    op = tokens[pos]
                    pos += 1
                    rhs = parse_factor()
                    if op == "*":
                        value = value * rhs
                    else:
                        value = $divide
                return value

            def parse_factor():
                nonlocal pos
                token = peek()
                if token == "-":
                    pos += 1
                    return -parse_factor()
                if token == "(":
                    pos += 1
                    value = parse_sum()
                    pos += 1
                    return value
                pos += 1
                return token

            return parse_sum()
        """,
        variants=(
            {
                "fn": "evaluate",
                "expression": "expr",
                "divide": "value // rhs",
                "division": "floor division, like Python's // (-7 / 2 is -4)",
            },
            {
                "fn": "calculate",
                "expression": "formula",
                "divide": "abs(value) // abs(rhs) * (1 if (value < 0) == (rhs < 0) else -1)",
                "division": "integer division truncating toward zero, like C (-7 / 2 is -3)",
            },
        ),
        visible=(("1 + 2 * 3",), ("(4 + 6) / 3",), ("10 - 4 - 3",)),
        edge=(
            ("42",),
            ("-7 / 2",),
            ("7 / -2",),
            ("2 * (3 + 4) * 5",),
            ("-(2 + 3)",),
            ("((1))",),
            ("100 / 7 / 2",),
            ("1 - -1",),
            ("  8/4/2  ",),
        ),
        gen=lambda rng: (_gen_expression(rng),),
    ),
    Family(
        name="edit_distance",
        difficulty="hard",
        signature="def $fn($source: str, $target: str) -> int:",
        summary="$name distance between $source and $target.",
        spec="""
            Return the minimum total cost of turning `$source` into `$target` with single-character edits:
            inserting or deleting a character costs 1 and replacing one character by another costs $sub_cost.
            Compare characters exactly (case-sensitive, any Unicode character). Use O(len($source) *
            len($target)) time.
        """,
        body="""
            if len($source) < len($target):
                $source, $target = $target, $source
            previous = list(range(len($target) + 1))
            for i, x in enumerate($source, start=1):
                current = [i]
                for j, y in enumerate($target, start=1):
                    cost = 0 if x == y else $sub_cost
                    current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost))
                previous = current
            return previous[-1]
        """,
        variants=(
            {"fn": "levenshtein", "source": "a", "target": "b", "sub_cost": 1, "name": "Levenshtein"},
            {
                "fn": "weighted_edit_distance",
                "source": "old",
                "target": "new",
                "sub_cost": 2,
                "name": "Weighted edit",
            },
        ),
        visible=(("kitten", "sitting"), ("flaw", "lawn"), ("abc", "abc")),
        edge=(
            ("", ""),
            ("", "abc"),
            ("abc", ""),
            ("a", "b"),
            ("ab", "ba"),
            ("naïve", "naive"),
            ("😀a", "a😀"),
        ),
        gen=_gen_edit,
    ),
    Family(
        name="free_slots",
        difficulty="hard",
        signature="def $fn($busy: list[tuple[int, int]], $day_start: int, $day_end: int) -> $rtype:",
        summary="Free slots of at least $min_len minutes between $day_start and $day_end.",
        spec="""
            Times are minutes since midnight. `$busy` lists busy intervals (start, end), unsorted and possibly
            overlapping, and possibly reaching outside the working day [`$day_start`, `$day_end`]; intervals
            with end <= start are ignored. Return the free gaps inside the working day that last at least
            $min_len minutes, in chronological order, as $format.
        """,
        body="""
            slots = []
            cursor = $day_start
            for start, end in sorted($busy):
                start, end = max(start, $day_start), min(end, $day_end)
                if start >= end:
                    continue
                if start - cursor >= $min_len:
                    slots.append((cursor, start))
                cursor = max(cursor, end)
            if $day_end - cursor >= $min_len:
                slots.append((cursor, $day_end))
            return $ret
        """,
        variants=(
            {
                "fn": "free_slots",
                "busy": "busy",
                "day_start": "day_start",
                "day_end": "day_end",
                "min_len": 30,
                "rtype": "list[tuple[int, int]]",
                "ret": "slots",
                "format": "a list of (start, end) tuples",
            },
            {
                "fn": "open_windows",
                "busy": "meetings",
                "day_start": "opens",
                "day_end": "closes",
                "min_len": 15,
                "rtype": "list[str]",
                "ret": '[f"{a // 60:02d}:{a % 60:02d}-{b // 60:02d}:{b % 60:02d}" for a, b in slots]',
                "format": 'a list of "HH:MM-HH:MM" strings (e.g. "09:00-10:30")',
            },
        ),
        visible=(([(540, 600), (660, 720)], 480, 1020), ([(600, 630)], 540, 720), ([(480, 1020)], 480, 1020)),
        edge=(
            ([], 540, 600),
            ([(500, 560), (550, 700)], 540, 720),
            ([(0, 2000)], 540, 720),
            ([(700, 650)], 540, 720),
            ([(600, 610), (620, 630)], 540, 720),
            ([(570, 600)], 540, 630),
            ([(555, 600)], 540, 615),
            ([(560, 600), (540, 570)], 540, 660),
        ),
        gen=_gen_busy,
    ),
    Family(
        name="longest_unique_substring",
        difficulty="hard",
        signature="def $fn($text: str) -> $rtype:",
        summary="Longest substring of $text without repeated characters.",
        spec="""
            Find the longest substring of `$text` in which no character repeats$case_rule. If several are
            equally long, take the leftmost. Return $format. Any Unicode character may occur.
        """,
        body="""
            last_index = {}
            best_start, best_len = 0, 0
            start = 0
            for i, ch in enumerate($text):
                key = $key
                if key in last_index and last_index[key] >= start:
                    start = last_index[key] + 1
                last_index[key] = i
                if i - start + 1 > best_len:
                    best_start, best_len = start, i - start + 1
            return $ret
        """,
        variants=(
            {
                "fn": "longest_unique_substring",
                "text": "text",
                "key": "ch",
                "case_rule": " (case-sensitive)",
                "rtype": "str",
                "ret": "$text[best_start:best_start + best_len]",
                "format": "the substring itself (empty for an empty text)",
            },
            {
                "fn": "unique_window",
                "text": "s",
                "key": "ch.lower()",
                "case_rule": ', comparing case-insensitively ("a" and "A" count as the same character)',
                "rtype": "tuple[int, int]",
                "ret": "(best_start, best_len)",
                "format": "(start index, length); an empty text gives (0, 0)",
            },
        ),
        visible=(("abcabcbb",), ("pwwkew",), ("bbbbb",)),
        edge=(("",), ("a",), ("abba",), ("aAbB",), ("dvdf",), ("tmmzuxt",), ("😀😁😀",), ("abcdef",)),
        gen=_gen_unique,
    ),
    Family(
        name="topological_order",
        difficulty="hard",
        signature="def $fn($deps: dict[str, list[str]]) -> $rtype:",
        summary="Order the $items of $deps so that prerequisites come first.",
        spec="""
            `$deps` maps each $item to the list of $items it depends on (its prerequisites). A $item that only
            appears as a prerequisite is part of the graph too, and a prerequisite may be listed twice. Return
            all $items in an order where every $item comes after its prerequisites; whenever several $items
            are available, take the alphabetically smallest first, so the answer is unique. If the
            dependencies contain a cycle (including a $item depending on itself), return $cycle_desc.
        """,
        imports="import heapq",
        body="""
            nodes = set($deps)
            for prereqs in $deps.values():
                nodes.update(prereqs)
            nodes = sorted(nodes)
            remaining = {node: 0 for node in nodes}
            dependents = {node: [] for node in nodes}
            for node, prereqs in $deps.items():
                for prereq in dict.fromkeys(prereqs):
                    remaining[node] += 1
                    dependents[prereq].append(node)
            ready = [node for node in nodes if remaining[node] == 0]
            heapq.heapify(ready)
            order = []
            while ready:
                node = heapq.heappop(ready)
                order.append(node)
                for nxt in dependents[node]:
                    remaining[nxt] -= 1
                    if remaining[nxt] == 0:
                        heapq.heappush(ready, nxt)
            if len(order) != len(nodes):
                return $cycle
            return order
        """,
        variants=(
            {
                "fn": "build_order",
                "deps": "deps",
                "item": "task",
                "items": "tasks",
                "rtype": "list[str] | None",
                "cycle": None,
                "cycle_desc": "None",
            },
            {
                "fn": "course_schedule",
                "deps": "prerequisites",
                "item": "course",
                "items": "courses",
                "rtype": "list[str]",
                "cycle": "[]",
                "cycle_desc": "an empty list",
            },
        ),
        visible=(
            ({"b": ["a"], "c": ["b"]},),
            ({"app": ["lib", "utils"], "lib": ["utils"]},),
            ({"x": [], "y": [], "z": ["x"]},),
        ),
        edge=(
            ({},),
            ({"a": ["a"]},),
            ({"a": ["b"], "b": ["a"]},),
            ({"a": ["b", "b"]},),
            ({"d": ["c"], "b": ["a"], "c": []},),
            ({"a": [], "b": ["c"], "c": ["b"]},),
        ),
        gen=_gen_deps,
    ),
    Family(
        name="split_csv_line",
        difficulty="hard",
        signature="def $fn($line: str) -> list[str]:",
        summary="Split one $delim_name-separated line with quoting into fields.",
        spec="""
            Split `$line` into fields separated by "$delim" ($delim_name), honouring double quotes, without
            the csv module. A double quote switches quoted mode on and off and is not part of the field;
            inside quoted mode the delimiter is ordinary text and a doubled quote "" stands for one literal
            quote. An unterminated quote runs to the end of the line. Fields are not stripped. An empty line
            is one empty field, and n delimiters always give n + 1 fields.
        """,
        body="""
            fields = []
            current = []
            in_quotes = False
            i = 0
            while i < len($line):
                ch = $line[i]
                if in_quotes:
                    if ch == '"':
                        if i + 1 < len($line) and $line[i + 1] == '"':
                            current.append('"')
                            i += 1
                        else:
                            in_quotes = False
                    else:
                        current.append(ch)
                elif ch == '"':
                    in_quotes = True
                elif ch == "$delim":
                    fields.append("".join(current))
                    current = []
                else:
                    current.append(ch)
                i += 1
            fields.append("".join(current))
            return fields
        """,
        variants=(
            {"fn": "split_csv_line", "line": "line", "delim": ",", "delim_name": "comma"},
            {
                "fn": "split_semicolon_record",
                "line": "record",
                "delim": ";",
                "delim_name": "semicolon",
                "translate": (",;", ";,"),
            },
        ),
        visible=(("a,b,c",), ('name,"Smith, John",42',), ('"say ""hi""",x',)),
        edge=(
            ("",),
            (",",),
            ('""',),
            ('"a,b"',),
            ("a,,b",),
            ('"unterminated,x',),
            ('x,"",y',),
            ("é,ü",),
            ('a"b,c"d',),
            ('""""',),
        ),
        gen=_gen_csv,
    ),
    Family(
        name="min_coins",
        difficulty="hard",
        signature="def $fn($amount: int) -> $rtype:",
        summary="Fewest $unit from $coins that make $amount.",
        spec="""
            $Unit come in the denominations $coins_desc, with an unlimited supply of each. Return the smallest
            number of $unit whose values add up exactly to `$amount` (0 for an amount of 0). Greedy choice is
            not always optimal. If the amount cannot be made, or is negative, return $none_desc.
        """,
        body="""
            coins = $coins
            if $amount < 0:
                return $none
            impossible = $amount + 1
            best = [0] + [impossible] * $amount
            for value in range(1, $amount + 1):
                for coin in coins:
                    if coin <= value and best[value - coin] + 1 < best[value]:
                        best[value] = best[value - coin] + 1
            if best[$amount] >= impossible:
                return $none
            return best[$amount]
        """,
        variants=(
            {
                "fn": "min_coins",
                "unit": "coins",
                "Unit": "Coins",
                "amount": "amount",
                "coins": "(1, 3, 4)",
                "coins_desc": "1, 3 and 4",
                "rtype": "int",
                "none": -1,
                "none_desc": "-1",
            },
            {
                "fn": "fewest_stamps",
                "unit": "stamps",
                "Unit": "Stamps",
                "amount": "postage",
                "coins": "(2, 5, 7)",
                "coins_desc": "2, 5 and 7",
                "rtype": "int | None",
                "none": None,
                "none_desc": "None",
            },
        ),
        visible=((6,), (11,), (12,)),
        edge=((0,), (-3,), (1,), (2,), (3,), (4,), (100,), (8,)),
        gen=lambda rng: (rng.randint(0, 60),),
    ),
    Family(
        name="wildcard_match",
        difficulty="hard",
        signature="def $fn($pattern: str, $text: str) -> bool:",
        summary="Whether $text matches the wildcard pattern $pattern.",
        spec="""
            Return True if the whole of `$text` matches `$pattern`, where "$any" matches exactly one
            character, "*" matches any sequence of characters (including none), and every other pattern
            character matches itself (case-sensitive). An empty pattern matches only the empty text. The run
            time must stay polynomial (no exponential backtracking).
        """,
        body="""
            p, t = 0, 0
            star, mark = -1, 0
            while t < len($text):
                if p < len($pattern) and ($pattern[p] == "$any" or $pattern[p] == $text[t]):
                    p += 1
                    t += 1
                elif p < len($pattern) and $pattern[p] == "*":
                    star, mark = p, t
                    p += 1
                elif star != -1:
                    p = star + 1
                    mark += 1
                    t = mark
                else:
                    return False
            while p < len($pattern) and $pattern[p] == "*":
                p += 1
            return p == len($pattern)
        """,
        variants=(
            {"fn": "glob_match", "pattern": "pattern", "text": "text", "any": "?"},
            {"fn": "wildcard_match", "pattern": "mask", "text": "name", "any": ".", "translate": ("?", ".")},
        ),
        visible=(("a*b", "axxb"), ("h?llo", "hello"), ("*.txt", "notes.md")),
        edge=(
            ("", ""),
            ("", "a"),
            ("*", ""),
            ("**", "abc"),
            ("?", ""),
            ("a*", "a"),
            ("*a*b*", "xaybz"),
            ("a*b*c", "abcbc"),
            ("?*?", "ab"),
            ("ä*", "äx"),
        ),
        gen=_gen_glob,
    ),
    Family(
        name="decode_repeats",
        difficulty="hard",
        signature="def $fn($encoded: str) -> str:",
        summary="Expand the nested repeat groups of $encoded.",
        spec="""
            Expand `$encoded`, where k${open}...${close} means the bracketed text repeated k times; groups may
            be nested ("3${open}a2${open}c${close}${close}" gives "accaccacc") and k may have several digits
            or be 0. Handle malformed input leniently: a group without a number is kept once, digits not
            directly followed by "$open" are literal text, a "$close" with no open group is ignored, and
            groups still open at the end are closed there.
        """,
        body="""
            stack = []
            current = ""
            digits = ""
            for ch in $encoded:
                if ch.isdigit():
                    digits += ch
                elif ch == "$open":
                    stack.append((current, int(digits) if digits else 1))
                    current, digits = "", ""
                elif ch == "$close":
                    current += digits
                    digits = ""
                    if not stack:
                        continue
                    previous, repeat = stack.pop()
                    current = previous + current * repeat
                else:
                    current += digits + ch
                    digits = ""
            current += digits
            while stack:
                previous, repeat = stack.pop()
                current = previous + current * repeat
            return current
        """,
        variants=(
            {"fn": "decode_repeats", "encoded": "encoded", "open": "[", "close": "]"},
            {
                "fn": "expand_groups",
                "encoded": "pattern",
                "open": "(",
                "close": ")",
                "translate": ("[]", "()"),
            },
        ),
        visible=(("3[a]2[bc]",), ("3[a2[c]]",), ("2[abc]3[cd]ef",)),
        edge=(
            ("",),
            ("abc",),
            ("10[x]",),
            ("[ab]",),
            ("0[a]b",),
            ("a2b",),
            ("2[a3]",),
            ("ab]c",),
            ("2[a",),
            ("2[ä]",),
        ),
        gen=lambda rng: (_gen_encoded(rng),),
    ),
)

FAMILIES: tuple[Family, ...] = EASY + STANDARD + HARD
