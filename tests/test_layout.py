"""The layout format (docs/layout-format.md): sizes, defaults, every rejection rule, shipped files."""

from __future__ import annotations

from pathlib import Path

import pytest
from xlat.layout import (
    DEFAULT_SIZES,
    GIB,
    KIB,
    MIB,
    Layout,
    LayoutError,
    Window,
    load_layout,
    parse_layout,
    parse_size,
)

ROOT = Path(__file__).resolve().parents[1]
LAYOUTS = ROOT / "configs" / "layouts"


def one_sentence(msg: str) -> bool:
    return msg.endswith(".") and "\n" not in msg and "Traceback" not in msg


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, 0),
        (4096, 4096),
        ("0", 0),
        ("4KiB", 4 * KIB),
        ("4KB", 4 * KIB),
        ("2MiB", 2 * MIB),
        ("2MB", 2 * MIB),
        ("1GiB", GIB),
        ("1GB", GIB),
        ("3 GiB", 3 * GIB),
        ("2TiB", 2 << 40),
        ("64mib", 64 * MIB),
    ],
)
def test_sizes_are_binary(value, expected):
    assert parse_size(value, "x") == expected


@pytest.mark.parametrize("value", ["1.5GiB", "-1", "lots", "4XB", True, 2.0, [1]])
def test_bad_sizes_rejected(value):
    with pytest.raises(LayoutError) as err:
        parse_size(value, "pool 'heap' size")
    assert "pool 'heap' size" in str(err.value) and one_sentence(str(err.value))


def test_example_from_docs():
    lay = parse_layout(
        """
version = 1
name = "mixed"
description = "two 2MB windows and one 1GB window in the heap"
[heap]
size = "4GiB"
windows = [
  { offset = "0",    length = "1GiB",  page = "1GB" },
  { offset = "1GiB", length = "64MiB", page = "2MB" },
  { offset = "2GiB", length = "32MiB", page = "2MB" },
]
[anon]
size = "8GiB"
windows = [ { offset = "0", length = "512MiB", page = "2MB" } ]
[file]
size = "1GiB"
"""
    )
    assert lay.name == "mixed"
    assert lay.heap.size == 4 * GIB and lay.anon.size == 8 * GIB and lay.file.size == GIB
    assert lay.heap.windows == (
        Window(0, GIB, GIB),
        Window(GIB, 64 * MIB, 2 * MIB),
        Window(2 * GIB, 32 * MIB, 2 * MIB),
    )
    # 64MiB + 32MiB + 512MiB of 2MB pages = 304 pages; one 1GB page
    assert lay.huge_pages_needed() == {"2MB": 304, "1GB": 1}
    env = lay.to_env()
    assert env["XLAT_MOSAIC_HEAP"] == (
        f"{4 * GIB} 0:{GIB}:{GIB} {GIB}:{64 * MIB}:{2 * MIB} {2 * GIB}:{32 * MIB}:{2 * MIB}"
    )
    assert env["XLAT_MOSAIC_ANON"] == f"{8 * GIB} 0:{512 * MIB}:{2 * MIB}"
    assert env["XLAT_MOSAIC_FILE"] == str(GIB)


def test_missing_pools_get_documented_defaults():
    lay = parse_layout("version = 1\n")
    assert isinstance(lay, Layout)
    assert (lay.heap.size, lay.anon.size, lay.file.size) == (
        DEFAULT_SIZES["heap"],
        DEFAULT_SIZES["anon"],
        DEFAULT_SIZES["file"],
    )
    assert DEFAULT_SIZES == {"heap": 32 * GIB, "anon": 32 * GIB, "file": 8 * GIB}
    assert lay.huge_pages_needed() == {"2MB": 0, "1GB": 0}


def test_integer_sizes_and_4kb_windows_accepted():
    lay = parse_layout(
        'version = 1\n[anon]\nsize = 4194304\nwindows = [{offset = 4096, length = 8192, page = "4KB"}]\n'
    )
    assert lay.anon.size == 4 * MIB
    assert lay.anon.huge_windows() == ()


def test_windows_may_be_listed_in_any_order():
    lay = parse_layout(
        'version = 1\n[heap]\nsize = "8MiB"\nwindows = ['
        '{offset = "4MiB", length = "2MiB", page = "2MB"}, {offset = "0", length = "2MiB", page = "2MB"}]\n'
    )
    assert [w.offset for w in lay.heap.windows] == [4 * MIB, 0]


BAD = {
    "overlapping windows": (
        '[heap]\nsize = "4GiB"\nwindows = [{offset = "0", length = "1GiB", page = "2MB"},'
        ' {offset = "512MiB", length = "2MiB", page = "2MB"}]',
        "pool 'heap' window 1 (offset 512MiB, length 2MiB) overlaps window 0 (offset 0, length 1GiB).",
    ),
    "misaligned 2MB window": (
        '[heap]\nsize = "4GiB"\nwindows = [{offset = "1MiB", length = "2MiB", page = "2MB"}]',
        "pool 'heap' window 0: offset '1MiB' (1048576 bytes) is not a multiple of the 2MB page size.",
    ),
    "misaligned length": (
        '[anon]\nsize = "4GiB"\nwindows = [{offset = "0", length = "3MiB", page = "2MB"}]',
        "pool 'anon' window 0: length '3MiB' (3145728 bytes) is not a multiple of the 2MB page size.",
    ),
    "misaligned 1GB window": (
        '[anon]\nsize = "4GiB"\nwindows = [{offset = "2MiB", length = "1GiB", page = "1GB"}]',
        "pool 'anon' window 0: offset '2MiB' (2097152 bytes) is not a multiple of the 1GB page size.",
    ),
    "window beyond pool size": (
        '[heap]\nsize = "1GiB"\nwindows = [{offset = "512MiB", length = "1GiB", page = "2MB"}]',
        "pool 'heap' window 0: offset 512MiB plus length 1GiB ends beyond the pool size 1GiB.",
    ),
    "unknown pool": (
        '[stack]\nsize = "1GiB"',
        "unknown pool 'stack' (pools are heap, anon and file; other keys are version, name and description).",
    ),
    "unknown top-level key": ('colour = "blue"', "unknown key 'colour'"),
    "unknown pool key": ('[heap]\nsize = "1GiB"\npages = 3', "pool 'heap' has unknown key 'pages'"),
    "unknown window key": (
        '[heap]\nsize = "1GiB"\nwindows = [{offset = "0", length = "2MiB", page = "2MB", numa = 1}]',
        "pool 'heap' window 0 has unknown key 'numa'",
    ),
    "bad page": (
        '[heap]\nsize = "1GiB"\nwindows = [{offset = "0", length = "2MiB", page = "2MiB"}]',
        'pool \'heap\' window 0: page \'2MiB\' is not one of "4KB", "2MB", "1GB".',
    ),
    "zero length": (
        '[heap]\nsize = "1GiB"\nwindows = [{offset = "0", length = "0", page = "2MB"}]',
        "pool 'heap' window 0: length '0' must be greater than zero.",
    ),
    "missing field": (
        '[heap]\nsize = "1GiB"\nwindows = [{offset = "0", page = "2MB"}]',
        "is missing 'length'",
    ),
    "pool not a multiple of 2MiB": (
        '[anon]\nsize = "3MiB"',
        "pool 'anon' size '3MiB' (3145728 bytes) is not a positive multiple of 2MiB.",
    ),
    "zero pool": ("[anon]\nsize = 0", "pool 'anon' size 0 (0 bytes) is not a positive multiple of 2MiB."),
    "windows in the file pool": (
        '[file]\nsize = "1GiB"\nwindows = [{offset = "0", length = "2MiB", page = "2MB"}]',
        "file-backed mappings use 4KB pages only",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_layouts_rejected_with_one_sentence(case):
    body, expected = BAD[case]
    with pytest.raises(LayoutError) as err:
        parse_layout("version = 1\n" + body + "\n", source="bad.toml")
    msg = str(err.value)
    assert expected in msg
    assert msg.startswith("bad.toml: ") and one_sentence(msg)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", "'version' is missing"),
        ("version = 2", "version 2 is not supported"),
        ("version = 1\nname = 3", "'name' must be a string"),
        ("version = = 1", "not valid TOML"),
    ],
)
def test_bad_header_rejected(text, expected):
    with pytest.raises(LayoutError, match=expected):
        parse_layout(text)


def test_load_layout_missing_file(tmp_path):
    with pytest.raises(LayoutError) as err:
        load_layout(tmp_path / "nope.toml")
    assert "does not exist" in str(err.value) and one_sentence(str(err.value))


def test_shipped_layouts_are_valid():
    names = {p.stem: load_layout(p) for p in LAYOUTS.glob("*.toml")}
    assert {"all-4KB", "all-2MB", "all-1GB", "mixed"} <= set(names)
    assert names["all-4KB"].huge_pages_needed() == {"2MB": 0, "1GB": 0}
    assert names["all-2MB"].huge_pages_needed() == {"2MB": 2048, "1GB": 0}
    assert names["all-1GB"].huge_pages_needed() == {"2MB": 0, "1GB": 2}
    mixed = names["mixed"]
    assert len(mixed.heap.huge_windows()) + len(mixed.anon.huge_windows()) >= 3
    assert mixed.huge_pages_needed() == {"2MB": 432, "1GB": 1}
    # every huge window of the all-* layouts covers its whole pool
    for name, page in (("all-2MB", 2 * MIB), ("all-1GB", GIB)):
        for pool in (names[name].heap, names[name].anon):
            assert pool.windows == (Window(0, pool.size, page),)
