""""The reasoning is wrong" only where the answer shown gives reasoning.

The review found an auditor's `w` saved against an NLI first pass (shown because the explainer's answer was a parse
error): the export then said that judge's reasoning was wrong, though it gave none. Now the mark is refused with a
400 naming the field (page, API, service) and nothing is saved; the page's box is disabled and says why.
"""

from __future__ import annotations

import json

import pytest

from judging.models import Audit
from judging.services import audits
from judging.services.audits import AuditError
from tests.conftest import login
from tests.judging import audit_helpers
from tests.judging.audit_helpers import AuditScene

scene = audit_helpers.scene

pytestmark = pytest.mark.django_db


def serve_until(scene: AuditScene, index: int) -> Audit:
    """Answer the auditor's items (reasoning unmarked) until the one of ``scene.samples[index]`` is served."""
    while True:
        served = audits.serve_next_audit(scene.project, scene.auditor)
        assert served is not None
        if served.item.sample == scene.samples[index]:
            return served
        audits.submit_audit(scene.project, scene.auditor, served.item_id, score=3, agreed=False,
                            reasoning_wrong=False, note="")


def test_marking_the_reasoning_of_an_answer_that_gives_none_is_refused_and_nothing_is_saved(
    scene: AuditScene,
) -> None:
    served = serve_until(scene, 2)  # output 2: the explanation failed, so the NLI first pass is shown
    assert served.judgement.probability is not None and not served.judgement.reasoning
    with pytest.raises(AuditError) as refused:
        audits.submit_audit(scene.project, scene.auditor, served.item_id, score=2, agreed=False,
                            reasoning_wrong=True, note="")
    assert (refused.value.status, refused.value.field) == (400, "reasoning_wrong")
    assert f"judge {served.judgement.run.judge.name}" in refused.value.message
    assert "gives no reasoning" in refused.value.message
    assert Audit.objects.get(pk=served.pk).answered_at is None

    response = login(scene.auditor).post(
        f"/api/audit-items/{served.item_id}/audits/",
        json.dumps({"score": 2, "agreed": False, "reasoning_wrong": True, "note": ""}),
        content_type="application/json",
    )
    assert response.status_code == 400 and "reasoning_wrong" in json.dumps(response.json())
    assert Audit.objects.get(pk=served.pk).answered_at is None


def test_the_same_verdict_without_the_mark_saves_and_an_answer_with_reasoning_takes_it(scene: AuditScene) -> None:
    first = audits.serve_next_audit(scene.project, scene.auditor)  # output 1: the explainer's reasoning is shown
    assert first.judgement.reasoning
    saved, _ = audits.submit_audit(scene.project, scene.auditor, first.item_id, score=2, agreed=False,
                                   reasoning_wrong=True, note="")
    assert saved.reasoning_wrong is True
    served = serve_until(scene, 2)
    saved, _ = audits.submit_audit(scene.project, scene.auditor, served.item_id, score=2, agreed=False,
                                   reasoning_wrong=False, note="the date is wrong")
    assert saved.answered_at is not None and saved.reasoning_wrong is False


def test_the_page_disables_the_box_and_says_why(scene: AuditScene) -> None:
    served = serve_until(scene, 2)
    page = login(scene.auditor).get(f"/projects/{scene.project.slug}/audit/").content.decode()
    assert f'data-item-id="{served.item_id}"' in page
    box = page[page.index('data-role="reasoning-wrong"'):]
    box = box[: box.index(">")]
    assert " disabled" in box and "gives no reasoning" in box
