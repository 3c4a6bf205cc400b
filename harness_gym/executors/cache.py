"""Record/replay response cache for LLM executors (DESIGN.md §5), on stdlib ``sqlite3`` only.

A cache entry is keyed by ``ResponseCache.key(model, base_url, messages, params, sample_index)``: the
sha256 of a canonical JSON (sorted keys, no whitespace) of those five values, so dict key order never
matters and any change to any of them gives a new key.

Modes:

- ``read_write`` (record): ``fetch`` returns a hit, or calls ``compute`` and stores its result.
- ``read_only`` (replay): ``fetch`` returns a hit; a miss raises :class:`CacheMissError` and never calls
  ``compute``, so replaying a cache reproduces a real-LLM run exactly and offline.
- ``off``: ``fetch`` always calls ``compute`` and nothing is read or stored (no file is opened).

Parallel collection: several processes may share one file. The database runs in WAL mode with a busy
timeout, writes are ``INSERT OR IGNORE`` (first writer wins; identical keys give identical responses
anyway), schema creation is idempotent, and each process holds its own connection: a cache object
inherited over ``fork`` (or unpickled) notices the pid change and opens a fresh one.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
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
    created_at REAL NOT NULL
)
"""


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
    hit: bool = field(default=False, compare=False)
    """Set by :meth:`ResponseCache.fetch`: True when the response came from the cache."""


def _canonical_json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"response-cache key parts must be plain JSON values: {exc}") from exc


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
        sample_index: int,
    ) -> str:
        """sha256 hex of the canonical JSON of (model, base_url, messages, sampling params, sample_index)."""
        payload = {
            "model": model,
            "base_url": base_url,
            "messages": messages,
            "params": dict(params or {}),
            "sample_index": int(sample_index),
        }
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
                else:
                    conn = sqlite3.connect(
                        os.fspath(self.path), timeout=_BUSY_TIMEOUT_S, check_same_thread=False
                    )
                    conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
                    conn.execute("PRAGMA journal_mode = WAL")
                    conn.execute("PRAGMA synchronous = NORMAL")
                    with conn:
                        conn.execute(_SCHEMA)
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

    def _connection(self) -> sqlite3.Connection:
        pid = os.getpid()
        if self._conn is None or self._pid != pid:
            # A connection inherited over fork belongs to the parent: abandon it (never close it here,
            # that could disturb the parent's locks) and open this process's own.
            self._conn = self._open()
            self._pid = pid
        return self._conn

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
        return state

    # -------------------------------------------------------------- entries

    def _lookup(self, key: str) -> CachedResponse | None:
        row = (
            self._connection()
            .execute(
                "SELECT text, prompt_tokens, completion_tokens, cost_usd FROM responses WHERE key = ?", (key,)
            )
            .fetchone()
        )
        if row is None:
            return None
        return CachedResponse(text=row[0], prompt_tokens=row[1], completion_tokens=row[2], cost_usd=row[3])

    def get(self, key: str) -> CachedResponse | None:
        """The stored response for ``key`` or None; counts a hit or a miss (``off``: always a miss)."""
        found = None if self.mode == "off" else self._lookup(key)
        if found is None:
            self._misses += 1
        else:
            self._hits += 1
        return found

    def put(self, key: str, response: CachedResponse, model: str = "") -> bool:
        """Store ``response`` under ``key`` unless an entry exists (first writer wins).

        Returns True when this call stored it. ``off``: a no-op returning False. ``read_only``: an error.
        """
        if self.mode == "off":
            return False
        if self.mode == "read_only":
            raise CacheError(f"response cache {self.path} is read_only (replay); storing is forbidden")
        conn = self._connection()
        with conn:
            cur = conn.execute(
                "INSERT OR IGNORE INTO responses "
                "(key, model, text, prompt_tokens, completion_tokens, cost_usd, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    model,
                    response.text,
                    int(response.prompt_tokens),
                    int(response.completion_tokens),
                    float(response.cost_usd),
                    time.time(),
                ),
            )
        stored = cur.rowcount == 1
        if stored:
            self._stores += 1
        return stored

    def fetch(
        self, key: str, compute: Callable[[], CachedResponse], model: str | None = None
    ) -> CachedResponse:
        """The cached response for ``key``, or ``compute()`` per the mode (see the module docstring).

        ``model`` is only used for the miss message and stored alongside the entry.
        """
        if self.mode == "off":
            self._misses += 1
            return compute()
        found = self.get(key)
        if found is not None:
            return replace(found, hit=True)
        if self.mode == "read_only":
            raise CacheMissError(key, model, self.path)
        response = compute()
        if self.put(key, response, model=model or ""):
            return response
        # Another process stored this key between our miss and our insert: first writer wins.
        return self._lookup(key) or response

    # ------------------------------------------------------------- reporting

    def stats(self) -> dict[str, int]:
        """This object's counters in this process: ``hits``, ``misses`` and ``stores``."""
        return {"hits": self._hits, "misses": self._misses, "stores": self._stores}

    def _rows(self, columns: str) -> Iterator[tuple[Any, ...]]:
        if self.mode == "off":
            return iter(())
        return iter(self._connection().execute(f"SELECT {columns} FROM responses ORDER BY key"))

    def keys(self) -> list[str]:
        """All stored keys, sorted."""
        return [row[0] for row in self._rows("key")]

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
