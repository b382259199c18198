"""Two admins starting the next pairs round at once: one round job at a time, and a job draws the round it was
started for or none (before, the second job drew round 3 right after round 2 and closed round 2 undecided).

The PostgreSQL test races two starts for real; run it with scripts/with-postgres.sh (``make test`` does).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotate.models import Job, Membership, PairRound, Project
from annotate.services.pairs import rounds
from tests.conftest import login, make_user, needs_postgres
from tests.pairs.conftest import make_pair_items
from tests.pairs.page_helpers import OPEN, WIZARD, text_of
from tests.races import race, slowed

# Round 2 of the detector project through a band that keeps every item.
ROUND_TWO = {"size": 4, "low": 0.0, "high": 1.0, "paraphrase_max": 1.0, "drop_fraction": 0.0}


def second_admin(project: Project) -> Any:
    bea = make_user("bea")
    Membership.objects.create(project=project, user=bea, role=Membership.Role.ADMIN)
    return bea


@pytest.mark.django_db
def test_a_second_start_while_a_round_job_is_queued_or_running_is_refused(pairs_project: Project,
                                                                          admin_user: Any) -> None:
    make_pair_items(pairs_project, 8, round_number=None)
    first = rounds.start_round_job(pairs_project, admin_user, size=3, seed=1)
    assert first.options["number"] == 1
    busy = re.escape(f"Round 1 is being created (job {first.pk}, started by adam); wait for it")
    with pytest.raises(rounds.RoundRefused, match=busy):
        rounds.start_round_job(pairs_project, second_admin(pairs_project), size=3, seed=2)
    Job.objects.filter(pk=first.pk).update(status=Job.Status.RUNNING)
    with pytest.raises(rounds.RoundRefused, match=busy):
        rounds.start_round_job(pairs_project, admin_user, number=1, size=3, seed=2)
    assert list(Job.objects.filter(kind=Job.Kind.PAIR_ROUND).values_list("pk", flat=True)) == [first.pk]


@pytest.mark.django_db
def test_the_wizard_refuses_a_second_admins_round_while_the_first_is_being_drawn(pairs_project: Project,
                                                                                  admin_user: Any) -> None:
    make_pair_items(pairs_project, 8, round_number=None)
    bea = second_admin(pairs_project)
    fields = {**OPEN, "size": "3", "number": "1"}
    assert login(admin_user).post(WIZARD, fields).status_code == 302
    job = Job.objects.get(kind=Job.Kind.PAIR_ROUND)

    response = login(bea).post(WIZARD, {**fields, "size": "4", "seed": "8"})
    assert response.status_code == 400
    html = response.content.decode()
    assert text_of(html, r'data-role="refusal"><p>(.*?)</p>') == (
        f"Round 1 is being created (job {job.pk}, started by adam); wait for it.")
    assert 'name="size" min="1" value="4"' in html and 'name="seed" min="0" value="8"' in html  # kept as typed
    assert Job.objects.filter(kind=Job.Kind.PAIR_ROUND).count() == 1
    # The wizard says so before anyone fills it in, with a link to the job.
    notice = text_of(login(bea).get(WIZARD).content.decode(), r'data-role="round-job-busy">(.*?)</p>')
    assert notice.startswith(f"Round 1 is being created (job {job.pk}") and f"/rounds/jobs/{job.pk}/" in notice


@pytest.mark.django_db
def test_a_wizard_opened_before_the_round_was_created_is_refused(pairs_project: Project, admin_user: Any) -> None:
    make_pair_items(pairs_project, 8, round_number=None)
    bea = second_admin(pairs_project)
    opened = login(bea).get(WIZARD).content.decode()
    assert text_of(opened, r'name="number" value="(\d+)"') == "1"
    first = rounds.start_round_job(pairs_project, admin_user, number=1, size=3, seed=1)
    rounds.run_round_job(first.pk)

    response = login(bea).post(WIZARD, {**OPEN, "size": "3", "number": "1"})
    assert response.status_code == 400
    refused = response.content.decode()
    # Worded for the page it is on: the wizard shown again already plans round 2.
    assert text_of(refused, r'data-role="refusal"><p>(.*?)</p>') == (
        f"Round 1 was created meanwhile (job {first.pk}, by adam). "
        "This wizard now plans round 2: check the preview, then create it.")
    assert text_of(refused, r'name="number" value="(\d+)"') == "2"
    assert Job.objects.filter(kind=Job.Kind.PAIR_ROUND).count() == 1
    assert list(PairRound.objects.values_list("number", "status")) == [(1, PairRound.Status.OPEN)]


@pytest.mark.django_db
def test_a_job_whose_round_was_created_meanwhile_draws_nothing(detector_project: Project, admin_user: Any) -> None:
    first = rounds.start_round_job(detector_project, admin_user, number=2, seed=3, **ROUND_TWO)
    # A second job for round 2, as two simultaneous starts made before starts were checked under a lock.
    second = Job.objects.create(project=detector_project, kind=Job.Kind.PAIR_ROUND, total=1,
                                options={**first.options, "seed": 4})
    assert rounds.run_round_job(first.pk).status == Job.Status.DONE
    round_two = PairRound.objects.get(project=detector_project, number=2)

    failed = rounds.run_round_job(second.pk)
    assert failed.status == Job.Status.FAILED
    assert failed.error == f"Round 2 was created meanwhile by job {first.pk}; open the wizard again."
    assert not PairRound.objects.filter(project=detector_project, number=3).exists()
    round_two.refresh_from_db()
    assert round_two.status == PairRound.Status.OPEN and round_two.items.count() == 4  # not closed, not redrawn
    # Run again after a stop, the first job still draws nothing more.
    assert rounds.run_round_job(first.pk).status == Job.Status.DONE
    assert PairRound.objects.filter(project=detector_project).count() == 2


@pytest.mark.django_db
def test_create_round_for_a_number_that_is_no_longer_next_draws_nothing(detector_project: Project,
                                                                         admin_user: Any) -> None:
    with pytest.raises(rounds.RoundRefused, match=re.escape(
            "Round 1 was created meanwhile outside the wizard (the pairs_round command or a script); open the "
            "wizard again.")):
        rounds.create_round(detector_project, admin_user, number=1, seed=3, **ROUND_TWO)
    with pytest.raises(rounds.RoundRefused, match=re.escape("Round 5 is not the next round (round 2 is)")):
        rounds.create_round(detector_project, admin_user, number=5, seed=3, **ROUND_TWO)
    assert rounds.create_round(detector_project, admin_user, number=2, seed=3, **ROUND_TWO).number == 2


@pytest.mark.django_db
def test_the_command_is_refused_while_a_round_job_is_queued(pairs_project: Project, admin_user: Any) -> None:
    make_pair_items(pairs_project, 8, round_number=None)
    job = rounds.start_round_job(pairs_project, admin_user, size=3, seed=1)
    with pytest.raises(CommandError, match=re.escape(f"Round 1 is being created (job {job.pk}, started by adam)")):
        call_command("pairs_round", "--project", "pairs", "--size", "3", "--seed", "2", "--json")
    assert not PairRound.objects.exists()


# --- PostgreSQL: two starts racing ------------------------------------------------------------------------------


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_two_admins_starting_at_the_same_moment_get_one_job(pairs_project: Project, admin_user: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    make_pair_items(pairs_project, 8, round_number=None)
    bea = second_admin(pairs_project)
    monkeypatch.setattr("annotate.tasks.create_pair_round.delay", lambda job_id: None)  # no worker here
    # Between the check for a running job and the new job's row: without the project's lock both would pass.
    slowed(monkeypatch, rounds, "next_round_number")

    def start(user_id: int, seed: int) -> int:
        user = get_user_model().objects.get(pk=user_id)
        return rounds.start_round_job(Project.objects.get(pk=pairs_project.pk), user, number=1, size=3,
                                      seed=seed).pk

    outcome = race([lambda user=user, seed=seed: start(user.pk, seed) for seed, user in enumerate([admin_user, bea])],
                   rounds.RoundRefused)
    started, refused = outcome.done, outcome.refused
    assert len(started) == 1 and len(refused) == 1
    assert refused[0].startswith(f"Round 1 is being created (job {started[0]}, started by ")
    assert Job.objects.filter(project=pairs_project, kind=Job.Kind.PAIR_ROUND).count() == 1
