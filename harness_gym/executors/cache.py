"""Record/replay response cache for LLM executors (DESIGN.md §5), on stdlib ``sqlite3`` only.

A cache entry is keyed by ``ResponseCache.key(model, base_url, messages, params, sample_index)``: the
sha256 of a canonical JSON (sorted keys, no whitespace) of those values, so dict key order never
matters and any change to any of them gives a new key. A ``sample_index`` of None leaves it out of the
key: executors pass None for greedy (temperature 0) calls, so equal prompts share one entry.

Each entry also stores the request it answers (model, base URL, messages, params, as JSON) and the
reply's ``finish_reason``, so a recorded run can be audited and a replay miss can say what changed
(:meth:`ResponseCache.explain_miss`). Files written before these columns existed are upgraded in place
when opened for writing and read as they are when replayed.

Modes:

- ``read_write`` (record): ``fetch`` returns a hit, or calls ``compute`` and stores its result.
- ``read_only`` (replay): ``fetch`` returns a hit; a miss raises :class:`CacheMissError` and never calls
  ``compute``, so replaying a cache reproduces a real-LLM run exactly and offline.
- ``off``: ``fetch`` always calls ``compute`` and nothing is read or stored (no file is opened).

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

CacheMode = Literal["read_write", "read_only", "off"]
MODES: tuple[str, ...] = ("read_write", "read_only", "off")

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
_ADDED_COLUMNS = {"finish_reason": "TEXT", "request": "TEXT"}
"""Columns newer than the first schema: added to old files opened for writing."""


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
    hit: bool = field(default=False, compare=False)
    """Set by :meth:`ResponseCache.fetch`: True when the response came from the cache."""


def _canonical_json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"response-cache key parts must be plain JSON values: {exc}") from exc


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
        base_url: str | None,
        messages: Sequence[Mapping[str, Any]] | str,
        params: Mapping[str, Any] | None,
        sample_index: int | None,
    ) -> str:
        """sha256 hex of the canonical JSON of (model, base_url, messages, sampling params, sample_index);
        a None ``sample_index`` is left out (greedy calls: equal requests, one entry)."""
        payload = {
            "model": model,
            "base_url": base_url,
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
                else:
                    conn = sqlite3.connect(
                        os.fspath(self.path), timeout=_BUSY_TIMEOUT_S, check_same_thread=False
                    )
                    conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("PRAGMA synchronous = NORMAL")
                    with conn:
                        conn.execute(_SCHEMA)
                        have = self._table_columns(conn)
                        for name, kind in _ADDED_COLUMNS.items():
                            if name not in have:
                                conn.execute(f"ALTER TABLE responses ADD COLUMN {name} {kind}")
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
        row = conn.execute(
            "SELECT text, prompt_tokens, completion_tokens, cost_usd, "
            f"{self._column('finish_reason')} FROM responses WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        return CachedResponse(
            text=row[0], prompt_tokens=row[1], completion_tokens=row[2], cost_usd=row[3], finish_reason=row[4]
        )

    @_locked
    def request(self, key: str) -> dict[str, Any] | None:
        """The request stored with ``key`` (None when absent or recorded before requests were stored)."""
        if self.mode == "off":
            return None
        row = (
            self._connection()
            .execute(f"SELECT {self._column('request')} FROM responses WHERE key = ?", (key,))
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
        self, key: str, response: CachedResponse, model: str = "", request: Mapping[str, Any] | None = None
    ) -> bool:
        """Store ``response`` (and the ``request`` it answers) under ``key`` unless an entry exists (first
        writer wins).

        Returns True when this call stored it. ``off``: a no-op returning False. ``read_only``: an error.
        """
        if self.mode == "off":
            return False
        if self.mode == "read_only":
            raise CacheError(f"response cache {self.path} is read_only (replay); storing is forbidden")
        conn = self._connection()
        with conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO responses (key, model, text, prompt_tokens, completion_tokens, "
                "cost_usd, created_at, finish_reason, request) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                ),
            )
        stored = cur.rowcount == 1
        if stored:
            self._stores += 1
        return stored

    def fetch(
        self,
        key: str,
        compute: Callable[[], CachedResponse],
        model: str | None = None,
        request: Mapping[str, Any] | None = None,
    ) -> CachedResponse:
        """The cached response for ``key``, or ``compute()`` per the mode (see the module docstring).

        ``model`` and ``request`` are stored alongside a new entry; on a replay miss the ``request`` is
        compared with the stored ones and the error says what differs (:meth:`explain_miss`).
        """
        if self.mode == "off":
            with self._lock:
                self._misses += 1
            return compute()
        found = self.get(key)
        if found is not None:
            return replace(found, hit=True)
        if self.mode == "read_only":
            error = CacheMissError(key, model, self.path)
            why = self.explain_miss(request) if request is not None else ""
            if why:
                error.args = (f"{error.args[0]}; {why}",)
            raise error
        response = compute()
        if self.put(key, response, model=model or "", request=request):
            return response
        # Another process stored this key between our miss and our insert: first writer wins.
        return self._lookup(key) or response

    def explain_miss(self, request: Mapping[str, Any]) -> str:
        """What sets ``request`` apart from the recorded ones: a changed model, base URL or sampling
        parameter (named with the recorded and the requested values), or a prompt never recorded."""
        recorded = [json.loads(row[0]) for row in self._rows(self._column("request")) if row[0]]
        if not recorded:
            return ""
        changes = []
        for field_name in ("model", "base_url"):
            seen = sorted({str(r.get(field_name)) for r in recorded})
            if str(request.get(field_name)) not in seen:
                was = ", ".join(map(repr, seen))
                changes.append(f"{field_name} {request.get(field_name)!r} (recorded: {was})")
        params = {k: v for k, v in dict(request.get("params") or {}).items() if k != "seed"}
        for name, value in params.items():
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
