"""What runs inside the sandboxed child: define candidate code, call its entry point, report the values.

Standard library only; the verifier's sandbox script is the source of
:mod:`harness_gym.domains.coding.values`, then this module's, then a call of :func:`main` with the script's
own module as ``values``. The job arrives as one
JSON line on stdin::

    {"nonce": "...", "function": "f", "sources": ["def f(x): ..."], "calls": [[<encoded args>], ...],
     "budget": null}

For each source (one for a candidate; many for the generator's mutant screening, then ``budget`` is the
CPU seconds each may use) the code is executed in a fresh namespace and the function is called once per
entry of ``calls`` with freshly decoded arguments. Every record goes to the real stdout as
``<nonce> <json>``; the candidate's own prints go to a sink::

    {"s": 0, "i": 3, "value": <encoded>}      call 3 of source 0 returned this value
    {"s": 0, "i": 4, "raised": "KeyError: 'x'"}  it raised, or returned something with no encoding
    {"s": 0, "end": "ok" | "crash: ..." | "timeout"}
    {"done": true}

The child never sees expected values and decides nothing: whatever it prints (even a forged record) is
only a claim about what the function returned, which the verifier compares in its own interpreter.
"""

MAX_VALUE_CHARS = 64 * 2**10


def main(values) -> None:
    import json
    import os
    import sys

    job = json.loads(sys.stdin.readline())
    nonce, function_name, calls, budget = job["nonce"], job["function"], job["calls"], job["budget"]
    out = sys.stdout
    write, flush, dumps = out.write, out.flush, json.dumps
    encode, decode = values.encode, values.decode

    def emit(record) -> None:
        write(nonce + " " + dumps(record) + "\n")
        flush()

    def describe(exc) -> str:
        try:
            text = str(exc)
        except BaseException:
            text = ""
        name = type(exc).__name__
        return (name + ": " + text)[:200] if text else name

    class Timeout(BaseException):
        pass

    def expire(signum, frame) -> None:
        raise Timeout()

    class Sink:
        def write(self, text: str) -> int:
            return len(text)

        def flush(self) -> None:
            pass

    sys.stdout = Sink()
    if budget is not None:
        import signal  # only the generator's screening needs it (its import costs start-up time)

        signal.signal(signal.SIGVTALRM, expire)
    for s, source in enumerate(job["sources"]):
        status = "ok"
        if budget is not None:
            signal.setitimer(signal.ITIMER_VIRTUAL, budget)
        try:
            namespace = {"__name__": "__candidate__"}
            try:
                exec(compile(source, "<candidate>", "exec"), namespace)
            except Timeout:
                raise
            except BaseException as exc:
                status = "crash: " + describe(exc)
            function = namespace.get(function_name) if status == "ok" else None
            if status == "ok" and not callable(function):
                status = "crash: the code defines no function " + function_name
            for i, args in enumerate(calls if status == "ok" else ()):
                try:
                    result = function(*decode(args))
                except Timeout:
                    raise
                except BaseException as exc:
                    emit({"s": s, "i": i, "raised": describe(exc)})
                    continue
                try:
                    text = dumps(encode(result))
                except Timeout:
                    raise
                except BaseException as exc:
                    why = "returned a value that cannot be compared: " + describe(exc)
                    emit({"s": s, "i": i, "raised": why})
                    continue
                if len(text) > MAX_VALUE_CHARS:
                    emit({"s": s, "i": i, "raised": "returned a value too large to compare"})
                    continue
                write(f'{nonce} {{"s": {s}, "i": {i}, "value": {text}}}\n')
                flush()
        except Timeout:
            status = "timeout"
        finally:
            if budget is not None:
                signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        emit({"s": s, "end": status})
    emit({"done": True})
    os._exit(0)  # skip atexit handlers the candidate may have registered
