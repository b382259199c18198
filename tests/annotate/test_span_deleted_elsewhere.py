"""A span deleted elsewhere (another tab) and then changed or deleted again: 404 "No such span", whether the delete
came before the request or while it was on its way (before, the second case answered 409 with ``current`` null)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Sample, SpanAnnotation
from annotate.services import spans
from tests.conftest import login

pytestmark = pytest.mark.django_db


@pytest.fixture
def span(sample: Sample, alice: Any) -> SpanAnnotation:
    return spans.create_span(sample, alice, round=1, start=0, end=9, labels=["Benign"])


def patch(client: Any, span: SpanAnnotation) -> Any:
    return client.patch(f"/api/spans/{span.pk}/", json.dumps({"version": span.version, "note": "typed in tab A"}),
                        content_type="application/json")


def delete(client: Any, span: SpanAnnotation) -> Any:
    return client.delete(f"/api/spans/{span.pk}/?version={span.version}")


@pytest.mark.parametrize("send", [patch, delete])
def test_a_span_deleted_in_another_tab_answers_404(span: SpanAnnotation, alice: Any, send: Any) -> None:
    client = login(alice)
    assert delete(client, span).status_code == 204  # tab B
    response = send(client, span)  # tab A, which still shows it
    assert response.status_code == 404 and response.json() == {"detail": "No such span"}


@pytest.mark.parametrize("send", [patch, delete])
def test_a_span_deleted_while_the_request_is_on_its_way_answers_the_same_404(
    span: SpanAnnotation, alice: Any, send: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the request's lookup, gone when it writes: the same answer as a moment later."""
    for name in ("update_span", "delete_span"):
        original = getattr(spans, name)

        def gone_first(found: SpanAnnotation, *args: Any, original: Any = original, **kwargs: Any) -> Any:
            SpanAnnotation.objects.filter(pk=found.pk).delete()
            return original(found, *args, **kwargs)

        monkeypatch.setattr(spans, name, gone_first)
    response = send(login(alice), span)
    assert response.status_code == 404 and response.json() == {"detail": "No such span"}
    assert not SpanAnnotation.objects.exists()


def test_a_stale_version_of_a_span_that_exists_still_answers_409_with_it(span: SpanAnnotation, alice: Any) -> None:
    client = login(alice)
    assert patch(client, span).status_code == 200
    response = patch(client, span)  # the version it sent is stale now
    assert response.status_code == 409 and response.json()["current"]["version"] == span.version + 1
