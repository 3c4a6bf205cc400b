"""Real MySQL/MariaDB engine for DB-Bench: the episode's table lives on a server, as in AgentBench.

The SQLite engine (``engine.py``) imitates MySQL; this one removes the imitation. Each episode gets its
own uniquely named database holding the record's table, created as AgentBench creates it (every
column ``TEXT``, every cell ``str()``-ed, NULL kept). Every statement runs in a transaction that is
rolled back afterwards, so each execution sees the original table, as in the SQLite engine; the table
hash is computed *by the server* with AgentBench's own query (``md5(group_concat(rowhash order by
rowhash))`` over ``substring(md5(concat_ws(',', cols...)), 1, 5)``) before the rollback.

Session settings follow MySQL 8's defaults, which AgentBench's ``mysql`` image has: ``utf8mb4`` with an
accent-insensitive NO PAD collation (``utf8mb4_0900_ai_ci`` or MariaDB's nearest one),
``group_concat_max_len = 1024`` and MySQL 8's ``sql_mode``. Statements are limited to the kinds DB-Bench
needs (reads and row changes: no DDL, no file access) and to a statement time limit.

The server is reached with PyMySQL (pure Python, imported lazily: ``pip install harness-gym[mysql]``).
Give the engine a throwaway server or a user whose privileges cover only the ``hg\\_%`` databases.
"""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from harness_gym.domains.dbbench.engine import MAX_ROWS, Execution, columns_of, quote_ident

DSN_ENV = "HARNESS_GYM_MYSQL_DSN"
"""Environment variable read when ``engine="mysql"`` is given without ``dsn``."""
MIN_TIME_LIMIT_S = 2.0
"""Floor on the statement time limit: a server round trip costs more than an in-process SQLite call."""
CONNECT_TIMEOUT_S = 5.0
COLLATIONS = (
    "utf8mb4_0900_ai_ci",
    "utf8mb4_uca1400_nopad_ai_ci",
    "utf8mb4_unicode_520_nopad_ci",
    "utf8mb4_unicode_520_ci",
    "utf8mb4_unicode_ci",
)
"""Table collation, best first: MySQL 8's default, then MariaDB's closest accent-insensitive ones."""
SQL_MODE = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
"""MySQL 8's default ``sql_mode`` minus the date-only flags (TEXT columns hold no dates)."""
MARIADB_SQL_MODE = "ONLY_FULL_GROUP_BY,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
"""On MariaDB, strict mode turns the string-to-number warning of ``UPDATE ... WHERE text_col = 16`` into
an error where MySQL 8 only warns (upstream's ``answer_md5`` shows the update ran): leave it out."""
ALLOWED = frozenset({"SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "REPLACE", "SHOW", "DESCRIBE", "DESC"})
"""Statement kinds that may run: reads and row changes (row changes are rolled back)."""
_DENIED = re.compile(r"\binto\s+(outfile|dumpfile)\b|\bload_file\s*\(", re.IGNORECASE)
_LEADING_COMMENT = re.compile(r"^(\s+|--[^\n]*\n?|#[^\n]*\n?|/\*.*?\*/)+", re.DOTALL)
_TIMEOUT_ERRORS = {1317, 1969, 3024}
"""Server errors that mean the time limit stopped the statement (interrupted / max_statement_time)."""


@dataclass(frozen=True)
class DSN:
    """Where the server is: ``mysql://user:password@host:port/`` (``mariadb://`` also accepted)."""

    host: str
    port: int
    user: str
    password: str

    @classmethod
    def parse(cls, dsn: str) -> DSN:
        """Parse and validate; the error names what is wrong (never the password)."""
        if not isinstance(dsn, str) or not dsn.strip():
            raise ValueError("MySQL DSN is empty; expected mysql://user:password@host:port/")
        parts = urlsplit(dsn.strip())
        shown = _redact(dsn)
        if parts.scheme not in ("mysql", "mariadb", "mysql+pymysql"):
            raise ValueError(f"malformed MySQL DSN {shown!r}: scheme must be mysql:// (or mariadb://)")
        try:
            port = parts.port or 3306
        except ValueError as exc:
            raise ValueError(f"malformed MySQL DSN {shown!r}: {exc}") from None
        if not parts.hostname:
            raise ValueError(f"malformed MySQL DSN {shown!r}: no host")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(
                f"malformed MySQL DSN {shown!r}: no database, query or fragment may follow the host "
                "(each episode creates its own database)"
            )
        if not parts.username:
            raise ValueError(f"malformed MySQL DSN {shown!r}: no user")
        return cls(parts.hostname, port, unquote(parts.username), unquote(parts.password or ""))

    def __str__(self) -> str:
        return f"mysql://{self.user}@{self.host}:{self.port}/"


def _redact(dsn: str) -> str:
    return re.sub(r"(//[^:/@]*:)[^@]*@", r"\1***@", dsn)


def statement_kind(sql: str) -> str:
    """First keyword of the statement (leading comments and parentheses skipped), upper-cased."""
    body = _LEADING_COMMENT.sub("", sql).lstrip("( \t\r\n")
    match = re.match(r"[A-Za-z]+", body)
    return match.group(0).upper() if match else ""


def hash_query(record: Mapping[str, Any]) -> str:
    """AgentBench's table-hash query for the record's table (upstream ``md5_query``)."""
    cols = ", ".join(quote_ident(c) for c in columns_of(record))
    table = quote_ident(record["table"]["table_name"])
    return (
        "SELECT md5(group_concat(rowhash ORDER BY rowhash)) AS hash "
        f"FROM (SELECT substring(md5(concat_ws(',', {cols})), 1, 5) AS rowhash FROM {table}) AS sub"
    )


def _cell(value: Any) -> str | None:
    return None if value is None else str(value)


def _value(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    return value


class MySQLEngine:
    """One server connection and, at a time, one episode database (``hg_<random>``)."""

    def __init__(self, dsn: str, time_limit: float = MIN_TIME_LIMIT_S) -> None:
        self.dsn = DSN.parse(dsn)
        self.time_limit = max(float(time_limit), MIN_TIME_LIMIT_S)
        try:
            import pymysql
        except ImportError as exc:
            raise ImportError(
                'engine="mysql" needs PyMySQL: pip install "harness-gym[mysql]" (or "PyMySQL>=1.1")'
            ) from exc
        self._pymysql = pymysql
        self._conn: Any = None
        self._episode: object | None = None
        self.mariadb = False
        self._database: str | None = None
        self._loaded: Mapping[str, Any] | None = None
        self._connect()
        self.collation = self._pick_collation()

    # -- connection --------------------------------------------------------------------------------
    def _connect(self) -> None:
        pymysql = self._pymysql
        try:
            self._conn = pymysql.connect(
                host=self.dsn.host,
                port=self.dsn.port,
                user=self.dsn.user,
                password=self.dsn.password,
                charset="utf8mb4",
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT_S,
                read_timeout=self.time_limit + 30.0,
                write_timeout=self.time_limit + 30.0,
            )
        except pymysql.err.OperationalError as exc:
            raise ConnectionError(
                f"cannot reach the MySQL server at {self.dsn.host}:{self.dsn.port} "
                f"(user {self.dsn.user!r}): {exc.args[-1] if exc.args else exc}"
            ) from exc
        self._loaded = None
        self.mariadb = "mariadb" in self._conn.get_server_info().lower()
        mode = MARIADB_SQL_MODE if self.mariadb else SQL_MODE
        with self._conn.cursor() as cur:
            cur.execute(f"SET SESSION sql_mode = '{mode}', SESSION group_concat_max_len = 1024")

    def _pick_collation(self) -> str:
        with self._conn.cursor() as cur:
            cur.execute("SHOW COLLATION WHERE Charset = 'utf8mb4'")
            have = {row[0] for row in cur.fetchall()}
        return next((c for c in COLLATIONS if c in have), "utf8mb4_general_ci")

    def _limit_sql(self, seconds: float) -> str:
        if self.mariadb:
            return f"SET SESSION max_statement_time = {seconds:.3f}"
        return f"SET SESSION max_execution_time = {int(seconds * 1000)}"

    # -- episode database --------------------------------------------------------------------------
    def bind(self, episode: object) -> None:
        """Make ``episode`` the current one; a different episode's database is dropped first."""
        if episode is not self._episode:
            self.end_episode()
            self._episode = episode

    def end_episode(self) -> None:
        """Drop the current episode's database (episode end); harmless when there is none."""
        database, self._database, self._loaded, self._episode = self._database, None, None, None
        if database is not None and self._conn is not None:
            try:
                self._conn.ping(reconnect=False)
                with self._conn.cursor() as cur:
                    cur.execute(f"DROP DATABASE IF EXISTS {quote_ident(database)}")
            except self._pymysql.err.Error:
                pass

    def close(self) -> None:
        """Drop the episode database and close the connection."""
        self.end_episode()
        if self._conn is not None:
            with contextlib.suppress(self._pymysql.err.Error):
                self._conn.close()
            self._conn = None

    @property
    def database(self) -> str | None:
        return self._database

    def _load(self, record: Mapping[str, Any]) -> None:
        """(Re)create the episode database with the record's table, as AgentBench's ``build_init_sql``."""
        if self._database is None:
            self._database = f"hg_{secrets.token_hex(8)}"
        db, cols = quote_ident(self._database), columns_of(record)
        table = quote_ident(record["table"]["table_name"])
        rows = [tuple(_cell(v) for v in row) for row in record["table"]["table_info"]["rows"]]
        with self._conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {db}")
            cur.execute(f"CREATE DATABASE {db} CHARACTER SET utf8mb4 COLLATE {self.collation}")
            cur.execute(f"USE {db}")
            defs = ", ".join(f"{quote_ident(c)} TEXT" for c in cols)
            cur.execute(f"CREATE TABLE {table} ({defs}) ENGINE=InnoDB")
            if rows:
                # Names may hold '%': double it, the statement is a PyMySQL format string.
                names = ", ".join(quote_ident(c) for c in cols).replace("%", "%%")
                marks = "(" + ", ".join("%s" for _ in cols) + ")"
                cur.executemany(f"INSERT INTO {table.replace('%', '%%')} ({names}) VALUES {marks}", rows)
        self._loaded = record

    def _ready(self, record: Mapping[str, Any]) -> None:
        if self._conn is None:
            self._connect()
        else:
            try:
                self._conn.ping(reconnect=False)
            except self._pymysql.err.Error:
                self._connect()
        if self._loaded is not record:
            self._load(record)

    # -- execution ---------------------------------------------------------------------------------
    def table_hash(self, record: Mapping[str, Any]) -> str:
        """The server's AgentBench hash of the table as it stands, formatted like ``answer_md5``."""
        with self._conn.cursor() as cur:
            cur.execute(hash_query(record))
            rows = cur.fetchall()
        return str([tuple(_value(v) for v in row) for row in rows])

    def run_sql(self, record: Mapping[str, Any], sql: str, time_limit: float | None = None) -> Execution:
        """Run one statement on the original table (rolled back afterwards); the hash is taken before."""
        return self.run_and_snapshot(record, sql, time_limit)[0]

    def run_and_snapshot(
        self, record: Mapping[str, Any], sql: str, time_limit: float | None = None
    ) -> tuple[Execution, list[tuple[Any, ...]] | None]:
        """``run_sql`` plus the table's rows after the statement (None on error), for cross-checks."""
        statement = sql.strip().rstrip(";").strip()
        kind = statement_kind(statement)
        if kind not in ALLOWED:
            return Execution(ok=False, error=f"statement kind {kind or '(none)'} is not allowed here"), None
        if _DENIED.search(statement):
            error = "file access (INTO OUTFILE/DUMPFILE, LOAD_FILE) is not allowed"
            return Execution(ok=False, error=error), None
        self._ready(record)
        limit = max(float(time_limit or 0.0), self.time_limit)
        err = self._pymysql.err
        conn = self._conn
        try:
            with conn.cursor() as cur:
                cur.execute(self._limit_sql(limit))
                conn.begin()
                try:
                    # PyMySQL interpolates only when args are given; the statement goes to the server as is.
                    cur.execute(statement)
                    is_query = cur.description is not None
                    rows = tuple(tuple(_value(v) for v in row) for row in cur.fetchmany(MAX_ROWS))
                    if is_query:
                        cur.fetchall()
                    changes = 0 if is_query else max(cur.rowcount, 0)
                    cur.execute(self._limit_sql(0))
                    digest = self.table_hash(record)
                    cols = ", ".join(quote_ident(c) for c in columns_of(record))
                    cur.execute(f"SELECT {cols} FROM {quote_ident(record['table']['table_name'])}")
                    table = [tuple(_value(v) for v in row) for row in cur.fetchall()]
                finally:
                    try:
                        conn.rollback()
                    except err.Error:  # the connection is gone (the server discards what was not committed):
                        self._conn = None  # reconnect next time; the statement's own error, if any, stands
        except err.Error as exc:
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
            if isinstance(exc, err.OperationalError) and code in (2006, 2013, 2014):
                self._conn = None  # lost connection (socket timeout): reconnect and reload next time
            elif code not in _TIMEOUT_ERRORS and not isinstance(exc, err.ProgrammingError | err.DataError):
                self._loaded = None  # unexpected state: rebuild the table before the next statement
            message = "query interrupted (time limit)" if code in _TIMEOUT_ERRORS else str(exc.args[-1])
            self._reset_limit()
            return Execution(ok=False, error=message), None
        return Execution(ok=True, rows=rows, is_query=is_query, changes=changes, table_hash=digest), table

    def _reset_limit(self) -> None:
        if self._conn is None:
            return
        try:
            with self._conn.cursor() as cur:
                cur.execute(self._limit_sql(0))
        except self._pymysql.err.Error:
            self._conn = None
