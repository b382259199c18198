"""Samples to judge, and endpoints that are not there, for the judge-run tests (and the benchmark)."""

from __future__ import annotations

import re
import socket

from annotate.models import Batch, Passage, Project, Sample

SOURCE = (
    "The council of Lintown approved a budget of 12.4 million euros on Tuesday. "
    "Engineers will replace 140 steel cables of the Harbour Bridge over eight weeks. "
    "Mayor Ines Varga said the eastern lane stays open during the work."
)
OUTPUT = "The council approved 12.4 million euros for the bridge [{tag}]. The work takes eight weeks."
TAG = re.compile(r"\[(s\d+)\]")


def add_samples(
    project: Project, count: int, *, batch_name: str = "runs", per_passage: int = 10, first: int = 0
) -> list[Sample]:
    """`count` samples in a new batch, ten to a passage; sample i (from `first`) has the tag "[s<i>]" in its
    output and the external id "s<i>", so a loopback script can tell which sample a request is about."""
    batch = Batch.objects.create(project=project, name=batch_name)
    passages = Passage.objects.bulk_create(
        Passage(project=project, external_id=f"{batch_name}-p{index}", text=f"{SOURCE} (Report {first + index}.)")
        for index in range((count + per_passage - 1) // per_passage)
    )
    return Sample.objects.bulk_create(
        Sample(project=project, batch=batch, passage=passages[index // per_passage], position=index,
               external_id=f"s{first + index}", summary=OUTPUT.format(tag=f"s{first + index}"), generator="model-a")
        for index in range(count)
    )


def tag_of(text: str) -> str | None:
    """The "s<i>" tag of the output inside a request's user message."""
    found = TAG.search(text)
    return found.group(1) if found else None


def closed_port_url() -> str:
    """An http URL on loopback where nothing listens (the port was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
