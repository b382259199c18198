"""Benchmark: does semantic highlighting point at the sentence FaithBench annotators linked?

Reads FaithBench batch files (``{"samples": [...]}``, see DESIGN.md "FaithBench
file format"). Every annotation with a linked source span is one case: the
selection is its summary span, the right answers are the source sentences
(``annotate.text.split_sentences``) that overlap the linked source span. The
texts are split and embedded with the app's own code (annotate.text,
annotate.embedder); nothing touches a database.

Two rankings of the source sentences, in the same run:

- baseline: the selected words alone, embedded, dot product with each sentence;
- new: ``annotate.highlight.rank`` (what the similarity API answers).

Printed for each: hit@1, hit@3, MRR and n, for all selections and for short
ones (1-3 words); for the new method also how often ``closest`` is empty and how
often ``closest[0]`` is a right answer when it is not, the same in the other
direction (the linked source span selected, summary sentences ranked), how
often ``closest`` stays empty for a selection paired with an unrelated source
(another sample's source), and the latency of the query-time work per request
(p50/p95 ms: the forward pass for the selection's sentence, BM25, scoring;
the stored sentence vectors are computed beforehand, as the embedding job does).

    .venv/bin/python bench/bench_highlight_quality.py FILE [FILE...] [--tuned-on FILE...]

``--tuned-on`` names the files the method's weights were tuned on: figures are
printed for the held-out files (the others) and the tuned-on ones separately.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from annotate import embedder, highlight  # noqa: E402
from annotate.text import split_sentences  # noqa: E402

SHORT_WORDS = 3


@dataclass
class Text:
    text: str
    sentences: list[list[int]]
    vectors: np.ndarray


@dataclass
class Case:
    file: str
    summary: Text
    source: Text
    summary_span: tuple[int, int]
    source_span: tuple[int, int]
    unrelated: Text | None = None

    @property
    def short(self) -> bool:
        return len(self.summary.text[self.summary_span[0] : self.summary_span[1]].split()) <= SHORT_WORDS


@dataclass
class Tally:
    ranks: list[int] = field(default_factory=list)
    short_ranks: list[int] = field(default_factory=list)
    empty: int = 0
    first_right: int = 0
    unrelated_empty: int = 0
    unrelated: int = 0
    reverse_ranks: list[int] = field(default_factory=list)
    reverse_empty: int = 0
    reverse_first_right: int = 0
    seconds: list[float] = field(default_factory=list)


def overlapping(sentences: list[list[int]], start: int, end: int) -> set[int]:
    return {i for i, (s, e) in enumerate(sentences) if s < end and start < e}


def rank_of_first_right(scores: list[float] | np.ndarray, right: set[int]) -> int:
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    return next(k for k, i in enumerate(order) if int(i) in right)


def load_cases(paths: list[str]) -> list[Case]:
    texts: dict[str, Text] = {}

    def prepared(text: str) -> Text:
        if text not in texts:
            sentences = split_sentences(text)
            vectors = embedder.embed([text[s:e] for s, e in sentences])
            texts[text] = Text(text, sentences, vectors)
        return texts[text]

    cases = []
    for path in paths:
        samples = json.loads(Path(path).read_text(encoding="utf-8"))["samples"]
        sources = list(dict.fromkeys(sample["source"] for sample in samples))
        for sample in samples:
            for note in sample["annotations"]:
                if note.get("source_start") is None or note.get("summary_start") is None:
                    continue
                summary, source = prepared(sample["summary"]), prepared(sample["source"])
                span = (note["summary_start"], note["summary_end"])
                linked = (note["source_start"], note["source_end"])
                if not (overlapping(source.sentences, *linked) and span[0] < span[1]):
                    continue
                # The next different source of the file stands for "a text this selection has nothing to do with".
                others = [text for text in sources if text != sample["source"]]
                unrelated = prepared(others[sources.index(sample["source"]) % len(others)]) if others else None
                cases.append(Case(Path(path).name, summary, source, span, linked, unrelated))
    return cases


def rank_new(selected: Text, span: tuple[int, int], target: Text) -> highlight.Ranking:
    return highlight.rank(
        selected_text=selected.text,
        start=span[0],
        end=span[1],
        selected_sentences=selected.sentences,
        target_text=target.text,
        target_sentences=target.sentences,
        target_vectors=target.vectors,
        encode_tokens=embedder.token_vectors,
    )


def measure(cases: list[Case]) -> tuple[Tally, Tally]:
    baseline, new = Tally(), Tally()
    for case in cases:
        right = overlapping(case.source.sentences, *case.source_span)
        start, end = case.summary_span

        began = time.perf_counter()
        query = embedder.embed([case.summary.text[start:end]])[0]
        scores = case.source.vectors @ query
        baseline.seconds.append(time.perf_counter() - began)
        rank = rank_of_first_right(scores, right)
        baseline.ranks.append(rank)
        if case.short:
            baseline.short_ranks.append(rank)

        began = time.perf_counter()
        ranking = rank_new(case.summary, case.summary_span, case.source)
        new.seconds.append(time.perf_counter() - began)
        rank = rank_of_first_right(ranking.scores, right)
        new.ranks.append(rank)
        if case.short:
            new.short_ranks.append(rank)
        if not ranking.closest:
            new.empty += 1
        elif ranking.closest[0] in right:
            new.first_right += 1

        if case.unrelated is not None:
            new.unrelated += 1
            if not rank_new(case.summary, case.summary_span, case.unrelated).closest:
                new.unrelated_empty += 1

        reverse_right = overlapping(case.summary.sentences, start, end)
        reverse = rank_new(case.source, case.source_span, case.summary)
        new.reverse_ranks.append(rank_of_first_right(reverse.scores, reverse_right))
        if not reverse.closest:
            new.reverse_empty += 1
        elif reverse.closest[0] in reverse_right:
            new.reverse_first_right += 1
    return baseline, new


def figures(ranks: list[int]) -> str:
    if not ranks:
        return "    -     -     -     0"
    r = np.asarray(ranks)
    return f"{np.mean(r == 0):5.3f} {np.mean(r < 3):5.3f} {np.mean(1 / (r + 1)):5.3f} {len(r):5d}"


def share(part: int, whole: int) -> str:
    return f"{part / whole:5.3f} ({part}/{whole})" if whole else "-"


def report(title: str, cases: list[Case]) -> None:
    if not cases:
        return
    baseline, new = measure(cases)
    files = ", ".join(sorted({case.file for case in cases}))
    print(f"\n## {title}: {files}")
    print(f"{'':38s} {'hit@1':>5s} {'hit@3':>5s} {'MRR':>5s} {'n':>5s}")
    print(f"{'baseline (selected words alone), all':38s} {figures(baseline.ranks)}")
    print(f"{'baseline, short (1-3 words)':38s} {figures(baseline.short_ranks)}")
    print(f"{'new (annotate.highlight), all':38s} {figures(new.ranks)}")
    print(f"{'new, short (1-3 words)':38s} {figures(new.short_ranks)}")
    print(f"{'new, other direction (source -> summary)':38s} {figures(new.reverse_ranks)}")
    count = len(new.ranks)
    print(
        f"closest empty: {share(new.empty, count)}; closest[0] right when not empty: "
        f"{share(new.first_right, count - new.empty)}"
    )
    print(
        f"other direction: closest empty {share(new.reverse_empty, count)}; closest[0] right when not empty: "
        f"{share(new.reverse_first_right, count - new.reverse_empty)}"
    )
    print(f"selection paired with an unrelated source: closest empty {share(new.unrelated_empty, new.unrelated)}")
    for name, tally in (("baseline", baseline), ("new", new)):
        ms = sorted(1000 * s for s in tally.seconds)
        p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
        print(f"{name} query-time work per request: p50 {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="FaithBench batch files")
    parser.add_argument("--tuned-on", nargs="*", default=[], help="the files the weights were tuned on")
    args = parser.parse_args()
    embedder.get_model()  # load before timing anything
    embedder.embed(["warm up"])
    embedder.token_vectors("warm up")
    highlight.prepare()
    tuned = {Path(path).name for path in args.tuned_on}
    cases = load_cases(list(dict.fromkeys(args.files + args.tuned_on)))
    import torch

    print(f"model {embedder.model_name()}, torch threads {torch.get_num_threads()}, {os.cpu_count()} CPUs")
    report("held out (not tuned on)", [case for case in cases if case.file not in tuned])
    report("tuned on", [case for case in cases if case.file in tuned])


if __name__ == "__main__":
    main()
