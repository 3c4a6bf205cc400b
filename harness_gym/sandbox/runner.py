"""The in-process sandbox: a fresh interpreter with rlimits and an audit hook, without an OS boundary.

This module is two things. Its bootstrap functions (``_sandbox_limits``, ``_sandbox_patch_os``,
``_sandbox_hook``, ``_sandbox_report`` in ``_BOOTSTRAP``) are the second layer *inside* the
operating-system boundary of :mod:`harness_gym.sandbox.boundary`. And :func:`run_in_process` runs a
program with this layer alone: that is ``HARNESS_GYM_SANDBOX=process``, the weaker mode accepted where
namespaces cannot be had (:mod:`harness_gym.sandbox.detect`). It also defines the API's types,
:class:`SandboxLimits` and :class:`SandboxResult`.

The layer, when it runs alone:

* a fresh interpreter (``-S -s -P``: no site-packages, no user site, no implicit ``sys.path`` entry; not
  ``-I``, which would also ignore the ``PYTHONHASHSEED`` that makes set order, and so verdicts,
  reproducible — the environment is built from scratch anyway) in its own session and process group,
  with a scrubbed environment (``PATH``, locale, ``HOME``/``TMPDIR`` = the
  scratch directory, ``PYTHONHASHSEED=0``, ``PYTHONDONTWRITEBYTECODE``) — never the parent's ``os.environ``;
* a new empty temporary working directory, removed afterwards;
* rlimits set by the bootstrap before the user code runs: ``RLIMIT_CPU``, ``RLIMIT_AS``, ``RLIMIT_FSIZE``,
  ``RLIMIT_CORE=0``, ``RLIMIT_NOFILE`` (:data:`MAX_OPEN_FILES`) and, for non-root users only (root
  ignores it), a coarse ``RLIMIT_NPROC`` backstop;
* a wall-clock limit enforced by the parent, which kills the whole process group with ``SIGKILL`` — on
  timeout and also after a normal exit, so that no background process outlives the run;
* bounded output capture: at most ``output_bytes`` per stream is kept, the rest is drained and dropped;
* a ``sys.addaudithook`` hook installed before the user code. It refuses: process creation (fork, exec,
  spawn, ``os.system``, ``subprocess``, ``pty``, ``multiprocessing``) beyond ``max_processes``; opening for
  writing, creating, removing, renaming, linking or changing the metadata of anything outside the scratch
  directory (symbolic links are resolved with primitives captured before the user code runs, so
  monkeypatching ``os`` does not help); reading (``open``, ``os.listdir``/``scandir``, xattrs) anything but
  the scratch directory, the standard library, time-zone data, the process's own ``/proc`` entry and a few
  devices; loading native extension modules from outside the standard library; importing ``ctypes`` and
  sub-interpreter/test-API modules; network connects, binds, sends and DNS look-ups; raising rlimits;
  signalling processes outside the run's process group. ``os.mknod`` and ``os.chroot`` are replaced.

What it does *not* contain, alone. The hook runs inside the untrusted interpreter and sees only what
raises an audit event: any C path that raises none escapes it. Known ones: ``readline``'s history
functions read and write files anywhere the user can (the suite's task files among them);
``os.pidfd_open`` with ``signal.pidfd_send_signal`` signals any process of the same user (the harness
itself: SIGKILL ends it, SIGSTOP freezes it); ``_posixshmem.shm_open`` leaves files in ``/dev/shm``;
``os.setpriority`` and ``os.sched_setaffinity`` change other processes; ``/proc/self/net`` lists the
host's sockets; SQL ``ATTACH DATABASE`` in ``sqlite3``. Calls without an event, such as ``os.stat``,
reveal whether a file exists. Disk usage is bounded per file, not in total; as root ``RLIMIT_NPROC`` does
not apply. So this mode is for hosts without namespaces and trusted inputs only.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import json
import os
import selectors
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import tempfile
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["SandboxLimits", "SandboxResult", "run_in_process"]

# Once the main process has exited (or been killed), how long to keep reading output still held open by
# processes that escaped the process group.
_DRAIN_GRACE_S = 1.0
# Polling interval when the kernel has no pidfd support.
_POLL_S = 0.02
_READ_CHUNK = 64 * 2**10
# Headroom above the user's current task count for the non-root RLIMIT_NPROC backstop: threads count
# against RLIMIT_NPROC on Linux, so a limit of zero would break ordinary threaded code.
_NPROC_THREAD_ALLOWANCE = 64
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
MAX_OPEN_FILES = 256
"""``RLIMIT_NOFILE`` of a sandboxed program: pipes and sockets hold kernel buffers outside every other
limit, so their number is capped (an assumption: ample for the standard library's needs)."""


@functools.cache
def _read_lists() -> tuple[list[str], list[str]]:
    """Directories the child may read besides the standard library and its own directory (time-zone data),
    and directories it may not read even where they lie inside those: the harness package (task files with
    hidden references) and every site-packages directory (installed copies of it, other projects)."""
    allow = [p for p in (sysconfig.get_config_var("TZPATH") or "").split(os.pathsep) if p]
    deny = {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))}  # the harness_gym package
    for scheme_vars in ({}, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        paths = sysconfig.get_paths(vars=scheme_vars)
        deny.update(paths[key] for key in ("purelib", "platlib"))
    deny.update(getattr(site, "getsitepackages", list)())
    if getattr(site, "ENABLE_USER_SITE", None) is not None:
        deny.add(site.getusersitepackages())
    return [os.path.realpath(p) for p in allow], sorted({os.path.realpath(p) for p in deny})


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one run; the defaults suit unit-testing a single generated solution."""

    wall_time_s: float = 5.0  # wall-clock limit; on expiry the whole process group is killed
    cpu_time_s: int = 5  # RLIMIT_CPU
    memory_bytes: int = 512 * 2**20  # RLIMIT_AS
    file_size_bytes: int = 2**20  # RLIMIT_FSIZE
    max_processes: int = 0  # extra processes the code may create; 0 = none (fork/spawn blocked)
    output_bytes: int = 64 * 2**10  # stdout and stderr are each truncated to this many bytes

    def __post_init__(self) -> None:
        if not self.wall_time_s > 0:
            raise ValueError(f"wall_time_s must be positive, got {self.wall_time_s!r}")
        if self.cpu_time_s < 1:
            raise ValueError(f"cpu_time_s must be at least 1, got {self.cpu_time_s!r}")
        if self.memory_bytes <= 0:
            raise ValueError(f"memory_bytes must be positive, got {self.memory_bytes!r}")
        for name in ("file_size_bytes", "max_processes", "output_bytes"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be non-negative, got {getattr(self, name)!r}")


DEFAULT_LIMITS = SandboxLimits()
"""Shared as a default argument: the limits are frozen."""


@dataclass(frozen=True)
class SandboxResult:
    """Outcome of one run. ``returncode`` is None when the run was killed for exceeding its wall time;
    a negative value ``-N`` means the process died from signal N (e.g. ``SIGXCPU`` for the CPU limit)."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool  # stdout or stderr was cut
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def run_in_process(
    source: str,
    *,
    stdin: str = "",
    limits: SandboxLimits = SandboxLimits(),  # frozen, so a shared default is safe
    files: Mapping[str, str] | None = None,
) -> SandboxResult:
    """Run `source` as a script in a fresh interpreter inside a new empty temporary directory
    (files = extra text files to place there first), with the in-process layer alone; the directory is
    removed afterwards.

    File names are relative POSIX paths (sub-directories allowed); the directory is also on ``sys.path``
    so the script can import modules given in ``files``. Output is decoded as UTF-8 with replacement.
    """
    if not sys.executable:
        raise RuntimeError("sys.executable is unknown; cannot start a sandboxed interpreter")
    workdir = tempfile.mkdtemp(prefix="harness_sandbox_")
    try:
        root = os.path.realpath(workdir)
        _place_files(root, files or {})
        config = {
            "source": source,
            "root": root,
            "allow_read": _read_lists()[0],
            "deny_read": _read_lists()[1],
            "cpu_time_s": int(limits.cpu_time_s),
            "memory_bytes": int(limits.memory_bytes),
            "file_size_bytes": int(limits.file_size_bytes),
            "max_processes": int(limits.max_processes),
            "nproc_allowance": _NPROC_THREAD_ALLOWANCE,
            "open_files": MAX_OPEN_FILES,
        }
        return _execute(config, stdin.encode("utf-8"), limits, root)
    finally:
        _remove_tree(workdir)


def _place_files(root: str, files: Mapping[str, str]) -> None:
    """Write the caller's files, refusing names that would land outside the scratch directory."""
    for name, text in files.items():
        rel = PurePosixPath(name)
        if not name or rel.is_absolute() or not rel.parts or ".." in rel.parts or "\0" in name:
            raise ValueError(f"sandbox file names must be relative paths inside the directory, got {name!r}")
        dest = Path(root, *rel.parts)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8", newline="")


def _child_env(root: str) -> dict[str, str]:
    """Build the child's environment from scratch so no parent secret (tokens, keys) can leak in."""
    return {
        "PATH": _SAFE_PATH,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": root,
        "TMPDIR": root,  # tempfile must land inside the only writable directory
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",  # honoured because the child is not started with -E/-I
        "PYTHONUTF8": "1",
        # glibc reserves 64 MiB of address space per malloc arena and thread; without a cap, RLIMIT_AS
        # would make a handful of threads fail long before real memory use reaches the limit.
        "MALLOC_ARENA_MAX": "2",
    }


class _Capture:
    """Keeps at most `limit` bytes of a stream; the excess is counted as truncation and dropped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if len(chunk) > room:
            self.truncated = True
            chunk = chunk[: max(room, 0)]
        self.data += chunk

    def text(self) -> str:
        if self.truncated:
            # final=False drops a multi-byte character cut in half at the limit instead of adding U+FFFD.
            return codecs.getincrementaldecoder("utf-8")("replace").decode(bytes(self.data), final=False)
        return self.data.decode("utf-8", "replace")


def _execute(config: dict[str, object], stdin_data: bytes, limits: SandboxLimits, root: str) -> SandboxResult:
    with tempfile.TemporaryFile() as cfg_file:
        # The configuration (with the source) travels through an inherited, already-unlinked file so that
        # it is neither in argv (size limits, `ps`) nor in the scratch directory, and stdin stays the user's.
        cfg_file.write(json.dumps(config).encode("utf-8"))
        cfg_file.flush()
        cfg_file.seek(0)
        fd = cfg_file.fileno()
        argv = [sys.executable, "-S", "-s", "-P", "-c", _BOOTSTRAP, str(fd)]
        start = time.monotonic()
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=root,
            env=_child_env(root),
            start_new_session=True,
            pass_fds=(fd,),
            close_fds=True,
        )
    try:
        out, err, timed_out = _supervise(proc, stdin_data, start + limits.wall_time_s, limits.output_bytes)
    finally:
        returncode = _reap(proc)
    duration = time.monotonic() - start
    return SandboxResult(
        returncode=None if timed_out else returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        truncated=out.truncated or err.truncated,
        duration_s=duration,
    )


def _supervise(
    proc: subprocess.Popen[bytes], stdin_data: bytes, deadline: float, output_bytes: int
) -> tuple[_Capture, _Capture, bool]:
    """Feed stdin and drain stdout/stderr in one thread until the process exits or the deadline passes.

    The process is killed (whole group) while it is still an unreaped zombie, so its pid, which is the
    group id, cannot have been recycled when ``killpg`` is sent.
    """
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = _Capture(output_bytes), _Capture(output_bytes)
    captures = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    sel = selectors.DefaultSelector()
    for fd in captures:
        sel.register(fd, selectors.EVENT_READ)
    stdin_fd: int | None = proc.stdin.fileno()
    pending = memoryview(stdin_data)
    if pending:
        os.set_blocking(stdin_fd, False)
        sel.register(stdin_fd, selectors.EVENT_WRITE)
    else:
        proc.stdin.close()
        stdin_fd = None
    pidfd = _pidfd_open(proc.pid)
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ)

    def close_stdin() -> None:
        nonlocal stdin_fd
        if stdin_fd is not None:
            sel.unregister(stdin_fd)
            with contextlib.suppress(OSError):
                proc.stdin.close()  # type: ignore[union-attr]
            stdin_fd = None

    timed_out = False
    ended_at: float | None = None
    try:
        while True:
            now = time.monotonic()
            if ended_at is None:
                if _has_exited(proc.pid):
                    ended_at = now
                elif now >= deadline:
                    timed_out = True
                    ended_at = now
                if ended_at is not None:
                    _kill_group(proc.pid)
                    close_stdin()
                    if pidfd is not None:
                        sel.unregister(pidfd)  # stays readable from now on
            open_outputs = any(fd in captures for fd in sel.get_map())
            if ended_at is not None:
                wait = ended_at + _DRAIN_GRACE_S - now
                if not open_outputs or wait <= 0:
                    break
            else:
                wait = deadline - now
                if pidfd is None:
                    wait = min(wait, _POLL_S)
            for key, _ in sel.select(max(wait, 0.0)):
                fd = key.fd
                if fd == stdin_fd:
                    try:
                        written = os.write(fd, pending[:_READ_CHUNK])
                    except BlockingIOError:
                        continue
                    except OSError:  # the child closed stdin or exited
                        close_stdin()
                        continue
                    pending = pending[written:]
                    if not pending:
                        close_stdin()
                elif fd in captures:
                    chunk = os.read(fd, _READ_CHUNK)
                    if chunk:
                        captures[fd].feed(chunk)
                    else:
                        sel.unregister(fd)
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
    return out, err, timed_out


def _pidfd_open(pid: int) -> int | None:
    """A pidfd lets the selector wake up the moment the child exits instead of polling."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def _has_exited(pid: int) -> bool:
    """Check for exit without reaping (WNOWAIT), keeping the pid and process-group id reserved."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _reap(proc: subprocess.Popen) -> int:
    """Kill what is left of the run's process group, close its pipes and collect its exit status."""
    _kill_group(proc.pid)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    return proc.wait()


def _remove_tree(path: str) -> None:
    """Remove the scratch directory even if the code stripped permissions from what it created."""
    try:
        shutil.rmtree(path)
        return
    except FileNotFoundError:
        return
    except OSError:
        pass
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)
    for dirpath, dirnames, _ in os.walk(path):
        for name in dirnames:
            sub = os.path.join(dirpath, name)
            if not os.path.islink(sub):
                with contextlib.suppress(OSError):
                    os.chmod(sub, 0o700)
    shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path):
        warnings.warn(f"could not remove sandbox directory {path}", RuntimeWarning, stacklevel=3)


# Runs in the child as `python -S -s -P -c _BOOTSTRAP <config fd>`. It applies the rlimits, installs the
# audit hook and then executes the user's source in a fresh `__main__` module. Everything the hook relies on
# is captured in closures before the user code runs, so rebinding `os.path.realpath` and friends does not
# change what the hook sees. Nothing here is visible in the user's globals.
_BOOTSTRAP = r'''
import sys as _sys


def _sandbox_limits(cfg):
    import os
    import resource

    inf = resource.RLIM_INFINITY

    def clamp(res, soft, hard):
        cur_hard = resource.getrlimit(res)[1]
        if cur_hard != inf:
            hard = min(hard, cur_hard)
            soft = min(soft, hard)
        resource.setrlimit(res, (soft, hard))

    cpu = cfg["cpu_time_s"]
    clamp(resource.RLIMIT_CPU, cpu, cpu + 1)  # SIGXCPU at the soft limit, SIGKILL a second later
    clamp(resource.RLIMIT_AS, cfg["memory_bytes"], cfg["memory_bytes"])
    clamp(resource.RLIMIT_FSIZE, cfg["file_size_bytes"], cfg["file_size_bytes"])
    clamp(resource.RLIMIT_CORE, 0, 0)
    clamp(resource.RLIMIT_NOFILE, cfg["open_files"], cfg["open_files"])
    if os.geteuid() != 0 and hasattr(resource, "RLIMIT_NPROC"):
        # RLIMIT_NPROC counts every task (threads too) of the real user, so it can only be a coarse
        # backstop: current tasks plus the allowed processes plus headroom for threads.
        uid, tasks = os.getuid(), 0
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    if os.stat("/proc/" + name).st_uid == uid:
                        tasks += len(os.listdir("/proc/" + name + "/task"))
                except OSError:
                    pass
        allowed = tasks + cfg["max_processes"] + cfg["nproc_allowance"]
        clamp(resource.RLIMIT_NPROC, allowed, allowed)


def _sandbox_patch_os(max_processes):
    import os
    import posix
    import _posixsubprocess

    def refuse(name):
        def refused(*args, **kwargs):
            raise PermissionError("sandbox: " + name + " is not permitted")
        refused.__name__ = name.rpartition(".")[2]
        return refused

    # No audit events exist for these, so they are replaced outright (no reference to the original kept).
    for name in ("mknod", "chroot"):
        if hasattr(posix, name):
            setattr(posix, name, refuse("os." + name))
            setattr(os, name, refuse("os." + name))

    real_mkfifo = posix.mkfifo

    def mkfifo(path, mode=0o666, *, dir_fd=None):
        _sys.audit("os.mkfifo", path, mode, dir_fd)
        return real_mkfifo(path, mode, dir_fd=dir_fd)

    posix.mkfifo = os.mkfifo = mkfifo

    # subprocess and multiprocessing call this directly; it raises no audit event of its own.
    if max_processes == 0:
        _posixsubprocess.fork_exec = refuse("_posixsubprocess.fork_exec")
    else:
        real_fork_exec = _posixsubprocess.fork_exec

        def fork_exec(*args, **kwargs):
            _sys.audit("_posixsubprocess.fork_exec")
            return real_fork_exec(*args, **kwargs)

        _posixsubprocess.fork_exec = fork_exec


def _sandbox_hook(root, stdlib, allow_read, deny_read, max_processes):
    import os
    import posix
    import resource
    import stat

    lstat, stat_, readlink, getcwd = posix.lstat, posix.stat, posix.readlink, posix.getcwd
    getpid, getpgrp, getpgid, fspath = posix.getpid, posix.getpgrp, posix.getpgid, posix.fspath
    getrlimit, rlim_inf = resource.getrlimit, resource.RLIM_INFINITY
    is_link, is_dir = stat.S_ISLNK, stat.S_ISDIR
    join, isinstance_, str_, bytes_, int_ = "".join, isinstance, str, bytes, int
    fs_encoding = _sys.getfilesystemencoding()
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
    root_prefix = root + "/"
    deny_prefixes = tuple(d + "/" for d in deny_read)
    read_devices = frozenset(("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"))
    write_devices = frozenset(
        ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/fd/1", "/dev/fd/2", "/proc/self/fd/1",
         "/proc/self/fd/2")
    )
    spawned = 0

    def deny(what):
        raise PermissionError("sandbox: " + what + " is not permitted")

    def absolute(path, dir_fd=None):
        """Absolute, unresolved path of `path` (an fd is mapped through /proc/self/fd)."""
        if isinstance_(path, int_):
            return readlink("/proc/self/fd/" + str_(int_(path)))
        path = fspath(path)
        if isinstance_(path, bytes_):
            path = b"".join((path,)).decode(fs_encoding, "surrogateescape")
        else:
            path = join((path,))  # an exact str: a subclass could override startswith and friends
        if not path.startswith("/"):
            if dir_fd is None or dir_fd < 0:
                base = getcwd()
            else:
                base = readlink("/proc/self/fd/" + str_(int_(dir_fd)))
            path = base + "/" + path
        return path

    def real(path):
        """realpath(strict=False) from captured primitives, so the user cannot monkeypatch it."""
        if not path.startswith("/"):
            return path  # "pipe:[123]" and similar non-file fd targets
        todo = path.split("/")
        todo.reverse()
        done = ""
        links = 0
        while todo:
            name = todo.pop()
            if name == "" or name == ".":
                continue
            if name == "..":
                done = done[: done.rfind("/")]
                continue
            candidate = done + "/" + name
            try:
                mode = lstat(candidate).st_mode
            except OSError:
                done = candidate
                continue
            if is_link(mode):
                links += 1
                if links > 40:
                    deny("resolving more than 40 symbolic links")
                target = readlink(candidate)
                if target.startswith("/"):
                    done = ""
                parts = target.split("/")
                parts.reverse()
                todo.extend(parts)
            else:
                done = candidate
        return done or "/"

    def inside(path):
        return path == root or path.startswith(root_prefix)

    def must_be_inside(event, path, dir_fd=None):
        resolved = real(absolute(path, dir_fd))
        if not inside(resolved):
            deny(event + " outside the sandbox directory (" + resolved + ")")
        return resolved

    def check_read(resolved):
        """Reads are allowed in the sandbox directory, this process's own /proc entry, the standard
        library (minus site-packages and the harness) and a few devices; nowhere else."""
        own_proc = "/proc/" + str_(getpid())
        if inside(resolved) or resolved in read_devices or (resolved + "/").startswith(own_proc + "/"):
            return
        for prefix in deny_prefixes:
            if resolved.startswith(prefix) or resolved + "/" == prefix:
                deny("reading harness files or installed packages (" + resolved + ")")
        for prefix in allow_prefixes:
            if resolved.startswith(prefix) or resolved + "/" == prefix:
                return
        deny("reading outside the sandbox directory and the standard library (" + resolved + ")")

    def on_listing(event, args):
        path = args[0] if args and args[0] is not None else "."
        check_read(real(absolute(path)))

    def on_import(event, args):
        name = args[0]
        if isinstance_(name, str_) and (name in blocked_modules or name.startswith("ctypes.")):
            raise ImportError("sandbox: importing " + name + " is not permitted", name=name)
        # Loading a native extension: only the standard library's (not one written into the directory).
        if len(args) > 1 and args[1] is not None:
            resolved = real(absolute(args[1]))
            if not any(resolved.startswith(prefix) for prefix in stdlib_prefixes):
                raise ImportError("sandbox: loading native code from " + resolved + " is not permitted")

    def on_open(event, args):
        path, mode, flags = args
        if isinstance_(path, int_):
            return
        lexical = absolute(path)
        resolved = real(lexical)
        writing = (isinstance_(flags, int_) and flags & write_flags) or (
            isinstance_(mode, str_) and ("w" in mode or "a" in mode or "x" in mode or "+" in mode)
        )
        if lexical in write_devices:
            return
        if writing and not inside(resolved):
            deny("opening " + resolved + " for writing outside the sandbox directory")
        check_read(resolved)
        if mode is None and not inside(resolved):
            # os.open() of an outside directory would give a dir_fd for openat()-style escapes, and the
            # "open" event does not report dir_fd.
            try:
                outside_dir = is_dir(stat_(resolved).st_mode)
            except OSError:
                outside_dir = False
            if outside_dir:
                deny("os.open() of a directory outside the sandbox directory")

    def path_check(path_index, dir_fd_index=None):
        def check(event, args):
            dir_fd = args[dir_fd_index] if dir_fd_index is not None and dir_fd_index < len(args) else None
            must_be_inside(event, args[path_index], dir_fd)
        return check

    def on_two_paths(event, args):
        must_be_inside(event, args[0], args[2])
        must_be_inside(event, args[1], args[3])

    def on_symlink(event, args):
        src, dst, dir_fd = args
        link = absolute(dst, dir_fd)
        must_be_inside(event, link)
        target = fspath(src)
        if isinstance_(target, bytes_):
            target = b"".join((target,)).decode(fs_encoding, "surrogateescape")
        target = join((target,))
        if not target.startswith("/"):
            # A relative target is resolved from the directory that contains the link.
            target = real(link[: link.rfind("/")] or "/") + "/" + target
        if not inside(real(target)):
            deny("a symbolic link pointing outside the sandbox directory")

    def on_truncate(event, args):
        if not isinstance_(args[0], int_):
            must_be_inside(event, args[0])

    def on_sqlite(event, args):
        database = args[0]
        if isinstance_(database, bytes_):
            database = database.decode(fs_encoding, "surrogateescape")
        if not isinstance_(database, str_):
            database = fspath(database)
        database = join((database,))
        if database.startswith("file:"):
            location, _, query = database[5:].partition("?")
            if location.startswith("//"):
                location = location[2:]
                location = location[location.find("/"):] if "/" in location else ""
            if location in ("", ":memory:") or "mode=memory" in query:
                return
            database = location
        if database in ("", ":memory:"):
            return
        check_read(must_be_inside(event, database))

    def on_spawn(event, args):
        nonlocal spawned
        if max_processes == 0:
            deny("creating processes (" + event + ")")
        if event in ("os.fork", "os.forkpty", "os.posix_spawn", "os.system", "_posixsubprocess.fork_exec"):
            spawned += 1
            if spawned > max_processes:
                deny("creating more than " + str_(max_processes) + " processes (" + event + ")")

    def on_kill(event, args):
        pid = args[0]
        own_group = getpgrp()
        if event == "os.killpg":
            if pid not in (0, own_group):
                deny("signalling a process group other than the sandbox's own")
            return
        if pid == 0 or pid == getpid() or pid == -own_group:
            return
        if pid > 0:
            try:
                group = getpgid(pid)
            except OSError:
                return  # no such process: let os.kill report it
            if group == own_group:
                return
        deny("signalling a process outside the sandbox")

    def on_rlimit(event, args):
        if event == "resource.prlimit":
            pid, res, limits = args
            if pid not in (0, getpid()):
                deny("changing another process's limits")
            if limits is None:
                return
        else:
            res, limits = args
        cur_hard = getrlimit(res)[1]
        if cur_hard == rlim_inf:
            return
        for value in tuple(limits):
            value = int_(value)
            if value == rlim_inf or value > cur_hard:
                deny("raising a resource limit")

    def refuse(what):
        def refused(event, args):
            deny(what)
        return refused

    blocked_modules = frozenset((
        "ctypes", "_ctypes", "_ctypes_test", "_testcapi", "_testinternalcapi", "_testmultiphase",
        "_xxsubinterpreters", "_xxinterpchannels", "_interpreters", "_interpchannels", "_interpqueues",
        # Already imported by the bootstrap; another import event only happens after deleting them from
        # sys.modules to get unpatched copies.
        "posix", "os", "_posixsubprocess",
    ))
    handlers = {
        "open": on_open,
        "os.mkdir": path_check(0, 2),
        "os.remove": path_check(0, 1),
        "os.rmdir": path_check(0, 1),
        "os.chmod": path_check(0, 2),
        "os.chown": path_check(0, 3),
        "os.utime": path_check(0, 3),
        "os.chflags": path_check(0),
        "os.setxattr": path_check(0),
        "os.removexattr": path_check(0),
        "os.mkfifo": path_check(0, 2),
        "os.truncate": on_truncate,
        "os.rename": on_two_paths,
        "os.link": on_two_paths,
        "os.symlink": on_symlink,
        "shutil.rmtree": path_check(0, 1),
        "shutil.chown": path_check(0),
        "shutil.copyfile": path_check(1),
        "shutil.copymode": path_check(1),
        "shutil.copystat": path_check(1),
        "shutil.copytree": path_check(1),
        "shutil.move": path_check(1),
        "sqlite3.connect": on_sqlite,
        "sqlite3.enable_load_extension": refuse("loading SQLite extensions"),
        "sqlite3.load_extension": refuse("loading SQLite extensions"),
        "import": on_import,
        "os.listdir": on_listing,
        "os.scandir": on_listing,
        "os.listxattr": on_listing,
        "os.getxattr": on_listing,
        "cpython.PyInterpreterState_New": refuse("creating sub-interpreters"),
        "gc.get_objects": refuse("gc.get_objects()"),
        "gc.get_referrers": refuse("gc.get_referrers()"),
        "os.kill": on_kill,
        "os.killpg": on_kill,
        "resource.setrlimit": on_rlimit,
        "resource.prlimit": on_rlimit,
    }
    for event in ("os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn", "os.system",
                  "os.startfile", "pty.spawn", "subprocess.Popen", "_posixsubprocess.fork_exec"):
        handlers[event] = on_spawn
    for event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
                  "socket.gethostbyname", "socket.gethostbyaddr", "socket.sethostname"):
        handlers[event] = refuse("network access (" + event + ")")
    lookup = handlers.get
    stdlib_prefixes = tuple(real(p) + "/" for p in stdlib if p.startswith("/"))
    allow_prefixes = stdlib_prefixes + tuple(p + "/" for p in allow_read)

    def hook(event, args):
        handler = lookup(event)
        if handler is not None:
            handler(event, args)

    return hook


def _sandbox_report(exc):
    """Print the traceback without the bootstrap's and the hook's own frames."""
    from types import TracebackType

    boot_globals = globals()
    seen = set()
    pending = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        kept = []
        tb = current.__traceback__
        while tb is not None:
            if tb.tb_frame.f_globals is not boot_globals:
                kept.append(tb)
            tb = tb.tb_next
        rebuilt = None
        for tb in reversed(kept):
            rebuilt = TracebackType(rebuilt, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
        current.__traceback__ = rebuilt
        pending.extend((current.__cause__, current.__context__))
    try:
        if _sys.excepthook is not _sys.__excepthook__:
            _sys.excepthook(type(exc), exc, exc.__traceback__)
        else:
            import traceback

            traceback.print_exception(type(exc), exc, exc.__traceback__)
    except BaseException:
        _sys.__excepthook__(type(exc), exc, exc.__traceback__)


def _sandbox_main():
    import builtins
    import json
    import linecache
    import _sitebuiltins

    with open(int(_sys.argv[1]), "rb") as f:
        cfg = json.loads(f.read().decode("utf-8"))
    source, root = cfg["source"], cfg["root"]
    _sandbox_limits(cfg)
    _sandbox_patch_os(cfg["max_processes"])
    _sys.argv[:] = ["<solution>"]
    stdlib = tuple(_sys.path)  # with -S: only the standard library's directories
    _sys.path.insert(0, root)
    # -S skips site, which is what normally provides exit() and quit(); generated code uses them.
    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
    linecache.cache["<solution>"] = (len(source), None, source.splitlines(True), "<solution>")
    main = type(_sys)("__main__")
    main.__file__ = "<solution>"
    main.__builtins__ = builtins
    _sys.modules["__main__"] = main
    allow, deny = tuple(cfg["allow_read"]), tuple(cfg["deny_read"])
    hook = _sandbox_hook(root, stdlib, allow, deny, cfg["max_processes"])
    _sys.addaudithook(hook)
    del cfg, f, json, hook, stdlib, allow, deny
    try:
        exec(compile(source, "<solution>", "exec"), main.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        _sandbox_report(exc)
        raise SystemExit(1) from None


_sandbox_main()
'''
