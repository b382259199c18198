"""Batch names as file names. Pure: no Django imports.

A FaithBench export writes each batch as ``<batch name>.json``, into a folder (the export command) or a zip (the API,
the project page), so a batch name is a file name on whatever system the export lands on. Imports refuse a name
that is not a safe one everywhere (file_name_problem: a path separator, ``..``, a control character, a character or
a device name Windows refuses, more bytes than a file system takes); exports make every stored name, older data's
too, a safe and unique file name (export_file_names) and never write outside their folder.
"""

from __future__ import annotations

import unicodedata

SUFFIX = ".json"
# What Windows refuses in a file name besides control characters; "/" and "\\" also separate folders.
UNSAFE_CHARACTERS = '<>:"/\\|?*'
# Device names Windows keeps, with any extension ("CON.json" is the console).
WINDOWS_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL", *(f"COM{digit}" for digit in range(10)), *(f"LPT{digit}" for digit in range(10))}
)
MAX_FILE_NAME_BYTES = 255  # ext4, APFS, NTFS (in UTF-16 units, at least as many): the name with its suffix


def _control(character: str) -> bool:
    return unicodedata.category(character) in ("Cc", "Cf") and character not in "\u200c\u200d"


def _device(name: str) -> bool:
    return name.split(".")[0].rstrip(" ").upper() in WINDOWS_DEVICES


def file_name_problem(name: str, suffix: str = SUFFIX) -> str | None:
    """What makes ``name`` + ``suffix`` no safe file name on every system, as a clause ("holds '/', ..."), or None.

    Refused: empty or blank; a path separator or another character Windows refuses (< > : " / \\ | ? *); a control
    or format character (a tab, a newline, a right-to-left override); a leading dot (a hidden file, and "." and ".."
    name folders); a trailing dot or space (Windows drops them, so two names would be one file); a device name
    Windows keeps (CON, NUL, COM1, ...); more than MAX_FILE_NAME_BYTES bytes of UTF-8 with the suffix.
    """
    if not name.strip():
        return "is empty"
    for character in name:
        if character in UNSAFE_CHARACTERS:
            return f"holds {character!r}, which a file name cannot hold (nor any of {' '.join(UNSAFE_CHARACTERS)})"
        if _control(character):
            return f"holds the invisible control character U+{ord(character):04X}, which a file name cannot hold"
    if name.startswith("."):
        return "starts with '.', which makes a hidden file ('.' and '..' name folders)"
    if name.endswith((".", " ")):
        return "ends with a dot or a space, which Windows drops from a file name"
    if _device(name):
        return f"is a device name on Windows ({name.split('.')[0].rstrip(' ').upper()}), which no file may take"
    size = len((name + suffix).encode("utf-8"))
    if size > MAX_FILE_NAME_BYTES:
        return (f"takes {size} bytes as a file name ({suffix} included, in UTF-8); file systems take at most "
                f"{MAX_FILE_NAME_BYTES}")
    return None


def _shortened(name: str, limit: int) -> str:
    """``name`` cut to at most ``limit`` bytes of UTF-8, between characters."""
    encoded = name.encode("utf-8")
    if len(encoded) <= limit:
        return name
    return encoded[:limit].decode("utf-8", errors="ignore")


def safe_file_name(name: str, suffix: str = SUFFIX) -> str:
    """``name`` made a file name file_name_problem takes: each refused character becomes "_", a leading dot, a
    trailing dot or space and a device name get one, an empty name is "batch", a long one is shortened."""
    safe = "".join("_" if character in UNSAFE_CHARACTERS or _control(character) else character for character in name)
    # One byte short of the limit: a device name gets one more.
    safe = _shortened(safe, MAX_FILE_NAME_BYTES - len(suffix.encode("utf-8")) - 1)
    if not safe.strip():
        return "batch"
    if safe.startswith("."):
        safe = "_" + safe[1:]
    if safe.endswith((".", " ")):
        safe = safe[:-1] + "_"
    if _device(safe):
        safe = "_" + safe
    return safe


def export_file_names(names: list[str], suffix: str = SUFFIX) -> list[str]:
    """A file name (with ``suffix``) for each name, in order: the name itself when file_name_problem takes it, else
    safe_file_name's; unique ignoring case (Windows and macOS do), a later clash numbered "-2", "-3", ... A name
    that is already safe keeps its own file name unless an identical one (ignoring case) came first, so an export
    of an imported file gives it back under its name."""
    taken: set[str] = set()
    kept: dict[int, str] = {}
    for index, name in enumerate(names):  # safe names first: a renamed one never takes a safe one's file name
        if file_name_problem(name, suffix) is None and name.casefold() not in taken:
            taken.add(name.casefold())
            kept[index] = name
    result = []
    for index, name in enumerate(names):
        if index in kept:
            result.append(kept[index] + suffix)
            continue
        base = candidate = safe_file_name(name, suffix)
        number = 1
        while candidate.casefold() in taken:
            number += 1
            tail = f"-{number}"
            candidate = _shortened(base, MAX_FILE_NAME_BYTES - len((tail + suffix).encode("utf-8"))) + tail
        taken.add(candidate.casefold())
        result.append(candidate + suffix)
    return result
