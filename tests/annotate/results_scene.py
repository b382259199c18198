"""The scene shared by the agreement, disputes and results page tests, and helpers to read those pages.

The scenario, on conftest's project "demo" (admin adam, annotators alice and bob)
plus an auditor (audrey) and a third annotator (dora):

- batch-1 (passage p1, samples s0 s1 s2 by model-a, model-b, model-c), submitted by
  alice, bob and dora. Worst labels: s0 U U Q; s1 B Q C; s2 C C U.
- batch-2 (passage p2, samples t0..t3 by model-a, model-b, model-c, model-a), submitted
  by alice and bob. Worst labels: t0 U U; t1 C B; t2 Q Q; t3 C C.
- Two detectors in every sample's metadata, hhem (probability) and gpt (0/1 verdict);
  they disagree on s0, s2, t0 and t3: two challenging samples in each passage group.

The test modules use the fixtures through tests/annotate/conftest.py; ``empty_cache`` and
``quick_passwords`` are not autouse here (conftest would make them so for every module), so each
module lists them in its ``usefixtures`` mark.
"""

from __future__ import annotations

import io
import json
from html.parser import HTMLParser
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command

from annotate.models import Assignment, Batch, Membership, Passage, Project, Sample, SpanAnnotation
from tests.conftest import make_user

HTMX = {"HTTP_HX_REQUEST": "true"}
DEFAULTS = ("C+B|Q+U", "C|U", "C+B|Q|U", "C|B|U", "C|B|Q|U")  # DESIGN.md's five schemes, as the page orders them


class Tags(HTMLParser):
    """Every start tag of a page with its attributes, to find the cells by their data-* attributes."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {name: value or "" for name, value in attrs}))

    def find(self, tag: str | None = None, **wanted: str) -> list[dict[str, str]]:
        wanted = {name.replace("_", "-"): value for name, value in wanted.items()}
        return [
            attrs
            for name, attrs in self.tags
            if (tag is None or name == tag) and all(attrs.get(key) == value for key, value in wanted.items())
        ]

    def one(self, tag: str | None = None, **wanted: str) -> dict[str, str]:
        found = self.find(tag, **wanted)
        assert len(found) == 1, f"expected one {tag} with {wanted}, found {len(found)}"
        return found[0]


def tags(response: Any) -> Tags:
    return Tags(response.content.decode())


def alpha_of(attrs: dict[str, str]) -> float | None:
    return float(attrs["data-alpha"]) if attrs["data-alpha"] else None


def same(value: float | None, expected: float | None) -> bool:
    return value is None and expected is None or (value is not None and value == pytest.approx(expected))


@pytest.fixture
def empty_cache() -> None:
    # The figures cache is keyed by project id and data version; ids repeat between tests.
    cache.clear()


@pytest.fixture
def quick_passwords(settings: Any) -> None:
    # Fixtures named in usefixtures run before the test's own, so conftest's users are hashed quickly too
    # (PBKDF2 costs ~0.3 s a user).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def span(sample: Sample, user: Any, labels: list[str], start: int = 0, end: int = 10, round: int = 1) -> None:
    SpanAnnotation.objects.create(
        sample=sample, annotator=user, round=round, start=start, end=end, text=sample.summary[start:end], labels=labels
    )


@pytest.fixture
def scene(project: Project, batch: Batch, admin_user: Any, alice: Any, bob: Any) -> dict[str, Any]:
    audrey, dora = make_user("audrey"), make_user("dora")
    Membership.objects.create(project=project, user=audrey, role=Membership.Role.AUDITOR)
    Membership.objects.create(project=project, user=dora, role=Membership.Role.ANNOTATOR)
    Assignment.objects.filter(batch=batch).update(status=Assignment.Status.SUBMITTED)
    Assignment.objects.create(batch=batch, annotator=dora, status=Assignment.Status.SUBMITTED)
    s0, s1, s2 = batch.samples.order_by("position")
    for sample, hhem, gpt in ((s0, 0.2, 1), (s1, 0.8, 1), (s2, 0.9, 0)):
        sample.metadata = {"summarizer": sample.generator, "hhem": hhem, "gpt": gpt}
        sample.save()
    span(s0, alice, ["Unwanted", "Unwanted.Intrinsic"])
    span(s0, bob, ["Unwanted.Extrinsic"])
    span(s0, dora, ["Questionable"])
    span(s1, alice, ["Benign"], 5, 15)
    span(s1, bob, ["Questionable"], 8, 20)
    span(s2, dora, ["Unwanted"], 0, 5)

    second = Batch.objects.create(project=project, name="batch-2", position=1)
    passage = Passage.objects.create(project=project, external_id="p2", text="Another source text.")
    generators = ["model-a", "model-b", "model-c", "model-a"]
    detectors = [(0.7, 0), (0.3, 0), (0.6, 1), (0.1, 1)]
    t = [
        Sample.objects.create(
            project=project, passage=passage, batch=second, position=position, external_id=f"t{position}",
            summary=f"Second batch summary number {position} with a few words.", generator=generator,
            metadata={"summarizer": generator, "hhem": hhem, "gpt": gpt},
        )
        for position, (generator, (hhem, gpt)) in enumerate(zip(generators, detectors, strict=True))
    ]
    for user in (alice, bob):
        Assignment.objects.create(batch=second, annotator=user, status=Assignment.Status.SUBMITTED)
    span(t[0], alice, ["Unwanted"])
    span(t[0], bob, ["Unwanted"], 0, 6)
    span(t[1], bob, ["Benign"])
    span(t[2], alice, ["Questionable"])
    span(t[2], bob, ["Questionable"])
    return {"project": project, "batch1": batch, "batch2": second, "s": [s0, s1, s2], "t": t,
            "admin": admin_user, "alice": alice, "bob": bob, "audrey": audrey, "dora": dora}


def run_json(command: str, *args: str) -> Any:
    out = io.StringIO()
    call_command(command, "--project", "demo", *args, "--json", stdout=out)
    return json.loads(out.getvalue())
