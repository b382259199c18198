"""Deleting a project (the Django admin at /admin/, the only place that offers it): its judge runs, judgements and
synthetic sets point at its prompt versions with PROTECT, so Django's own delete refused with ProtectedError (the
admin listed them as protected). ``delete_project`` deletes them first, then the project, in one transaction."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import ProtectedError

from annotate.models import Batch, Project, Sample, SpanAnnotation
from annotate.services import spans
from annotate.services.projects import ProjectError, delete_project
from judging.models import Judge, Judgement, JudgeRun, PromptVersion, SyntheticRewrite, SyntheticSet
from judging.services.judges.prompts import current_prompt
from tests.conftest import login

pytestmark = pytest.mark.django_db


def judged(project: Project, sample: Sample, *, rubric_of: Project | None = None) -> JudgeRun:
    """A rubric run and its judgement, made with a prompt version (of ``rubric_of``, by default the project's)."""
    rubric = current_prompt(rubric_of or project, "rubric")
    judge = Judge.objects.create(project=project, name=f"gpt-{project.slug}", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="m")
    run = JudgeRun.objects.create(project=project, judge=judge, rubric=rubric, status="done", total=1, done=1)
    Judgement.objects.create(run=run, sample=sample, status="ok", score=4, prompt_version=rubric)
    return run


@pytest.fixture
def full_project(batch: Batch, sample: Sample, alice: Any) -> Project:
    """Spans, a judged run and a synthetic set with a rewrite, all made with the project's prompts."""
    project = batch.project
    spans.create_span(sample, alice, round=1, start=0, end=9, labels=["Benign"])
    judged(project, sample)
    synthetic = SyntheticSet.objects.create(project=project, name="synth",
                                            intrinsic_prompt=current_prompt(project, "intrinsic"),
                                            extrinsic_prompt=current_prompt(project, "extrinsic"))
    SyntheticRewrite.objects.create(synthetic_set=synthetic, sample=sample, sentence_index=0, type="intrinsic",
                                    original="A sentence.", rewritten="Another.", status="ok",
                                    prompt=synthetic.intrinsic_prompt)
    return project


def test_django_alone_refuses_because_of_the_prompt_versions(full_project: Project) -> None:
    """Why the service exists."""
    with pytest.raises(ProtectedError):
        Project.objects.get(pk=full_project.pk).delete()


def test_deleting_a_project_deletes_its_results_first_and_everything_with_it(full_project: Project) -> None:
    other = Project.objects.create(name="Other", slug="other")
    deleted = delete_project(full_project)
    assert deleted["annotate.Project"] == 1 and deleted["judging.JudgeRun"] == 1
    assert deleted["judging.PromptVersion"] == 3 and deleted["annotate.SpanAnnotation"] == 1
    assert list(Project.objects.values_list("slug", flat=True)) == [other.slug]
    for model in (Sample, SpanAnnotation, JudgeRun, Judgement, PromptVersion, SyntheticSet, SyntheticRewrite):
        assert not model.objects.exists(), model


def test_a_prompt_version_used_by_another_project_keeps_the_project_and_says_which(
    full_project: Project, sample: Sample
) -> None:
    other = Project.objects.create(name="Other", slug="other")
    batch = Batch.objects.create(project=other, name="b")
    theirs = Sample.objects.create(project=other, passage=sample.passage, batch=batch, summary="Text.")
    run = judged(other, theirs, rubric_of=full_project)
    with pytest.raises(ProjectError, match=rf"Demo cannot be deleted: .*JudgeRun {run.pk}.*nothing was deleted"):
        delete_project(full_project)
    assert Project.objects.filter(pk=full_project.pk).exists()
    assert JudgeRun.objects.filter(project=full_project).exists()  # the runs deleted first came back


def test_the_admin_deletes_a_project_with_judge_runs(full_project: Project, admin_user: Any) -> None:
    admin_user.is_superuser = True
    admin_user.save()
    client = login(admin_user)
    url = f"/admin/annotate/project/{full_project.pk}/delete/"
    page = client.get(url)
    assert page.status_code == 200
    assert "protected related objects" not in page.content.decode()
    assert "Judge run" in page.content.decode()  # listed among what goes with the project
    response = client.post(url, {"post": "yes"})
    assert response.status_code == 302, response.content.decode()[:500]
    assert not Project.objects.filter(pk=full_project.pk).exists()
    assert not PromptVersion.objects.exists() and not JudgeRun.objects.exists()


def test_the_admin_bulk_action_deletes_them_too(full_project: Project, admin_user: Any) -> None:
    admin_user.is_superuser = True
    admin_user.save()
    response = login(admin_user).post("/admin/annotate/project/", {
        "action": "delete_selected", "_selected_action": [full_project.pk], "post": "yes"})
    assert response.status_code == 302
    assert not Project.objects.exists()


def test_the_admin_names_another_projects_row_that_keeps_it(
    full_project: Project, sample: Sample, admin_user: Any
) -> None:
    admin_user.is_superuser = True
    admin_user.save()
    other = Project.objects.create(name="Other", slug="other")
    batch = Batch.objects.create(project=other, name="b")
    judged(other, Sample.objects.create(project=other, passage=sample.passage, batch=batch, summary="Text."),
           rubric_of=full_project)
    page = login(admin_user).get(f"/admin/annotate/project/{full_project.pk}/delete/").content.decode()
    assert "protected related objects" in page and "Judge run:" in page
