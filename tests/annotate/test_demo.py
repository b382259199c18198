"""The demo loader (manage.py load_demo) and the demo data it reads."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from annotate.models import Assignment, Batch, Job, Membership, Passage, Project, Sample, SpanAnnotation
from annotate.services import rounds, stats
from annotate.services.demo import DEMO_FILE

GENERATORS = {
    "acme/summarizer-7b",
    "northwind/brief-13b",
    "contoso/gist-70b",
    "fabrikam/tldr-3b",
    "globex/digest-8x7b",
}
REQUIRED_FIELDS = {"passage_id", "source", "summary", "generator", "batch", "metadata"}


def demo_lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DEMO_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]


def has_non_bmp(text: str) -> bool:
    return any(ord(ch) > 0xFFFF for ch in text)


def load_demo(*args: str) -> str:
    return run("load_demo", *args)


def run(command: str, *args: str) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def snapshot() -> dict[str, Any]:
    return {
        "users": sorted(get_user_model().objects.values_list("username", flat=True)),
        "projects": sorted(Project.objects.values_list("slug", flat=True)),
        "batches": Batch.objects.count(),
        "samples": Sample.objects.count(),
        "assignments": Assignment.objects.count(),
        "jobs": Job.objects.count(),
    }


@pytest.mark.django_db
def test_load_demo_creates_accounts_project_batches_and_samples() -> None:
    load_demo()
    User = get_user_model()
    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff
    assert Client().login(username="alice", password="demo")
    assert Client().login(username="bob", password="demo")
    assert Client().login(username="carol", password="demo")
    assert Client().login(username="dave", password="demo")
    assert Client().login(username="admin", password="demo")

    project = Project.objects.get(slug="demo")
    assert project.name == "Demo: news summaries"
    roles = dict(project.memberships.values_list("user__username", "role"))
    assert roles == {
        "admin": Membership.Role.ADMIN,
        "alice": Membership.Role.ANNOTATOR,
        "bob": Membership.Role.ANNOTATOR,
        "carol": Membership.Role.ANNOTATOR,
        "dave": Membership.Role.ANNOTATOR,
        "grace": Membership.Role.AUDITOR,
    }
    assert sorted(project.batches.values_list("name", flat=True)) == ["demo-batch-1", "demo-batch-2"]
    assert Sample.objects.filter(project=project).count() == 30
    assert Passage.objects.filter(project=project).count() == 6
    for batch in project.batches.all():
        assert batch.samples.count() == 15
        assert set(batch.samples.values_list("generator", flat=True)) == GENERATORS


@pytest.mark.django_db
def test_alice_and_bob_have_the_first_batch_and_carol_and_dave_finished_the_second() -> None:
    load_demo()
    assignments = Assignment.objects.select_related("batch", "annotator")
    assert sorted((a.batch.name, a.annotator.username, a.round, a.status) for a in assignments) == [
        ("demo-batch-1", "alice", 1, Assignment.Status.ASSIGNED),
        ("demo-batch-1", "bob", 1, Assignment.Status.ASSIGNED),
        ("demo-batch-2", "carol", 1, Assignment.Status.SUBMITTED),
        ("demo-batch-2", "dave", 1, Assignment.Status.SUBMITTED),
    ]
    assert not SpanAnnotation.objects.filter(sample__batch__name="demo-batch-1").exists()
    assert SpanAnnotation.objects.filter(sample__batch__name="demo-batch-2").count() == 32
    ready, _ = rounds.reconciliation_ready(Batch.objects.get(name="demo-batch-2"))
    assert ready


# Worst labels of demo-batch-2, read by hand from fixtures/demo_round1.jsonl: passage, generator -> (carol, dave).
HAND_LABELS = {
    ("demo-vaccine", "contoso/gist-70b"): ("C", "C"),
    ("demo-vaccine", "acme/summarizer-7b"): ("U", "U"),
    ("demo-vaccine", "fabrikam/tldr-3b"): ("U", "U"),
    ("demo-vaccine", "northwind/brief-13b"): ("U", "U"),
    ("demo-vaccine", "globex/digest-8x7b"): ("B", "Q"),
    ("demo-flood", "acme/summarizer-7b"): ("Q", "C"),
    ("demo-flood", "northwind/brief-13b"): ("U", "U"),
    ("demo-flood", "globex/digest-8x7b"): ("C", "B"),
    ("demo-flood", "contoso/gist-70b"): ("U", "U"),
    ("demo-flood", "fabrikam/tldr-3b"): ("Q", "U"),
    ("demo-earnings", "globex/digest-8x7b"): ("U", "U"),
    ("demo-earnings", "northwind/brief-13b"): ("C", "C"),
    ("demo-earnings", "acme/summarizer-7b"): ("B", "B"),
    ("demo-earnings", "contoso/gist-70b"): ("U", "Q"),
    ("demo-earnings", "fabrikam/tldr-3b"): ("U", "U"),
}


@pytest.mark.django_db
def test_demo_round_one_gives_the_figures_worked_out_by_hand() -> None:
    load_demo()
    project = Project.objects.get(slug="demo")
    [batch] = stats.batch_labels(project)
    assert batch.name == "demo-batch-2" and batch.annotators == ["carol", "dave"]
    key_of = {s.pk: (s.passage.external_id, s.generator) for s in Sample.objects.select_related("passage")}
    found = {key_of[pk]: (batch.labels.get(("carol", pk), "C"), batch.labels.get(("dave", pk), "C")) for pk in batch.samples}
    assert found == HAND_LABELS

    # Alpha against the krippendorff package on the hand matrix, for each scheme and level.
    for scheme in ("C|U", "C|B|U", "C+B|Q|U", "C+B|Q+U", "C|B|Q|U"):
        groups = scheme.split("|")
        value = {c: i for i, group in enumerate(groups) for c in group.split("+")}
        matrix = np.array([[value.get(pair[person], np.nan) for pair in HAND_LABELS.values()] for person in (0, 1)])
        for level in ("nominal", "ordinal", "interval"):
            report = json.loads(run("agreement", "--project", "demo", "--scheme", scheme, "--level", level,
                                    "--aggregate", "pooled", "--json"))
            expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level,
                                          value_domain=list(range(len(groups))))
            assert report["alpha"] == pytest.approx(expected, abs=1e-12), (scheme, level)

    # Rates: the worst of the two labels, per generator (3 samples each).
    worst = {key: max(pair, key="CBQU".index) for key, pair in HAND_LABELS.items()}
    rates = json.loads(run("halu_rates", "--project", "demo", "--json"))
    for generator, row in rates.items():
        mine = [category for (_, g), category in worst.items() if g == generator]
        assert row == {
            "n": 3,
            "U": round(100 * mine.count("U") / 3, 2),
            "U+Q": round(100 * sum(c in "UQ" for c in mine) / 3, 2),
            "U+Q+B": round(100 * sum(c in "UQB" for c in mine) / 3, 2),
        }
    assert rates["acme/summarizer-7b"] == {"n": 3, "U": 33.33, "U+Q": 66.67, "U+Q+B": 100.0}


@pytest.mark.django_db
def test_load_demo_keeps_detector_outputs_and_queues_embedding_on_commit(
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        load_demo()
    # One job for the span project's embeddings, one for the pairs project's span vectors (the others refresh
    # PostgreSQL's planner statistics after the imports and the round draw: annotate.services.planner).
    queued = [callback for callback in callbacks if "analyze_after_commit" not in callback.__qualname__]
    assert len(queued) == 2
    jobs = {job.kind: job for job in Job.objects.all()}
    assert set(jobs) == {Job.Kind.EMBED, Job.Kind.PAIR_VECTORS}
    assert all(job.status == Job.Status.QUEUED for job in jobs.values())
    sample = Sample.objects.filter(generator="fabrikam/tldr-3b", passage__external_id="demo-vaccine").get()
    assert sample.metadata == {"summarizer": "fabrikam/tldr-3b", "hhem-2.1": 0.09, "gpt_4o": 0}


@pytest.mark.django_db
def test_if_empty_on_a_non_empty_database_changes_nothing(alice: Any) -> None:
    before = snapshot()
    assert "database not empty; demo data not loaded" in load_demo("--if-empty")
    assert snapshot() == before
    assert not Project.objects.filter(slug="demo").exists()


@pytest.mark.django_db
def test_if_empty_on_a_database_with_only_a_project_changes_nothing() -> None:
    Project.objects.create(name="Other", slug="other")
    before = snapshot()
    assert "database not empty; demo data not loaded" in load_demo("--if-empty")
    assert snapshot() == before


@pytest.mark.django_db
def test_if_empty_names_the_demo_accounts_only_when_they_are_there(alice: Any) -> None:
    """`make run` used to print "demo accounts: admin, alice, ..." even on a database the demo was never loaded into."""
    assert "demo accounts" not in load_demo("--if-empty")  # alice alone is not the demo
    get_user_model().objects.all().delete()
    load_demo()
    assert load_demo("--if-empty").splitlines() == [
        "database not empty; demo data not loaded",
        "demo accounts: admin, alice, bob, carol, dave, erin, frank, grace; password 'demo'",
    ]


def test_make_run_leaves_naming_the_demo_accounts_to_load_demo() -> None:
    makefile = (Path(settings.BASE_DIR) / "Makefile").read_text()
    assert "manage.py load_demo --if-empty" in makefile
    assert "demo accounts" not in makefile and "grace" not in makefile


@pytest.mark.django_db
def test_load_demo_without_if_empty_refuses_a_non_empty_database(alice: Any) -> None:
    before = snapshot()
    with pytest.raises(CommandError, match="database not empty"):
        load_demo()
    assert snapshot() == before


@pytest.mark.django_db
def test_load_demo_twice_refuses_the_second_time_and_if_empty_skips_it() -> None:
    load_demo()
    before = snapshot()
    with pytest.raises(CommandError):
        load_demo()
    assert "not loaded" in load_demo("--if-empty")
    assert snapshot() == before


def test_every_demo_line_has_the_required_fields() -> None:
    lines = demo_lines()
    assert len(lines) == 30
    for number, line in enumerate(lines, start=1):
        assert REQUIRED_FIELDS <= set(line), f"line {number} misses {REQUIRED_FIELDS - set(line)}"
        for name in ("passage_id", "source", "summary", "generator", "batch"):
            assert isinstance(line[name], str) and line[name].strip(), f"line {number}: {name}"
        assert line["generator"] in GENERATORS
        assert line["batch"] in {"demo-batch-1", "demo-batch-2"}
        metadata = line["metadata"]
        assert metadata["summarizer"] == line["generator"], f"line {number}"
        assert isinstance(metadata["hhem-2.1"], float) and 0 <= metadata["hhem-2.1"] <= 1, f"line {number}"
        assert metadata["gpt_4o"] in (0, 1) and not isinstance(metadata["gpt_4o"], bool), f"line {number}"


def test_demo_file_has_six_passages_of_five_generators_in_two_batches() -> None:
    lines = demo_lines()
    passages: dict[str, set[str]] = {}
    batch_of: dict[str, set[str]] = {}
    for line in lines:
        passages.setdefault(line["passage_id"], set()).add(line["generator"])
        batch_of.setdefault(line["passage_id"], set()).add(line["batch"])
    assert len(passages) == 6
    assert all(generators == GENERATORS for generators in passages.values())
    order = list(dict.fromkeys(line["passage_id"] for line in lines))
    assert [batch_of[p] for p in order] == [{"demo-batch-1"}] * 3 + [{"demo-batch-2"}] * 3


def test_exactly_one_demo_summary_holds_a_character_outside_the_bmp() -> None:
    lines = demo_lines()
    assert sum(has_non_bmp(line["summary"]) for line in lines) == 1
    assert not any(has_non_bmp(line["source"]) for line in lines)


def test_a_demo_source_holds_markup_and_an_entity_to_show_escaping() -> None:
    sources = {line["source"] for line in demo_lines()}
    assert [s for s in sources if "<b>" in s and "&amp;" in s]


def test_demo_round_one_is_frozen_for_carol_and_bob_works_blind(db: None) -> None:
    """The issue's walk: carol submitted round 1 of demo-batch-2 and cannot change it; bob sees no detector."""
    load_demo()
    users = get_user_model().objects
    carol, bob = users.get(username="carol"), users.get(username="bob")
    sample = Sample.objects.filter(batch__name="demo-batch-2").order_by("position").first()
    span = SpanAnnotation.objects.filter(sample__batch__name="demo-batch-2", annotator=carol, round=1).first()
    client = Client()
    client.force_login(carol)
    created = client.post("/api/spans/", {"sample": sample.pk, "start": 0, "end": 3, "labels": ["Benign"]},
                          content_type="application/json")
    changed = client.patch(f"/api/spans/{span.pk}/", {"version": span.version, "note": "late"},
                           content_type="application/json")
    assert created.status_code == changed.status_code == 409
    assert "frozen" in created.json()["detail"] and created.json()["frozen"] is True
    page = client.get(f"/projects/demo/samples/{sample.pk}/?round=1").content.decode()
    assert "You submitted round 1 of demo-batch-2" in page
    assert SpanAnnotation.objects.get(pk=span.pk).note == span.note

    bob_client = Client()
    bob_client.force_login(bob)
    mine = Sample.objects.filter(batch__name="demo-batch-1").first()
    assert mine.metadata, "the demo ships detector outputs"
    detail = bob_client.get(f"/api/samples/{mine.pk}/").json()
    assert detail["metadata"] == {} and detail["generator"] is None  # hidden, not empty
