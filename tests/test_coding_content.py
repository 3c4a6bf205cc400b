"""The coding task set and its machinery: generator, mutation operators, verifier."""

from __future__ import annotations

import ast
import json
import string
import textwrap
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness_gym.core.task import packaged_task_file, read_jsonl, write_jsonl
from harness_gym.domains.coding import generate, mutants, screening, values, verifier
from harness_gym.domains.coding.problems import FAMILIES, variant_values
from harness_gym.sandbox import SandboxLimits

TASK_PATH = packaged_task_file(generate.TASK_FILE)
PAYLOAD_KEYS = {
    "function_name", "signature", "starter_code", "reference", "visible_tests", "hidden_tests", "pool"
}  # fmt: skip
AST_KINDS = set(mutants.MUTATION_KINDS)


@pytest.fixture(scope="module")
def tasks():
    return read_jsonl(TASK_PATH)


# ---------------------------------------------------------------------------------------------------------
# The shipped task set


def test_regenerating_gives_the_shipped_file(tmp_path):
    path = tmp_path / "coding.jsonl"
    write_jsonl(generate.generate_records(), path)
    assert path.read_bytes() == TASK_PATH.read_bytes()


def test_task_records_are_well_formed(tasks):
    assert [t.task_id for t in tasks] == [f"coding-{i:03d}" for i in range(100)]
    for task in tasks:
        payload = task.payload
        assert task.domain == "coding" and task.version == "v0"
        assert set(payload) == PAYLOAD_KEYS
        assert len(payload["visible_tests"]) == 3
        assert 8 <= len(payload["hidden_tests"]) <= 12
        all_tests = payload["visible_tests"] + payload["hidden_tests"]
        assert len({json.dumps(test["args"]) for test in all_tests}) == len(all_tests)
        name = payload["function_name"]
        assert f"`{name}(" in task.prompt
        for test in all_tests:
            verifier.validate_test(test)
            assert set(test) == {"args", "expected"}, test  # the generated set needs no code tests
            shown = verifier.describe_test(name, test)
            node = ast.parse(shown).body
            assert len(node) == 1 and isinstance(node[0], ast.Assert), shown
            assert shown.startswith(f"assert {name}(")
        starter = payload["starter_code"]
        assert starter.startswith(payload["signature"]) and "raise NotImplementedError" in starter
        assert verifier.signature_ok(starter, name, payload["signature"])
        kinds = [entry["flaw"] for entry in payload["pool"]]
        assert 1 <= len(kinds) - 2 <= screening.MAX_MUTANTS
        assert kinds[-2:] == ["syntax_error", "unsafe_import"]
        assert set(kinds[:-2]) <= AST_KINDS
        assert len({entry["source"] for entry in payload["pool"]}) == len(kinds)


def test_families_and_difficulties(tasks):
    assert len(FAMILIES) == 50
    assert len({family.name for family in FAMILIES}) == 50
    per_template = Counter(task.template for task in tasks)
    assert set(per_template.values()) == {2}
    assert Counter(task.difficulty for task in tasks) == {"easy": 20, "standard": 60, "hard": 20}
    # The two variants of a family differ in their entities.
    by_template: dict[str, list] = {}
    for task in tasks:
        by_template.setdefault(task.template, []).append(task)
    for pair in by_template.values():
        assert pair[0].payload["function_name"] != pair[1].payload["function_name"]
        assert pair[0].payload["signature"] != pair[1].payload["signature"]


def test_variant_parameter_names_do_not_clash_with_body_locals():
    """A parameter named like a local of the reference body would silently change the reference."""
    for family in FAMILIES:
        for variant in family.variants:
            values = variant_values(variant)
            probe = {key: f"zz_{key}" for key in values}
            func = ast.parse(string.Template(family.signature).substitute(probe) + " pass").body[0]
            param_keys = [arg.arg[3:] for arg in func.args.args]
            values = variant_values({**variant, **{key: probe[key] for key in param_keys}})
            body = string.Template(textwrap.dedent(family.body)).substitute(values)
            names = {node.id for node in ast.walk(ast.parse(body)) if isinstance(node, ast.Name)}
            clashes = {str(variant[key]) for key in param_keys} & names
            assert not clashes, (family.name, variant["fn"], clashes)


def _judge(task):
    payload = task.payload
    reference = payload["reference"]
    results = {"reference": verifier.artifact_scores(payload, reference)}
    results["structure"] = verifier.structural_check(payload, reference)
    results["pool"] = [(e, verifier.artifact_scores(payload, e["source"])) for e in payload["pool"]]
    return task, results


def test_every_reference_passes_and_every_flawed_artifact_loses_points(tasks):
    with ThreadPoolExecutor(max_workers=4) as pool:
        judged = list(pool.map(_judge, tasks))
    for task, results in judged:
        payload = task.payload
        where = task.task_id
        scores = results["reference"]
        assert sum(s for s, _ in scores.values()) == sum(m for _, m in scores.values()), (where, scores)
        structure = results["structure"]
        assert structure.coverage == 1.0 and not structure.issues, (where, structure)
        assert verifier.parses(payload["reference"]) and not verifier.safety_violations(payload["reference"])
        assert verifier.signature_ok(payload["reference"], payload["function_name"], payload["signature"])
        for entry, entry_scores in results["pool"]:
            total = sum(s for s, _ in entry_scores.values())
            assert total < sum(m for _, m in entry_scores.values()), (where, entry["flaw"], entry_scores)
            if entry["flaw"] in AST_KINDS:
                assert entry_scores["unit_tests"][0] < 3.0, (where, entry)
                assert entry_scores["parseability"][0] == 1.0 and entry_scores["safety"][0] == 1.0
            elif entry["flaw"] == "syntax_error":
                assert not verifier.parses(entry["source"])
                assert all(score == 0.0 for score, _ in entry_scores.values())
            else:
                # Correct code behind a forbidden import: never run, so no test credit either.
                assert entry["flaw"] == "unsafe_import"
                assert verifier.safety_violations(entry["source"])
                assert entry_scores["unit_tests"] == (0.0, 3.0) and entry_scores["safety"] == (0.0, 1.0)


# ---------------------------------------------------------------------------------------------------------
# Mutation operators

SAMPLE = '''
def clip(xs, k):
    """Keep some values."""
    if not xs:
        return []
    out = []
    for i in range(len(xs)):
        if xs[i] > k and i % 2 == 0:
            out.append(xs[i] + 1)
    return out[1:]
'''


def _by_kind(source: str = SAMPLE, name: str = "clip") -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for kind, text in mutants.ast_mutants(source, name):
        out.setdefault(kind, []).append(text)
    return out


def _has(sources: list[str], fragment: str) -> bool:
    return any(fragment in text for text in sources)


def test_flip_comparison():
    flips = _by_kind()["flip_comparison"]
    assert _has(flips, "xs[i] >= k and i % 2 == 0")
    assert _has(flips, "xs[i] > k and i % 2 != 0")
    assert len(flips) == 2


def test_off_by_one():
    shifted = _by_kind()["off_by_one"]
    expected = ("range(len(xs) + 1)", "range(len(xs) - 1)", "out[2:]", "out[0:]", "xs[i] + 2", "i % 3 == 0")
    for fragment in (*expected, "i % 2 == 1"):
        assert _has(shifted, fragment), fragment


def test_swap_arithmetic_and_boolean():
    kinds = _by_kind()
    assert _has(kinds["swap_arithmetic"], "out.append(xs[i] - 1)")
    assert _has(kinds["swap_arithmetic"], "i // 2 == 0")
    assert kinds["swap_boolean"] == [SAMPLE.strip().replace("k and i", "k or i")]
    augmented = _by_kind("def f(a):\n    a += 2\n    return a\n", "f")["swap_arithmetic"]
    assert augmented == ["def f(a):\n    a -= 2\n    return a"]


def test_negate_condition():
    negated = _by_kind()["negate_condition"]
    assert _has(negated, "    if xs:\n        return []")
    assert _has(negated, "if not (xs[i] > k and i % 2 == 0):")
    assert len(negated) == 2


def test_missing_edge_case_drops_only_early_exit_guards():
    dropped = _by_kind()["missing_edge_case"]
    assert len(dropped) == 1 and "if not xs" not in dropped[0]
    guarded = textwrap.dedent(
        """
        def f(x):
            if x < 0:
                x = -x
            for y in range(x):
                if y == 2:
                    continue
            return x
        """
    )
    dropped = _by_kind(guarded, "f")["missing_edge_case"]
    assert dropped == [ast.unparse(ast.parse(guarded.replace("if y == 2:\n            continue", "pass")))]


def test_wrong_return_uses_names_bound_before_the_return():
    wrong = _by_kind()["wrong_return"]
    early = [text for text in wrong if "return []" not in text]
    assert {text.split("if not xs:\n        return ")[1].split("\n")[0] for text in early} == {"xs", "k"}
    late = [text.rsplit("return ", 1)[1] for text in wrong if "return []" in text]
    assert sorted(late) == ["i", "k", "out", "xs"]


def test_ast_mutants_are_deterministic_single_point_and_spare_the_docstring():
    first = mutants.ast_mutants(SAMPLE, "clip")
    assert first == mutants.ast_mutants(SAMPLE, "clip")
    original = ast.unparse(ast.parse(SAMPLE))
    texts = [text for _, text in first]
    assert len(set(texts)) == len(texts) and original not in texts
    for text in texts:
        assert '"""Keep some values."""' in text
        ast.parse(text)
    kinds = [kind for kind, _ in first]
    assert kinds == sorted(kinds, key=mutants.MUTATION_KINDS.index)


def test_mutations_stay_inside_the_named_function():
    source = "LIMIT = 3\n\ndef helper(a):\n    return a + 1\n\ndef target(a):\n    return a * LIMIT\n"
    for _, text in mutants.ast_mutants(source, "target"):
        assert "LIMIT = 3" in text and "return a + 1" in text
    with pytest.raises(ValueError):
        mutants.ast_mutants(source, "missing")


def test_syntax_error_and_unsafe_variants():
    reference = ast.unparse(ast.parse(SAMPLE)) + "\n"
    slips = {mutants.syntax_error_variant(reference, salt) for salt in range(6)}
    assert len(slips) > 1
    for slip in slips:
        assert not verifier.parses(slip)
    tests = [{"args": [[5, 1, 7, 9], 0], "expected": [8]}, {"args": [[], 1], "expected": []}]
    for salt in range(4):
        unsafe = mutants.unsafe_import_variant(reference, "clip", salt)
        assert verifier.safety_violations(unsafe)
        assert verifier.execute_tests(unsafe, "clip", tests).passed == 2
        refused = verifier.run_tests(unsafe, "clip", tests)
        assert refused.passed == 0 and refused.error.startswith("not run: the safety scan rejects")


# ---------------------------------------------------------------------------------------------------------
# Verifier


@pytest.mark.parametrize(
    ("source", "fragment"),
    [
        ("import os\n", "os"),
        ("import os.path as p\n", "os.path"),
        ("from os import path\n", "from os import path"),
        ("from subprocess import run\n", "subprocess"),
        ("__import__('os')\n", "__import__"),
        ("x = eval('1 + 1')\n", "eval"),
        ("exec('x = 1')\n", "exec"),
        ("f = open\n", "open"),
        ("y = getattr(int, '__subclasses__')\n", "__subclasses__"),
        ("def f():\n    return f.__globals__\n", "__globals__"),
        ("from . import sibling\n", "relative import"),
    ],
)
def test_safety_scan_flags(source, fragment):
    violations = verifier.safety_violations(source)
    assert violations and any(fragment in v for v in violations), violations


def test_safety_scan_accepts_pure_code_and_rejects_unparseable():
    clean = "import math\nfrom collections import Counter\n\ndef f(x):\n    return math.ceil(len(Counter(x)))"
    assert verifier.safety_violations(clean) == ()
    assert verifier.safety_violations("def f(:\n") == ("source does not parse",)
    assert verifier.safety_violations("def f(input, vars):\n    return input + vars\n") == ()
    assert verifier.safety_violations("def f(vars=vars):\n    return vars()\n")
    assert verifier.safety_violations("def f(eval):\n    return eval('1')\n")


def test_signature_ok():
    signature = "def merge(ranges: list[tuple[int, int]], gap: int = 0) -> list:"
    assert verifier.signature_ok("def merge(ranges, gap):\n    return ranges\n", "merge", signature)
    assert verifier.signature_ok("def merge(ranges: list, gap: int = 1) -> list: ...", "merge", signature)
    assert not verifier.signature_ok("def merge(items, gap):\n    pass\n", "merge", signature)
    assert not verifier.signature_ok("def merge(ranges):\n    pass\n", "merge", signature)
    assert not verifier.signature_ok("def merge(ranges, *, gap):\n    pass\n", "merge", signature)
    assert not verifier.signature_ok("def combine(ranges, gap):\n    pass\n", "merge", signature)
    method = "class A:\n    def merge(self, ranges, gap):\n        pass\n"
    assert not verifier.signature_ok(method, "merge", signature)
    assert not verifier.signature_ok("def merge(ranges, gap)\n    pass\n", "merge", signature)


ADD = "def add(a, b):\n    print('noise')\n    return a + b\n"


def data(args, expected, **extra):
    return {"args": values.encode(list(args)), "expected": values.encode(expected), **extra}


def test_run_tests_counts_passes_failures_and_exceptions():
    tests = [data((1, 2), 3), data((1, 1), 3), data((1, "x"), 0), data(([1], (2,)), [1, 2])]
    report = verifier.run_tests(ADD, "add", tests)
    assert (report.passed, report.total, report.error) == (1, 4, None)
    assert report.pass_rate == 0.25
    assert len(report.failures) == 3
    assert "add(1, 1) == 3" in report.failures[0] and "got 2" in report.failures[0]
    assert "TypeError" in report.failures[1] and "TypeError" in report.failures[2]
    missing = verifier.run_tests(ADD, "plus", tests[:1])
    assert missing.passed == 0 and "defines no function plus" in missing.error


def test_comparison_is_strict_about_types_and_tolerant_only_where_declared():
    source = "def f(kind):\n    return {'bool': True, 'tuple': (1, 2), 'float': 0.1 + 0.2, 'int': 3}[kind]\n"
    tests = [
        data(("bool",), 1),  # True is not 1
        data(("tuple",), [1, 2]),  # a tuple is not a list
        data(("float",), 0.3),  # no tolerance declared
        data(("int",), 3.0),  # an int is not a float
        data(("float",), 0.3, tolerance={"rel": 1e-9}),
        data(("int",), 3.0, tolerance={}),  # with a tolerance, numbers are numbers
        data(("tuple",), (1, 2)),
        data(("bool",), True),
    ]
    report = verifier.run_tests(source, "f", tests)
    assert report.passed == 4 and len(report.failures) == 4
    assert "got True" in report.failures[0] and "got (1, 2)" in report.failures[1]


def test_unencodable_results_fail_their_call_only():
    source = (
        "class Anything:\n    def __eq__(self, other):\n        return True\n\n"
        "def f(kind):\n"
        "    if kind == 'object':\n        return Anything()\n"
        "    if kind == 'cycle':\n        out = []\n        out.append(out)\n        return out\n"
        "    if kind == 'huge':\n        return 'x' * 200000\n"
        "    return kind\n"
    )
    tests = [data((kind,), kind) for kind in ("object", "cycle", "huge", "fine")]
    report = verifier.run_tests(source, "f", tests)
    assert (report.passed, report.error) == (1, None)
    assert "unsupported type Anything" in report.failures[0]
    assert "contains itself" in report.failures[1] and "too large" in report.failures[2]


def test_code_tests_run_apart_from_the_candidate():
    tests = [
        {"calls": [[1, 2], [2, 1]], "check": "assert results[0] == results[1] == 3", "text": "commutes"},
        {"calls": [[1, 2]], "check": "assert results[0] > 5"},
        data((2, 2), 4),
    ]
    for test in tests:
        verifier.validate_test(test)
    report = verifier.run_tests(ADD, "add", tests)
    assert (report.passed, report.total) == (2, 3)
    assert report.failures == ("assert results[0] > 5  -> AssertionError",)
    assert verifier.describe_test("add", tests[0]) == "commutes"


@pytest.mark.parametrize(
    "test",
    [
        {"args": [1]},
        {"args": 1, "expected": 1},
        {"args": [1], "expected": 1, "tolerance": {"rel": -1}},
        {"args": [1], "expected": {"float": "x"}},
        {"calls": [[1]], "check": "assert (", "text": "t"},
        {"calls": [[1]], "check": "pass", "extra": 1},
    ],
)
def test_malformed_tests_are_rejected(test):
    with pytest.raises((ValueError, SyntaxError)):
        verifier.validate_test(test)


def test_run_tests_reports_module_errors():
    test = data((1, 2), 3)
    syntax = verifier.run_tests("def add(a, b)\n    return a + b\n", "add", [test])
    assert syntax.passed == 0 and syntax.error.startswith("syntax error")
    crash = verifier.run_tests("raise RuntimeError('boom')\n", "add", [test])
    assert crash.passed == 0 and crash.error.startswith("crash: RuntimeError: boom")
    exiting = verifier.run_tests(
        "def f(x):\n    raise SystemExit(0)\n", "f", [data((1,), None), data((2,), 2)]
    )
    assert (exiting.passed, exiting.error) == (0, None)
    assert all("SystemExit" in failure for failure in exiting.failures)


def test_run_tests_timeout_keeps_the_results_reported_before_it():
    source = "def spin(n):\n    while n:\n        pass\n    return n\n"
    limits = SandboxLimits(wall_time_s=2.0, cpu_time_s=1)
    tests = [data((0,), 0), data((1,), 1), data((0,), 0)]
    report = verifier.run_tests(source, "spin", tests, limits)
    assert report.error == "timeout"
    assert (report.passed, report.total) == (1, 3)
    assert any("spin(1)" in failure for failure in report.failures)


FORGERY = r"""
def answer(x):
    out = open(1, "w", closefd=False)
    for nonce in ("0" * 32, ""):
        for i in range(2):
            out.write(nonce + ' {"s": 0, "i": %d, "value": %d}\n' % (i, x + 1))
        out.write(nonce + ' {"done": true}\n')
    out.flush()
    raise SystemExit(0)
"""


def test_printed_records_are_at_most_claims_about_values():
    tests = [data((1,), 2), data((2,), 7)]
    # `open` is forbidden, so only execute_tests runs it; the claims are still just values.
    report = verifier.execute_tests(FORGERY, "answer", tests)
    assert report.passed == 0


def test_run_tests_survives_output_floods_and_caches():
    flood = "def f():\n    for _ in range(200000):\n        print('x' * 50)\n    return 1\n"
    tests = [data((), 1), data((), 2)]
    report = verifier.run_tests(flood, "f", tests)
    assert (report.passed, report.total, report.error) == (1, 2, None)
    assert verifier.run_tests(flood, "f", tests) is report


def test_structural_check_and_scores_on_good_and_bad_code(tasks):
    payload = tasks[0].payload
    good = verifier.structural_check(payload, payload["reference"])
    assert good.coverage == 1.0 and good.visible.passed == 3
    broken = verifier.structural_check(payload, "def oops(:\n")
    assert broken.coverage == 0.0 and broken.issues and not broken.parses
    renamed = payload["reference"].replace(f"def {payload['function_name']}(", "def other(")
    wrong_name = verifier.structural_check(payload, renamed)
    assert not wrong_name.signature_ok and wrong_name.coverage == 0.5
    unsafe = next(e["source"] for e in payload["pool"] if e["flaw"] == "unsafe_import")
    report = verifier.structural_check(payload, unsafe)
    assert report.coverage == 0.5 and any(issue.startswith("unsafe:") for issue in report.issues)
    assert report.visible.passed == 0 and report.visible.error.startswith("not run")
    starter = verifier.artifact_scores(payload, payload["starter_code"])
    assert starter["unit_tests"] == (0.0, 3.0) and starter["parseability"] == (1.0, 1.0)


# ---------------------------------------------------------------------------------------------------------
# Typed values


def test_typed_values_round_trip_and_compare_strictly():
    tricky = [None, True, 0, -(2**70), 0.1, float("inf"), "", b"\x00\xff", (1, [2]), {1, "1"}]
    tricky += [frozenset({(1, 2)}), {(1, 2): {"k": [None]}, 3: 4.5}, [[[]]]]
    for value in tricky:
        encoded = values.encode(value)
        assert values.decode(json.loads(json.dumps(encoded))) == value and values.same(
            value, values.decode(encoded)
        )
    assert values.same(float("nan"), values.decode(values.encode(float("nan"))))
    for expected, actual in [
        (1, True),
        ([1], (1,)),
        ({1}, {True}),
        ({1: 0}, {True: 0}),
        (1, 1.0),
        (b"a", "a"),
    ]:
        assert not values.same(expected, actual), (expected, actual)
    assert values.same(0.3, 0.1 + 0.2, (1e-12, 0.0)) and not values.same(0.3, 0.1 + 0.2)
    assert values.same(2, 2.0, (0.0, 0.0)) and not values.same(2, 2.5, (0.0, 0.0))
    assert not values.same(True, 1.0, (0.1, 0.1)) and not values.same(1, 2.0)
    assert not values.same(1.0, 10**400, (0.1, 0.1))


class _Sly(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


def test_subclasses_are_encoded_as_their_builtin_base_and_the_rest_is_refused():
    assert values.encode(_Sly(3)) == 3 and values.encode([_Sly(1)]) == [1]
    cyclic: list = []
    cyclic.append(cyclic)
    deep: list = []
    for _ in range(values.MAX_DEPTH + 2):
        deep = [deep]
    for bad in (object(), cyclic, deep, list(range(values.MAX_ITEMS + 1)), iter([1])):
        with pytest.raises(values.Unsupported):
            values.encode(bad)
    for malformed in ({"float": 1}, {"tuple": [1], "set": []}, {"set": [[1]]}, {"what": []}):
        with pytest.raises(values.Unsupported):
            values.decode(malformed)


def test_unit_tests_credit_only_hidden_tests_with_unseen_inputs(tasks):
    for task in tasks:
        payload = task.payload
        assert verifier.credited_tests(payload) == payload["hidden_tests"], task.task_id
    payload = dict(tasks[0].payload)
    seen = payload["visible_tests"][0]
    payload["hidden_tests"] = [*payload["hidden_tests"], {**seen}]
    assert verifier.credited_tests(payload) == tasks[0].payload["hidden_tests"]  # a repeat earns nothing
    with pytest.raises(ValueError, match="every hidden test repeats an input the prompt shows"):
        verifier.credited_tests({**payload, "hidden_tests": [seen]})
