"""Writes to an annotator's round racing the changes that end it: submitting it (D on the last sample), opening
round 2, unassigning or removing the annotator, deleting a label.

Each test holds one writer right after its check ("is the round still open?", "is the label still there?"), lets
the other change start, then lets the writer go on. The checks are made under the locks the changes also take
(annotate.services.freeze's lock order), so the change waits for the writer, or the writer for the change, and
nothing is stored that the finished change forbids. Before, the checks ran outside any lock: a span saved after
its round was submitted, round 1 drifting from its copy in round 2, a done mark left by someone removed (or a 500).

The races need PostgreSQL's row locks (``make test`` runs them; by hand):

    FAITHLAB_DATA_DIR=$(mktemp -d) scripts/with-postgres.sh \\
        .venv/bin/python -m pytest tests/annotate/test_round_write_races.py -q -p no:cacheprovider

On SQLite, whose write transactions run one at a time, the last test races a span save with D in a process of its
own on a database file (the test database is in memory, shared by threads that cannot wait for each other there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client

from annotate.models import Assignment, Batch, Membership, Project, Sample, SampleReview, SpanAnnotation
from annotate.services import freeze, labelsets, members, rounds, spans
from annotate.services.members import roster
from annotate.taxonomy import DEFAULT_TAXONOMY, label_categories
from tests.conftest import needs_postgres

ROOT = Path(__file__).resolve().parents[2]
WRITER = "writer"  # the name of the thread that is held after its check
# How long the other change gets to finish while the writer is held, where the database cannot say that it waits
# for a lock (SQLite): plenty for a change that waits for nothing.
OTHER_CHANGE_SECONDS = 1.5


class HoldAfter:
    """Holds the WRITER thread right after ``owner.name`` returns, until ``release``: it stands in for a request
    that is slower than the one racing it."""

    def __init__(self, owner: Any, name: str, setattr_: Callable[[Any, str, Any], None]) -> None:
        self.reached = threading.Event()
        self.released = threading.Event()
        original = getattr(owner, name)

        def held(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            if threading.current_thread().name == WRITER and not self.reached.is_set():
                self.reached.set()
                self.released.wait(60)
            return result

        setattr_(owner, name, held)

    def release(self) -> None:
        self.released.set()


class Attempt(threading.Thread):
    """One request on its own connection: its result, or the error it raised."""

    def __init__(self, action: Callable[[], Any], name: str | None = None) -> None:
        super().__init__(name=name, daemon=True)
        self.action = action
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.action()
        except BaseException as error:  # noqa: BLE001  (the test looks at it)
            self.error = error
        finally:
            connections.close_all()


def waits_for_a_lock() -> bool:
    """Whether a connection to the test database (the change's) waits for a row lock now (PostgreSQL)."""
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                       "AND datname = current_database()")
        return cursor.fetchone()[0] > 0


def race(hold: HoldAfter, write: Callable[[], Any], change: Callable[[], Any]) -> tuple[Attempt, Attempt]:
    """``write`` runs up to the held point; ``change`` starts and runs until it finishes or waits for a lock (the
    writer's); then the writer goes on. Both have finished when this returns."""
    writer = Attempt(write, name=WRITER)
    writer.start()
    assert hold.reached.wait(30), f"the writer never reached its check: {writer.error!r}"
    other = Attempt(change)
    other.start()
    if connections["default"].vendor == "postgresql":
        deadline = time.monotonic() + 30
        while other.is_alive() and not waits_for_a_lock() and time.monotonic() < deadline:
            other.join(0.05)
    else:
        other.join(OTHER_CHANGE_SECONDS)
    hold.release()
    writer.join(60)
    other.join(60)
    assert not writer.is_alive() and not other.is_alive(), "a request hung (a lock never released?)"
    return writer, other


def fresh_sample(pk: int) -> Sample:
    return Sample.objects.select_related("project", "batch", "passage").get(pk=pk)


def fresh_span(pk: int) -> SpanAnnotation:
    return SpanAnnotation.objects.select_related("sample__project", "sample__batch", "annotator").get(pk=pk)


def user(name: str) -> Any:
    return get_user_model().objects.get(username=name)


def samples_of(batch: Batch) -> list[Sample]:
    return list(batch.samples.select_related("project", "batch", "passage").order_by("position"))


def all_but_last_done(batch: Batch, annotator: Any) -> Sample:
    """Mark every sample but the last done; returns the last, whose D submits the round."""
    *first, last = samples_of(batch)
    for sample in first:
        spans.mark_sample_done(sample, annotator, round=1, done=True)
    return last


def record_what_is_submitted(monkeypatch: pytest.MonkeyPatch, batch: Batch) -> list[set[tuple[int, int]]]:
    """The round's spans (id, version) each time D checks whether the round is complete (inside its transaction,
    so after any write it waited for): what the submission froze."""
    seen: list[set[tuple[int, int]]] = []
    original = spans.refresh_assignment

    def recording(batch_id: int, annotator: Any, round: int) -> Any:
        seen.append(set(SpanAnnotation.objects.filter(sample__batch_id=batch_id, annotator=annotator, round=round)
                        .values_list("pk", "version")))
        return original(batch_id, annotator, round)

    monkeypatch.setattr(spans, "refresh_assignment", recording)
    return seen


def written_after_submission(batch: Batch, annotator: Any, round: int = 1) -> list[int]:
    """Spans of the round created or changed after it was submitted: what a frozen round must never hold."""
    assignment = Assignment.objects.get(batch=batch, annotator=annotator, round=round)
    assert assignment.submitted_at is not None
    return list(
        SpanAnnotation.objects.filter(sample__batch=batch, annotator=annotator, round=round)
        .filter(updated_at__gt=assignment.submitted_at)
        .values_list("pk", flat=True)
    )


# --- 1. a span written while D on the last sample submits the round -------------------------------------------


@needs_postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("write", ["create", "patch", "delete"])
def test_a_span_write_in_flight_when_d_submits_the_round_lands_before_the_submission(
    batch: Batch, alice: Any, monkeypatch: pytest.MonkeyPatch, write: str
) -> None:
    first = samples_of(batch)[0]
    kept = spans.create_span(first, alice, round=1, start=0, end=9, labels=["Benign"])
    last = all_but_last_done(batch, alice)
    hold = HoldAfter(freeze, "check_writable", monkeypatch.setattr)
    submitted = record_what_is_submitted(monkeypatch, batch)
    actions = {
        "create": lambda: spans.create_span(fresh_sample(first.pk), user("alice"), round=1, start=10, end=19,
                                            labels=["Questionable"]),
        "patch": lambda: spans.update_span(fresh_span(kept.pk), version=kept.version,
                                           changes={"labels": ["Questionable"], "note": "edited in tab A"}),
        "delete": lambda: spans.delete_span(fresh_span(kept.pk), version=kept.version),
    }
    writer, done = race(hold, actions[write],
                        lambda: spans.mark_sample_done(fresh_sample(last.pk), user("alice"), round=1, done=True))

    assert done.error is None and done.result.done
    assert writer.error is None, f"the write waited for nothing and was refused instead: {writer.error!r}"
    assignment = Assignment.objects.get(batch=batch, annotator=alice, round=1)
    assert assignment.status == Assignment.Status.SUBMITTED
    assert written_after_submission(batch, alice) == []
    # The write is part of what was submitted: the round as stored is the round as it was frozen.
    stored = SpanAnnotation.objects.filter(sample=first, annotator=alice, round=1)
    assert set(stored.values_list("pk", "version")) == submitted[-1]
    expected = {"create": 2, "patch": 1, "delete": 0}[write]
    assert stored.count() == expected
    if write == "patch":
        assert stored.get().note == "edited in tab A" and stored.get().updated_at <= assignment.submitted_at


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_round_one_edit_in_flight_when_round_two_opens_reaches_both_rounds(
    batch: Batch, alice: Any, bob: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """S2b: alice's tab A edits a round-1 span while tab B presses D on her last sample and an admin opens round 2;
    before, the edit landed in round 1 after round 2 copied it, and the two rounds drifted apart."""
    first = samples_of(batch)[0]
    for sample in samples_of(batch):
        spans.mark_sample_done(sample, bob, round=1, done=True)
    edited = spans.create_span(first, alice, round=1, start=0, end=9, labels=["Benign"])
    last = all_but_last_done(batch, alice)
    hold = HoldAfter(freeze, "check_writable", monkeypatch.setattr)
    opened: list[Any] = []

    def d_then_round_two() -> None:
        spans.mark_sample_done(fresh_sample(last.pk), user("alice"), round=1, done=True)
        opened.append(rounds.open_reconciliation_round(Batch.objects.get(pk=batch.pk)))

    writer, other = race(
        hold,
        lambda: spans.update_span(fresh_span(edited.pk), version=edited.version,
                                  changes={"labels": ["Unwanted.Intrinsic"]}),
        d_then_round_two,
    )
    assert writer.error is None and other.error is None, (writer.error, other.error)
    assert opened, "round 2 did not open"
    round_one = SpanAnnotation.objects.get(pk=edited.pk)
    copy = SpanAnnotation.objects.get(origin=round_one, round=2)
    assert round_one.labels == copy.labels == ["Unwanted", "Unwanted.Intrinsic"]
    assert written_after_submission(batch, alice) == []


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_reopening_in_flight_keeps_round_two_shut(
    batch: Batch, alice: Any, bob: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R1: an admin re-opens alice's round 1 while another opens round 2: one of them is refused, never both done
    (a re-opened round 1 beside an open round 2 that copied it)."""
    for person in (alice, bob):
        for sample in samples_of(batch):
            spans.mark_sample_done(sample, person, round=1, done=True)
    assignment = Assignment.objects.get(batch=batch, annotator=alice, round=1)
    hold = HoldAfter(freeze, "later_round_open", monkeypatch.setattr)
    writer, other = race(
        hold,
        lambda: freeze.reopen_round(assignment, user("adam"), "a fix"),
        lambda: rounds.open_reconciliation_round(Batch.objects.get(pk=batch.pk)),
    )
    assert writer.error is None, writer.error
    assert isinstance(other.error, rounds.RoundError) and "waiting for round 1 from alice" in str(other.error)
    assert not Assignment.objects.filter(batch=batch, round=2).exists()
    assert Assignment.objects.get(pk=assignment.pk).reopened


# --- 2. D while the annotator is removed or unassigned ----------------------------------------------------------


@needs_postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("change", ["remove", "unassign"])
def test_a_done_mark_in_flight_is_counted_as_work_by_a_removal_or_unassignment(
    project: Project, batch: Batch, bob: Any, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """S5: bob presses D while an admin removes (or unassigns) him, nothing done yet. Before, the removal passed and
    the D either failed with a 500 (Assignment.DoesNotExist) or left a done mark of someone no longer a member."""
    sample = samples_of(batch)[0]
    hold = HoldAfter(freeze, "check_writable", monkeypatch.setattr)
    membership = Membership.objects.get(project=project, user=bob)
    assignment = Assignment.objects.get(batch=batch, annotator=bob, round=1)
    changes = {
        "remove": lambda: members.remove_member(Membership.objects.select_related("project", "user").get(
            pk=membership.pk)),
        "unassign": lambda: members.unassign_annotator(assignment),
    }
    writer, other = race(
        hold, lambda: spans.mark_sample_done(fresh_sample(sample.pk), user("bob"), round=1, done=True),
        changes[change],
    )
    assert writer.error is None, f"D failed: {writer.error!r}"
    assert isinstance(other.error, members.MemberError), other.error
    assert str(other.error).startswith("bob has") and "work" in str(other.error)  # "has work in", "has 1 ... done"
    # Nothing half done: bob keeps his assignment and role, with his done mark.
    assert Assignment.objects.filter(pk=assignment.pk).exists()
    assert Membership.objects.filter(pk=membership.pk).exists()
    assert SampleReview.objects.get(sample=sample, annotator=bob, round=1).done


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_done_mark_arriving_while_the_annotator_is_removed_answers_404_and_stores_nothing(
    project: Project, batch: Batch, bob: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The removal holds bob's assignments; his D waits, then finds them gone: 404 "No such sample", as a retry gets,
    never a 500 and never a done mark stored for someone no longer a member."""
    sample = samples_of(batch)[0]
    hold = HoldAfter(roster, "assignment_work", monkeypatch.setattr)  # the removal, between its lock and its delete
    client = Client(raise_request_exception=False)
    client.force_login(bob)
    assert client.get(f"/api/samples/{sample.pk}/").status_code == 200  # imports done: D is as quick as a D is

    def press_d() -> Any:
        return client.post(f"/api/samples/{sample.pk}/review/", json.dumps({"round": 1, "done": True}),
                           content_type="application/json")

    membership = Membership.objects.select_related("project", "user").get(project=project, user=bob)
    remover, d = race(hold, lambda: members.remove_member(membership), press_d)
    assert remover.error is None and remover.result == 1
    assert d.error is None and d.result.status_code == 404, d.result.content
    assert d.result.json() == {"detail": "No such sample"}
    assert not SampleReview.objects.filter(annotator=bob).exists()
    assert not Membership.objects.filter(project=project, user=bob).exists()


# --- 3. a label deleted while a span using it is saved ----------------------------------------------------------


def with_custom_label(project: Project) -> list[dict[str, Any]]:
    """The default labels and ``Custom.Temp`` (a Q label nobody used yet); returns the labels without it."""
    labels = [dict(label) for label in DEFAULT_TAXONOMY["labels"]]
    labelsets.save_label_set(project, [*labels, {"name": "Custom.Temp", "category": "Q", "hotkey": "7",
                                                 "description": "temporary"}], guidelines="")
    return labels


def labels_the_project_knows() -> bool:
    project = Project.objects.get(slug="demo")
    known = label_categories(project.taxonomy)
    return all(label in known for labels in SpanAnnotation.objects.values_list("labels", flat=True) for label in labels)


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_label_deleted_while_a_span_using_it_is_saved_stays(
    project: Project, sample: Sample, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """L1: the span is saved first; the label-set save waits for it, counts it, and refuses to delete the label."""
    without = with_custom_label(project)
    loaded = fresh_sample(sample.pk)  # the request read the label set with Custom.Temp
    hold = HoldAfter(freeze, "check_writable", monkeypatch.setattr)
    writer, other = race(
        hold,
        lambda: spans.create_span(loaded, user("alice"), round=1, start=0, end=9, labels=["Custom.Temp"]),
        lambda: labelsets.save_label_set(Project.objects.get(pk=project.pk), without, guidelines=""),
    )
    assert writer.error is None, writer.error
    assert isinstance(other.error, labelsets.LabelSetError) and "used by 1 span" in str(other.error)
    assert labels_the_project_knows()


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_span_saved_while_its_label_is_deleted_is_refused(
    project: Project, sample: Sample, alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The label-set save counted the labels in use first; the span waits for it, then finds the label gone."""
    without = with_custom_label(project)
    loaded = fresh_sample(sample.pk)  # read before the label was deleted
    hold = HoldAfter(labelsets, "labels_in_use", monkeypatch.setattr)
    deleter, writer = race(
        hold,
        lambda: labelsets.save_label_set(Project.objects.get(pk=project.pk), without, guidelines=""),
        lambda: spans.create_span(loaded, user("alice"), round=1, start=0, end=9, labels=["Custom.Temp"]),
    )
    assert deleter.error is None, deleter.error
    assert isinstance(writer.error, spans.SpanError) and writer.error.field == "labels", writer.error
    assert "unknown label 'Custom.Temp'" in writer.error.message
    assert not SpanAnnotation.objects.exists()
    assert labels_the_project_knows()


# --- SQLite: the same race as the first test, in a process of its own on a database file ---------------------------


def sqlite_scene() -> None:
    """Run in the subprocess: alice's span save held after its check while D on her last sample submits the round."""
    import django

    django.setup()
    from django.core.management import call_command

    from annotate.models import Passage

    call_command("migrate", verbosity=0)
    users = get_user_model()
    alice = users.objects.create_user(username="alice")
    project = Project.objects.create(name="Demo", slug="demo")
    Membership.objects.create(project=project, user=alice, role=Membership.Role.ANNOTATOR)
    batch = Batch.objects.create(project=project, name="batch-1")
    passage = Passage.objects.create(project=project, external_id="p1", text="A source text of some words.")
    for position in range(2):
        Sample.objects.create(project=project, passage=passage, batch=batch, position=position,
                              summary="A summary of the source text.", generator="g")
    Assignment.objects.create(batch=batch, annotator=alice)
    first, last = samples_of(batch)
    spans.mark_sample_done(first, alice, round=1, done=True)
    kept = spans.create_span(first, alice, round=1, start=0, end=9, labels=["Benign"])
    hold = HoldAfter(freeze, "check_writable", setattr)
    writer, done = race(
        hold,
        lambda: spans.update_span(fresh_span(kept.pk), version=kept.version, changes={"note": "late"}),
        lambda: spans.mark_sample_done(fresh_sample(last.pk), user("alice"), round=1, done=True),
    )
    print(json.dumps({
        "writer": repr(writer.error), "done": repr(done.error),
        "after": written_after_submission(batch, alice),
        "note": SpanAnnotation.objects.get(pk=kept.pk).note,
    }))


def test_on_sqlite_a_span_edit_in_flight_when_d_submits_the_round_lands_before_the_submission(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "DEBUG")}
    env.update(FAITHLAB_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings", LOG_LEVEL="WARNING",
               EMBEDDING_WARMUP="false")
    result = subprocess.run(  # noqa: S603  (our own interpreter and test module)
        [sys.executable, "-c", "import django; django.setup(); import tests.annotate.test_round_write_races as t; t.sqlite_scene()"], cwd=ROOT,
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome == {"writer": "None", "done": "None", "after": [], "note": "late"}
