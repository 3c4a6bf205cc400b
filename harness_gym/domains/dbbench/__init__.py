"""AgentBench DB-Bench adapter: answer a question or modify a table with one SQL statement."""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

from harness_gym.core.actions import Action
from harness_gym.core.task import Task
from harness_gym.domains.base import (
    JUDGED_CALLS,
    ToolSetting,
    UpstreamAdapter,
    check_outcome,
    content,
    form,
    with_judge,
)
from harness_gym.domains.dbbench import features as task_features
from harness_gym.domains.dbbench.engine import quote_ident, run_sql, using_backend
from harness_gym.domains.dbbench.prompts import DBBenchPrompts
from harness_gym.domains.dbbench.upstream import load_upstream
from harness_gym.domains.dbbench.verifier import CRITERIA, artifact_scores, evaluate
from harness_gym.domains.generation import MDP2_VERSION
from harness_gym.envs.domain import VERIFIER_CACHE, Episode, Outcome, Verdict
from harness_gym.envs.env import HarnessEnv
from harness_gym.envs.features import declare
from harness_gym.executors.base import Context
from harness_gym.executors.profiles import DraftParams

MAX_TOOL_CALLS = 2
"""CALL_TOOL runs a fixed sequence of exploratory queries: sample rows, then per-column profiles."""
ENGINES = ("sqlite", "mysql")
"""``sqlite``: in-memory SQLite with MySQL shims (default); ``mysql``: a MySQL/MariaDB server (``dsn``)."""


DRAFT_PARAMS = DraftParams(
    p_correct={"easy": 0.22, "standard": 0.05, "hard": 0.01},
    informed_gain=0.08,
    flaw_weights={
        "wrong_filter": 2.0,
        "wrong_aggregate": 1.5,
        "wrong_column": 1.5,
        "syntax_error": 1.0,
        "wrong_table": 0.5,
    },
)
"""Simulated LLM writing MySQL for one-table questions (calibrated on the Base harness only).

Base (OBSERVE, CALL_TOOL, DRAFT, SUBMIT) reaches informedness 0.75. A flawed draft still earns
0.4 (runs, right statement kind) or 0.2 (syntax error / wrong table: format only), so Base G
~ p + (1 - p) * 0.33; p_correct and informed_gain put Base eval G near the paper's 0.415.
Executable-but-wrong SQL (filters, aggregates, columns) is the commonest LLM failure, so those
flaw kinds weigh more than syntax errors and wrong table names.
"""


_WRONG_RESULT = ("empty_result", "no_change", "table_dump", "answer_empty", "not_read_only", "self_join")
FLAWS = {
    "syntax_error": form(
        "sql_error", "not_one_statement", "wrong_statement_kind", "wrong_mode", "answer_unparsable"
    ),
    "wrong_table": content("sql_error", needs="observed"),
    "wrong_filter": content(*_WRONG_RESULT),
    "wrong_column": content(*_WRONG_RESULT, "sql_error"),
    "wrong_aggregate": content(*_WRONG_RESULT),
}
"""Which findings name each flaw kind, its class and what its fix needs: the table name is in the
schema OBSERVE reads; filters, columns and aggregates need the schema and the exploratory queries
(informedness); a syntax error needs nothing."""


class DBBenchDomain(UpstreamAdapter, ToolSetting):
    """CALL_TOOL runs fixed exploratory queries; the SQL runs on SQLite or on a MySQL server (``engine``)."""

    calls = JUDGED_CALLS
    name = "dbbench"
    features = declare(name, task_features)
    env_id = "HarnessDBBench-v0"
    draft_params = DRAFT_PARAMS
    prompts_cls = DBBenchPrompts
    flaws = FLAWS
    criteria: Mapping[str, float] = CRITERIA
    mdp2_task_file = f"{name}-{MDP2_VERSION}.jsonl"
    """MDP v2 plays ``generate_mdp2``: upstream's shares of statement types and table widths."""

    def __init__(self, *, engine: str = "sqlite", dsn: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if engine not in ENGINES:
            raise ValueError(f"unknown DB-Bench engine {engine!r}; expected one of {', '.join(ENGINES)}")
        self.engine = engine
        self.mysql: Any = None
        self._cache_ns = ""
        if engine == "mysql":
            from harness_gym.domains.dbbench.mysql_engine import DSN_ENV, MySQLEngine

            dsn = dsn or os.environ.get(DSN_ENV)
            if not dsn:
                raise ValueError(f'engine="mysql" needs dsn="mysql://user:password@host:port/" or ${DSN_ENV}')
            self.mysql = MySQLEngine(dsn)
            self._cache_ns = f"{self.mysql.dsn}:"  # never mix SQLite and server results in VERIFIER_CACHE
        elif dsn is not None:
            raise ValueError('dsn is only used with engine="mysql"')

    def _on_engine(self, ep: Episode) -> AbstractContextManager[None]:
        """Run the verifier's SQL on this domain's engine (the episode's own database on a server)."""
        if self.mysql is not None:
            self.mysql.bind(ep)
        return using_backend(self.mysql)

    def verdict(self, ep: Episode, artifact: str | None) -> Verdict:
        """Score, then drop the episode's server database (the episode ends here)."""
        try:
            return super().verdict(ep, artifact)
        finally:
            if self.mysql is not None:
                self.mysql.end_episode()

    def close(self) -> None:
        """Drop any episode database and disconnect from the server (no-op for SQLite)."""
        if self.mysql is not None:
            self.mysql.close()

    def upstream_tasks(self) -> list[Task]:
        return list(load_upstream(str(self.data_path), self.n_train, self.n_eval))

    # -- actions -------------------------------------------------------------------------------------
    def informedness(self, task: Task, context: Context) -> float:
        return 0.5 * float(context.observed) + 0.25 * min(len(context.tool_results), MAX_TOOL_CALLS)

    def action_mask(self, ep: Episode) -> np.ndarray:
        if self.mysql is not None:
            self.mysql.bind(ep)  # reset() asks for the mask: a new episode drops the previous database
        mask = super().action_mask(ep)
        if len(ep.context.tool_results) >= MAX_TOOL_CALLS and mask[Action.CALL_TOOL]:
            mask = mask.copy()  # the generic masks are shared
            mask[Action.CALL_TOOL] = 0
        return mask

    def observe(self, ep: Episode) -> Outcome:
        record = ep.task.payload["record"]
        return Outcome(text=f"read the question and the schema of {record['table']['table_name']}")

    def call_tool(self, ep: Episode) -> Outcome:
        record = ep.task.payload["record"]
        table = quote_ident(record["table"]["table_name"])
        if not ep.context.tool_results:
            name, sql = "sample_rows", f"SELECT * FROM {table} LIMIT 5"
        else:
            cols = [c["name"] for c in record["table"]["table_info"]["columns"]]
            parts = ", ".join(f"COUNT(DISTINCT {quote_ident(c)})" for c in cols)
            name, sql = "profile_columns", f"SELECT COUNT(*), {parts} FROM {table}"
        with self._on_engine(ep):
            result = VERIFIER_CACHE.get(
                f"{self._cache_ns}tool:{name}", ep.task, sql, lambda: run_sql(record, sql)
            )
        text = f"{name}: {sql} -> {len(result.rows)} row(s)" if result.ok else f"{name}: {result.error}"
        return Outcome(text=text, tool={"name": name, "valid": True, "ok": result.ok}, failure=not result.ok)

    def check(self, ep: Episode) -> Outcome:
        """Run the draft on a copy of the table (errors, statement kind, empty result) plus an LLM judge."""
        assert ep.draft is not None and ep.draft_hash is not None
        record = ep.task.payload["record"]
        draft = ep.draft
        with self._on_engine(ep):
            report = VERIFIER_CACHE.get(
                f"{self._cache_ns}evaluate", ep.task, draft, lambda: evaluate(record, draft)
            )
        items = (report.format_ok, report.executes, not report.issues)
        passed, total, issues = with_judge(ep, items, report.issues)
        return check_outcome(ep, f"ran the draft on a copy: {len(issues)} issue(s)", passed / total, issues)

    def score(self, ep: Episode, artifact: str) -> Verdict:
        record = ep.task.payload["record"]
        with self._on_engine(ep):
            rubric = VERIFIER_CACHE.get(
                f"{self._cache_ns}score", ep.task, artifact, lambda: artifact_scores(record, artifact)
            )
        native = float(rubric["correctness"][0] >= rubric["correctness"][1] > 0)
        return Verdict(rubric=dict(rubric), signals={"native_score": native})


class HarnessDBBenchEnv(HarnessEnv):
    """DB-Bench (AgentBench): answer a question about a table, or INSERT/UPDATE it, with one SQL statement.

    ## Description

    Each task is an AgentBench DB-Bench record: a question or instruction, one table (every column
    TEXT) and a gold answer (``label``) or a gold table hash (``answer_md5``). The table lives in a
    per-episode in-memory SQLite database with MySQL-compatibility shims (ai_ci collation, MySQL LIKE,
    backslash escapes); an authorizer and a time limit keep SQL safe. The executor answers with one SQL
    statement (or ``Final Answer: [...]`` for questions).

    - OBSERVE: read the question and the schema.
    - CALL_TOOL: run the next fixed exploratory query (sample rows, then column profiles; at most 2).
    - CHECK: run the draft on a copy of the table (errors, statement kind, empty result or no change)
      and ask the executor to judge it; the issues localise the fault.
    - RETRIEVE: not available (always masked).

    Rubric: ``correctness`` (SELECT family: AgentBench's comparator against ``label``; INSERT/UPDATE:
    the upstream table hash equals ``answer_md5``), ``executes`` (runs without error), ``format`` (one
    statement of the required kind). ``Verdict.signals["native_score"]`` is AgentBench's 0/1 score.
    Domain kwargs: ``data_path`` (directory with upstream ``standard.jsonl``/``dev.jsonl``), ``n_train``
    (16), ``n_eval`` (20), ``engine`` (``"sqlite"``, default; or ``"mysql"``: run every statement on a
    real MySQL/MariaDB server, one database per episode, the table hash computed by the server) and
    ``dsn`` (``"mysql://user:password@host:port/"``; default ``$HARNESS_GYM_MYSQL_DSN``; needs the
    ``mysql`` extra). Base harness: OBSERVE, CALL_TOOL, DRAFT, SUBMIT. MDP v2 (``obs_layout="v2"``) plays
    ``dbbench-v1``: 36 tasks with upstream's shares of statement types (a third each SELECT family,
    INSERT, UPDATE) and table widths (5-9 columns), from ``generate_mdp2``.
    """

    domain_cls = DBBenchDomain

    def close(self) -> None:
        """Drop the server database of an unfinished episode and disconnect (engine="mysql")."""
        self.domain.close()
        super().close()
