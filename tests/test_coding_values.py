"""The coding verifier's typed values (``harness_gym/domains/coding/values.py``): the exact encoded form, the
limits, and the comparison's tolerances where the relative and the absolute limit disagree."""

from __future__ import annotations

import math

import pytest

from harness_gym.domains.coding.values import MAX_DEPTH, MAX_ITEMS, Unsupported, decode, encode, same


def test_the_encoded_form_of_each_type():
    assert encode(None) is None
    assert encode(True) is True and encode(False) is False
    assert encode(7) == 7 and type(encode(7)) is int
    assert encode(0.1) == {"float": "0.1"}
    assert encode(float("-inf")) == {"float": "-inf"}
    assert encode("x") == "x"
    assert encode(b"hi\n") == {"bytes": "68690a"}
    assert encode([1, "a"]) == [1, "a"]
    assert encode((1, 2)) == {"tuple": [1, 2]}
    assert encode({"b", "a"}) == {"set": ["a", "b"]}
    assert encode(frozenset({2, 1})) == {"frozenset": [1, 2]}
    assert encode({(1,): None, "k": 1.5}) == {"dict": [[{"tuple": [1]}, None], ["k", {"float": "1.5"}]]}


def test_sets_encode_in_one_order_whatever_the_insertion_order():
    assert encode({3, 1, 2}) == encode({2, 3, 1}) == {"set": [1, 2, 3]}


class _Text(str):
    def __str__(self) -> str:
        return "changed"


class _Pairs(dict):
    def items(self):
        return [("x", 1)]


def test_subclasses_are_read_through_their_base_types_methods():
    assert encode(_Text("kept")) == "kept"
    assert encode(_Pairs(a=2)) == {"dict": [["a", 2]]}
    assert type(encode(_Text("kept"))) is str


def test_limits_are_exact():
    nested: list = []
    for _ in range(MAX_DEPTH):
        nested = [nested]
    assert decode(encode(nested)) == nested  # MAX_DEPTH levels below the top are allowed
    with pytest.raises(Unsupported, match=f"nested deeper than {MAX_DEPTH} levels"):
        encode([nested])
    assert len(encode(list(range(MAX_ITEMS - 1)))) == MAX_ITEMS - 1  # the list itself is one value
    with pytest.raises(Unsupported, match=f"more than {MAX_ITEMS} values"):
        encode(list(range(MAX_ITEMS)))
    with pytest.raises(Unsupported, match="unsupported type object"):
        encode(object())
    with pytest.raises(Unsupported, match="a container that contains itself"):
        d: dict = {}
        d["self"] = d
        encode(d)
    assert decode(_deep_encoded(MAX_DEPTH)) == _deep_encoded(MAX_DEPTH)
    with pytest.raises(Unsupported, match=f"nested deeper than {MAX_DEPTH} levels"):
        decode(_deep_encoded(MAX_DEPTH + 1))


def _deep_encoded(levels: int) -> object:
    data: object = []
    for _ in range(levels):
        data = [data]
    return data


def test_a_repeated_not_cyclic_member_is_fine():
    shared = [1]
    assert encode([shared, shared]) == [[1], [1]]


def test_int_beyond_the_digit_limit_is_unsupported():
    with pytest.raises(Unsupported):
        encode(10**5000)


def test_decode_rejects_each_malformed_shape():
    assert decode({"float": "nan"}) != decode({"float": "nan"})  # nan, decoded
    assert math.isnan(decode({"float": "nan"}))
    assert decode({"bytes": "00ff"}) == b"\x00\xff"
    assert decode({"dict": [[{"tuple": [1, 2]}, [3]]]}) == {(1, 2): [3]}
    assert decode({"set": [1, 2]}) == {1, 2} and type(decode({"frozenset": []})) is frozenset
    for malformed, message in [
        ({"float": "x"}, "malformed float"),
        ({"bytes": "zz"}, "malformed bytes"),
        ({"dict": [[[1], 2]]}, "malformed dict"),
        ({"bytes": 1}, "malformed encoded value"),
        ({"list": []}, "malformed encoded value"),
        (1.5, "malformed encoded value"),
        ({}, "malformed encoded value"),
    ]:
        with pytest.raises(Unsupported, match=message):
            decode(malformed)


# -- comparison ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "actual", "rel", "abs_", "verdict"),
    [
        # large values: the relative limit admits what the absolute one does not
        (1000.0, 1001.0, 1e-2, 1e-6, True),
        (1000.0, 1001.0, 1e-6, 1e-2, False),
        # near zero: the absolute limit admits what the relative one does not
        (0.0, 1e-3, 1e-2, 1e-2, True),
        (0.0, 1e-3, 1e-2, 1e-4, False),
        (1e-3, 2e-3, 0.4, 0.0, False),
        (1e-3, 2e-3, 0.0, 2e-3, True),
        # an int against a float compares as a number under a tolerance
        (1000, 1001.0, 1e-2, 0.0, True),
        (1000, 1001.0, 0.0, 0.5, False),
    ],
)
def test_tolerance_relative_and_absolute_limits_where_they_disagree(expected, actual, rel, abs_, verdict):
    assert same(expected, actual, (rel, abs_)) is verdict
    assert same(actual, expected, (rel, abs_)) is verdict  # math.isclose is symmetric


def test_tolerance_applies_inside_containers_but_not_to_keys_or_members():
    assert same([1.0, (2.0,)], [1.001, (2.001,)], (1e-2, 0.0))
    assert not same([1.0, (2.0,)], [1.001, (2.1,)], (1e-2, 0.0))
    assert same({"k": 1.0}, {"k": 1.001}, (1e-2, 0.0))
    assert not same({1.0: 0}, {1.001: 0}, (1e-2, 0.0))
    assert not same({1.0}, {1.001}, (1e-2, 0.0))


def test_nan_equals_nan_only():
    nan = float("nan")
    assert same(nan, nan) and same(nan, nan, (0.1, 0.1))
    assert not same(nan, 1.0) and not same(1.0, nan)
    assert not same(nan, 1.0, (0.1, 0.1)) and not same(1.0, nan, (1.0, 1.0))
    assert same([nan], [nan]) and same({nan}, {nan}) and same({"k": nan}, {"k": nan})
    # distinct nan objects (as decoding makes them) are equal too, as set members and dict keys
    assert same({float("nan")}, {float("nan")}) and same({float("nan"): 1}, {float("nan"): 1})
    assert same(decode(encode({float("nan"), 1.0})), {float("nan"), 1.0})
    assert not same({float("nan")}, {1.0})


def test_strict_comparison_without_tolerance():
    assert same(0.5, 0.5) and not same(0.5, 0.5000001)
    assert same([1, 2], [1, 2]) and not same([1, 2], [1, 2, 3]) and not same([1, 2], [2, 1])
    assert not same((1,), (1, 1))
    assert same({"a": 1}, {"a": 1}) and not same({"a": 1}, {"b": 1}) and not same({"a": 1}, {"a": 2})
    assert not same({"a": 1}, {"a": 1, "b": 2})
    assert same({1, 2}, {2, 1}) and not same({1, 2}, {1, 3}) and not same({1}, frozenset({1}))
    assert same(None, None) and same(b"x", b"x") and not same("x", "y")
    assert not same(True, 1) and not same(1, True) and not same(1, 1.0)
    assert same([[1.5]], [[1.5]])
    assert same((True, [None]), (True, [None]))
    assert not same([True], [1])
    assert not same({(1,): 0}, {(True,): 0}) and not same({1: [1]}, {1: [True]})
    assert same({(1, 2): 0}, {(1, 2): 0}) and not same({(1, 2): 0}, {(1, 3): 0})
    assert not same({frozenset({1}): 0}, {frozenset({True}): 0})
    assert not same({1: {2: 3}}, {1: {2: 4}}) and same({1: {2: 3}}, {1: {2: 3}})


def test_an_int_beyond_the_float_range_compares_exactly_under_a_tolerance():
    assert same(10**400, 10**400, (0.1, 0.1))
    assert not same(10**400, 10**400 + 1, (0.1, 0.1))


def _nest(levels: int, wrap) -> object:
    value: object = 0
    for _ in range(levels):
        value = wrap(value)
    return value


@pytest.mark.parametrize(
    "wrap",
    [
        lambda v: {0: v},  # dict values
        lambda v: (v,),  # tuples (a dict key made of them below)
        lambda v: frozenset({v}),  # set members
    ],
)
def test_every_container_counts_one_level_in_both_directions(wrap):
    ok, deep = _nest(MAX_DEPTH, wrap), _nest(MAX_DEPTH + 1, wrap)
    assert decode(encode(ok)) == ok
    with pytest.raises(Unsupported, match=f"^nested deeper than {MAX_DEPTH} levels$"):
        encode(deep)
    with pytest.raises(Unsupported, match=f"nested deeper than {MAX_DEPTH} levels$"):
        decode(_encoded_nest(deep))


def _encoded_nest(value: object) -> object:
    """``encode`` without its depth limit (to hand ``decode`` data nested too deep)."""
    if isinstance(value, dict):
        return {"dict": [[_encoded_nest(k), _encoded_nest(v)] for k, v in value.items()]}
    if isinstance(value, list):
        return [_encoded_nest(v) for v in value]
    if isinstance(value, tuple):
        return {"tuple": [_encoded_nest(v) for v in value]}
    if isinstance(value, frozenset):
        return {"frozenset": [_encoded_nest(v) for v in value]}
    return value


def test_dict_keys_count_their_depth_too():
    key_ok, key_deep = _nest(MAX_DEPTH - 1, lambda v: (v,)), _nest(MAX_DEPTH, lambda v: (v,))
    assert decode(encode({key_ok: 0})) == {key_ok: 0}
    with pytest.raises(Unsupported, match=r"^nested deeper"):
        encode({key_deep: 0})
    with pytest.raises(Unsupported, match=r"nested deeper than \d+ levels$"):
        decode(_encoded_nest({key_deep: 0}))


def test_error_messages_name_the_problem():
    with pytest.raises(Unsupported, match=r"^a container that contains itself$"):
        loop: list = []
        loop.append(loop)
        encode(loop)
    with pytest.raises(Unsupported, match="digits"):
        encode(10**5000)
    long = {"what": "x" * 200}
    with pytest.raises(Unsupported) as info:
        decode(long)
    assert str(info.value) == f"malformed encoded value: {str(long)[:80]}"
    with pytest.raises(Unsupported) as info:
        decode(["y" * 10, {"a": 1, "b": 2, "c": "z" * 100}])
    assert str(info.value) == f"malformed encoded value: {str({'a': 1, 'b': 2, 'c': 'z' * 100})[:80]}"
