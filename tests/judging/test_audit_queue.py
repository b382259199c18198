"""judging.services.audits: serving worst first, one serve per auditor, audits per item, server-measured seconds,
agreeing, refusals that change nothing, progress, and what an item shows (panels, quotes, shading)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.http import Http404

from annotate.access import Forbidden
from annotate.models import Batch, Membership, Project
from judging.access import get_project_for_auditor
from judging.models import Audit, AuditItem, Judge, Judgement
from judging.services import audits
from judging.services.audits import AuditError, judge_panels, serve_next_audit, submit_audit
from tests.judging import audit_helpers
from tests.judging.audit_helpers import (
    AuditScene,
    Clock,
    build_scene,
    flag,
    judge_sample,
    make_auditor,
    make_judge,
    make_run,
)

# The audit scene and the queue's clock (fixtures of tests/judging/audit_helpers.py).
scene = audit_helpers.scene
clock = audit_helpers.clock

pytestmark = pytest.mark.django_db


def answer(scene: AuditScene, auditor: Any, audit: Audit, score: int | None = 3, **extra: Any) -> Audit:
    verdict = {"agreed": False, "reasoning_wrong": False, "note": "", **extra}
    return submit_audit(scene.project, auditor, audit.item_id, score=score, **verdict)[0]


# --------------------------------------------------------------------------- serving


def test_items_are_served_worst_first_by_the_flagging_figure(scene: AuditScene) -> None:
    served = []
    while (audit := serve_next_audit(scene.project, scene.auditor)) is not None:
        served.append(audit.item)
        answer(scene, scene.auditor, audit)
    assert served == scene.queue_order


def test_a_rubric_score_and_an_nli_p_are_compared_on_one_scale_and_unflagged_items_come_last(
    scene: AuditScene,
) -> None:
    cheap = make_judge(scene.project, "cheap-scorer", with_reasoning=False)
    run = make_run(cheap)
    extra = scene.samples[0].batch.samples.create(
        project=scene.project, passage=scene.samples[0].passage, position=3, summary="A fourth output.", external_id="3"
    )
    later = scene.samples[0].batch.samples.create(
        project=scene.project, passage=scene.samples[0].passage, position=4, summary="A fifth output.", external_id="4"
    )
    by_admin = flag(later, None, reason="added by an admin")
    # Score 1 sits below 1 + 4 * 0.10 = 1.4, the worst NLI flag.
    worst = flag(extra, judge_sample(run, extra, score=1))
    order = []
    while (audit := serve_next_audit(scene.project, scene.auditor)) is not None:
        order.append(audit.item)
        answer(scene, scene.auditor, audit)
    assert order == [worst, *scene.queue_order, by_admin]


def test_asking_again_before_answering_gives_the_same_item_and_makes_no_new_serve(
    scene: AuditScene, clock: Clock
) -> None:
    first = serve_next_audit(scene.project, scene.auditor)
    clock.advance(30)
    again = serve_next_audit(scene.project, scene.auditor)
    assert again.pk == first.pk and again.served_at == first.served_at
    assert Audit.objects.filter(auditor=scene.auditor).count() == 1


def test_an_item_with_its_audits_served_goes_to_nobody_else(scene: AuditScene) -> None:
    hedy = make_auditor(scene.project, "hedy")
    graces = serve_next_audit(scene.project, scene.auditor)
    hedys = serve_next_audit(scene.project, hedy)
    assert graces.item == scene.queue_order[0]
    assert hedys.item == scene.queue_order[1]  # the worst one is being audited by grace: one audit per item


def test_with_two_audits_per_item_two_auditors_get_the_same_item_but_nobody_gets_it_twice(
    project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch, audits_per_item=2)
    hedy = make_auditor(project, "hedy")
    ida = make_auditor(project, "ida")
    graces = serve_next_audit(project, scene.auditor)
    assert serve_next_audit(project, hedy).item == graces.item
    assert serve_next_audit(project, ida).item == scene.queue_order[1]  # two slots of the worst are taken
    answer(scene, scene.auditor, graces)
    # Not the worst again (audited by her already): the second, whose other slot ida holds.
    assert serve_next_audit(project, scene.auditor).item == scene.queue_order[1]
    answer(scene, hedy, serve_next_audit(project, hedy))
    assert serve_next_audit(project, hedy).item == scene.queue_order[2]  # the second's two slots are taken


def test_a_serve_older_than_serve_minutes_gives_its_slot_to_the_next_auditor(scene: AuditScene, clock: Clock) -> None:
    hedy = make_auditor(scene.project, "hedy")
    worst, second, _ = scene.queue_order
    walked_away = serve_next_audit(scene.project, scene.auditor)
    assert walked_away.item == worst
    clock.advance(audits.SERVE_MINUTES * 60 - 1)
    assert serve_next_audit(scene.project, hedy).item == second  # grace still holds the worst one
    answer(scene, hedy, serve_next_audit(scene.project, hedy))
    clock.advance(2)  # grace's serve is now older than SERVE_MINUTES
    assert serve_next_audit(scene.project, scene.auditor).item == worst  # until someone takes it, it is hers
    taken = serve_next_audit(scene.project, hedy)
    assert taken.item == worst and not Audit.objects.filter(pk=walked_away.pk).exists()
    with pytest.raises(AuditError) as refused:
        answer(scene, scene.auditor, walked_away)
    assert (refused.value.status, refused.value.code) == (409, "not_served")
    assert "expired" in str(refused.value)
    assert serve_next_audit(scene.project, scene.auditor).item == scene.queue_order[2]


def test_admins_audit_too_and_the_queue_ends_with_none(scene: AuditScene, admin_user: Any) -> None:
    for _ in range(3):
        answer(scene, admin_user, serve_next_audit(scene.project, admin_user))
    assert serve_next_audit(scene.project, admin_user) is None


def test_annotators_are_refused_and_outsiders_do_not_see_the_project(
    scene: AuditScene, alice: Any, charlie: Any
) -> None:
    with pytest.raises(AuditError) as refused:
        serve_next_audit(scene.project, alice)
    assert refused.value.status == 403
    with pytest.raises(AuditError) as refused:
        answer(scene, alice, Audit(item=scene.items[0]))
    assert refused.value.status == 403
    with pytest.raises(Forbidden):
        get_project_for_auditor(alice, scene.project.slug)
    with pytest.raises(Http404):
        get_project_for_auditor(charlie, scene.project.slug)
    assert not Audit.objects.exists()


def test_pairs_projects_have_no_audit_queue(scene: AuditScene) -> None:
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=pairs, user=scene.auditor, role=Membership.Role.AUDITOR)
    with pytest.raises(Http404):
        get_project_for_auditor(scene.auditor, "pairs")


# --------------------------------------------------------------------------- answering


def test_seconds_are_answered_minus_served_on_the_server_clock(scene: AuditScene, clock: Clock) -> None:
    audit = serve_next_audit(scene.project, scene.auditor)
    served_at = clock.moment
    clock.advance(42.5)
    saved = answer(scene, scene.auditor, audit, score=4, note="  the date is right  ", reasoning_wrong=True)
    saved.refresh_from_db()
    assert (saved.served_at, saved.answered_at, saved.seconds) == (served_at, clock.moment, 42.5)
    assert (saved.score, saved.agreed, saved.reasoning_wrong, saved.note, saved.blind) == (
        4, False, True, "the date is right", False
    )


def test_agreeing_takes_the_shown_judges_score(scene: AuditScene) -> None:
    serve_next_audit(scene.project, scene.auditor)  # output 1: explainer 3
    audit = serve_next_audit(scene.project, scene.auditor)
    assert audit.judgement == scene.explanations[1]
    saved = answer(scene, scene.auditor, audit, score=None, agreed=True)
    assert (saved.score, saved.agreed) == (3, True)


def test_agreeing_with_a_matching_score_is_fine_and_with_another_score_is_refused(scene: AuditScene) -> None:
    audit = serve_next_audit(scene.project, scene.auditor)
    with pytest.raises(AuditError) as refused:
        answer(scene, scene.auditor, audit, score=5, agreed=True)
    assert (refused.value.status, refused.value.field) == (400, "score")
    assert "differs from the judge's score 3" in refused.value.message
    assert answer(scene, scene.auditor, audit, score=3, agreed=True).score == 3


def test_a_failed_explanation_gives_way_to_the_first_pass_answer(scene: AuditScene) -> None:
    for _ in range(2):
        answer(scene, scene.auditor, serve_next_audit(scene.project, scene.auditor))
    audit = serve_next_audit(scene.project, scene.auditor)  # output 2: the explainer's answer is a parse error
    assert audit.judgement == scene.first_judgements[2]


def test_agreeing_with_an_answer_without_a_score_is_a_conflict_naming_it(scene: AuditScene) -> None:
    scene.settings.first_pass = None
    scene.settings.save()
    AuditItem.objects.filter(pk=scene.items[2].pk).update(flagged_by=None)
    for _ in range(2):
        answer(scene, scene.auditor, serve_next_audit(scene.project, scene.auditor))
    audit = serve_next_audit(scene.project, scene.auditor)  # output 2: only the explainer's parse error is left
    assert audit.judgement == scene.explanations[2]
    with pytest.raises(AuditError) as refused:
        answer(scene, scene.auditor, audit, score=None, agreed=True)
    assert (refused.value.status, refused.value.code) == (409, "nothing_to_agree")
    assert "gpt-explainer" in refused.value.message and "could not be read as a score" in refused.value.message
    assert Audit.objects.get(pk=audit.pk).answered_at is None


def test_agreeing_with_an_nli_probability_is_a_conflict(scene: AuditScene) -> None:
    scene.settings.explainer = None
    scene.settings.save()
    audit = serve_next_audit(scene.project, scene.auditor)
    assert audit.judgement == scene.first_judgements[1]
    with pytest.raises(AuditError) as refused:
        answer(scene, scene.auditor, audit, score=None, agreed=True)
    assert refused.value.code == "nothing_to_agree" and "p = 0.100" in refused.value.message


def test_a_second_verdict_on_an_item_is_a_conflict_and_keeps_the_first(scene: AuditScene) -> None:
    audit = serve_next_audit(scene.project, scene.auditor)
    answer(scene, scene.auditor, audit, score=2)
    with pytest.raises(AuditError) as refused:
        answer(scene, scene.auditor, audit, score=5)
    assert (refused.value.status, refused.value.code) == (409, "already_audited")
    assert Audit.objects.get(pk=audit.pk).score == 2


def test_an_item_not_served_to_the_auditor_is_a_conflict(scene: AuditScene) -> None:
    with pytest.raises(AuditError) as refused:
        submit_audit(scene.project, scene.auditor, scene.items[2].pk, score=3, agreed=False, reasoning_wrong=False,
                     note="")
    assert (refused.value.status, refused.value.code) == (409, "not_served")
    assert not Audit.objects.exists()


def test_an_item_of_another_project_is_not_found(scene: AuditScene) -> None:
    other = Project.objects.create(name="Other", slug="other")
    with pytest.raises(AuditError) as refused:
        submit_audit(other, scene.auditor, scene.items[0].pk, score=3, agreed=False, reasoning_wrong=False, note="")
    assert refused.value.status in (403, 404)  # grace has no role there: refused before the lookup
    Membership.objects.create(project=other, user=scene.auditor, role=Membership.Role.AUDITOR)
    auditor = get_user_model().objects.get(pk=scene.auditor.pk)  # roles are cached on the user object
    with pytest.raises(AuditError) as refused:
        submit_audit(other, auditor, scene.items[0].pk, score=3, agreed=False, reasoning_wrong=False, note="")
    assert refused.value.status == 404


@pytest.mark.parametrize(
    ("score", "agreed", "message"),
    [
        (0, False, "score must be a whole number from 1 to 5, not 0"),
        (6, False, "score must be a whole number from 1 to 5, not 6"),
        ("4", False, "score must be a whole number from 1 to 5, not '4'"),
        (True, False, "score must be a whole number from 1 to 5, not True"),
        (None, False, "give a score from 1 to 5, or agree with the judge's score"),
    ],
)
def test_bad_scores_are_refused_naming_the_field_and_change_nothing(
    scene: AuditScene, score: Any, agreed: bool, message: str
) -> None:
    audit = serve_next_audit(scene.project, scene.auditor)
    with pytest.raises(AuditError) as refused:
        answer(scene, scene.auditor, audit, score=score, agreed=agreed)
    assert (refused.value.status, refused.value.field, refused.value.message) == (400, "score", message)
    assert Audit.objects.get(pk=audit.pk).answered_at is None


def test_a_note_past_the_limit_is_refused(scene: AuditScene) -> None:
    audit = serve_next_audit(scene.project, scene.auditor)
    with pytest.raises(AuditError) as refused:
        answer(scene, scene.auditor, audit, note="x" * (audits.MAX_NOTE + 1))
    assert refused.value.field == "note"


def test_blind_is_recorded_when_the_final_score_is_the_one_given_blind(scene: AuditScene) -> None:
    first = serve_next_audit(scene.project, scene.auditor)
    audits.give_blind_score(scene.project, scene.auditor, first.item_id, 2)
    assert (answer(scene, scene.auditor, first, score=2).blind, Audit.objects.get(pk=first.pk).blind_score) == (True, 2)
    second = serve_next_audit(scene.project, scene.auditor)
    audits.give_blind_score(scene.project, scene.auditor, second.item_id, 1)
    # Changed after seeing the judge: not blind, the blind score kept.
    changed = answer(scene, scene.auditor, second, score=4)
    assert (changed.blind, changed.blind_score) == (False, 1)
    third = serve_next_audit(scene.project, scene.auditor)
    # No blind score given: none, not blind.
    assert (answer(scene, scene.auditor, third, score=4).blind, Audit.objects.get(pk=third.pk).blind_score) == (
        False, None)


def test_an_explanation_that_arrives_after_serving_is_shown_on_the_next_ask(scene: AuditScene) -> None:
    scene.settings.explainer = None
    scene.settings.save()
    audit = serve_next_audit(scene.project, scene.auditor)
    assert audit.judgement == scene.first_judgements[1]
    scene.settings.explainer = scene.explainer
    scene.settings.save()
    assert serve_next_audit(scene.project, scene.auditor).judgement == scene.explanations[1]


# --------------------------------------------------------------------------- progress


def test_progress_counts_answers_open_items_and_complete_ones(scene: AuditScene) -> None:
    hedy = make_auditor(scene.project, "hedy")
    assert audits.audit_progress(scene.project, scene.auditor) == {
        "answered": 0, "left": 3, "items": 3, "complete": 0, "audits_per_item": 1,
    }
    answer(scene, scene.auditor, serve_next_audit(scene.project, scene.auditor))
    serve_next_audit(scene.project, scene.auditor)  # held: still counts as left for grace
    serve_next_audit(scene.project, hedy)
    assert audits.audit_progress(scene.project, scene.auditor) == {
        "answered": 1, "left": 1, "items": 3, "complete": 1, "audits_per_item": 1,
    }
    assert audits.audit_progress(scene.project, hedy)["left"] == 1  # only the one she holds


# --------------------------------------------------------------------------- what an item shows


def test_panels_show_the_shown_answer_first_with_labels_p_and_quotes(scene: AuditScene) -> None:
    panels = judge_panels(scene.items[0])
    assert [(p["judge"], p["shown"], p["explainer"], p["first_pass"]) for p in panels] == [
        ("gpt-explainer", True, True, False),
        ("nli-first", False, False, True),
    ]
    explainer, nli = panels
    assert (explainer["score"], explainer["label"], explainer["score_text"]) == (2, "very unfaithful", "2 · very unfaithful")
    assert nli["score"] is None and nli["probability"] == 0.30
    assert nli["score_text"] == "p = 0.300 · 1 + 4p = 2.20" and nli["display_score"] == pytest.approx(2.2)
    sample = scene.samples[0]
    placed = {(q["quote"], q["where"]): (q["start"], q["end"]) for q in explainer["quotes"]}
    assert placed == {
        ("nine weeks of repairs", "output"): (sample.summary.index("nine weeks"), sample.summary.index("nine weeks") + 21),
        ("eight weeks", "source"): (sample.passage.text.index("eight weeks"), sample.passage.text.index("eight weeks") + 11),
        ("funded by the national government", "output"): (
            sample.summary.index("funded"), sample.summary.index("funded") + 33
        ),
        ("the regional council", "source"): (
            sample.passage.text.index("the regional council"), sample.passage.text.index("the regional council") + 20
        ),
        ("a toll of 3 euros", None): (None, None),
    }


def test_a_parse_error_panel_keeps_the_raw_answer_and_an_endpoint_error_its_message(scene: AuditScene) -> None:
    other = make_judge(scene.project, "flaky")
    judge_sample(make_run(other), scene.samples[2], status=Judgement.Status.ERROR, error="HTTP 503 after 4 attempts")
    panels = {panel["judge"]: panel for panel in judge_panels(scene.items[2])}
    parse = panels["gpt-explainer"]
    assert (parse["status"], parse["score"], parse["raw"], parse["score_text"]) == (
        "parse_error", None, "Looks fine to me <b>really</b>", "Answer could not be read as a score"
    )
    assert (panels["flaky"]["status"], panels["flaky"]["raw"], panels["flaky"]["error"]) == (
        "error", "", "HTTP 503 after 4 attempts"
    )


def test_each_judge_shows_its_latest_run(scene: AuditScene) -> None:
    rerun = make_run(scene.explainer)
    judge_sample(rerun, scene.samples[0], score=4, reasoning="Better now.")
    (explainer,) = [p for p in judge_panels(scene.items[0]) if p["judge"] == "gpt-explainer"]
    assert (explainer["score"], explainer["reasoning"]) == (4, "Better now.")


def test_output_sentences_are_shaded_by_the_first_pass_sentence_scores(scene: AuditScene) -> None:
    judgement = scene.first_judgements[0]
    judgement.sentence_scores = [0.95, 0.05]  # output 0 has two sentences
    judgement.save()
    view = audits.item_view(scene.items[0])
    shades = [(part["sentence"], part["shade"]["shade"] if part["shade"] else None) for part in view["output_parts"]]
    assert shades == [(0, 0), (None, None), (1, 4)]
    judgement.sentence_scores = [0.5]
    judgement.save()
    shading = audits.item_view(scene.items[0])["shading"]
    assert shading["mismatch"] == (1, 2) and shading["sentences"] == {}


def test_rubric_sentence_scores_are_read_on_the_1_to_5_scale(scene: AuditScene) -> None:
    cheap = make_judge(scene.project, "cheap")
    scene.settings.first_pass = cheap
    scene.settings.save()
    item = AuditItem.objects.get(pk=scene.items[0].pk)
    item.flagged_by = judge_sample(make_run(cheap), scene.samples[0], score=2, sentence_scores=[5, 1])
    item.save()
    shading = audits.sentence_shading(item)
    assert {i: s["shade"] for i, s in shading["sentences"].items()} == {0: 0, 1: 4}


def test_imported_sentence_scores_are_read_on_their_judgements_scale(scene: AuditScene) -> None:
    imported = make_judge(scene.project, "elsewhere", Judge.Kind.IMPORTED)
    scene.settings.first_pass = imported
    scene.settings.save()
    item = AuditItem.objects.get(pk=scene.items[0].pk)
    # 1.0 beside a 1-5 score is "highly unfaithful", not p = 1.
    item.flagged_by = judge_sample(make_run(imported), scene.samples[0], score=1, sentence_scores=[1.0, None])
    item.save()
    shading = audits.sentence_shading(item)
    assert {i: (s["shade"], s["text"]) for i, s in shading["sentences"].items()} == {0: (4, "score 1")}


def test_a_blind_view_carries_nothing_of_the_judges(scene: AuditScene) -> None:
    scene.first_judgements[0].sentence_scores = [0.9, 0.1]
    scene.first_judgements[0].save()
    view = audits.item_view(scene.items[0], reveal=False)
    assert view["panels"] == [] and view["shading"] is None
    assert all(not piece["marks"] for part in view["output_parts"] + view["source_parts"] for piece in part["pieces"])


def test_the_judge_kind_does_not_matter_for_serving(scene: AuditScene) -> None:
    imported = make_judge(scene.project, "imported-judge", Judge.Kind.IMPORTED)
    judge_sample(make_run(imported), scene.samples[1], score=5, reasoning="Fine.")
    audit = serve_next_audit(scene.project, scene.auditor)
    assert [p["judge"] for p in judge_panels(audit.item)] == ["gpt-explainer", "nli-first", "imported-judge"]
