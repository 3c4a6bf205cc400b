"""The sandbox's file tree, stated on hand-made inputs: which mapped libraries count, which ELF headers name
a loader, and which bwrap options a tree of bind mounts and symbolic links becomes."""

from __future__ import annotations

import io
import os
import re
import struct

import pytest

from harness_gym.sandbox import layout
from harness_gym.sandbox.layout import _TreeBuilder

MAPS = """\
7f00-7f01 r-xp 00000000 08:01 123                        /usr/lib/libc.so.6
7f01-7f02 r--p 00010000 08:01 123                        /usr/lib/libc.so.6
7f02-7f03 r-xp 00000000 08:01 456                        /opt/my lib/libspace.so.1
7f03-7f04 rw-p 00000000 00:00 0
7f04-7f05 r-xp 00000000 00:00 0                          [vdso]
7f05-7f06 r-xp 00000000 08:01 789                        /usr/bin/python3.11
7f06-7f07 rw-p 00000000 00:00 0                          [anon:cache.so]
"""


def test_mapped_libraries_are_the_shared_objects_by_path_once_each(monkeypatch) -> None:
    """A path may hold spaces; anonymous mappings, pseudo-files and executables are not libraries."""
    monkeypatch.setattr(layout, "open", lambda path: io.StringIO(MAPS), raising=False)
    assert layout._mapped_libraries() == ["/usr/lib/libc.so.6", "/opt/my lib/libspace.so.1"]


def _elf(
    interpreter: bytes | None, *, ei_class: int = 2, ei_data: int = 1, magic: bytes = b"\x7fELF"
) -> bytes:
    """A 64-bit little-endian ELF header with a PT_LOAD entry, then a PT_INTERP entry if asked."""
    entries = [(1, 0, 0)] + ([(3, 64 + 2 * 56, len(interpreter) + 1)] if interpreter is not None else [])
    ident = magic + bytes([ei_class, ei_data, 1]) + bytes(9)
    head = bytearray(ident + bytes(64 - len(ident)))
    struct.pack_into("<Q", head, 0x20, 64)
    struct.pack_into("<HH", head, 0x36, 56, len(entries))
    table = b"".join(
        struct.pack("<IIQQQQQQ", kind, 0, offset, 0, 0, size, size, 1) for kind, offset, size in entries
    )
    return (
        bytes(head) + table.ljust(2 * 56, b"\0") + (interpreter + b"\0" if interpreter is not None else b"")
    )


@pytest.mark.parametrize(
    ("image", "loader"),
    [
        (_elf(b"/opt/loaderX"), "/opt/loaderX"),
        (_elf(None), None),  # a static executable asks for none
        (_elf(b"/opt/loaderX", ei_data=2), None),  # big-endian
        (_elf(b"/opt/loaderX", ei_class=1), None),  # 32-bit
        (_elf(b"/opt/loaderX", magic=b"\x7fELG"), None),  # not an ELF file
    ],
)
def test_the_loader_is_read_only_from_a_64_bit_little_endian_elf_header(tmp_path, image, loader) -> None:
    path = tmp_path / "program"
    path.write_bytes(image)
    assert layout._elf_interpreter(str(path)) == loader


def test_a_bound_directory_covers_everything_under_it_but_not_a_sibling_sharing_its_prefix(tmp_path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "a.so").write_text("")
    (tmp_path / "lib2").mkdir()
    lib = os.path.realpath(tmp_path / "lib")
    builder = _TreeBuilder()
    assert builder.bind(lib) == lib
    assert builder.bind(os.path.join(lib, "a.so")) == os.path.join(lib, "a.so")
    assert builder.bind(lib + "2") == lib + "2"
    binds = [builder.args[i + 1] for i, arg in enumerate(builder.args) if arg == "--ro-bind"]
    assert binds == [lib, lib + "2"]
    assert builder.trees == [lib, lib + "2"]


def test_directories_are_made_once_each_parents_first_and_never_inside_a_bound_tree(tmp_path) -> None:
    builder = _TreeBuilder()
    builder.ensure_dir("/a/b")
    builder.ensure_dir("/a/b")
    builder.ensure_dir("/a/c")
    made = [["--perms", "0755", "--dir", path] for path in ("/a", "/a/b", "/a/c")]
    assert builder.args == [arg for args in made for arg in args]
    tree = os.path.realpath(tmp_path)
    builder.bind(tree)
    made = len(builder.args)
    builder.ensure_dir(os.path.join(tree, "inside"))
    assert len(builder.args) == made


def test_symbolic_links_along_a_path_are_recreated_once_and_followed(tmp_path) -> None:
    root = os.path.realpath(tmp_path)
    os.makedirs(os.path.join(root, "real", "sub"))
    os.symlink("real", os.path.join(root, "relative"))
    os.symlink(os.path.join(root, "real"), os.path.join(root, "absolute"))
    builder = _TreeBuilder()
    assert builder.mirror(os.path.join(root, "relative", "sub")) == os.path.join(root, "real", "sub")
    assert builder.mirror(os.path.join(root, "relative", "sub")) == os.path.join(root, "real", "sub")
    assert builder.mirror(os.path.join(root, "absolute", "sub")) == os.path.join(root, "real", "sub")
    links = [builder.args[i + 1 : i + 3] for i, arg in enumerate(builder.args) if arg == "--symlink"]
    assert links == [
        ["real", os.path.join(root, "relative")],
        [os.path.join(root, "real"), os.path.join(root, "absolute")],
    ]
    assert builder.mirror("/") == "/"


def test_a_missing_path_is_an_error_naming_it_unless_optional(tmp_path) -> None:
    missing = str(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="missing"):
        _TreeBuilder().bind(missing)
    builder = _TreeBuilder()
    assert builder.bind(missing, optional=True) is None and builder.args == []


def test_only_a_directory_inside_a_bound_tree_is_masked(tmp_path) -> None:
    root = os.path.realpath(tmp_path)
    os.makedirs(os.path.join(root, "tree", "site-packages"))
    os.makedirs(os.path.join(root, "outside"))
    (tmp_path / "tree" / "file").write_text("")
    builder = _TreeBuilder()
    builder.bind(os.path.join(root, "tree"))
    made = list(builder.args)
    builder.mask(os.path.join(root, "outside"))
    builder.mask(os.path.join(root, "tree", "file"))
    assert builder.args == made
    hidden = os.path.join(root, "tree", "site-packages")
    builder.mask(hidden)
    assert builder.args == [*made, "--tmpfs", hidden, "--remount-ro", hidden]


def test_the_program_header_count_is_unsigned(tmp_path) -> None:
    """e_phnum is a 16-bit unsigned field: a count of 2**15 or more still reads its first entries."""
    image = bytearray(_elf(b"/opt/loader"))
    image[64 : 64 + 2 * 56] = image[64 + 56 : 64 + 2 * 56] + image[64 : 64 + 56]  # PT_INTERP first
    struct.pack_into("<H", image, 0x38, 0x8001)
    path = tmp_path / "program"
    path.write_bytes(bytes(image))
    assert layout._elf_interpreter(str(path)) == "/opt/loader"


def _with(image: bytes, fmt: str, offset: int, value: int) -> bytes:
    patched = bytearray(image)
    struct.pack_into(fmt, patched, offset, value)
    return bytes(patched)


INTERP = 64 + 56  # the PT_INTERP entry of _elf(...)


@pytest.mark.parametrize(
    ("image", "what"),
    [
        (_elf(b"/opt/loaderX")[: 64 + 56 + 30], "program header table"),  # cut inside the second entry
        (_with(_elf(b"/opt/loaderX"), "<Q", 0x20, 2**64 - 56), "program header table"),  # offset past 2**63
        (_elf(b"/opt/loaderX")[:-3], "interpreter name"),  # cut inside the name
        (_with(_elf(b"/opt/loaderX"), "<Q", INTERP + 8, 2**64 - 1), "interpreter name"),  # offset past 2**63
        (_with(_elf(b"/opt/loaderX"), "<Q", INTERP + 32, 2**64 - 1), "interpreter name"),  # size past 2**63
    ],
)
def test_a_header_pointing_past_the_end_of_the_file_is_an_os_error_naming_it(tmp_path, image, what) -> None:
    """Offsets and sizes are unsigned 64-bit fields checked against the file's size, never read as
    negative (a size of -1 would read to the end of the file): the sandbox probe reports an OSError of
    the layout as the reason it cannot be had."""
    path = tmp_path / "program"
    path.write_bytes(image)
    with pytest.raises(
        OSError, match=rf"^{re.escape(str(path))}: the ELF {what} lies past the end of the file$"
    ):
        layout._elf_interpreter(str(path))
