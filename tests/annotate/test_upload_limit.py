"""Imports over FAITHLAB_MAX_UPLOAD_MB are refused by their size, before their files are received, on every import.

An upload (the files of one import together) whose body declares more than the
limit is stopped at its first file, its body unread but for the fields before
it; one within its declared length is stopped as soon as the file bytes pass
the limit, its file dropped with its temporary file. A file over the limit
that reaches read_uploads anyway is refused before any file is read. The
message gives the size (the upload's, or the file's), the limit and the
setting; nothing is imported.
"""

from __future__ import annotations

import html
import io
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client, RequestFactory
from django.urls import reverse

from annotate.models import Batch, Membership, PairOriginal, Project
from annotate.uploads import FORM_ALLOWANCE, UploadTooLarge, read_uploads, stopped_upload
from judging.models import JudgeRun, SyntheticSet
from tests.conftest import login

pytestmark = pytest.mark.django_db

LINE = json.dumps({"passage_id": "p1", "source": "One. Two.", "summary": "One.", "generator": "g"})
BIG = "big.jsonl: the file is 1.5 MB, over the 1 MB limit on imported files; split it into smaller files, or raise " \
      "the limit with the setting FAITHLAB_MAX_UPLOAD_MB."
ADVICE = "over the 1 MB limit on imported files (the files of one import together); split it into smaller files and " \
         "import them in turn, or raise the limit with the setting FAITHLAB_MAX_UPLOAD_MB."
UPLOAD = f"The upload is 1.5 MB, {ADVICE}"  # a body of 1.5 MB and a few hundred bytes


def passed(declared: int) -> str:
    """The refusal of a file that passed the limit within a body of ``declared`` bytes."""
    return f"big.jsonl: with this file the upload ({declared / (1024 * 1024):.1f} MB) is {ADVICE}"


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
    assert f"Nothing was imported. {UPLOAD}" in html.unescape(page.content.decode())
    assert not Batch.objects.exists()
    done = client.post("/projects/demo/import/", {"files": [SimpleUploadedFile("small.jsonl", LINE.encode())]},
                       follow=True)
    assert "Imported 1 batch" in done.content.decode()


def test_the_import_api_refuses_a_file_over_the_limit_naming_it(project: Project, admin_user: Any) -> None:
    # The size is the answer, before any other field is checked (past 1 GB the fields after the file are not read).
    answer = login(admin_user).post("/api/projects/demo/imports/", {"file": [big_file()], "format": "jsonl"})
    assert answer.status_code == 400
    assert answer.json() == {"file": [UPLOAD]}
    assert not Batch.objects.exists()


def test_the_pairs_page_refuses_a_file_over_the_limit(admin_user: Any) -> None:
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=pairs, user=admin_user, role=Membership.Role.ADMIN)
    page = login(admin_user).post("/projects/pairs/pairs/import/", {"format": "raw", "files": [big_file()]},
                                  follow=True)
    assert f"Nothing was imported. {UPLOAD}" in html.unescape(page.content.decode())
    assert not PairOriginal.objects.exists()


def test_the_judgement_import_api_refuses_a_file_over_the_limit(project: Project, admin_user: Any) -> None:
    answer = login(admin_user).post("/api/projects/demo/judgements/import/", {"file": big_file()})
    assert answer.status_code == 400
    assert answer.json() == {"file": [UPLOAD]}
    assert not JudgeRun.objects.exists()


def test_the_rewrites_import_page_says_the_upload_is_too_large_not_missing(project: Project, admin_user: Any) -> None:
    # In the page's order (the file last, as the form lists it): every other field arrives before the file.
    response = login(admin_user).post(reverse("judging-synthetic-import", args=[project.slug]),
                                      {"name": "imp", "seed": "7", "file": big_file()})
    assert response.status_code == 400
    form = response.context["import_form"]
    assert form.errors == {"file": [UPLOAD]}  # not "This field is required.", and nothing about the other fields
    assert form["seed"].value() == "7" and form["name"].value() == "imp"  # kept for the next try
    assert list(form.fields)[-1] == "file"
    assert UPLOAD in html.unescape(response.content.decode())
    assert not SyntheticSet.objects.exists()


# --- refused before the body is read, or as soon as the files pass the limit ----------------------------------------

BOUNDARY = "faithlab-test-boundary"


class EndlessBody(io.RawIOBase):
    """A WSGI input: ``head``, then file bytes without end; reading more than ``allowed`` bytes fails the test."""

    def __init__(self, head: bytes, allowed: int) -> None:
        self.head, self.allowed, self.given = head, allowed, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        wanted = len(buffer)
        assert self.given + wanted <= self.allowed, f"the body was read past {self.allowed} bytes"
        head = self.head[self.given : self.given + wanted]
        chunk = head + b"x" * (wanted - len(head))
        buffer[:wanted] = chunk
        self.given += wanted
        return wanted


def multipart_head(fields: dict[str, str], file_field: str) -> bytes:
    """The body's start: the fields, then the headers of a file ``big.jsonl`` in ``file_field``."""
    parts = [f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
             for name, value in fields.items()]
    parts.append(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{file_field}"; filename="big.jsonl"\r\n'
                 "Content-Type: application/octet-stream\r\n\r\n")
    return "".join(parts).encode()


def post_endless(client: Client, path: str, head: bytes, declared: int, allowed: int = 256 * 1024
                 ) -> tuple[Any, EndlessBody]:
    body = EndlessBody(head, allowed=allowed)
    response = client.request(**{
        "REQUEST_METHOD": "POST", "PATH_INFO": path, "CONTENT_TYPE": f"multipart/form-data; boundary={BOUNDARY}",
        "CONTENT_LENGTH": str(declared), "wsgi.input": io.BufferedReader(body),
    })
    return response, body


TEN_GB = 10 * 1024**3
DECLARED = f"The upload is 10240.0 MB, {ADVICE}"


def test_a_body_declaring_ten_gigabytes_is_refused_on_the_page_reading_only_the_fields_before_its_file(
    project: Project, admin_user: Any
) -> None:
    client = Client(enforce_csrf_checks=True)  # the CSRF token, sent before the file, must still be read
    client.force_login(admin_user)
    client.get("/projects/demo/")
    token = client.cookies["csrftoken"].value
    response, body = post_endless(client, "/projects/demo/import/",
                                  multipart_head({"csrfmiddlewaretoken": token}, "files"), TEN_GB)
    assert response.status_code == 302, response.content[:300]
    assert body.given <= 128 * 1024  # the parser's first chunks, not the 10 GB
    page = html.unescape(client.get(response["Location"]).content.decode())
    assert f"Nothing was imported. {DECLARED}" in page
    assert not Batch.objects.exists()


def test_a_body_declaring_ten_gigabytes_is_refused_by_the_api_without_reading_it(project: Project,
                                                                                  admin_user: Any) -> None:
    response, body = post_endless(login(admin_user), "/api/projects/demo/imports/", multipart_head({}, "file"),
                                  TEN_GB)
    assert (response.status_code, response.json()) == (400, {"file": [DECLARED]})
    assert body.given <= 128 * 1024


def test_a_body_a_few_times_the_limit_is_read_to_its_end_so_the_browser_gets_the_refusal_page(
    project: Project, admin_user: Any
) -> None:
    """Up to DRAIN_FACTOR times the limit (at least DRAIN_FLOOR_BYTES), the rest of a refused body is read and thrown away: a server that stopped
    reading would close the connection while the browser still sends, and the browser would show "connection reset"
    (gunicorn did, for a 20 MB file over a 1 MB limit) instead of the message."""
    declared = 3 * 1024 * 1024
    client = login(admin_user)
    response, body = post_endless(client, "/projects/demo/import/", multipart_head({}, "files"), declared,
                                  allowed=declared)
    assert response.status_code == 302
    assert body.given == declared  # read to its end, kept nowhere
    page = html.unescape(client.get(response["Location"]).content.decode())
    assert "Nothing was imported. The upload is 3.0 MB, over the 1 MB limit" in page
    assert not Batch.objects.exists()


def test_the_rest_of_a_refused_body_is_read_in_chunks_not_held_in_memory(project: Project, admin_user: Any) -> None:
    """The body read to its end is read a chunk at a time: reading it by lines (Django's way of skipping a whole
    body) held a file without newlines in memory at once, 2.8 GB for a 1.2 GB upload in a review."""
    declared = 8 * 1024 * 1024  # 'x' without a newline, after the file's headers
    client = login(admin_user)
    warm = 2 * 1024 * 1024  # the same request once first, so that what it imports is not counted
    assert post_endless(client, "/api/projects/demo/imports/", multipart_head({}, "file"), warm, allowed=warm
                        )[0].status_code == 400
    tracemalloc.start()
    try:
        response, body = post_endless(client, "/api/projects/demo/imports/", multipart_head({}, "file"), declared,
                                      allowed=declared)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert response.status_code == 400 and body.given == declared
    assert peak < 4 * 1024 * 1024, f"{peak / 1024 / 1024:.1f} MB held while reading an 8 MB body"


def test_a_file_passing_the_limit_within_the_declared_allowance_is_stopped_and_its_temporary_file_dropped(
    settings: Any, tmp_path: Path
) -> None:
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0  # every file to a temporary file, as a large one goes
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    over = SimpleUploadedFile("big.jsonl", b"x" * (1024 * 1024 + FORM_ALLOWANCE // 2))
    request = RequestFactory().post("/projects/demo/import/", {"files": [over]})
    assert int(request.META["CONTENT_LENGTH"]) <= 1024 * 1024 + FORM_ALLOWANCE  # not refused by its length
    assert request.FILES.getlist("files") == []  # the parse stops at the limit
    stopped = stopped_upload(request)
    assert stopped is not None and stopped.messages == [passed(int(request.META["CONTENT_LENGTH"]))]
    assert list(tmp_path.iterdir()) == []  # no temporary file kept, though the request is still open
    with pytest.raises(UploadTooLarge) as refused:
        read_uploads(request.FILES.getlist("files"), request=request)
    assert refused.value.page_messages() == [f"Nothing was imported. {stopped.messages[0]}"]


def test_a_file_of_exactly_the_limit_is_received_whole(settings: Any, tmp_path: Path) -> None:
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path)
    exactly = SimpleUploadedFile("exactly.jsonl", b"x" * (1024 * 1024))
    request = RequestFactory().post("/projects/demo/import/", {"files": [exactly], "format": "raw"})
    assert [upload.size for upload in request.FILES.getlist("files")] == [1024 * 1024]
    assert stopped_upload(request) is None and request.POST["format"] == "raw"
    assert read_uploads(request.FILES.getlist("files"), request=request) == [("exactly.jsonl", b"x" * (1024 * 1024))]
