"""What a sandboxed program sees of the file system: bwrap options for a minimal read-only tree.

The root of the sandbox is bwrap's empty tmpfs, remounted read-only. In it, read-only bind mounts of
exactly what the interpreter needs and nothing else:

- the base interpreter binary (never a virtual environment's), the dynamic loader its ELF header names
  (with the symbolic links that lead to it, e.g. ``/lib64 -> usr/lib64``), ``libpython`` if the build is
  shared, and the system library directory (that of the C library and the loader, found from this
  process's own memory map; the standard library's extension modules link against what lies there);
- the standard library, with every ``site-packages`` inside it (and any directory of the suite or of
  installed packages that would lie inside a bound tree) hidden under an empty read-only tmpfs;
- the time-zone data (``TZPATH``);
- as root only, ``setpriv`` and ``bwrap`` themselves (see :mod:`harness_gym.sandbox.boundary`, plan
  ``root``); the bundled ``bwrap`` and its libraries under :data:`harness_gym.sandbox.bwrap.TOOLS_INSIDE`.

No task file, no source of the suite, no virtual environment, no home or cache directory is bound, so
they are absent inside (``FileNotFoundError``), not refused. ``/proc``, ``/dev`` and the scratch tmpfs
are added by the command line itself (:func:`harness_gym.sandbox.boundary.bwrap_argv`).
"""

from __future__ import annotations

import functools
import os
import shutil
import struct
import sys
import sysconfig
from dataclasses import dataclass
from typing import BinaryIO

from harness_gym.sandbox import bwrap
from harness_gym.sandbox.runner import _read_lists


@dataclass(frozen=True)
class Layout:
    python: str
    """Real path of the base interpreter binary."""
    fs_args: tuple[str, ...]
    """bwrap options that build the read-only tree (without the scratch directory, ``/proc`` and ``/dev``)."""
    bwrap: str
    """The bwrap the harness runs (:func:`harness_gym.sandbox.bwrap.find`); empty if none."""
    tools: dict[str, str]
    """Real paths of ``setpriv`` and ``bwrap`` bound inside (plan ``root`` runs them there)."""


def _mapped_libraries() -> list[str]:
    """Shared objects mapped into this process (the interpreter's own dependencies among them)."""
    found: list[str] = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) == 6 and ".so" in fields[5]:
                path = fields[5].strip()
                if path.startswith("/") and path not in found:
                    found.append(path)
    return found


def _elf_interpreter(path: str) -> str | None:
    """``PT_INTERP`` of a 64-bit little-endian ELF executable: the dynamic loader it asks for."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            return None
        (phoff,) = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        for i in range(phnum):
            entry = _read_at(f, phoff + i * phentsize, 40, "program header table")
            p_type, _flags, p_offset, _vaddr, _paddr, p_filesz = struct.unpack("<IIQQQQ", entry)
            if p_type == 3:  # PT_INTERP
                return _read_at(f, p_offset, p_filesz, "interpreter name").rstrip(b"\0").decode()
    return None


def _read_at(f: BinaryIO, offset: int, length: int, what: str) -> bytes:
    """``length`` bytes at ``offset``; an ``OSError`` naming the file if its header points past its end
    (:func:`harness_gym.sandbox.detect.probe` then names that as why the boundary cannot be had)."""
    if offset + length > os.fstat(f.fileno()).st_size:
        raise OSError(f"{f.name}: the ELF {what} lies past the end of the file")
    f.seek(offset)
    return f.read(length)


class _TreeBuilder:
    """bwrap options reproducing chosen host paths (their symbolic links included) read-only."""

    def __init__(self) -> None:
        self.args: list[str] = []
        self.dirs: set[str] = {"/"}
        self.links: set[str] = set()
        self.trees: list[str] = []  # bound directories

    def _covered(self, path: str) -> bool:
        return any(path == t or path.startswith(t + "/") for t in self.trees)

    def ensure_dir(self, path: str) -> None:
        """Create ``path`` and its parents with mode 0755 (a privileged bwrap would make them 0700, which
        the unprivileged sandbox user could not traverse)."""
        if path in self.dirs or self._covered(path):
            return
        self.ensure_dir(os.path.dirname(path))
        self.args += ["--perms", "0755", "--dir", path]
        self.dirs.add(path)

    def mirror(self, path: str) -> str:
        """Recreate the symbolic links along ``path``; return the real path they lead to."""
        current = ""
        for name in [p for p in path.split("/") if p]:
            candidate = current + "/" + name
            if self._covered(candidate):
                return os.path.realpath(path)
            if os.path.islink(candidate):
                target = os.readlink(candidate)
                if candidate not in self.links:
                    self.ensure_dir(current or "/")
                    self.args += ["--symlink", target, candidate]
                    self.links.add(candidate)
                resolved = target if target.startswith("/") else os.path.join(current or "/", target)
                current = self.mirror(os.path.normpath(resolved))
            else:
                current = candidate
        return current or "/"

    def bind(self, path: str, *, optional: bool = False) -> str | None:
        if not os.path.exists(path):
            if optional:
                return None
            raise FileNotFoundError(path)
        real = self.mirror(path)
        if self._covered(real):
            return real
        self.ensure_dir(os.path.dirname(real))
        self.args += ["--ro-bind", real, real]
        if os.path.isdir(real):
            self.trees.append(real)
        return real

    def bind_at(self, path: str, inside: str) -> None:
        """Bind the directory ``path`` read-only at ``inside``, outside every bound tree."""
        self.ensure_dir(os.path.dirname(inside))
        self.args += ["--ro-bind", path, inside]

    def mask(self, path: str) -> None:
        """Hide a directory inside a bound tree under an empty read-only tmpfs."""
        if self._covered(path) and os.path.isdir(path):
            self.args += ["--tmpfs", path, "--remount-ro", path]


@functools.cache
def layout() -> Layout:
    """The tree for this interpreter (computed once; ``OSError`` if a needed file is missing or cut short)."""
    python = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    builder = _TreeBuilder()
    libs = _mapped_libraries()
    system_dirs: list[str] = []
    for lib in libs:
        if os.path.basename(lib).startswith(("libc.so", "libc-", "ld-linux", "ld-musl", "libm.so")):
            directory = os.path.dirname(os.path.realpath(lib))
            if directory not in system_dirs:
                system_dirs.append(directory)
    for directory in system_dirs:
        builder.bind(directory)
    builder.bind(python)
    loader = _elf_interpreter(python)
    if loader:
        builder.bind(loader)
    for lib in libs:
        if "libpython" in os.path.basename(lib):
            builder.bind(os.path.realpath(lib))
    scheme = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    for key in ("stdlib", "platstdlib"):
        builder.bind(os.path.realpath(scheme[key]))
    for tz in (sysconfig.get_config_var("TZPATH") or "").split(os.pathsep):
        if tz:
            builder.bind(tz, optional=True)
    hidden = set(_read_lists()[1]) | {
        os.path.realpath(scheme["purelib"]),
        os.path.realpath(scheme["platlib"]),
    }
    for path in sorted(hidden):
        builder.mask(path)
    chosen, _ = bwrap.find()
    tools: dict[str, str] = {}
    if os.geteuid() == 0:
        found = shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin")
        if found:
            tools["setpriv"] = builder.bind(found) or found
        if chosen is not None and chosen.binds:
            for host, inside in chosen.binds:
                builder.bind_at(host, inside)
            tools["bwrap"] = chosen.inside
        elif chosen is not None:
            tools["bwrap"] = builder.bind(chosen.path) or chosen.path
    found_bwrap = chosen.path if chosen else ""
    return Layout(python=python, fs_args=tuple(builder.args), bwrap=found_bwrap, tools=tools)
