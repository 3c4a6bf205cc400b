"""SQLite engine with MySQL-compatibility shims, the upstream table hash and the SELECT comparator.

AgentBench's DB-Bench runs every record against MySQL: one table, every column ``TEXT``, every cell
``str()``-ed. Here each record gets its own in-memory SQLite database that behaves like that MySQL
table where the gold SQL needs it:

- TEXT columns use the ``MYSQL_AI_CI`` collation: accent- and case-insensitive, a non-breaking space
  compares as a space (MySQL's ``utf8mb4_0900_ai_ci``, NO PAD);
- ``LIKE`` has MySQL semantics: collation-insensitive, ``\\`` escapes by default;
- string literals are rewritten before execution: MySQL backslash escapes (``\\'``, ``\\\\``, ``\\n``...)
  are decoded and double-quoted strings become string literals (MySQL's default ``sql_mode``);
- ``CONCAT``/``CONCAT_WS`` with MySQL NULL handling.

Safety: an authorizer allows only reading and writing rows of the record's own table (SELECT, INSERT,
UPDATE, DELETE, recursive CTEs, functions but ``load_extension``): schema changes (CREATE, DROP, ALTER),
ATTACH/DETACH, PRAGMAs, transactions and reads of ``sqlite_master`` or any other table are denied with
an error naming the operation. A progress handler aborts a statement after ``TIME_LIMIT_S``; strings and
blobs are capped at ``MAX_VALUE_BYTES`` (a single ``zeroblob``/``printf`` call cannot exhaust memory);
each execution runs on a fresh copy of the record's table.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import time
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

TIME_LIMIT_S = 0.5
"""Wall-clock bound on one statement (the progress handler aborts it)."""
GROUP_CONCAT_MAX_LEN = 1024
"""MySQL's default ``group_concat_max_len``: the table hash's row-hash list is cut to this many bytes."""
MAX_ROWS = 200
"""Rows of a SELECT result kept (answers beyond that are never needed)."""
MAX_VALUE_BYTES = 1_000_000
"""SQLite's length limit on one string or blob value (its default is 1 GB)."""


# -- collation and LIKE ---------------------------------------------------------------------------
_FOLD_CACHE: dict[str, str] = {}


def fold(text: str) -> str:
    """Comparison key of the ai_ci collation: NBSP as space, accents stripped, case folded."""
    key = _FOLD_CACHE.get(text)
    if key is None:
        decomposed = unicodedata.normalize("NFKD", text.replace("\xa0", " "))
        key = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()
        if len(_FOLD_CACHE) < 100_000:
            _FOLD_CACHE[text] = key
    return key


def _collate(a: str, b: str) -> int:
    fa, fb = fold(a), fold(b)
    return (fa > fb) - (fa < fb)


_LIKE_CACHE: dict[tuple[str, str], re.Pattern[str]] = {}


def _like_regex(pattern: str, escape: str) -> re.Pattern[str]:
    compiled = _LIKE_CACHE.get((pattern, escape))
    if compiled is None:
        out, i = [], 0
        while i < len(pattern):
            ch = pattern[i]
            if ch == escape and i + 1 < len(pattern):
                out.append(re.escape(fold(pattern[i + 1])))
                i += 2
                continue
            out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(fold(ch)))
            i += 1
        compiled = re.compile("".join(out), re.DOTALL)
        _LIKE_CACHE[(pattern, escape)] = compiled
    return compiled


def _as_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def mysql_like(pattern: Any, value: Any, escape: Any = "\\") -> int | None:
    """SQLite calls ``like(pattern, value[, escape])`` for ``value LIKE pattern``."""
    if pattern is None or value is None:
        return None
    regex = _like_regex(_as_text(pattern), escape if isinstance(escape, str) and escape else "\\")
    return int(regex.fullmatch(fold(_as_text(value))) is not None)


def _concat(*args: Any) -> str | None:
    if any(a is None for a in args):
        return None
    return "".join(_as_text(a) for a in args)


def _concat_ws(sep: Any, *args: Any) -> str | None:
    if sep is None:
        return None
    return _as_text(sep).join(_as_text(a) for a in args if a is not None)


# -- literal rewriting ------------------------------------------------------------------------------
_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a"}


def _read_literal(sql: str, start: int) -> tuple[str, int]:
    """Decode the MySQL string literal opening at ``start``; return (value, index after it)."""
    quote, i, out = sql[start], start + 1, []
    while i < len(sql):
        ch = sql[i]
        if ch == "\\" and i + 1 < len(sql):
            nxt = sql[i + 1]
            # MySQL keeps the backslash of \% and \_ (they matter to LIKE).
            out.append("\\" + nxt if nxt in "%_" else _ESCAPES.get(nxt, nxt))
            i += 2
        elif ch == quote:
            if i + 1 < len(sql) and sql[i + 1] == quote:
                out.append(quote)
                i += 2
            else:
                return "".join(out), i + 1
        else:
            out.append(ch)
            i += 1
    raise sqlite3.OperationalError("unterminated string literal")


_DIGIT_IDENT = re.compile(r"(?<![\w.])(?!\d+[eE][+-]?\d+\b)(\d+[A-Za-z_]\w*)")
"""MySQL allows unquoted identifiers that start with a digit (``1952_British_Grand_Prix_0``)."""


def rewrite_mysql(sql: str) -> str:
    """MySQL string literals ('...' and "...", backslash escapes) as SQLite single-quoted literals."""
    if "\\" not in sql and '"' not in sql and not _DIGIT_IDENT.search(sql):
        return sql
    out, i, code = [], 0, []
    while i < len(sql):
        ch = sql[i]
        if ch in "'\"`":
            out.append(_DIGIT_IDENT.sub(r"`\1`", "".join(code)))
            code = []
            if ch == "`":
                end = sql.find("`", i + 1)
                end = len(sql) - 1 if end < 0 else end
                out.append(sql[i : end + 1])
                i = end + 1
            else:
                value, i = _read_literal(sql, i)
                out.append("'" + value.replace("'", "''") + "'")
        else:
            code.append(ch)
            i += 1
    out.append(_DIGIT_IDENT.sub(r"`\1`", "".join(code)))
    return "".join(out)


# -- safety ------------------------------------------------------------------------------------------
_ROW_ACTIONS = {sqlite3.SQLITE_READ, sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE}
"""Authorizer actions whose first argument is the table they touch."""
_ALLOW = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE, sqlite3.SQLITE_FUNCTION, *_ROW_ACTIONS}


def _authorizer_for(table: str) -> Callable[[int, str | None, str | None, str | None, str | None], int]:
    """An authorizer that lets statements touch the rows of ``table`` and nothing else."""
    own = table.casefold()

    def authorize(
        action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None
    ) -> int:
        if action not in _ALLOW:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION and arg2 and arg2.lower() == "load_extension":
            return sqlite3.SQLITE_DENY
        if action in _ROW_ACTIONS and (arg1 or "").casefold() != own:
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    return authorize


# -- database ----------------------------------------------------------------------------------------
def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def columns_of(record: Mapping[str, Any]) -> list[str]:
    return [column["name"] for column in record["table"]["table_info"]["columns"]]


def _cell(value: Any) -> str | None:
    return None if value is None else str(value)


def _open() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    conn.create_collation("MYSQL_AI_CI", _collate)
    conn.create_function("like", 2, mysql_like, deterministic=True)
    conn.create_function("like", 3, mysql_like, deterministic=True)
    conn.create_function("concat", -1, _concat, deterministic=True)
    conn.create_function("concat_ws", -1, _concat_ws, deterministic=True)
    return conn


_TEMPLATES: dict[str, sqlite3.Connection] = {}


def _template(record: Mapping[str, Any]) -> sqlite3.Connection:
    """A loaded, read-only-by-convention database per table (keyed by its content)."""
    table = record["table"]
    key = hashlib.sha1(repr((table["table_name"], columns_of(record), table["table_info"]["rows"])).encode())
    digest = key.hexdigest()
    conn = _TEMPLATES.get(digest)
    if conn is None:
        conn = _open()
        name, cols = table["table_name"], columns_of(record)
        defs = ", ".join(f"{quote_ident(c)} TEXT COLLATE MYSQL_AI_CI" for c in cols)
        conn.execute(f"CREATE TABLE {quote_ident(name)} ({defs})")
        marks = ", ".join("?" for _ in cols)
        rows = [tuple(_cell(v) for v in row) for row in table["table_info"]["rows"]]
        conn.executemany(f"INSERT INTO {quote_ident(name)} VALUES ({marks})", rows)
        if len(_TEMPLATES) > 2000:
            _TEMPLATES.clear()
        _TEMPLATES[digest] = conn
    return conn


def open_database(record: Mapping[str, Any]) -> sqlite3.Connection:
    """A fresh in-memory copy of the record's table, with the shims and the safety hooks installed."""
    conn = _open()
    _template(record).backup(conn)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.set_authorizer(_authorizer_for(record["table"]["table_name"]))
    return conn


@dataclass(frozen=True)
class Execution:
    """What running one statement did."""

    ok: bool
    error: str | None = None
    rows: tuple[tuple[Any, ...], ...] = ()
    is_query: bool = False
    changes: int = 0
    table_hash: str | None = None


class Backend(Protocol):
    """Another engine (``mysql_engine.MySQLEngine``): runs a statement on the record's original table."""

    def run_sql(self, record: Mapping[str, Any], sql: str, time_limit: float | None = None) -> Execution: ...


_BACKEND: ContextVar[Backend | None] = ContextVar("dbbench_backend", default=None)
"""The engine ``run_sql`` delegates to (None: this SQLite engine); set by the domain around its calls."""


@contextmanager
def using_backend(backend: Backend | None) -> Iterator[None]:
    """Route ``run_sql`` (and so the verifier) to ``backend`` inside the block; None keeps SQLite."""
    token = _BACKEND.set(backend)
    try:
        yield
    finally:
        _BACKEND.reset(token)


def run_sql(record: Mapping[str, Any], sql: str, time_limit: float = TIME_LIMIT_S) -> Execution:
    """Run one statement on a fresh copy of the record's table; the table hash is taken afterwards."""
    backend = _BACKEND.get()
    if backend is not None:
        return backend.run_sql(record, sql, time_limit)
    conn = open_database(record)
    deadline = time.perf_counter() + time_limit
    conn.set_progress_handler(lambda: int(time.perf_counter() > deadline), 1000)
    try:
        cursor = conn.execute(rewrite_mysql(sql.strip().rstrip(";")))
        rows = tuple(cursor.fetchmany(MAX_ROWS)) if cursor.description is not None else ()
        is_query = cursor.description is not None
        changes = conn.total_changes
        digest = table_hash(record, conn)
    except (sqlite3.Error, OverflowError, ValueError, MemoryError) as exc:
        message = str(exc)
        if "interrupted" in message:
            message = "query interrupted (time limit)"
        elif message == "not authorized":
            message = (
                "not authorized: only SELECT, INSERT, UPDATE and DELETE on the rows of "
                f"{quote_ident(record['table']['table_name'])} are allowed"
            )
        conn.close()
        return Execution(ok=False, error=message)
    conn.close()
    return Execution(ok=True, rows=rows, is_query=is_query, changes=changes, table_hash=digest)


def _mysql_text(value: Any) -> str:
    if isinstance(value, float):
        return repr(value) if not value.is_integer() else str(int(value))
    return str(value)


def table_hash(record: Mapping[str, Any], conn: sqlite3.Connection) -> str:
    """AgentBench's MySQL table hash, as the ``answer_md5`` string ``"[('<md5>',)]"``.

    ``md5(group_concat(rowhash ORDER BY rowhash))`` over ``rowhash = substring(md5(concat_ws(',',
    cols...)), 1, 5)``; concat_ws skips NULLs and group_concat's result is cut at 1024 bytes.
    """
    cols = ", ".join(quote_ident(c) for c in columns_of(record))
    conn.set_authorizer(None)
    rows = conn.execute(f"SELECT {cols} FROM {quote_ident(record['table']['table_name'])}").fetchall()
    row_hashes = sorted(
        hashlib.md5(",".join(_mysql_text(v) for v in row if v is not None).encode()).hexdigest()[:5]
        for row in rows
    )
    if not row_hashes:
        return "[(None,)]"
    joined = ",".join(row_hashes).encode()[:GROUP_CONCAT_MAX_LEN]
    return f"[('{hashlib.md5(joined).hexdigest()}',)]"


def initial_hash(record: Mapping[str, Any]) -> str:
    conn = open_database(record)
    try:
        return table_hash(record, conn)
    finally:
        conn.close()


# -- SELECT comparator -------------------------------------------------------------------------------
_SPECIAL = {"none", "null", "undefined", "nan", "inf", "infinity", "-inf", "-infinity", ""}


def normalize_value(value: Any) -> str:
    """Upstream normalisation: NULL-ish -> "0", trailing % and thousands separators dropped."""
    if value is None:
        return "0"
    text = str(value).strip()
    if text.endswith("%"):
        return text[:-1].strip()
    if "," in text and not text.startswith("[") and not text.endswith("]"):
        text = text.replace(",", "")
    return "0" if text.lower() in _SPECIAL else text


def _is_float(text: str) -> bool:
    try:
        float(text)
    except (ValueError, TypeError):
        return False
    return True


def _close(a: str, b: str, tol: float = 1e-2) -> bool:
    try:
        return abs(float(a) - float(b)) <= tol
    except (ValueError, TypeError, OverflowError):
        return False


def clean_answer(values: Sequence[Any]) -> list[str]:
    return [normalize_value(str(v).strip().strip("'\"") if v is not None else None) for v in values]


def answers_match(answer: Sequence[Any], gold: Sequence[Any]) -> bool:
    """AgentBench's SELECT comparison (``DBResultProcessor.compare_results``): one value each -> 0.01
    numeric tolerance or string equality; several all-numeric -> equal counts, and each answer in turn
    takes the first gold value within tolerance that no earlier answer took (each gold value matches at
    most one answer; first fit, as upstream, not a maximum matching); otherwise set equality (repeats do
    not count)."""
    ans, ref = clean_answer(answer), clean_answer(gold)
    if len(ans) == 1 and len(ref) == 1:
        a, b = ans[0], ref[0]
        if _is_float(a) and _is_float(b):
            return _close(a, b)
        return a == b
    if all(_is_float(x) for x in ans) and all(_is_float(x) for x in ref):
        if len(ans) != len(ref):
            return False
        used = [False] * len(ref)
        for a in ans:
            for i, b in enumerate(ref):
                if not used[i] and _close(a, b):
                    used[i] = True
                    break
            else:
                return False
        return all(used)
    return set(ans) == set(ref)


def result_values(rows: Sequence[Sequence[Any]]) -> list[Any]:
    """A SELECT result as the answer list the comparator reads (every cell, row by row)."""
    return [_mysql_text(v) if v is not None else None for row in rows for v in row]
