"""The judging part of the demo: two judges' outputs on the demo span project, triage, an auditor, a synthetic set.

fixtures/demo_judgements.jsonl holds outputs written for this project by two
made-up judges: ``demo-nli-firstpass`` (an NLI-style first pass: p for each
output and for each of its sentences) and ``demo-rubric-reasoning`` (an
explainer: scores 1..5 with reasoning that quotes the source and the output,
and one answer it could not parse). They are imported like any team's outputs
(judging.services.ingest), set as the project's first pass and explainer, and
the first pass flags the outputs below p 0.5, so the audit queue has work on
first run. grace is the project's auditor. fixtures/demo_synthetic.jsonl holds
hand-written intrinsic and extrinsic rewrites of the six faithful two-sentence
outputs, imported as the synthetic set ``demo-synthetic`` (0, 50 and 100%).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from annotate.models import Membership, Project
from annotate.services.projects import add_member
from judging.models import Judge, JudgeRun, SyntheticSet
from judging.services.ingest import import_judgements
from judging.services.judges import update_judging_settings
from judging.services.synthetic import import_rewrites
from judging.services.triage import flag_from_run

DEMO_JUDGEMENTS_FILE = Path(settings.BASE_DIR) / "fixtures" / "demo_judgements.jsonl"
DEMO_SYNTHETIC_FILE = Path(settings.BASE_DIR) / "fixtures" / "demo_synthetic.jsonl"
DEMO_AUDITORS = ("grace",)
DEMO_FIRST_PASS = "demo-nli-firstpass"  # noqa: S105 - a judge name, not a password
DEMO_EXPLAINER = "demo-rubric-reasoning"
DEMO_SYNTHETIC_SET = "demo-synthetic"
DEMO_SYNTHETIC_SENTENCES = 2  # the demo's outputs are short: steps of 0, 50 and 100%


def load_judging_demo(admin: Any, people: dict[str, Any]) -> int:
    """Import the demo judges' outputs into the demo span project, set its triage, flag, add the auditor and the
    synthetic set; the number of flagged outputs. Runs inside load_demo_data's transaction."""
    from annotate.services.demo import DEMO_PROJECT_SLUG  # here: annotate.services.demo imports this module

    project = Project.objects.get(slug=DEMO_PROJECT_SLUG)
    for name in DEMO_AUDITORS:
        add_member(project, people[name].get_username(), Membership.Role.AUDITOR)
    report = import_judgements(
        project, [(DEMO_JUDGEMENTS_FILE.name, DEMO_JUDGEMENTS_FILE.read_bytes())], by=admin
    )
    runs = {imported.run.judge.name: imported.run for imported in report.runs}
    first_pass: JudgeRun = runs[DEMO_FIRST_PASS]
    update_judging_settings(
        project, first_pass=first_pass.judge, explainer=Judge.objects.get(project=project, name=DEMO_EXPLAINER)
    )
    JudgeRun.objects.filter(pk=first_pass.pk).update(purpose=JudgeRun.Purpose.FIRST_PASS)
    flagged = flag_from_run(first_pass)
    load_synthetic_demo(project, admin)
    return flagged


def load_synthetic_demo(project: Project, admin: Any) -> SyntheticSet:
    return import_rewrites(
        project, DEMO_SYNTHETIC_SET, DEMO_SYNTHETIC_FILE.read_bytes(), DEMO_SYNTHETIC_FILE.name,
        by=admin, sentences_per_output=DEMO_SYNTHETIC_SENTENCES,
    )
