"""A span is the same span whatever order its labels come in, and simultaneous saves store it once.

The race needs PostgreSQL (SQLite runs one write transaction at a time):

    FAITHLAB_DATA_DIR=$(mktemp -d) scripts/with-postgres.sh \
        .venv/bin/python -m pytest tests/annotate/test_duplicate_spans.py -q -p no:cacheprovider
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.db import connection

from annotate.models import Sample, SpanAnnotation
from annotate.services import spans
from tests.conftest import login, needs_postgres


def post_json(client: Any, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.mark.django_db
def test_the_same_labels_in_another_order_are_the_same_span(sample: Sample, alice: Any) -> None:
    client = login(alice)
    body = {"sample": sample.pk, "start": 0, "end": 7, "labels": ["Benign", "Unwanted.Intrinsic"]}
    first = post_json(client, "/api/spans/", body)
    second = post_json(client, "/api/spans/", {**body, "labels": ["Unwanted.Intrinsic", "Benign"]})
    # The parent implied by a child is the same span too.
    third = post_json(client, "/api/spans/", {**body, "labels": ["Unwanted", "Benign", "Unwanted.Intrinsic"]})
    assert (first.status_code, second.status_code, third.status_code) == (201, 200, 200)
    assert first.json()["id"] == second.json()["id"] == third.json()["id"]
    assert list(SpanAnnotation.objects.filter(sample=sample, annotator=alice).values_list("labels", flat=True)) == [
        first.json()["labels"]
    ]


@pytest.mark.django_db(transaction=True)
@needs_postgres
def test_simultaneous_saves_of_one_span_store_it_once(sample: Sample, alice: Any) -> None:
    """A double press or a retry racing the first request: the check for a twin and the insert are one step."""
    workers = 6
    errors: list[BaseException] = []

    def save(barrier: threading.Barrier, start: int) -> None:
        try:
            fresh = Sample.objects.select_related("project", "batch", "passage").get(pk=sample.pk)
            barrier.wait(timeout=60)
            spans.create_span(fresh, alice, round=1, start=start, end=start + 7, labels=["Questionable"])
        except BaseException as error:  # noqa: BLE001 - reported below, in the test's thread
            errors.append(error)
        finally:
            connection.close()  # this thread's own connection

    # A few rounds, so that the race is met even when the threads happen to start one after another.
    starts = [0, 1, 2]
    for start in starts:
        barrier = threading.Barrier(workers)
        threads = [threading.Thread(target=save, args=(barrier, start)) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    stored = SpanAnnotation.objects.filter(sample=sample, annotator=alice)
    assert sorted(stored.values_list("start", flat=True)) == starts
