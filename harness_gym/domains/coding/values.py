"""Typed, non-executable JSON for the values that cross between the verifier and the sandboxed child.

Plain JSON cannot tell a tuple from a list, ``1`` from ``1.0`` or ``True``, or carry ``nan``; pickle could
run code. Here ``None``, ``bool``, ``int``, ``str`` and ``list`` map to their JSON counterparts and every
other type is a one-key JSON object naming it (so any JSON object is a tag, never user data)::

    {"float": "0.1"}  {"float": "nan"}  {"float": "-inf"}      repr text, so every float round-trips
    {"tuple": [...]}  {"set": [...]}  {"frozenset": [...]}
    {"dict": [[key, value], ...]}                              keys of any encodable type, order kept
                                                               (set members are sorted by their text)
    {"bytes": "68690a"}                                        hex

Instances of subclasses of these types are encoded as their builtin base type, read through the base
type's own methods (``int.__repr__``, ``dict.items``, ...), so a subclass's ``__eq__``, ``__iter__`` or
``__repr__`` never runs and never matters. Anything else (other classes, cycles, nesting deeper than
``MAX_DEPTH``, more than ``MAX_ITEMS`` values in all, ints beyond ``sys.int_info``'s digit limit)
raises :class:`Unsupported`.

This module is standard library only and imports nothing heavy: its source is also the first part of the
sandboxed child's script, where interpreter start-up dominates the cost of a test run.
"""

from __future__ import annotations

import json
import math

MAX_DEPTH = 64
MAX_ITEMS = 100_000


class Unsupported(ValueError):
    """A value that has no typed encoding (or malformed encoded data)."""


_SCALARS = (bool, int, float, str, bytes)
_CONTAINERS = {list: "list", tuple: "tuple", set: "set", frozenset: "frozenset", dict: "dict"}


def _base(value: object) -> type | None:
    """The builtin type ``value`` is encoded as (``bool`` before ``int``: bool is not an int here)."""
    cls = type(value)
    if value is None:
        return type(None)
    for base in (*_SCALARS, *_CONTAINERS):
        if cls is base or (base is not bool and issubclass(cls, base)):
            return base
    return None


def encode(value: object) -> object:
    """``value`` as JSON-ready data; raises :class:`Unsupported` for what has no encoding."""
    return _encode(value, 0, set(), [MAX_ITEMS])


def _encode(value: object, depth: int, active: set[int], budget: list[int]) -> object:
    if depth > MAX_DEPTH:
        raise Unsupported(f"nested deeper than {MAX_DEPTH} levels")
    budget[0] -= 1
    if budget[0] < 0:
        raise Unsupported(f"more than {MAX_ITEMS} values")
    base = _base(value)
    if base is None:
        raise Unsupported(f"unsupported type {type(value).__name__}")
    if base is type(None):
        return None
    if base is bool:
        return value is True
    if base is int:
        try:
            return int(int.__repr__(value))
        except ValueError as exc:  # beyond the int/str conversion digit limit
            raise Unsupported(str(exc)) from None
    if base is float:
        return {"float": float.__repr__(value)}
    if base is str:
        return str.__str__(value)
    if base is bytes:
        return {"bytes": bytes.hex(value)}
    if id(value) in active:
        raise Unsupported("a container that contains itself")
    active.add(id(value))
    try:
        if base is dict:
            items = [
                [_encode(k, depth + 1, active, budget), _encode(v, depth + 1, active, budget)]
                for k, v in dict.items(value)
            ]
            return {"dict": items}
        if base is list:
            members = list.copy(value)
        elif base is tuple:
            members = tuple.__getitem__(value, slice(None))
        elif base is set:
            members = set.copy(value)
        else:
            members = frozenset.copy(value)
        encoded = [_encode(member, depth + 1, active, budget) for member in members]
        if base in (set, frozenset):
            encoded.sort(key=json.dumps)  # iteration order depends on the hash seed; the text must not
    finally:
        active.discard(id(value))
    return encoded if base is list else {_CONTAINERS[base]: encoded}


def decode(data: object) -> object:
    """The value ``data`` encodes; raises :class:`Unsupported` for anything malformed."""
    return _decode(data, 0)


def _decode(data: object, depth: int) -> object:
    if depth > MAX_DEPTH:
        raise Unsupported(f"nested deeper than {MAX_DEPTH} levels")
    if data is None or type(data) in (bool, int, str):
        return data
    if type(data) is list:
        return [_decode(item, depth + 1) for item in data]
    if type(data) is not dict or len(data) != 1:
        raise Unsupported(f"malformed encoded value: {str(data)[:80]}")
    ((tag, body),) = data.items()
    try:
        if tag == "float" and type(body) is str:
            return float(body)
        if tag == "bytes" and type(body) is str:
            return bytes.fromhex(body)
        if tag == "dict" and type(body) is list:
            pairs = [(_decode(k, depth + 1), _decode(v, depth + 1)) for k, v in body]
            return dict(pairs)
        if tag in ("tuple", "set", "frozenset") and type(body) is list:
            members = [_decode(item, depth + 1) for item in body]
            return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](members)
    except (TypeError, ValueError) as exc:  # unhashable keys or members, bad float or hex text
        raise Unsupported(f"malformed {tag}: {exc}") from None
    raise Unsupported(f"malformed encoded value: {str(data)[:80]}")


def same(expected: object, actual: object, tolerance: tuple[float, float] | None = None) -> bool:
    """Strict equality of two decoded values: equal types at every level (bool is not int, tuple is not
    list) and equal floats (``nan`` equals ``nan``).

    With a ``tolerance`` ``(rel, abs)`` floats compare by ``math.isclose`` and an ``int`` and a ``float``
    compare as numbers (``bool`` never does); ``(0, 0)`` keeps the values exact but the number types
    loose. Set members and dict keys are always compared exactly, with their types.
    """
    te, ta = type(expected), type(actual)
    if tolerance is not None and {te, ta} <= {int, float}:
        if te is float and ta is float and (math.isnan(expected) or math.isnan(actual)):
            return math.isnan(expected) and math.isnan(actual)
        try:
            return math.isclose(expected, actual, rel_tol=tolerance[0], abs_tol=tolerance[1])
        except OverflowError:  # an int beyond the float range
            return expected == actual
    if te is not ta:
        return False
    if te is float:
        if math.isnan(expected) or math.isnan(actual):
            return math.isnan(expected) and math.isnan(actual)
        return expected == actual
    if te in (list, tuple):
        return len(expected) == len(actual) and all(
            same(e, a, tolerance) for e, a in zip(expected, actual, strict=True)
        )
    if te is dict:
        wanted = {_typed(key): value for key, value in expected.items()}
        got = {_typed(key): value for key, value in actual.items()}
        return wanted.keys() == got.keys() and all(same(wanted[k], got[k], tolerance) for k in wanted)
    if te in (set, frozenset):
        return _typed(expected) == _typed(actual)
    return expected == actual  # None, bool, int, str, bytes of exactly the same type


def _typed(value: object) -> object:
    """A hashable stand-in for a value that is equal only to the stand-in of a same-typed equal value
    (``True`` and ``1`` are equal, and hash alike, as set members; their stand-ins are not)."""
    cls = type(value)
    if cls is float:
        return ("float", "nan" if math.isnan(value) else value)
    if cls in (list, tuple):
        return (cls.__name__, tuple(_typed(item) for item in value))
    if cls in (set, frozenset):
        return (cls.__name__, frozenset(_typed(item) for item in value))
    if cls is dict:
        return ("dict", frozenset((_typed(k), _typed(v)) for k, v in value.items()))
    return (cls.__name__, value)
