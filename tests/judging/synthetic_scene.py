"""A span project with five-sentence outputs, a writer judge on a loopback server, and a rewrite script for it."""

from __future__ import annotations

import json
import re
from typing import Any

from annotate.models import Batch, Passage, Project, Sample
from judging.models import Judge, PromptVersion
from judging.services.judges import save_prompt
from tests.conftest import SOURCE
from tests.judging.llm_server import Reply, user_text

FIVE = [
    ("g1", "Lintown's Harbour Bridge reopened on Tuesday. Repairs took eight weeks. Engineers replaced 140 cables 🌉. "
           "The work cost 12.4 million euros. The speed limit is 30 km/h until March."),
    ("g2", "The bridge reopened. Café owners cheered. Traffic is slow on the eastern lane. Mayor Ines Varga spoke. "
           "It cost 12.4 million euros."),
]
SHORT = ("g3", "The bridge reopened. It cost 12.4 million euros. The mayor spoke.")

# Prompts that make the sentence and the type easy for the loopback server to read back.
PROMPTS = {
    "intrinsic": "KIND=intrinsic\nSENTENCE=<<{sentence}>>\nOUTPUT={output}\nSOURCE={source}\nAnswer in JSON.",
    "extrinsic": "KIND=extrinsic\nSENTENCE=<<{sentence}>>\nOUTPUT={output}\nSOURCE={source}\nAnswer in JSON.",
}
_ASKED = re.compile(r"KIND=(\w+)\nSENTENCE=<<(.*?)>>", re.DOTALL)


def rewrite_of(kind: str, sentence: str) -> str:
    """What the loopback writer answers: a marker before intrinsic sentences, a clause after extrinsic ones."""
    if kind == "intrinsic":
        return "NOT " + sentence
    return sentence[:-1] + ", officials said."


def asked(body: dict[str, Any]) -> tuple[str, str]:
    match = _ASKED.search(user_text(body))
    assert match is not None, "the rewrite prompt was not filled as the project wrote it"
    return match.group(1), match.group(2)


def writer_script(*, identical: str = "", server_error: str = "", prose: str = ""):
    """Rewrites every sentence; the sentence named `identical` comes back unchanged (extrinsic), the one named
    `server_error` gets HTTP 500 (intrinsic), and the one named `prose` gets an answer without JSON (intrinsic)."""

    def script(body: dict[str, Any], attempt: int) -> Reply:
        kind, sentence = asked(body)
        if kind == "extrinsic" and sentence == identical:
            return Reply(content=json.dumps({"rewritten": sentence}))
        if kind == "intrinsic" and sentence == server_error:
            return Reply(status=500)
        if kind == "intrinsic" and sentence == prose:
            return Reply(content="Sure! Here is the sentence rewritten: the bridge closed.")
        return Reply(content=json.dumps({"rewritten": rewrite_of(kind, sentence)}))

    return script


def add_outputs(project: Project, *, short: bool = True) -> list[Sample]:
    batch = Batch.objects.create(project=project, name="synthetic-batch")
    passage = Passage.objects.create(project=project, external_id="syn-p1", text=SOURCE)
    samples = []
    for position, (external_id, summary) in enumerate([*FIVE, *([SHORT] if short else [])]):
        samples.append(Sample.objects.create(project=project, passage=passage, batch=batch, position=position,
                                             external_id=external_id, summary=summary, generator="model-x"))
    return samples


def writer_judge(project: Project, base_url: str, **extra: Any) -> Judge:
    for kind, text in PROMPTS.items():
        save_prompt(project, kind, text)
    settings = {"concurrency": 4, "max_retries": 0, "timeout_seconds": 10.0, **extra}
    return Judge.objects.create(project=project, name="writer", kind=Judge.Kind.RUBRIC, base_url=base_url,
                                model="test-model", **settings)


def latest_prompt(project: Project, kind: str) -> PromptVersion:
    return PromptVersion.objects.filter(project=project, kind=kind).order_by("-number").first()
