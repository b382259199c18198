"""Zip archives of span files, imported as the files they hold: FaithLab's own FaithBench export (the API's and the
project page's download is a zip of ``<batch>.json`` files) goes back in as it came out.

Each member is one file of the import, read as the import reads its files (in the format asked for, or told by
the member's name), and named ``<archive>/<member>`` in messages; its batch is named after the member's own file
name, as an unzipped file's would be. Folders, hidden files and macOS's ``__MACOSX/`` copies are passed over; a
member with another extension, an absolute path or a ``..`` in its path is refused, naming it. Nothing is
unpacked to disk. The members unpacked, every archive of the import together, may hold at most the upload limit
(settings.MAX_UPLOAD_MB), read no further than that: a small archive that unpacks to gigabytes (a zip bomb) is
refused, not read into memory.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.conf import settings

from annotate.services.ingest.checks import ImportFailed, ImportProblems, _shown

MEMBER_SUFFIXES = (".json", ".jsonl")
SKIPPED_FOLDERS = ("__MACOSX",)  # macOS's zips hold a "._<name>" resource copy of each file there


@dataclass
class UnpackBudget:
    """Bytes the archives of one import may still unpack to: the upload limit, all archives together."""

    left: int

    @classmethod
    def for_upload(cls) -> UnpackBudget:
        return cls(int(settings.MAX_UPLOAD_MB) * 1024 * 1024)


def _too_large(name: str) -> str:
    return (f"{name}: unpacked, the zip archive holds more than the {settings.MAX_UPLOAD_MB} MB limit on imported "
            "files (the files of one import together); unzip it and import its files in turn, or raise the limit "
            "with the setting FAITHLAB_MAX_UPLOAD_MB")


def _member_problem(member: str) -> str | None:
    """Why a member's path is refused (absolute, or climbing out with ".."), or None."""
    path = member.replace("\\", "/")
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        return "has an absolute path"
    if ".." in PurePosixPath(path).parts:
        return "has '..' in its path"
    return None


def _passed_over(member: str) -> bool:
    """Folders' entries, hidden files and macOS's resource copies: not files of the import."""
    parts = PurePosixPath(member.replace("\\", "/")).parts
    return member.endswith(("/", "\\")) or any(part.startswith(".") or part in SKIPPED_FOLDERS for part in parts)


def unpacked(name: str, content: bytes, budget: UnpackBudget) -> list[tuple[str, bytes]]:
    """The files a zip archive holds, each as (``<name>/<member>``, its bytes), in the archive's order.

    Every problem of the archive is raised together (ImportProblems); nothing is unpacked to disk.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise ImportFailed(f"{name}: not a zip archive that can be read ({error})") from None
    problems: list[str] = []
    members: list[tuple[str, bytes]] = []
    with archive:
        for info in archive.infolist():
            where = f"{name}: member {_shown(info.filename)}"
            if (problem := _member_problem(info.filename)) is not None:
                problems.append(f"{where} {problem}; an archive of files to import holds plain relative paths")
                continue
            if info.is_dir() or _passed_over(info.filename):
                continue
            if not info.filename.lower().endswith(MEMBER_SUFFIXES):
                problems.append(f"{where} is not a .json or .jsonl file; a zip archive to import holds FaithBench "
                                ".json and samples .jsonl files only")
                continue
            if info.file_size > budget.left:  # what the archive says; the read below holds whatever it says
                raise ImportFailed(_too_large(name))
            try:
                with archive.open(info) as member:
                    data = member.read(budget.left + 1)
            except RuntimeError:  # zipfile's words for an encrypted member
                problems.append(f"{where} is encrypted; import a zip archive without a password")
                continue
            except (zipfile.BadZipFile, NotImplementedError, EOFError, OSError, ValueError) as error:
                problems.append(f"{where} cannot be unpacked ({error})")
                continue
            if len(data) > budget.left:
                raise ImportFailed(_too_large(name))
            budget.left -= len(data)
            members.append((f"{name}/{info.filename}", data))
    if problems:
        raise ImportProblems(problems)
    if not members:
        raise ImportFailed(f"{name}: the zip archive holds no .json or .jsonl file to import")
    return members
