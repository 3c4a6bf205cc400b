"""Response cache (record/replay, DESIGN.md §5)."""

from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3
import sys

import pytest

from harness_gym.executors.cache import CachedResponse, CacheError, CacheMissError, ResponseCache, upgrade

MESSAGES = [{"role": "system", "content": "be terse"}, {"role": "user", "content": "2+2?"}]
PARAMS = {"temperature": 0.7, "top_p": 0.95, "max_tokens": 256}


def _key(**overrides):
    parts = {
        "model": "gpt-x",
        "messages": MESSAGES,
        "params": PARAMS,
        "sample_index": 0,
    }
    parts.update(overrides)
    return ResponseCache.key(**parts)


class Counter:
    def __init__(self, text: str = "4"):
        self.calls = 0
        self.text = text

    def __call__(self) -> CachedResponse:
        self.calls += 1
        return CachedResponse(self.text, prompt_tokens=12, completion_tokens=1, cost_usd=0.0003)


# ------------------------------------------------------------------ keys


def test_key_is_stable_hex_sha256():
    k = _key()
    assert k == _key()
    assert len(k) == 64 and int(k, 16) >= 0


@pytest.mark.parametrize(
    "override",
    [
        {"model": "gpt-y"},
        {"messages": [*MESSAGES[:1], {"role": "user", "content": "2+3?"}]},
        {"messages": MESSAGES[1:]},
        {"params": {**PARAMS, "temperature": 0.0}},
        {"params": {**PARAMS, "seed": 1}},
        {"sample_index": 1},
    ],
)
def test_key_changes_with_every_part(override):
    assert _key(**override) != _key()


def test_key_holds_no_endpoint_url():
    """The same model behind another URL answers from the same entries (``ResponseCache.key`` takes
    no URL; the executor's replay through a moved URL is tested in test_llm_executor)."""
    import inspect

    assert "base_url" not in inspect.signature(ResponseCache.key).parameters


def test_key_ignores_dict_key_order():
    reordered_params = dict(reversed(list(PARAMS.items())))
    reordered_messages = [dict(reversed(list(m.items()))) for m in MESSAGES]
    assert _key(params=reordered_params, messages=reordered_messages) == _key()


def test_key_rejects_non_json_parts():
    with pytest.raises(TypeError, match="JSON"):
        _key(params={"stop": object()})


# ----------------------------------------------------------------- modes


def test_read_write_stores_then_hits(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite", mode="read_write")
    compute = Counter()
    k = _key()
    first = cache.fetch(k, compute, model="gpt-x")
    second = cache.fetch(k, compute, model="gpt-x")
    assert compute.calls == 1
    assert first == second == CachedResponse("4", 12, 1, 0.0003)
    assert cache.stats() == {"hits": 1, "misses": 1, "stores": 1}
    assert cache.get(k) == first
    assert cache.get(_key(sample_index=9)) is None
    assert cache.stats() == {"hits": 2, "misses": 2, "stores": 1}
    assert len(cache) == 1 and cache.keys() == [k]


def test_put_first_writer_wins(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")
    k = _key()
    assert cache.put(k, CachedResponse("first"))
    assert not cache.put(k, CachedResponse("second"))
    assert cache.get(k).text == "first"
    assert cache.stats()["stores"] == 1


def test_read_only_hit_and_miss(tmp_path):
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as recorder:
        recorder.fetch(_key(), Counter("recorded"))
    replay = ResponseCache(path, mode="read_only")
    compute = Counter("fresh")
    assert replay.fetch(_key(), compute).text == "recorded"
    missing = _key(sample_index=3)
    with pytest.raises(CacheMissError) as info:
        replay.fetch(missing, compute, model="gpt-x")
    assert compute.calls == 0
    message = str(info.value)
    assert missing in message and "gpt-x" in message and "read_only" in message and "forbids" in message
    assert isinstance(info.value, LookupError)
    assert replay.stats() == {"hits": 1, "misses": 1, "stores": 0}
    with pytest.raises(CacheError, match="read_only"):
        replay.put(missing, CachedResponse("x"))


def test_off_always_computes_and_never_stores(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, mode="off")
    compute = Counter()
    for _ in range(3):
        assert cache.fetch(_key(), compute).text == "4"
    assert compute.calls == 3
    assert not cache.put(_key(), CachedResponse("x"))
    assert cache.get(_key()) is None
    assert cache.stats() == {"hits": 0, "misses": 4, "stores": 0}
    assert not path.exists()
    assert ResponseCache(None, mode="off").fetch(_key(), compute).text == "4"


def test_content_hash(tmp_path):
    a = ResponseCache(tmp_path / "a.sqlite")
    b = ResponseCache(tmp_path / "b.sqlite")
    empty = a.content_hash()
    assert empty == b.content_hash()
    a.put(_key(), CachedResponse("4"))
    after_one = a.content_hash()
    assert after_one != empty
    a.put(_key(sample_index=1), CachedResponse("5"))
    assert a.content_hash() != after_one
    # Same entries inserted in another order (and with other usage numbers) hash equal.
    b.put(_key(sample_index=1), CachedResponse("5", prompt_tokens=99))
    assert b.content_hash() != a.content_hash()
    b.put(_key(), CachedResponse("4"))
    assert b.content_hash() == a.content_hash()
    c = ResponseCache(tmp_path / "c.sqlite")
    c.put(_key(), CachedResponse("4"))
    c.put(_key(sample_index=1), CachedResponse("other text"))
    assert c.content_hash() != a.content_hash()
    assert ResponseCache(tmp_path / "a.sqlite", mode="read_only").content_hash() == a.content_hash()


# -------------------------------------------------------------- parallel

N_PROCS = 4
PER_PROC = 200
STRIDE = 100  # process i writes keys [i*STRIDE, i*STRIDE + PER_PROC): neighbours overlap by 100


def _par_key(i: int) -> str:
    return _key(sample_index=i)


def _par_text(i: int) -> str:
    return f"response-{i}"


def _writer(cache: ResponseCache, proc: int, barrier, errors) -> None:
    try:
        barrier.wait(timeout=30)
        for i in range(proc * STRIDE, proc * STRIDE + PER_PROC):
            got = cache.fetch(_par_key(i), lambda i=i: CachedResponse(_par_text(i), 1, 1, 0.0), model="m")
            if got.text != _par_text(i):
                raise AssertionError(f"key {i}: got {got.text!r}")
    except BaseException as exc:
        errors.put(f"process {proc}: {type(exc).__name__}: {exc}")
        os._exit(1)
    os._exit(0)


def _reader(path: str, expected: int, results) -> None:
    cache = ResponseCache(path, mode="read_only")
    ok = all(
        cache.fetch(_par_key(i), lambda: CachedResponse("never"), model="m").text == _par_text(i)
        for i in range(expected)
    )
    results.put((ok, len(cache), cache.stats()))


@pytest.mark.skipif(sys.platform == "win32" or "fork" not in mp.get_all_start_methods(), reason="needs fork")
def test_parallel_processes_share_one_file(tmp_path):
    ctx = mp.get_context("fork")
    path = tmp_path / "shared.sqlite"
    # The parent opens (and uses) the connection before forking: children must reopen their own.
    cache = ResponseCache(path)
    assert len(cache) == 0
    barrier = ctx.Barrier(N_PROCS)
    errors = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(cache, p, barrier, errors)) for p in range(N_PROCS)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=60)
    reported = []
    while not errors.empty():
        reported.append(errors.get(timeout=1))
    assert not reported, reported
    assert [proc.exitcode for proc in procs] == [0] * N_PROCS

    total = (N_PROCS - 1) * STRIDE + PER_PROC
    expected = {_par_key(i) for i in range(total)}
    assert set(cache.keys()) == expected and len(cache) == total
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    results = ctx.Queue()
    reader = ctx.Process(target=_reader, args=(os.fspath(path), total, results))
    reader.start()
    ok, count, stats = results.get(timeout=30)
    reader.join(timeout=30)
    assert reader.exitcode == 0
    assert ok and count == total
    assert stats == {"hits": total, "misses": 0, "stores": 0}


def test_reopens_after_unpickling(tmp_path):
    import pickle

    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put(_key(), CachedResponse("4"))
    clone = pickle.loads(pickle.dumps(cache))
    assert clone.get(_key()).text == "4"


# ---------------------------------------------------------------- errors


def test_unknown_mode(tmp_path):
    with pytest.raises(
        ValueError, match=r"unknown response-cache mode 'replay'.*read_write, read_only, reask_errors, off"
    ):
        ResponseCache(tmp_path / "c.sqlite", mode="replay")


def test_path_required_unless_off():
    with pytest.raises(ValueError, match="needs a file path"):
        ResponseCache(None, mode="read_write")


def test_missing_directory(tmp_path):
    path = tmp_path / "nope" / "c.sqlite"
    with pytest.raises(FileNotFoundError, match="does not exist") as info:
        ResponseCache(path)
    assert str(path.parent) in str(info.value)
    assert not path.parent.exists()


def test_parent_is_a_file(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(FileNotFoundError, match="not a directory"):
        ResponseCache(blocker / "c.sqlite")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(PermissionError, match="not writable"):
            ResponseCache(locked / "c.sqlite")
    finally:
        locked.chmod(0o700)


def test_read_only_missing_file(tmp_path):
    path = tmp_path / "absent.sqlite"
    with pytest.raises(FileNotFoundError, match="read_only") as info:
        ResponseCache(path, mode="read_only")
    assert str(path) in str(info.value)
    assert not path.exists()


def test_read_only_on_a_non_cache_file(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE t (x)")
    raw.close()
    with pytest.raises(CacheError, match="not a response cache"):
        ResponseCache(path, mode="read_only")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(CacheError, match="cannot open response cache"):
        ResponseCache(junk, mode="read_only")


def test_many_threads_share_one_cache(tmp_path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    cache = ResponseCache(tmp_path / "threads.sqlite", "read_write")

    def one(i: int) -> str:
        key = ResponseCache.key("m", f"prompt {i % 10}", {}, None)
        return cache.fetch(key, lambda: CachedResponse(f"reply {i % 10}"), "m").text

    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(one, range(200)))
    assert replies == [f"reply {i % 10}" for i in range(200)]
    assert len(cache) == 10
    stats = cache.stats()
    assert stats["hits"] + stats["misses"] == 200 and stats["stores"] == 10


def test_an_old_cache_file_is_upgraded_and_replays(tmp_path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, text TEXT NOT NULL, "
        "prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL, "
        "created_at REAL NOT NULL)"
    )
    conn.execute("INSERT INTO responses VALUES ('k', 'm', 'old reply', 1, 2, 0.0, 0.0)")
    conn.commit()
    conn.close()
    replay = ResponseCache(path, "read_only")  # read as it is: no new columns needed
    assert replay.get("k") == CachedResponse("old reply", 1, 2, 0.0, finish_reason=None)
    assert replay.request("k") is None
    record = ResponseCache(path, "read_write")  # upgraded in place
    record.put("k2", CachedResponse("new", finish_reason="stop"), "m", request={"model": "m"})
    assert record.request("k2") == {"model": "m"} and record.get("k2").finish_reason == "stop"


def _v1_key(model: str, base_url: str, messages, params, sample_index) -> str:
    """The key as version 1 computed it (with the endpoint's URL)."""
    import hashlib
    import json

    payload = {"model": model, "base_url": base_url, "messages": messages, "params": params}
    if sample_index is not None:
        payload["sample_index"] = sample_index
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def test_version_1_keys_replay_read_only_and_are_rekeyed_when_written(tmp_path) -> None:
    import json

    path = tmp_path / "v1.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, text TEXT NOT NULL, "
        "prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL, "
        "created_at REAL NOT NULL, finish_reason TEXT, request TEXT)"
    )
    rows = []
    for url, text in (("http://a/v1", "first"), ("http://b/v1", "second")):  # one request, two URLs
        request = {
            "model": "m",
            "base_url": url,
            "messages": MESSAGES,
            "params": PARAMS,
            "sample_index": None,
        }
        old = _v1_key("m", url, MESSAGES, PARAMS, None)
        rows.append((old, "m", text, 1, 2, 0.0, float(len(rows)), "stop", json.dumps(request)))
    conn.execute("INSERT INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows[0])
    conn.execute("INSERT INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows[1])
    conn.commit()
    conn.close()
    new = ResponseCache.key("m", MESSAGES, PARAMS, None)
    replay = ResponseCache(path, "read_only")
    assert replay.get(new).text in {"first", "second"}  # found through its version-1 key, file unchanged
    assert set(replay.keys()) == {rows[0][0], rows[1][0]}
    assert upgrade(path) == 1  # rekeyed in place: one entry per request, whichever URL recorded it
    upgraded = ResponseCache(path, "read_only")
    assert upgraded.keys() == [new] and upgraded.get(new).text == "first"
    assert upgrade(path) == 1 and ResponseCache(path, "read_only").keys() == [new]  # idempotent


def test_calls_settings_and_runs_are_kept(tmp_path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.fetch(_key(), Counter("4"), "gpt-x", request={"model": "gpt-x"}, episode="E/t/seed=0", step=2)
    cache.fetch(_key(), Counter("never"), "gpt-x", episode="E/t/seed=1", step=3)  # a hit, still noted
    cache.record_settings({"model": "gpt-x", "temperature": 0.0})
    cache.record_settings({"model": "gpt-x", "temperature": 0.0})
    run = cache.add_run(["run", "--env", "E"], {"episodes": 1})
    assert [c["key"] for c in cache.conversation("E/t/seed=1")] == [_key()]
    [call] = cache.conversation("E/t/seed=0")
    assert (call["step"], call["reply"], call["request"]) == (2, "4", {"model": "gpt-x"})
    assert cache.settings() == [{"model": "gpt-x", "temperature": 0.0}]
    assert cache.runs() == [{"id": run, "argv": ["run", "--env", "E"], "outcome": {"episodes": 1}}]
    with sqlite3.connect(tmp_path / "c.sqlite") as raw:
        assert raw.execute("SELECT episode, step FROM responses").fetchall() == [("E/t/seed=0", 2)]
    replay = ResponseCache(tmp_path / "c.sqlite", "read_only")
    replay.fetch(_key(), Counter(), episode="E/t/seed=9", step=1)  # replay writes nothing
    assert replay.conversation("E/t/seed=9") == [] and replay.add_run(["x"]) is None
