"""Problem families of the coding domain: one kind of function each, in two concrete variants.

A family's data lives in ``problems.toml`` beside this module: its name, difficulty, signature, one-line
docstring and spec (``string.Template`` texts with ``$name`` placeholders), the inputs of its visible
and edge-case tests (each an argument tuple written as a Python literal) and its two variants. A variant
fills the placeholders with its own entities (function and parameter names, constants such as a window
size or a unit table, the output container; every value is used as its text). Inputs are shared by both
variants; a variant may rewrite the characters of string inputs (``translate``) where its format uses
other delimiters. Expected outputs are never written anywhere: the generator computes them by running
the reference.

What is code stays here: each family's reference body (``REFERENCES``, a template like the texts in the
data file) and the seeded generator of its random hidden-test inputs (``RANDOM_INPUTS``).
"""

from __future__ import annotations

import ast
import random
import string
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness_gym.domains.base import read_toml

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


RANDOM_INPUTS: dict[str, Callable[[random.Random], Args]] = {
    "count_long_words": _gen_sentence,
    "celsius_to_fahrenheit": _gen_temperatures,
    "sum_of_multiples": lambda rng: (rng.randint(2, 200),),
    "is_palindrome": _gen_palindrome,
    "clamp_values": _gen_clamp,
    "count_vowels": lambda rng: (_letters(rng, "abeiouyxzAEY ", 0, 12),),
    "second_extreme": lambda rng: (_int_list(rng, -9, 9, 7),),
    "digit_sum": lambda rng: (rng.randint(-(10**6), 10**6),),
    "chunk_list": lambda rng: (_int_list(rng, 0, 99, 11),),
    "fizzbuzz": lambda rng: (rng.randint(3, 40),),
    "run_length_encode": lambda rng: (
        "".join(rng.choice("ab") * rng.randint(1, 4) for _ in range(rng.randint(0, 5))),
    ),
    "top_words": _gen_top_words,
    "flatten_to_depth": lambda rng: (_gen_nested(rng), rng.randint(0, 3)),
    "group_anagrams": _gen_anagrams,
    "rotate_list": lambda rng: (_int_list(rng, 0, 9, 7), rng.randint(-10, 10)),
    "moving_average": lambda rng: (_int_list(rng, -20, 50, 8),),
    "parse_key_values": _gen_kv,
    "caesar_shift": lambda rng: (_letters(rng, "abxyzABXYZ 1!é", 0, 12),),
    "balanced_brackets": _gen_brackets,
    "spiral_order": _gen_matrix,
    "limit_repeats": _gen_tags,
    "first_index_sorted": _gen_search,
    "pascal_row": lambda rng: (rng.randint(0, 15),),
    "int_to_roman": lambda rng: (rng.randint(1, 3999),),
    "parse_ipv4": _gen_ipv4,
    "compress_ranges": _gen_ranges,
    "count_islands": _gen_grid,
    "camel_to_snake": _gen_identifier,
    "histogram_buckets": lambda rng: (_int_list(rng, -30, 60, 9),),
    "common_prefix": _gen_prefix,
    "longest_run": lambda rng: (_int_list(rng, 0, 5, 9),),
    "most_common_char": lambda rng: (_letters(rng, "aAbBc ", 0, 10),),
    "password_problems": _gen_password,
    "primes_below": lambda rng: (rng.randint(0, 120),),
    "gcd_of_list": _gen_gcd,
    "word_wrap": _gen_words_text,
    "parse_duration": _gen_duration,
    "human_size": _gen_size,
    "pairs_with_sum": _gen_pairs,
    "rotate_matrix": _gen_matrix,
    "merge_intervals": _gen_intervals,
    "evaluate_expression": lambda rng: (_gen_expression(rng),),
    "edit_distance": _gen_edit,
    "free_slots": _gen_busy,
    "longest_unique_substring": _gen_unique,
    "topological_order": _gen_deps,
    "split_csv_line": _gen_csv,
    "min_coins": lambda rng: (rng.randint(0, 60),),
    "wildcard_match": _gen_glob,
    "decode_repeats": lambda rng: (_gen_encoded(rng),),
}
"""Each family's generator of random hidden-test inputs (argument tuples)."""


# ---------------------------------------------------------------------------------------------------------
# Reference implementations: each family's function body, with the variant's ``$name`` placeholders.

IMPORTS: dict[str, str] = {
    "topological_order": "import heapq",
}
"""Modules a family's reference imports (standard library only)."""

REFERENCES: dict[str, str] = {
    "count_long_words": """
        count = 0
        for word in $text.split():
            if len(word) > $k:
                count += 1
        return count
    """,
    "celsius_to_fahrenheit": """
        converted = []
        for celsius in $temps:
            converted.append(round(celsius * 9 / 5 + 32, $digits))
        return $ret
    """,
    "sum_of_multiples": """
        if $limit <= 1:
            return 0
        total = 0
        for number in range(1, $limit):
            if number % $a == 0 or number % $b == 0:
                total += number
        return total
    """,
    "is_palindrome": """
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
    "clamp_values": """
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
    "count_vowels": """
        vowels = "$vowels"
        total = 0
        for ch in $word.lower():
            if ch in vowels:
                total += 1
        return total
    """,
    "second_extreme": """
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
    "digit_sum": """
        $n = abs($n)
        total = 0
        while $n > 0:
            total += $n % $base
            $n //= $base
        return total
    """,
    "chunk_list": """
        chunks = []
        for start in range(0, len($items), $size):
            chunks.append($wrap($items[start:start + $size]))
        return chunks
    """,
    "fizzbuzz": """
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
    "run_length_encode": """
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
    "top_words": """
        counts = {}
        for raw in $text.lower().split():
            word = raw.strip(".,;:!?\\"'()")
            if not word:
                continue
            counts[word] = counts.get(word, 0) + 1
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return $ret
    """,
    "flatten_to_depth": """
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
    "group_anagrams": """
        groups = {}
        for word in $words:
            key = "".join(sorted(word.lower()))
            groups.setdefault(key, []).append(word)
        result = [sorted(group) for group in groups.values() if len(group) >= $min_size]
        result.sort(key=lambda group: (-len(group), group[0]))
        return result
    """,
    "rotate_list": """
        if not $items:
            return []
        n = len($items)
        shift = $k % n
        rotated = []
        for i in range(n):
            rotated.append($items[(i $op shift) % n])
        return rotated
    """,
    "moving_average": """
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
    "parse_key_values": """
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
    "caesar_shift": """
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
    "balanced_brackets": """
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
    "spiral_order": """
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
    "limit_repeats": """
        seen = {}
        kept = []
        for item in $items:
            key = $key
            if seen.get(key, 0) < $limit:
                kept.append(item)
                seen[key] = seen.get(key, 0) + 1
        return $ret
    """,
    "first_index_sorted": """
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
    "pascal_row": """
        if $n < 0:
            return $empty
        row = [1]
        for _ in range($n):
            row = [1] + [row[i] + row[i + 1] for i in range(len(row) - 1)] + [1]
        return $ret
    """,
    "int_to_roman": """
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
    "parse_ipv4": """
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
    "compress_ranges": """
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
    "count_islands": """
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
    "camel_to_snake": """
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
    "histogram_buckets": """
        counts = {}
        for value in $values:
            start = (value // $width) * $width
            counts[start] = counts.get(start, 0) + 1
        return $ret
    """,
    "common_prefix": """
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
    "longest_run": """
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
    "most_common_char": """
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
    "password_problems": """
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
    "primes_below": """
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
    "gcd_of_list": """
        result = 0
        for value in $numbers:
            a, b = abs(result), abs(value)
            while b:
                a, b = b, a % b
            result = a
        return result
    """,
    "word_wrap": """
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
    "parse_duration": """
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
    "human_size": """
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
    "pairs_with_sum": """
        seen = set()
        pairs = set()
        for value in $numbers:
            complement = $target - value
            if complement in seen:
                pairs.add((min(value, complement), max(value, complement)))
            seen.add(value)
        return $ret
    """,
    "rotate_matrix": """
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
    "merge_intervals": """
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
    "evaluate_expression": """
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
    "edit_distance": """
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
    "free_slots": """
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
    "longest_unique_substring": """
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
    "topological_order": """
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
    "split_csv_line": """
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
    "min_coins": """
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
    "wildcard_match": """
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
    "decode_repeats": """
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
}


def _families() -> tuple[Family, ...]:
    """The families of ``problems.toml``, in file order, joined with their code."""
    entries = read_toml(__package__, "problems.toml")["family"]
    names = [entry["name"] for entry in entries]
    for what, table in (("references", REFERENCES), ("random inputs", RANDOM_INPUTS)):
        if set(table) != set(names):
            odd = sorted(set(table).symmetric_difference(names))
            raise ValueError(f"problems.toml and the {what} of problems.py disagree on the families {odd}")
    return tuple(
        Family(
            name=entry["name"],
            difficulty=entry["difficulty"],
            signature=entry["signature"],
            summary=entry["summary"],
            spec=entry["spec"],
            body=REFERENCES[entry["name"]],
            variants=tuple(entry["variants"]),
            visible=tuple(ast.literal_eval(args) for args in entry["visible"]),
            edge=tuple(ast.literal_eval(args) for args in entry["edge"]),
            gen=RANDOM_INPUTS[entry["name"]],
            imports=IMPORTS.get(entry["name"], ""),
        )
        for entry in entries
    )


FAMILIES: tuple[Family, ...] = _families()
