"""Imported files over FAITHLAB_MAX_UPLOAD_MB are refused by their size, before they are read, on every import.

The message names the file, its size, the limit and the setting; nothing is imported.
"""

from __future__ import annotations

import html
import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.models import Batch, Membership, PairOriginal, Project
from annotate.uploads import UploadTooLarge, read_uploads
from judging.models import JudgeRun
from tests.conftest import login

pytestmark = pytest.mark.django_db

LINE = json.dumps({"passage_id": "p1", "source": "One. Two.", "summary": "One.", "generator": "g"})
BIG = "big.jsonl: the file is 1.5 MB, over the 1 MB limit on imported files; split it into smaller files, or raise " \
      "the limit with the setting FAITHLAB_MAX_UPLOAD_MB."


def big_file(name: str = "big.jsonl") -> SimpleUploadedFile:
    """1.5 MB of valid samples JSONL: refused for its size alone."""
    return SimpleUploadedFile(name, ((LINE + "\n") * (1536 * 1024 // (len(LINE) + 1) + 1)).encode()[: 1536 * 1024])


@pytest.fixture(autouse=True)
def one_megabyte_limit(settings: Any) -> None:
    settings.MAX_UPLOAD_MB = 1


class Unreadable(SimpleUploadedFile):
    def read(self, *args: Any) -> bytes:
        raise AssertionError("a file over the limit was read")


def test_files_over_the_limit_are_refused_before_any_file_is_read() -> None:
    small = Unreadable("small.jsonl", LINE.encode())
    with pytest.raises(UploadTooLarge) as refused:
        read_uploads([small, Unreadable("big.jsonl", b"x" * (1536 * 1024)),
                      Unreadable("more.json", b"x" * (2 * 1024 * 1024))])
    assert refused.value.messages == [BIG, BIG.replace("big.jsonl", "more.json").replace("1.5 MB", "2.0 MB")]
    assert refused.value.page_messages()[0] == "Nothing was imported: 2 files are too large."
    exactly = SimpleUploadedFile("exactly.jsonl", b"x" * (1024 * 1024))
    assert read_uploads([exactly]) == [("exactly.jsonl", b"x" * (1024 * 1024))]  # the limit itself is allowed


def test_the_project_page_refuses_a_file_over_the_limit_and_imports_nothing(project: Project, admin_user: Any) -> None:
    client = login(admin_user)
    small = SimpleUploadedFile("small.jsonl", LINE.encode())
    page = client.post("/projects/demo/import/", {"files": [small, big_file()]}, follow=True)
    assert f"Nothing was imported. {BIG}" in html.unescape(page.content.decode())
    assert not Batch.objects.exists()
    done = client.post("/projects/demo/import/", {"files": [SimpleUploadedFile("small.jsonl", LINE.encode())]},
                       follow=True)
    assert "Imported 1 batch" in done.content.decode()


def test_the_import_api_refuses_a_file_over_the_limit_naming_it(project: Project, admin_user: Any) -> None:
    answer = login(admin_user).post("/api/projects/demo/imports/", {"file": [big_file()], "format": "jsonl"})
    assert answer.status_code == 400
    assert answer.json() == {"file": [BIG]}
    assert not Batch.objects.exists()


def test_the_pairs_page_refuses_a_file_over_the_limit(admin_user: Any) -> None:
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=pairs, user=admin_user, role=Membership.Role.ADMIN)
    page = login(admin_user).post("/projects/pairs/pairs/import/", {"format": "raw", "files": [big_file()]},
                                  follow=True)
    assert f"Nothing was imported. {BIG}" in html.unescape(page.content.decode())
    assert not PairOriginal.objects.exists()


def test_the_judgement_import_api_refuses_a_file_over_the_limit(project: Project, admin_user: Any) -> None:
    answer = login(admin_user).post("/api/projects/demo/judgements/import/", {"file": big_file()})
    assert answer.status_code == 400
    assert answer.json() == {"file": [BIG]}
    assert not JudgeRun.objects.exists()
