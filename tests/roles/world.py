"""The demo data (manage.py load_demo) with the accounts the matrix needs, and the values of every path parameter."""

from __future__ import annotations

from dataclasses import dataclass
from io import StringIO
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from annotate.models import (
    Assignment,
    Batch,
    Job,
    JudgeFlag,
    Membership,
    PairItem,
    PairRound,
    Project,
    Sample,
    SpanAnnotation,
)
from annotate.services import flags as sample_flags
from annotate.services import rounds
from annotate.services.pairs import flags as pair_flags
from annotate.services.projects import create_project
from annotate.services.tokens import create_api_token
from judging.models import Audit, AuditItem, Judge, JudgeRun, SyntheticSet
from judging.services.judges import create_judge
from tests.roles.expectations import (
    ADMIN,
    ANNOTATOR,
    ANONYMOUS,
    AUDITOR,
    CURATOR,
    OUTSIDER,
    PAIRS,
    SPANS,
    SUPERUSER,
    UNASSIGNED,
)

Role = Membership.Role


@dataclass
class World:
    users: dict[str, Any]
    projects: dict[str, Project]
    sample: Sample  # in demo-batch-2: both the annotator (carol) and dave left round-1 spans on it
    values: dict[str, dict[str, Any]]  # per project kind (and None): a value for each path parameter

    def client(self, role: str) -> Client:
        client = Client(raise_request_exception=False)  # a 500 is an answer to report, with the others
        if role != ANONYMOUS:
            client.force_login(self.users[role])
        return client


def load_world(tmp_path: Any) -> World:
    call_command("load_demo", stdout=StringIO())
    User = get_user_model()
    spans_project = Project.objects.get(slug="demo")
    pairs_project = Project.objects.get(slug="demo-pairs")
    users = {
        OUTSIDER: User.objects.create_user("m-outsider"),
        ANNOTATOR: User.objects.get(username="carol"),
        UNASSIGNED: User.objects.get(username="alice"),
        AUDITOR: User.objects.create_user("m-auditor"),
        CURATOR: User.objects.create_user("m-curator"),
        ADMIN: User.objects.create_user("m-admin"),
        SUPERUSER: User.objects.get(username="admin"),
    }
    # The outsider is no stranger to the app: the admin of a project of their own, in no demo project.
    create_project("Elsewhere", slug="matrix-elsewhere", owner=users[OUTSIDER])
    spare = User.objects.create_user("m-spare")  # the member the members pages change
    for project in (spans_project, pairs_project):
        for role, user in ((AUDITOR, users[AUDITOR]), (CURATOR, users[CURATOR]), (ADMIN, users[ADMIN])):
            Membership.objects.create(project=project, user=user, role=role)
        Membership.objects.create(project=project, user=spare, role=Role.ANNOTATOR)
    dave = User.objects.get(username="dave")
    sample = (
        Sample.objects.filter(project=spans_project, spans__annotator=dave, spans__round=1)
        .filter(spans__annotator=users[ANNOTATOR]).distinct().order_by("pk").first()
    )
    assert sample is not None, "the demo no longer has a sample both carol and dave annotated"
    flag, _ = sample_flags.flag_sample(sample, users[ANNOTATOR], round=1, kind="broken", comment="garbled")
    rounds.adjudicate_sample(sample, users[SUPERUSER], span_ids=[], round=1)
    dave_span = SpanAnnotation.objects.filter(sample=sample, annotator=dave, round=1).order_by("pk").first()
    judge = create_judge(spans_project, name="matrix-rubric", kind=Judge.Kind.RUBRIC,
                         base_url="http://127.0.0.1:9/v1", model="matrix-model")
    token, _ = create_api_token(users[ADMIN], "matrix")
    alice_assignment = Assignment.objects.get(batch__project=spans_project, annotator__username="alice", round=1)
    export_job = _finished_export(spans_project, users[SUPERUSER], tmp_path)
    round_job = Job.objects.create(project=pairs_project, kind=Job.Kind.PAIR_ROUND, options={})
    perturb_job = Job.objects.create(project=pairs_project, kind=Job.Kind.PERTURB, options={})
    pair_item = PairItem.objects.filter(project=pairs_project, round__number=1).order_by("pk").first()
    frank_flag = JudgeFlag.objects.filter(project=pairs_project).order_by("pk").first()
    erin = User.objects.get(username="erin")
    # The auditor's own answered verdict, for the URLs that change one.
    audit_item = AuditItem.objects.filter(project=spans_project).order_by("pk").first()
    now = timezone.now()
    audit = Audit.objects.create(item=audit_item, auditor=users[AUDITOR], score=3, served_at=now, answered_at=now,
                                 seconds=0.0)
    pair_flags.block_judge(pairs_project, erin, users[SUPERUSER], "for the unblock URL")
    common = {
        "uidb64": "MQ", "token": "set-password-token",
        "pk": sample.pk,  # the router's sample URLs
        "id": pair_item.pk,  # api/pairs/<id>/judgements/
        "member_username": spare.get_username(),  # api/projects/<slug>/members/<username>/
    }
    values = {
        SPANS: {
            **common,
            "slug": spans_project.slug,
            "batch": Batch.objects.get(project=spans_project, name="demo-batch-2").pk,
            "membership": Membership.objects.get(project=spans_project, user=spare).pk,
            "assignment": alice_assignment.pk,
            "flag": flag.pk,
            "sample": sample.pk,
            "job": Job.objects.filter(project=spans_project, kind=Job.Kind.EMBED).first().pk,
            "export": export_job.pk,
            "judge": judge.pk,
            "run": JudgeRun.objects.filter(project=spans_project).order_by("pk").first().pk,
            "audit_item": audit_item.pk,
            "audit": audit.pk,
            "synthetic": SyntheticSet.objects.get(project=spans_project).pk,
            "judge_kind": Judge.Kind.RUBRIC,
            "prompt_kind": "rubric",
            "span": dave_span.pk,
        },
        PAIRS: {
            **common,
            "slug": pairs_project.slug,
            "membership": Membership.objects.get(project=pairs_project, user=spare).pk,
            "job": Job.objects.filter(project=pairs_project).exclude(pk__in=[round_job.pk, perturb_job.pk]).first().pk,
            "round_job": round_job.pk,
            "perturb_job": perturb_job.pk,
            "round": PairRound.objects.get(project=pairs_project, number=1).number,
            "fmt": "pairs",
            "judge_flag": frank_flag.pk,
            "blocked_judge": erin.pk,
        },
    }
    values[None] = {
        **values[SPANS],
        "token_pk": token.pk,
        "pairs": pairs_project.slug,
    }
    return World(users, {SPANS: spans_project, PAIRS: pairs_project}, sample, values)


def _finished_export(project: Project, user: Any, tmp_path: Any) -> Job:
    """A done export job with its file where export_download looks (settings.DATA_DIR points at tmp_path)."""
    job = Job.objects.create(project=project, kind=Job.Kind.EXPORT, status=Job.Status.DONE, created_by=user)
    folder = tmp_path / "exports" / str(job.pk)
    folder.mkdir(parents=True)
    (folder / "demo-round1.jsonl").write_text('{"sample_id": "1"}\n', encoding="utf-8")
    job.result_path = str(folder / "demo-round1.jsonl")
    job.save(update_fields=["result_path"])
    return job
