"""The annotation page carries the annotator's spans and done state in its page data: no browser or proxy may keep
a copy, or Back shows the sample as it was before its spans and done mark were saved."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from django.utils.cache import get_max_age

from annotate.services import spans
from tests.conftest import login

pytestmark = pytest.mark.django_db


def test_the_annotation_page_is_never_stored_by_a_cache(sample: Any, alice: Any) -> None:
    spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Benign"])
    response = login(alice).get(reverse("sample", args=[sample.project.slug, sample.pk]))

    assert response.status_code == 200
    directives = {part.strip() for part in response["Cache-Control"].split(",")}
    assert {"no-store", "no-cache", "must-revalidate", "private"} <= directives
    assert get_max_age(response) == 0
    assert '"start": 0' in response.content.decode()  # the page data (the span) is in this uncached answer


def test_a_round_that_is_no_number_is_not_cached_either(sample: Any, alice: Any) -> None:
    response = login(alice).get(reverse("sample", args=[sample.project.slug, sample.pk]) + "?round=two")

    assert response.status_code == 400
    assert "no-store" in response["Cache-Control"]
