"""Shared fixtures: an admin, two annotators and an outsider in one project (alice/bob/charlie)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import OperationalError as DjangoOperationalError
from django.db import connection
from django.test import Client, TransactionTestCase

from annotate.models import Assignment, Batch, Membership, Passage, Project, Sample
from annotate.services import embedding

PASSWORD = "pw-for-tests"


def _flush_waiting_for_the_live_server(flush: Callable[[TransactionTestCase], None]) -> Callable[..., None]:
    """A transactional test's flush, tried again when PostgreSQL picks it as a deadlock's victim.

    A browser test ends while the page may still have a request in the live server (an autosave, a retry): closing
    the browser does not stop the server's thread, which can hold a row lock (select_for_update) while the flush's
    TRUNCATE holds the tables. PostgreSQL then aborts one of them; when it is the flush, the test errors at teardown
    and the next one finds last test's users. SQLite's shared in-memory database refuses the flush at once instead
    ("database table is locked"), e.g. while the span page's time of a visit, sent as the browser closes the page,
    is being written. The request ends within moments, so the flush is tried again.
    """

    def flush_again_after_a_deadlock(self: TransactionTestCase) -> None:
        for attempt in range(5):
            try:
                return flush(self)
            except CommandError as exc:
                cause = str(exc.__cause__)
                if not isinstance(exc.__cause__, DjangoOperationalError) or (
                    "deadlock" not in cause and "locked" not in cause
                ):
                    raise
                if attempt == 4:
                    raise
                time.sleep(0.5)

    return flush_again_after_a_deadlock


TransactionTestCase._fixture_teardown = _flush_waiting_for_the_live_server(TransactionTestCase._fixture_teardown)

# Tests of what row locks do when requests race: SQLite runs one write transaction at a time, so they show nothing
# there. `make test` runs the suite on PostgreSQL (scripts/with-postgres.sh), where they run.
needs_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="needs PostgreSQL: SQLite serializes write transactions (run under scripts/with-postgres.sh)",
)

SOURCE = (
    "The Harbour Bridge in Lintown reopened on Tuesday after eight weeks of repairs. "
    "Engineers replaced 140 steel cables and resurfaced the eastern lane. "
    "The work cost 12.4 million euros, paid by the regional council. "
    "Mayor Ines Varga said traffic would be limited to 30 km/h until March."
)
SUMMARIES = [
    ("model-a", "Lintown's Harbour Bridge reopened on Tuesday after nine weeks of repairs. "
                "The 12.4 million euro project was funded by the national government."),
    ("model-b", "After eight weeks of work, the Harbour Bridge reopened. The repairs cost 12.4 million euros."),
    ("model-c", "The bridge 🌉 reopened; the mayor said a 30 km/h limit applies until March."),
]


@pytest.fixture(autouse=True)
def fast_password_hashing(settings: Any) -> None:
    """Test users' passwords need no protection: MD5 instead of Argon2 saves ~0.2 s a user on this CPU."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# The API-key variables the suite's judges name, allowed for any host (FAITHLAB_JUDGE_KEYS, parsed): the default
# allows OPENAI_API_KEY for api.openai.com alone. Tests of the allow-list itself set their own.
SUITE_JUDGE_KEYS = tuple((name, "", None) for name in (
    "OPENAI_API_KEY", "FAITHLAB_JUDGE_KEY_*", "FAITHLAB_TEST_*", "FAITHLAB_NO_SUCH_KEY", "FAITHLAB_UNSET_KEY",
    "SYNTHETIC_TEST_KEY", "VLLM_KEY", "openai_key", "_KEY2",
))


@pytest.fixture(autouse=True)
def judge_key_variables(settings: Any) -> None:
    settings.FAITHLAB_JUDGE_KEYS = SUITE_JUDGE_KEYS


@pytest.fixture(autouse=True)
def own_data_folder(request: pytest.FixtureRequest, settings: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each test's job lock files and export files in a folder of its own. Job ids start again in every test
    database, so two test runs sharing var/ would find each other's jobs "executed by another process"
    (annotate.services.jobs.locks) and skip them. Browser and worker tests keep the folder their workers share."""
    if request.node.get_closest_marker("e2e") is None:
        settings.DATA_DIR = tmp_path_factory.mktemp("data")


def make_user(username: str, **extra: Any) -> Any:
    return get_user_model().objects.create_user(username=username, password=PASSWORD, **extra)


@pytest.fixture
def admin_user(db: None) -> Any:
    return make_user("adam", is_staff=True)


@pytest.fixture
def alice(db: None) -> Any:
    return make_user("alice")


@pytest.fixture
def bob(db: None) -> Any:
    return make_user("bob")


@pytest.fixture
def charlie(db: None) -> Any:
    """An outsider: logged in, but no role in the project."""
    return make_user("charlie")


@pytest.fixture
def project(admin_user: Any, alice: Any, bob: Any) -> Project:
    project = Project.objects.create(name="Demo", slug="demo")
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    Membership.objects.create(project=project, user=alice, role=Membership.Role.ANNOTATOR)
    Membership.objects.create(project=project, user=bob, role=Membership.Role.ANNOTATOR)
    return project


@pytest.fixture
def batch(project: Project, alice: Any, bob: Any) -> Batch:
    batch = Batch.objects.create(project=project, name="batch-1")
    passage = Passage.objects.create(project=project, external_id="p1", text=SOURCE)
    for position, (generator, summary) in enumerate(SUMMARIES):
        Sample.objects.create(
            project=project, passage=passage, batch=batch, position=position,
            external_id=str(position), summary=summary, generator=generator,
        )
    Assignment.objects.create(batch=batch, annotator=alice)
    Assignment.objects.create(batch=batch, annotator=bob)
    return batch


@pytest.fixture
def sample(batch: Batch) -> Sample:
    return batch.samples.order_by("position").first()


@pytest.fixture
def embedded(batch: Batch) -> Batch:
    """The batch with its sentences split and embedded by the real packaged model."""
    job = embedding.queue_embedding(batch.project)
    embedding.run_embedding_job(job.pk)
    return batch


def login(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def client_for() -> Callable[[Any], Client]:
    return login


def faithbench_file(samples: list[dict[str, Any]]) -> bytes:
    return json.dumps({"samples": samples}).encode("utf-8")
