"""Record/replay response cache for LLM executors (DESIGN.md §5), on stdlib ``sqlite3`` only.

A cache entry is keyed by ``ResponseCache.key(model, messages, params, sample_index)``: the sha256 of a
canonical JSON (sorted keys, no whitespace) of those values, so dict key order never matters and any
change to any of them gives a new key. The endpoint's URL is not part of it: the same model behind
another URL (a moved server, a load balancer) answers the same requests from the cache. A
``sample_index`` of None leaves it out of the key: executors pass None for greedy (temperature 0) calls,
so equal prompts share one entry.

Each entry also stores the request it answers (model, base URL, messages, params, as JSON), the reply's
``finish_reason``, reasoning (``reasoning_content``), tool calls or refusal, the call's latency and the
episode and step that first asked for it; table ``calls`` maps every (episode, step) recorded to its key,
so one episode's conversation can be read back from the cache alone (:meth:`ResponseCache.conversation`);
table ``settings`` keeps every executor configuration that recorded into the file and ``runs`` the
commands that did, which ``harness-gym replay`` reruns. A replay miss says what changed
(:meth:`ResponseCache.explain_miss`).

Files from earlier versions are upgraded in place when opened for writing: missing columns and tables
are added, and keys of version 1 (which held the base URL) are recomputed from the request stored with
them (:func:`upgrade`; identical requests recorded behind two URLs keep the first entry). Opened
read-only (replay), such a file is read as it is, its version-1 keys looked up through their version-2
equivalents.

Modes:

- ``read_write`` (record): ``fetch`` returns a hit, or calls ``compute`` and stores its result.
- ``read_only`` (replay): ``fetch`` returns a hit; a miss raises :class:`CacheMissError` and never calls
  ``compute``, so replaying a cache reproduces a real-LLM run exactly and offline.
- ``reask_errors``: as ``read_write``, but a recorded error reply (:attr:`CachedResponse.is_error`: an
  empty reply, one with no choice, a context overflow) is asked again and the new reply replaces it, for
  a run that met a transient server fault it should not keep.
- ``off``: ``fetch`` always calls ``compute`` and nothing is read or stored (no file is opened).

An error reply is kept like any reply (so a resume or a replay repeats the run exactly), but it is never
an answer: the executor reads it back as the step error it was, marked a recorded error.

Parallel collection: several processes may share one file. The database runs in WAL mode with a busy
timeout, writes are ``INSERT OR IGNORE`` (first writer wins; identical keys give identical responses
anyway), schema creation is idempotent, and each process holds its own connection: a cache object
inherited over ``fork`` (or unpickled) notices the pid change and opens a fresh one. Within a process,
many threads (episodes in flight) share one cache object: a lock serialises its connection and counters,
never the model call itself.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

CacheMode = Literal["read_write", "read_only", "reask_errors", "off"]
MODES: tuple[str, ...] = ("read_write", "read_only", "reask_errors", "off")
WRITABLE = frozenset({"read_write", "reask_errors"})

_BUSY_TIMEOUT_S = 30.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    created_at REAL NOT NULL,
    finish_reason TEXT,
    request TEXT
)
"""
_ADDED_COLUMNS = {
    "finish_reason": "TEXT",
    "request": "TEXT",
    "reasoning": "TEXT",
    "extra": "TEXT",
    "latency_s": "REAL",
    "episode": "TEXT",
    "step": "INTEGER",
}
"""Columns newer than the first schema: added to old files opened for writing."""
_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS calls (episode TEXT NOT NULL, step INTEGER NOT NULL, key TEXT NOT NULL, "
    "PRIMARY KEY (episode, step))",
    "CREATE TABLE IF NOT EXISTS settings (hash TEXT PRIMARY KEY, settings TEXT NOT NULL, "
    "created_at REAL NOT NULL)",
    "CREATE TABLE IF NOT EXISTS runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at REAL NOT NULL, "
    "argv TEXT NOT NULL, outcome TEXT)",
)
KEY_VERSION = 2
"""1: the key held the base URL; 2: it does not (model, messages, params, sample index only)."""


class CacheError(Exception):
    """A response-cache problem (misuse, or a file that is not a response cache)."""


class CacheMissError(CacheError, LookupError):
    """A ``read_only`` (replay) cache has no entry for a request; replay forbids calling the model."""

    def __init__(self, key: str, model: str | None = None, path: str | os.PathLike[str] | None = None):
        self.key = key
        self.model = model
        where = f" in {os.fspath(path)}" if path is not None else ""
        super().__init__(
            f"response cache miss{where} for key {key} (model {model!r}): the cache is in read_only "
            "(replay) mode, which forbids calling the model; record this request first with "
            "mode='read_write'"
        )


@dataclass(frozen=True)
class CachedResponse:
    """One stored executor reply: the artifact text and its usage."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    finish_reason: str | None = None
    """The endpoint's ``finish_reason``; ``length`` marks a reply cut at ``max_tokens``."""
    reasoning: str | None = None
    """A reasoning model's thinking, when the server returns it apart from the content."""
    tool_calls: tuple[dict[str, Any], ...] = ()
    """The reply's ``tool_calls``, as sent."""
    refusal: str | None = None
    no_choice: bool = False
    """The endpoint's reply held no choice at all."""
    error: str | None = None
    """A step error the endpoint's answer amounts to without any reply (a context overflow)."""
    latency_s: float = field(default=0.0, compare=False)
    """Seconds the endpoint took when this reply was recorded."""
    hit: bool = field(default=False, compare=False)
    """Set by :meth:`ResponseCache.fetch`: True when the response came from the cache."""

    @property
    def is_error(self) -> bool:
        """No answer at all: an error, no choice, or nothing in the reply (no text, call or refusal)."""
        empty = not self.text.strip() and not self.tool_calls and self.refusal is None
        return self.error is not None or self.no_choice or empty


def _canonical_json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"response-cache key parts must be plain JSON values: {exc}") from exc


def _key_version(conn: sqlite3.Connection) -> int:
    """The file's key version: 1 for files from before the ``meta`` table existed."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone() is None:
        return 1
    row = conn.execute("SELECT value FROM meta WHERE name = 'key_version'").fetchone()
    return int(row[0]) if row is not None else 1


def _rekeyed(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(stored key, its version-2 key) of every version-1 row with a stored request, oldest first."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(responses)")}
    if "request" not in columns:
        return []
    pairs = []
    for key, request in conn.execute("SELECT key, request FROM responses ORDER BY created_at, key"):
        if not request:
            continue
        r = json.loads(request)
        new = ResponseCache.key(r["model"], r["messages"], r.get("params"), r.get("sample_index"))
        pairs.append((key, new))
    return pairs


def _upgrade(conn: sqlite3.Connection) -> None:
    """Bring a file opened for writing to the current schema and key version, in one transaction."""
    with conn:
        conn.execute(_SCHEMA)
        have = {row[1] for row in conn.execute("PRAGMA table_info(responses)")}
        for name, kind in _ADDED_COLUMNS.items():
            if name not in have:
                conn.execute(f"ALTER TABLE responses ADD COLUMN {name} {kind}")
        version = _key_version(conn)
        for statement in _TABLES:
            conn.execute(statement)
        if version < KEY_VERSION:
            for old, new in _rekeyed(conn):
                if old == new:
                    continue
                taken = conn.execute("SELECT 1 FROM responses WHERE key = ?", (new,)).fetchone()
                if taken:  # the same request recorded behind another URL: the first entry stays
                    conn.execute("DELETE FROM responses WHERE key = ?", (old,))
                else:
                    conn.execute("UPDATE responses SET key = ? WHERE key = ?", (new, old))
        conn.execute(
            "INSERT OR REPLACE INTO meta (name, value) VALUES ('key_version', ?)", (str(KEY_VERSION),)
        )


def upgrade(path: str | os.PathLike[str]) -> int:
    """Upgrade a response-cache file in place (schema and key version); returns the rows it holds.

    Deterministic: the same file gives the same result, with no model and no network. Opening a file
    for writing does the same."""
    with ResponseCache(path, "read_write") as cache:
        return len(cache)


def _locked(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``method`` holding the cache's lock: one connection and its counters serve many threads."""

    @functools.wraps(method)
    def wrapper(self: ResponseCache, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return wrapper


def _is_locked(exc: sqlite3.OperationalError) -> bool:
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


class ResponseCache:
    """SQLite-backed record/replay cache; see the module docstring for the modes and concurrency rules."""

    def __init__(self, path: str | os.PathLike[str] | None, mode: str = "read_write"):
        if mode not in MODES:
            raise ValueError(f"unknown response-cache mode {mode!r}; expected one of {', '.join(MODES)}")
        self.mode: str = mode
        self.path: Path | None = None if path is None else Path(path)
        self._hits = 0
        self._misses = 0
        self._stores = 0
        self._conn: sqlite3.Connection | None = None
        self._pid: int | None = None
        self._columns: set[str] = set()
        self._aliases: dict[str, str] = {}
        """Version-2 key -> the version-1 key it is stored under (old files replayed read-only)."""
        self._lock = threading.RLock()
        if mode == "off":
            return
        if self.path is None:
            raise ValueError(f"response-cache mode {mode!r} needs a file path (only mode='off' takes None)")
        self._check_path()
        self._connection()  # open now so configuration errors surface at construction

    # ------------------------------------------------------------------ keys

    @staticmethod
    def key(
        model: str,
        messages: Sequence[Mapping[str, Any]] | str,
        params: Mapping[str, Any] | None,
        sample_index: int | None,
    ) -> str:
        """sha256 hex of the canonical JSON of (model, messages, request params, sample_index); a None
        ``sample_index`` is left out (greedy calls: equal requests, one entry). No endpoint URL."""
        payload = {
            "model": model,
            "messages": messages,
            "params": dict(params or {}),
        }
        if sample_index is not None:
            payload["sample_index"] = int(sample_index)
        return hashlib.sha256(_canonical_json(payload).encode("utf-8")).hexdigest()

    # ------------------------------------------------------------ connection

    def _check_path(self) -> None:
        assert self.path is not None
        path = self.path
        parent = path.parent if str(path.parent) else Path(".")
        if self.mode == "read_only":
            if not path.is_file():
                raise FileNotFoundError(
                    f"response cache {path} does not exist; read_only (replay) mode needs a recorded file"
                )
            if not os.access(path, os.R_OK):
                raise PermissionError(f"response cache {path} is not readable")
            return
        if not parent.is_dir():
            raise FileNotFoundError(
                f"cannot create response cache {path}: directory {parent} does not exist "
                "(or is not a directory)"
            )
        if not os.access(parent, os.W_OK | os.X_OK):
            raise PermissionError(f"cannot write response cache {path}: directory {parent} is not writable")
        if path.exists() and (not path.is_file() or not os.access(path, os.R_OK | os.W_OK)):
            raise PermissionError(f"response cache {path} is not a readable and writable file")

    def _open(self) -> sqlite3.Connection:
        assert self.path is not None
        deadline = time.monotonic() + _BUSY_TIMEOUT_S
        while True:
            conn: sqlite3.Connection | None = None
            try:
                if self.mode == "read_only":
                    uri = self.path.resolve().as_uri() + "?mode=ro"
                    conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
                    conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
                    found = conn.execute(
                        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'responses'"
                    ).fetchone()
                    if found is None:
                        conn.close()
                        raise CacheError(f"{self.path} is not a response cache (no 'responses' table)")
                    self._columns = self._table_columns(conn)
                    if _key_version(conn) < KEY_VERSION:
                        self._aliases = {new: old for old, new in _rekeyed(conn)}
                else:
                    conn = sqlite3.connect(
                        os.fspath(self.path), timeout=_BUSY_TIMEOUT_S, check_same_thread=False
                    )
                    conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("PRAGMA synchronous = NORMAL")
                    _upgrade(conn)
                    self._columns = self._table_columns(conn)
                return conn
            except sqlite3.OperationalError as exc:
                if conn is not None:
                    conn.close()
                if _is_locked(exc) and time.monotonic() < deadline:
                    time.sleep(0.01)
                    continue
                raise CacheError(f"cannot open response cache {self.path}: {exc}") from exc
            except sqlite3.DatabaseError as exc:
                if conn is not None:
                    conn.close()
                raise CacheError(f"cannot open response cache {self.path}: {exc}") from exc

    @staticmethod
    def _table_columns(conn: sqlite3.Connection) -> set[str]:
        return {row[1] for row in conn.execute("PRAGMA table_info(responses)")}

    def _column(self, name: str) -> str:
        """``name`` if this file has that column, else a NULL stand-in (old files replayed read-only)."""
        return name if name in self._columns else "NULL"

    @_locked
    def _connection(self) -> sqlite3.Connection:
        pid = os.getpid()
        if self._conn is None or self._pid != pid:
            # A connection inherited over fork belongs to the parent: abandon it (never close it here,
            # that could disturb the parent's locks) and open this process's own.
            self._conn = self._open()
            self._pid = pid
        return self._conn

    @_locked
    def close(self) -> None:
        """Close this process's connection (a later call reopens it)."""
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None
        self._pid = None

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_conn"] = None
        state["_pid"] = None
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # -------------------------------------------------------------- entries

    @_locked
    def _lookup(self, key: str) -> CachedResponse | None:
        conn = self._connection()
        columns = ", ".join(self._column(c) for c in ("finish_reason", "reasoning", "extra", "latency_s"))
        row = conn.execute(
            f"SELECT text, prompt_tokens, completion_tokens, cost_usd, {columns} "
            "FROM responses WHERE key = ?",
            (self._aliases.get(key, key),),
        ).fetchone()
        if row is None:
            return None
        extra = json.loads(row[6]) if row[6] else {}
        return CachedResponse(
            text=row[0],
            prompt_tokens=row[1],
            completion_tokens=row[2],
            cost_usd=row[3],
            finish_reason=row[4],
            reasoning=row[5],
            tool_calls=tuple(extra.get("tool_calls", ())),
            refusal=extra.get("refusal"),
            no_choice=bool(extra.get("no_choice", False)),
            error=extra.get("error"),
            latency_s=float(row[7] or 0.0),
        )

    @_locked
    def request(self, key: str) -> dict[str, Any] | None:
        """The request stored with ``key`` (None when absent or recorded before requests were stored)."""
        if self.mode == "off":
            return None
        row = (
            self._connection()
            .execute(
                f"SELECT {self._column('request')} FROM responses WHERE key = ?",
                (self._aliases.get(key, key),),
            )
            .fetchone()
        )
        return json.loads(row[0]) if row is not None and row[0] else None

    @_locked
    def get(self, key: str) -> CachedResponse | None:
        """The stored response for ``key`` or None; counts a hit or a miss (``off``: always a miss)."""
        found = None if self.mode == "off" else self._lookup(key)
        if found is None:
            self._misses += 1
        else:
            self._hits += 1
        return found

    @_locked
    def put(
        self,
        key: str,
        response: CachedResponse,
        model: str = "",
        request: Mapping[str, Any] | None = None,
        episode: str | None = None,
        step: int | None = None,
        replace_entry: bool = False,
    ) -> bool:
        """Store ``response`` (and the ``request`` it answers, asked at ``step`` of ``episode``) under
        ``key`` unless an entry exists (first writer wins; ``replace_entry``: the new one wins).

        Returns True when this call stored it. ``off``: a no-op returning False. ``read_only``: an error.
        """
        if self.mode == "off":
            return False
        if self.mode == "read_only":
            raise CacheError(f"response cache {self.path} is read_only (replay); storing is forbidden")
        extra = {
            name: value
            for name, value in (
                ("tool_calls", list(response.tool_calls)),
                ("refusal", response.refusal),
                ("no_choice", response.no_choice),
                ("error", response.error),
            )
            if value
        }
        conn = self._connection()
        with conn:
            conflict = "REPLACE" if replace_entry else "IGNORE"
            cur = conn.execute(
                f"INSERT OR {conflict} INTO responses (key, model, text, prompt_tokens, completion_tokens, "
                "cost_usd, created_at, finish_reason, request, reasoning, extra, latency_s, episode, step) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    response.text,
                    int(response.prompt_tokens),
                    int(response.completion_tokens),
                    float(response.cost_usd),
                    time.time(),
                    response.finish_reason,
                    None if request is None else _canonical_json(request),
                    response.reasoning,
                    _canonical_json(extra) if extra else None,
                    float(response.latency_s),
                    episode,
                    step,
                ),
            )
        stored = cur.rowcount == 1
        if stored:
            self._stores += 1
        return stored

    @_locked
    def note_call(self, episode: str, step: int, key: str) -> None:
        """Record that ``step`` of ``episode`` asked for ``key`` (writable modes only; a rerun of the same
        episode overwrites its rows)."""
        if self.mode not in WRITABLE:
            return
        conn = self._connection()
        with conn:
            conn.execute(
                "INSERT OR REPLACE INTO calls (episode, step, key) VALUES (?, ?, ?)", (episode, step, key)
            )

    def fetch(
        self,
        key: str,
        compute: Callable[[], CachedResponse],
        model: str | None = None,
        request: Mapping[str, Any] | None = None,
        episode: str | None = None,
        step: int | None = None,
    ) -> CachedResponse:
        """The cached response for ``key``, or ``compute()`` per the mode (see the module docstring).

        ``model`` and ``request`` are stored alongside a new entry, and (``episode``, ``step``) in table
        ``calls``; on a replay miss the ``request`` is compared with the stored ones and the error says
        what differs (:meth:`explain_miss`).
        """
        if self.mode == "off":
            with self._lock:
                self._misses += 1
            return compute()
        if episode is not None and step is not None:
            self.note_call(episode, step, key)
        found = self.get(key)
        reask = found is not None and found.is_error and self.mode == "reask_errors"
        if found is not None and not reask:
            return replace(found, hit=True)
        if reask:
            with self._lock:
                self._hits -= 1
                self._misses += 1
        if self.mode == "read_only":
            error = CacheMissError(key, model, self.path)
            why = self.explain_miss(request) if request is not None else ""
            if why:
                error.args = (f"{error.args[0]}; {why}",)
            raise error
        response = compute()
        stored = self.put(
            key, response, model=model or "", request=request, episode=episode, step=step, replace_entry=reask
        )
        if stored:
            return response
        # Another process stored this key between our miss and our insert: first writer wins.
        return self._lookup(key) or response

    def explain_miss(self, request: Mapping[str, Any]) -> str:
        """What sets ``request`` apart from the recorded ones: a changed model or request parameter
        (named with the recorded and the requested values), or a prompt never recorded."""
        recorded = [json.loads(row[0]) for row in self._rows(self._column("request")) if row[0]]
        if not recorded:
            return ""
        changes = []
        for field_name in ("model",):
            seen = sorted({str(r.get(field_name)) for r in recorded})
            if str(request.get(field_name)) not in seen:
                was = ", ".join(map(repr, seen))
                changes.append(f"{field_name} {request.get(field_name)!r} (recorded: {was})")
        params = dict(request.get("params") or {})
        names = {k for r in recorded for k in dict(r.get("params") or {})} | set(params)
        for name in sorted(names - {"seed"} if request.get("sample_index") is not None else names):
            value = params.get(name)
            seen_values = sorted({repr(dict(r.get("params") or {}).get(name)) for r in recorded})
            if repr(value) not in seen_values:
                changes.append(f"{name} {value!r} (recorded: {', '.join(seen_values)})")
        if changes:
            return "this run differs from the recording in " + "; ".join(changes)
        if all(r.get("messages") != request.get("messages") for r in recorded):
            return (
                "no recorded request has these messages: the prompts, the task or the episode's course "
                "differ from the recording"
            )
        return "a recorded request has these messages but another sample index or seed"

    # -------------------------------------------------- settings, runs, episodes

    def _has_table(self, name: str) -> bool:
        found = (
            self._connection()
            .execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
            .fetchone()
        )
        return found is not None

    @_locked
    def record_settings(self, settings: Mapping[str, Any]) -> None:
        """Keep an executor configuration that records into this file (writable modes only)."""
        if self.mode not in WRITABLE:
            return
        text = _canonical_json(dict(settings))
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        conn = self._connection()
        with conn:
            conn.execute(
                "INSERT OR IGNORE INTO settings (hash, settings, created_at) VALUES (?, ?, ?)",
                (digest, text, time.time()),
            )

    @_locked
    def settings(self) -> list[dict[str, Any]]:
        """The executor configurations that recorded into this file, oldest first."""
        if self.mode == "off" or not self._has_table("settings"):
            return []
        rows = self._connection().execute("SELECT settings FROM settings ORDER BY created_at, hash")
        return [json.loads(row[0]) for row in rows.fetchall()]

    @_locked
    def add_run(self, argv: Sequence[str], outcome: Mapping[str, Any] | None = None) -> int | None:
        """Keep a command that recorded into this file (``harness-gym replay`` reruns it); its id."""
        if self.mode not in WRITABLE:
            return None
        conn = self._connection()
        with conn:
            cur = conn.execute(
                "INSERT INTO runs (created_at, argv, outcome) VALUES (?, ?, ?)",
                (
                    time.time(),
                    _canonical_json(list(argv)),
                    None if outcome is None else _canonical_json(outcome),
                ),
            )
        return cur.lastrowid

    @_locked
    def runs(self) -> list[dict[str, Any]]:
        """The recorded commands, oldest first: ``{"id", "argv", "outcome"}``."""
        if self.mode == "off" or not self._has_table("runs"):
            return []
        rows = self._connection().execute("SELECT id, argv, outcome FROM runs ORDER BY id").fetchall()
        return [{"id": i, "argv": json.loads(a), "outcome": json.loads(o) if o else None} for i, a, o in rows]

    @_locked
    def conversation(self, episode: str) -> list[dict[str, Any]]:
        """Every recorded call of ``episode`` (its ``trajectory["episode_id"]``), by step: ``{"step",
        "key", "request", "reply", "reasoning", "finish_reason"}``."""
        if self.mode == "off" or not self._has_table("calls"):
            return []
        rows = (
            self._connection()
            .execute(
                f"SELECT c.step, c.key, r.{self._column('request')}, r.text, r.{self._column('reasoning')}, "
                f"r.{self._column('finish_reason')} FROM calls c LEFT JOIN responses r ON r.key = c.key "
                "WHERE c.episode = ? ORDER BY c.step",
                (episode,),
            )
            .fetchall()
        )
        return [
            {
                "step": step,
                "key": key,
                "request": json.loads(request) if request else None,
                "reply": text,
                "reasoning": reasoning,
                "finish_reason": finish,
            }
            for step, key, request, text, reasoning, finish in rows
        ]

    # ------------------------------------------------------------- reporting

    @_locked
    def stats(self) -> dict[str, int]:
        """This object's counters in this process: ``hits``, ``misses`` and ``stores``."""
        return {"hits": self._hits, "misses": self._misses, "stores": self._stores}

    def _rows(self, columns: str) -> Iterator[tuple[Any, ...]]:
        if self.mode == "off":
            return iter(())
        with self._lock:
            query = f"SELECT {columns} FROM responses ORDER BY key"
            return iter(self._connection().execute(query).fetchall())

    def recorded_errors(self) -> int:
        """How many stored replies are error replies (:attr:`CachedResponse.is_error`)."""
        columns = ", ".join(("text", self._column("extra")))
        count = 0
        for text, extra in self._rows(columns):
            data = json.loads(extra) if extra else {}
            reply = CachedResponse(
                text,
                tool_calls=tuple(data.get("tool_calls", ())),
                refusal=data.get("refusal"),
                no_choice=bool(data.get("no_choice")),
                error=data.get("error"),
            )
            count += reply.is_error
        return count

    def keys(self) -> list[str]:
        """All stored keys, sorted."""
        return [row[0] for row in self._rows("key")]

    @_locked
    def __len__(self) -> int:
        if self.mode == "off":
            return 0
        return int(self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def content_hash(self) -> str:
        """sha256 of all stored (key, text) pairs in key order: same entries, same hash (dataset metadata)."""
        digest = hashlib.sha256()
        for key, text in self._rows("key, text"):
            for part in (key, text):
                data = part.encode("utf-8")
                digest.update(len(data).to_bytes(8, "big"))
                digest.update(data)
        return digest.hexdigest()
