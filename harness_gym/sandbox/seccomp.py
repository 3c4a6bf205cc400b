"""The seccomp filter every sandboxed program runs under: built here, handed to ``bwrap --seccomp FD``.

The filter is generated in the harness (trusted code) with the system's libseccomp (``libseccomp.so.2``,
Debian's ``libseccomp2``, which ``apt`` itself depends on) through ctypes, using only its non-variadic
calls (``seccomp_init``, ``seccomp_rule_add_array``, ``seccomp_export_bpf``), and exported as a classic
BPF program of about 1.3 KB. No Python binding is needed: Debian's ``python3-seccomp`` is built for the
system interpreter only, and PyPI's wrappers do what this module does.

Default allow; refused (``EPERM`` unless noted):

- reading or changing other processes: ``ptrace``, ``process_vm_readv/writev``, ``pidfd_getfd``,
  ``kcmp``, ``process_madvise``;
- kernel surface the standard library never needs: ``bpf``, ``perf_event_open``, ``userfaultfd``,
  ``io_uring_*``, keyrings, module and ``kexec`` calls, ``personality``, ``modify_ldt``, ``ioperm``/
  ``iopl``, ``syslog``, ``acct``, quotas, swap, ``reboot``, ``vhangup``, file handles,
  ``fanotify_init``, NUMA policy, clock and time setting;
- mounts and namespaces (bwrap has made all of them before the filter is installed): ``mount`` and the
  new mount API, ``pivot_root``, ``chroot``, ``unshare``, ``setns``, ``clone`` with any ``CLONE_NEW*``
  flag; ``clone3`` answers ``ENOSYS`` (its flags live in memory, out of a filter's reach; the C library
  then falls back to ``clone``);
- state that would outlive a process inside namespaces shared by consecutive programs: SysV IPC and
  POSIX message queues;
- extended attributes, every call (``EOPNOTSUPP``, as on a file system without them, which the standard
  library's copy functions accept): they are kernel memory outside the scratch's size and the memory
  limit, and they could carry data from one artifact to the next;
- ``memfd_create`` and ``memfd_secret``: anonymous files are memory outside the address-space limit;
- ``ioctl(TIOCSTI)`` (typing into a terminal); socket families other than Unix, IPv4 and IPv6
  (``EAFNOSUPPORT``; the network namespace holds only its own loopback);
- scheduling and limits of any process but the caller (``sched_set*``, ``prlimit64`` naming a pid,
  ``setpriority`` unless ``PRIO_PROCESS, 0``, ``ioprio_set`` unless ``IOPRIO_WHO_PROCESS, 0``), so that no
  program can change what the programs after it inherit.

A name the running kernel's architecture does not know is skipped; a call newer than the installed
libseccomp (:data:`LATE_SYSCALLS`) is refused by its number.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os

DENIED_SYSCALLS: tuple[str, ...] = (
    # process inspection and memory of other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "process_madvise",
    # kernel attack surface the standard library never needs
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key", "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "create_module", "query_module", "get_kernel_syms", "lookup_dcookie", "nfsservctl",
    "uselib", "personality", "modify_ldt", "ioperm", "iopl", "vm86", "vm86old", "syslog", "acct",
    "quotactl", "quotactl_fd", "swapon", "swapoff", "reboot", "vhangup", "open_by_handle_at",
    "name_to_handle_at", "fanotify_init", "mbind", "migrate_pages", "move_pages", "set_mempolicy",
    "settimeofday", "stime", "clock_settime", "clock_adjtime", "adjtimex", "_sysctl",
    # mounts and namespaces (bwrap has done all of that before the filter is installed)
    "mount", "umount", "umount2", "pivot_root", "chroot", "unshare", "setns", "fsopen", "fsconfig",
    "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    # state that outlives a process inside shared namespaces (SysV IPC, POSIX message queues)
    "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd",
    "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
    "mq_getsetattr",
)  # fmt: skip
"""Refused outright with ``EPERM``."""

XATTR_SYSCALLS: tuple[str, ...] = tuple(
    f"{prefix}{verb}xattr{suffix}"
    for verb in ("set", "get", "list", "remove")
    for prefix, suffix in (("", ""), ("l", ""), ("f", ""), ("", "at"))
)
"""Refused with ``EOPNOTSUPP``."""
LATE_SYSCALLS = {"setxattrat": 463, "getxattrat": 464, "listxattrat": 465, "removexattrat": 466}
"""Calls of Linux 6.13 that libseccomp 2.5 cannot name; their numbers are those of the kernel's common
table (``include/uapi/asm-generic/unistd.h``; x86-64's ``syscall_64.tbl`` has the same)."""

# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (CLONE_NEWTIME only exists for clone3 and
# unshare, both refused: in clone's flags its bit belongs to the exit signal)
_CLONE_NS_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
_ALLOWED_SOCKET_FAMILIES = (1, 2, 10)  # AF_UNIX, AF_INET, AF_INET6
_TIOCSTI = 0x5412
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000  # SCMP_ACT_ALLOW, SCMP_ACT_ERRNO(0)
_NE, _EQ, _GT, _MASKED_EQ = 1, 4, 6, 7  # enum scmp_compare


class _ArgCmp(ctypes.Structure):
    """``struct scmp_arg_cmp``."""

    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("a", ctypes.c_uint64), ("b", ctypes.c_uint64)]


@functools.cache
def program() -> tuple[bytes | None, str | None]:
    """The filter as a BPF program for ``bwrap --seccomp``, or ``(None, why it cannot be had)``."""
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError as exc:
        return None, f"libseccomp.so.2 not found ({exc}); install Debian's libseccomp2"
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    ctx = lib.seccomp_init(_ALLOW)
    if not ctx:
        return None, "seccomp_init failed"
    try:

        def rule(code: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            if nr < 0:
                nr = LATE_SYSCALLS.get(name, -1)
            if nr < 0:
                return  # not a system call on this architecture
            array = (_ArgCmp * max(len(cmps), 1))(*[_ArgCmp(*c) for c in cmps])
            rc = lib.seccomp_rule_add_array(ctx, _ERRNO | code, nr, len(cmps), array)
            if rc < 0:
                raise OSError(-rc, f"seccomp rule for {name}")

        for name in (*DENIED_SYSCALLS, "memfd_create", "memfd_secret"):
            rule(errno.EPERM, name)
        for name in XATTR_SYSCALLS:
            rule(errno.EOPNOTSUPP, name)
        for flag in _CLONE_NS_FLAGS:
            rule(errno.EPERM, "clone", (0, _MASKED_EQ, flag, flag))
        rule(errno.ENOSYS, "clone3")
        rule(errno.EPERM, "ioctl", (1, _MASKED_EQ, 0xFFFFFFFF, _TIOCSTI))
        for name in (
            "sched_setaffinity",
            "sched_setscheduler",
            "sched_setparam",
            "sched_setattr",
            "prlimit64",
        ):
            rule(errno.EPERM, name, (0, _NE, 0, 0))  # a pid other than 0 (the caller)
        rule(errno.EPERM, "setpriority", (0, _NE, 0, 0))  # which != PRIO_PROCESS
        rule(errno.EPERM, "setpriority", (1, _NE, 0, 0))  # who != the caller
        rule(errno.EPERM, "ioprio_set", (0, _NE, 1, 0))  # which != IOPRIO_WHO_PROCESS
        rule(errno.EPERM, "ioprio_set", (1, _NE, 0, 0))
        rule(errno.EAFNOSUPPORT, "socket", (0, _GT, max(_ALLOWED_SOCKET_FAMILIES), 0))
        for family in range(max(_ALLOWED_SOCKET_FAMILIES)):
            if family not in _ALLOWED_SOCKET_FAMILIES:
                rule(errno.EAFNOSUPPORT, "socket", (0, _EQ, family, 0))
        memfd = os.memfd_create("harness-seccomp", os.MFD_CLOEXEC)
        try:
            rc = lib.seccomp_export_bpf(ctx, memfd)
            if rc < 0:
                return None, f"seccomp_export_bpf failed ({os.strerror(-rc)})"
            return os.pread(memfd, os.lseek(memfd, 0, os.SEEK_END), 0), None
        finally:
            os.close(memfd)
    except OSError as exc:
        return None, f"building the seccomp filter failed ({exc})"
    finally:
        lib.seccomp_release(ctx)


def program_fd(bpf: bytes) -> int:
    """The read end of a pipe holding ``bpf`` (bwrap reads it to the end); the program is a few KiB, far
    below a pipe's capacity."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, bpf)
    finally:
        os.close(write_end)
    return read_end
