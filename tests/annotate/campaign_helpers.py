"""Helpers of the campaign API tests (members, imports, rounds): asking the page and the API the same thing on the
same data, each in a transaction rolled back afterwards, and the page's messages as text."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from django.db import transaction
from django.test import Client

from annotate.models import Assignment, Batch, Job, Membership, RoundReopening, Sample, SpanAnnotation

T = TypeVar("T")
JSON = "application/json"


class _RolledBack(Exception):
    """Raised to leave a transaction.atomic() block without keeping its writes."""


def rolled_back(act: Callable[[], T], look: Callable[[], Any]) -> tuple[T, Any]:
    """``act``'s answer and what ``look`` saw right after it, with every write undone: the page and the API then
    meet the same data, and their results can be compared."""
    seen: dict[str, Any] = {}
    try:
        with transaction.atomic():
            seen["answer"] = act()
            seen["state"] = look()
            raise _RolledBack
    except _RolledBack:
        pass
    return seen["answer"], seen["state"]


def campaign_state() -> dict[str, Any]:
    """What a campaign write can change, by natural keys (ids differ between two runs)."""
    return {
        "members": sorted(Membership.objects.values_list("project__slug", "user__username", "role")),
        "batches": sorted(Batch.objects.values_list("project__slug", "name", "position", "reveal_names")),
        "samples": sorted(Sample.objects.values_list("batch__name", "position", "external_id", "generator",
                                                     "summary", "passage__external_id")),
        "spans": sorted(
            (batch, username, round, start, end, json.dumps(labels), note)
            for batch, username, round, start, end, labels, note in SpanAnnotation.objects.values_list(
                "sample__batch__name", "annotator__username", "round", "start", "end", "labels", "note")
        ),
        "assignments": sorted(Assignment.objects.values_list("batch__name", "annotator__username", "round", "status",
                                                             "reopened")),
        "reopenings": sorted(RoundReopening.objects.values_list("assignment__batch__name",
                                                                "assignment__annotator__username",
                                                                "assignment__round", "reopened_by__username",
                                                                "reason", "closed_at")),
        "jobs": sorted(Job.objects.values_list("project__slug", "kind", "status", "total")),
    }


def page_text(response: Any) -> str:
    """A page's HTML with its entities decoded and its white space collapsed, to find a message in it."""
    return re.sub(r"\s+", " ", html.unescape(response.content.decode()))


def api_json(client: Client, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
    """A JSON request to the API; ``body`` None sends none."""
    send = getattr(client, method)
    if body is None:
        return send(url)
    return send(url, json.dumps(body), content_type=JSON)
