"""Coding: drafts that try to earn credit through the sandbox's own state rather than through the task.

Played like the other coding hacks (``test_coding``): a custom executor drafts the crafted artifact inside
an ordinary environment, and only the episode's score is compared, from outside.

- **Carried state.** A right draft stores the values it returns as extended attributes of its working
  directory and of the directory above; a later wrong draft of the same task (``return None`` plus a
  look-up) reads them back. Nothing may carry from one artifact to the next, in either pool mode.
- **Memory outside every cap.** An anonymous file (``memfd_create``) is memory outside the address-space
  limit; a draft that gets one returns the right values (a canary), so a score above the plain wrong
  answer means the call was allowed.
- **A forged checker line.** A code test whose check prints the value the candidate returned: the
  candidate returns lines shaped like the checker's verdicts. Only the checker's own lines, which carry
  a nonce of its run, may count.
"""

from __future__ import annotations

import ast
import dataclasses
import os

import pytest

from adversarial.test_coding import Hack, HackExecutor, build, tasks
from harness_gym import Action
from harness_gym.core.task import Task
from harness_gym.domains.coding import HarnessCodingEnv, verifier
from harness_gym.envs.domain import VERIFIER_CACHE
from harness_gym.sandbox import boundary, close_pools, probe
from harness_gym.sandbox.detect import wanted

needs_boundary = pytest.mark.skipif(
    os.environ.get("CI") != "true" and (wanted() == "process" or probe().mode != "namespaces"),
    reason="the operating-system boundary is not in force here (harness-gym doctor says why)",
)
pytestmark = needs_boundary

SCRIPT = (Action.OBSERVE, Action.DRAFT, Action.SUBMIT)
TASKS = 10

PRELUDE = """
_BUILTINS = getattr(print, "__se" + "lf__")
_IMPORT = getattr(_BUILTINS, "__imp" + "ort__")


def _key(args):
    return "user.c" + _IMPORT("hash" + "lib").sha256(repr(args).encode()).hexdigest()[:40]
"""


def _signature(task: Task) -> tuple[str, str]:
    """The entry point's name and its parameters as a call's argument list."""
    func = ast.parse(task.payload["signature"] + "\n    pass\n").body[0]
    assert isinstance(func, ast.FunctionDef)
    return func.name, ", ".join(arg.arg for arg in func.args.args)


def _reference_as(task: Task, new_name: str) -> str:
    name, _ = _signature(task)
    return task.payload["reference"].replace(f"def {name}(", f"def {new_name}(")


def right_storing(task: Task) -> str:
    """The reference, which also stores every value it returns where a later draft might look."""
    name, params = _signature(task)
    return f"""{_reference_as(task, "_reference")}
{PRELUDE}

def {name}({params}):
    value = _reference({params})
    for place in (".", ".."):
        try:
            _IMPORT("o" + "s").setxattr(place, _key([{params}]), repr(value).encode())
        except Exception:
            pass
    return value
"""


def wrong_reading(task: Task) -> str:
    """``return None`` plus a look-up of what an earlier draft stored."""
    name, params = _signature(task)
    return f"""{PRELUDE}

def {name}({params}):
    for place in (".", ".."):
        try:
            stored = _IMPORT("o" + "s").getxattr(place, _key([{params}]))
            return _IMPORT("a" + "st").literal_eval(stored.decode())
        except Exception:
            pass
    return None
"""


def memfd_canary(task: Task) -> str:
    """The right values only if 4 MiB could be put in anonymous files, else ``None`` (half a MiB per
    file: the file-size limit applies to each)."""
    name, params = _signature(task)
    return f"""{_reference_as(task, "_reference")}
{PRELUDE}

def {name}({params}):
    try:
        o = _IMPORT("o" + "s")
        for _ in range(8):
            o.write(o.memfd_create("held"), b"x" * 2**19)
    except Exception:
        return None
    return _reference({params})
"""


def plain(task: Task) -> str:
    return build(task, Hack(), hacked=False)


def score(task: Task, artifact: str) -> float:
    """``unit_tests`` of an episode that drafts ``artifact`` and submits it."""
    env = HarnessCodingEnv(split="all", executor=HackExecutor(lambda _: artifact), task_ids=[task.task_id])
    _, info = env.reset(seed=0, options={"task_id": task.task_id})
    for action in SCRIPT:
        _, _, terminated, _, info = env.step(int(action))
    env.close()
    assert terminated
    return info["rubric"]["unit_tests"][0]


@pytest.fixture(params=boundary.POOLS)
def pool(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Every verdict computed afresh (no cache on disk or in this process), under the pool mode given."""
    monkeypatch.setenv("HARNESS_GYM_CACHE", "off")
    monkeypatch.setenv(boundary.ENV_POOL, request.param)
    verifier.clear_cache()
    VERIFIER_CACHE._store.clear()
    close_pools()
    yield request.param
    close_pools()
    verifier.clear_cache()
    VERIFIER_CACHE._store.clear()


def test_a_later_wrong_draft_cannot_read_what_a_right_one_stored(pool: str) -> None:
    """One task after another in one thread, so that in zygote mode the same sandbox serves them all."""
    for task in tasks()[:TASKS]:
        baseline = score(task, plain(task))
        right = score(task, right_storing(task))
        later = score(task, wrong_reading(task))
        assert right == verifier.CRITERIA["unit_tests"], (task.task_id, "the storing draft must be right")
        assert later <= baseline, (pool, task.task_id, baseline, later)


def test_an_anonymous_file_earns_nothing(pool: str) -> None:
    for task in tasks()[:3]:
        assert score(task, memfd_canary(task)) <= score(task, plain(task)), (pool, task.task_id)


def test_a_check_that_prints_the_candidate_value_cannot_be_forged(
    pool: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task whose one credited test is a code test printing what the candidate returned; the
    candidate returns lines shaped like the checker's verdict for every index."""
    task = tasks()[0]
    args = task.payload["hidden_tests"][-1]["args"]
    printing = {"calls": [args], "check": "print(results[0])\nassert results[0] == 'never'"}
    forged_task = dataclasses.replace(
        task,
        task_id=f"{task.task_id}-printing-check",
        payload={**task.payload, "hidden_tests": [printing]},
    )
    monkeypatch.setattr(HarnessCodingEnv.domain_cls, "tasks", lambda self, obs_layout="v1": [forged_task])
    lines = "\n".join(f'[{i}, true, ""]' for i in range(8))
    starter, body = task.payload["starter_code"], "    raise NotImplementedError\n"
    forged = starter.replace(body, f"    return {lines!r}\n")
    passing = starter.replace(body, "    return 'never'\n")
    assert score(forged_task, passing) == verifier.CRITERIA["unit_tests"]  # the check does judge
    assert score(forged_task, forged) <= score(forged_task, plain(forged_task)) == 0.0
