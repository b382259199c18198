"""Benchmark: how long a big import holds SQLite's write lock, and what a span save waits meanwhile.

An admin uploads one file of --samples samples (default 100,000, about 95 MB)
through the project page (``django.test.Client``, as a browser posts it). A
second process, started before the upload, saves a span through
``POST /api/spans/`` (token auth) every --pace-ms and records each answer's
latency and status. Printed:

- the upload request's seconds, and the seconds spent inside outermost
  transactions on the importing thread (``transaction.atomic``, timed by
  wrapping Django's ``Atomic``). On SQLite (``transaction_mode`` IMMEDIATE)
  a transaction takes the database's write lock at BEGIN and keeps it until
  COMMIT, so this is how long every other writer waits: the longest such
  block, and the sum of all of them (on PostgreSQL, where an import's
  transaction blocks no other writer, just how long it is);
- the queries inside the longest block;
- the concurrent saves: how many, p50/p95/max latency, how many did not answer
  201, with the answers' statuses; the same for the saves that started while
  the importing thread held a transaction.

The file is FaithBench (``--format faithbench``: one batch, ``--spans`` spans a
sample from three annotators) or samples JSONL (``--format jsonl``: batches of
five passages). With ``--kind pairs`` it is a pair file uploaded through a
pairs project's import form instead: ``--format hades`` (--samples HaDes rows,
--summaries rows a perturbed text) or ``--format raw`` (--samples texts to
perturb). Texts are drawn from a fixed vocabulary with a seeded RNG.

    .venv/bin/python bench/bench_import_lock.py [--kind spans|pairs] [--samples 100000]
                                                [--format faithbench|jsonl|hades|raw] [--spans 1] [--pace-ms 250]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CpuMonitor, database_version, machine, paragraph, start_django, summary  # noqa: E402

ANNOTATORS = ("Ana", "Bo", "Cy")
LABELS = (["Unwanted", "Unwanted.Intrinsic"], ["Unwanted", "Unwanted.Extrinsic"], ["Questionable"], ["Benign"])


def make_samples(samples: int, summaries: int, seed: int) -> list[dict[str, Any]]:
    """``samples`` samples, ``summaries`` of them a passage; a passage has 3-4 sentences, a summary 2-3."""
    rng = random.Random(seed)
    made: list[dict[str, Any]] = []
    number = 0
    while len(made) < samples:
        source = paragraph(rng, rng.randint(3, 4))
        for index in range(min(summaries, samples - len(made))):
            made.append({"passage_id": f"passage-{number}", "source": source,
                         "summary": paragraph(rng, rng.randint(2, 3)), "generator": f"org/model-{index}",
                         "sample_id": f"{number}-{index}"})
        number += 1
    return made


def faithbench_file(samples: list[dict[str, Any]], spans: int, seed: int) -> bytes:
    """One FaithBench batch: each sample with ``spans`` annotations, by the three annotators in turn."""
    rng = random.Random(seed)
    rows = []
    annot_id = 0
    for sample in samples:
        annotations = []
        for number in range(spans):
            summary = sample["summary"]
            start = rng.randrange(0, len(summary) - 20)
            end = start + rng.randint(5, 20)
            annot_id += 1
            name = ANNOTATORS[(annot_id + number) % len(ANNOTATORS)]
            annotations.append({
                "annot_id": annot_id, "annotator_id": f"id-{name}", "annotator_name": name,
                "label": rng.choice(LABELS), "note": "", "summary_span": summary[start:end],
                "summary_start": start, "summary_end": end, "source_span": None, "source_start": None,
                "source_end": None,
            })
        rows.append({"sample_id": sample["sample_id"], "source": sample["source"], "summary": sample["summary"],
                     "annotations": annotations,
                     "metadata": {"summarizer": sample["generator"], "hhem-2.1": round(rng.random(), 3)}})
    return json.dumps({"samples": rows}).encode("utf-8")


def jsonl_file(samples: list[dict[str, Any]]) -> bytes:
    return "\n".join(json.dumps(sample) for sample in samples).encode("utf-8")


def hades_file(rows: int, per_text: int, seed: int) -> bytes:
    """``rows`` HaDes rows, ``per_text`` of them marking a different word of one lower-cased perturbed text."""
    rng = random.Random(seed)
    lines: list[str] = []
    while len(lines) < rows:
        words = paragraph(rng, rng.randint(2, 3)).lower().replace(".", " .").split()
        for index in range(min(per_text, rows - len(lines), len(words))):
            marked = list(words)
            marked[index] = f"==={marked[index]}==="
            lines.append(json.dumps({"replaced": " ".join(marked), "replaced_ids": [index, index],
                                     "hallucination": rng.choice((1, 0, -1))}))
    return "\n".join(lines).encode("utf-8")


def raw_file(texts: int, seed: int) -> bytes:
    """``texts`` raw texts to perturb, ``{"id", "text"}`` a line."""
    rng = random.Random(seed)
    return "\n".join(json.dumps({"id": f"text-{number}", "text": paragraph(rng, rng.randint(3, 4))})
                     for number in range(texts)).encode("utf-8")


@dataclass
class Transactions:
    """The outermost ``transaction.atomic`` blocks of one thread: (began, ended) wall clock, queries in each."""

    thread: int
    blocks: list[tuple[float, float, int]] = field(default_factory=list)
    _began: float | None = None
    _queries: int = 0

    def longest(self) -> tuple[float, float, int]:
        return max(self.blocks, key=lambda block: block[1] - block[0], default=(0.0, 0.0, 0))

    def held(self) -> float:
        return sum(ended - began for began, ended, _ in self.blocks)


def watch_transactions(thread: int) -> Transactions:
    """Time every outermost atomic block of ``thread``, by wrapping Django's Atomic (the app's code is unchanged)."""
    from django.db import connection, transaction

    seen = Transactions(thread)
    enter, leave = transaction.Atomic.__enter__, transaction.Atomic.__exit__

    def timed_enter(self: Any) -> None:
        outermost = threading.get_ident() == thread and not transaction.get_connection(self.using).in_atomic_block
        enter(self)
        if outermost:
            seen._began, seen._queries = time.time(), 0

    def timed_exit(self: Any, *exc: Any) -> None:
        try:
            leave(self, *exc)
        finally:
            if (threading.get_ident() == thread and seen._began is not None
                    and not transaction.get_connection(self.using).in_atomic_block):
                seen.blocks.append((seen._began, time.time(), seen._queries))
                seen._began = None

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if seen._began is not None:
            seen._queries += 1
        return execute(sql, params, many, context)

    transaction.Atomic.__enter__ = timed_enter  # type: ignore[method-assign]
    transaction.Atomic.__exit__ = timed_exit  # type: ignore[method-assign]
    connection.execute_wrappers.append(count)
    return seen


def make_project_with_annotator() -> tuple[Any, Any, int, str]:
    """The project to import into (its admin logs in), and a second project whose annotator saves spans."""
    from django.contrib.auth import get_user_model

    from annotate.models import Membership, Project
    from annotate.services.ingest import import_batches, parse_samples_jsonl
    from annotate.services.projects import assign_annotators
    from annotate.services.tokens import create_api_token

    users = get_user_model()
    admin = users.objects.create_user(username="bench-admin", password="unused-password-1")  # noqa: S106
    target = Project.objects.create(name="Import target", slug="import-target")
    Membership.objects.create(project=target, user=admin, role=Membership.Role.ADMIN)
    busy = Project.objects.create(name="Annotating", slug="annotating")
    line = json.dumps({"passage_id": "p", "source": "A source text. " * 20, "summary": "A summary sentence. " * 10,
                       "generator": "g", "sample_id": "s"})
    batch = import_batches(busy, parse_samples_jsonl(line, "busy.jsonl")).batches[0]
    annotator = users.objects.create_user(username="bench-annotator")
    Membership.objects.create(project=busy, user=annotator, role=Membership.Role.ANNOTATOR)
    assign_annotators(batch, [annotator])
    return admin, target, batch.samples.get().pk, create_api_token(annotator, "bench")[1]


def make_pairs_target(admin: Any) -> Any:
    """An empty pairs project, ``admin`` its admin, made as the new-project page makes one."""
    from annotate.models import Project
    from annotate.services.projects import create_project

    return create_project("Pairs import target", slug="pairs-target", owner=admin, kind=Project.Kind.PAIRS)


def warm_up_pairs(client: Any, admin: Any, fmt: str) -> None:
    """One small pair upload into a pairs project of its own first, so that no first-call cost is timed."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotate.models import Project
    from annotate.services.projects import create_project

    create_project("Pairs warm-up", slug="pairs-warm-up", owner=admin, kind=Project.Kind.PAIRS)
    small = hades_file(20, 5, 1) if fmt == "hades" else raw_file(20, 1)
    response = client.post("/projects/pairs-warm-up/pairs/import/",
                           {"files": [SimpleUploadedFile("warm.jsonl", small)], "format": fmt})
    assert response.status_code == 302, response.status_code


def warm_up(client: Any, admin: Any) -> None:
    """One small upload into a project of its own first, so that no first-call cost (imports) is timed."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotate.models import Membership, Project

    project = Project.objects.create(name="Warm-up", slug="warm-up")
    Membership.objects.create(project=project, user=admin, role=Membership.Role.ADMIN)
    small = faithbench_file(make_samples(20, 10, 1), 1, 1)
    response = client.post(f"/projects/{project.slug}/import/",
                           {"files": [SimpleUploadedFile("warm.json", small)], "annotators": "by-name"})
    assert response.status_code == 302, response.status_code


def saver(sample: int, token: str, stop: Path, out: Path, pace: float) -> int:
    """The second process: a span save every ``pace`` s until ``stop`` exists; records (sent, seconds, status)."""
    import django

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    django.setup()
    from django.test import Client

    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {token}")
    records = []
    number = 0
    client.get("/api/")  # the URL configuration's first import is not a save's latency
    while not stop.exists():
        number += 1
        start = number % 150  # a new (start, end) every time: the app stores an identical span only once
        body = {"sample": sample, "round": 1, "start": start, "end": start + 3 + (number // 150) % 40,
                "labels": ["Questionable"], "note": f"save {number}"}
        sent, began = time.time(), time.perf_counter()
        response = client.post("/api/spans/", json.dumps(body), content_type="application/json")
        records.append((sent, time.perf_counter() - began, response.status_code,
                        response.content[:160].decode("utf-8", "replace")))
        time.sleep(max(0.0, pace - (time.perf_counter() - began)))
    out.write_text(json.dumps(records))
    return 0


def describe_saves(label: str, records: list[Any]) -> str:
    figures = summary([seconds for _, seconds, _, _ in records])
    statuses: dict[int, int] = {}
    for _, _, status, _ in records:
        statuses[status] = statuses.get(status, 0) + 1
    failed = sum(count for status, count in statuses.items() if status != 201)
    worst = max((seconds for _, seconds, _, _ in records), default=float("nan"))
    return (f"{label}: {figures['n']} saves, p50 {figures['p50']:.0f} ms, p95 {figures['p95']:.0f} ms, "
            f"max {worst * 1000:.0f} ms, not 201: {failed} (statuses {dict(sorted(statuses.items()))})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--summaries", type=int, default=10, help="samples a passage")
    parser.add_argument("--kind", choices=["spans", "pairs"], default="spans", help="the project imported into")
    parser.add_argument("--format", choices=["faithbench", "jsonl", "hades", "raw"], default=None,
                        help="default: faithbench for spans, hades for pairs")
    parser.add_argument("--spans", type=int, default=1, help="annotations a sample (FaithBench)")
    parser.add_argument("--pace-ms", type=int, default=250)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--saver", nargs=4, metavar=("SAMPLE", "TOKEN", "STOP", "OUT"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    options.format = options.format or ("faithbench" if options.kind == "spans" else "hades")
    if (options.kind == "pairs") != (options.format in ("hades", "raw")):
        parser.error(f"--format {options.format} is not a format of a {options.kind} project")
    if options.saver:
        sample, token, stop, out = options.saver
        return saver(int(sample), token, Path(stop), Path(out), options.pace_ms / 1000)
    env = start_django("import_lock")
    try:
        return run(options, env.data_dir)
    finally:
        env.close()


def run(options: argparse.Namespace, data_dir: Path) -> int:
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.db import connections
    from django.test import Client

    from annotate.models import PairItem, PairOriginal, Sample, SpanAnnotation

    admin, target, sample, token = make_project_with_annotator()
    if options.kind == "pairs":
        target = make_pairs_target(admin)
        url, form = f"/projects/{target.slug}/pairs/import/", {"format": options.format}
        if options.format == "hades":
            content, name = hades_file(options.samples, options.summaries, options.seed), "big.jsonl"
        else:
            content, name = raw_file(options.samples, options.seed), "big.jsonl"
    else:
        url, form = f"/projects/{target.slug}/import/", {"annotators": "by-name"}
        samples = make_samples(options.samples, options.summaries, options.seed)
        if options.format == "faithbench":
            content, name = faithbench_file(samples, options.spans, options.seed), "big.json"
        else:
            content, name = jsonl_file(samples), "big.jsonl"
    print(f"machine: {machine()}; database: {database_version()}")
    print(f"file {name}: {options.samples} {'rows' if options.kind == 'pairs' else 'samples'}, "
          f"{len(content) / 1e6:.1f} MB, format {options.format}"
          + (f", {options.spans} span(s) a sample" if options.format == "faithbench" else "")
          + (f", {options.summaries} rows a text" if options.format == "hades" else ""))
    connections.close_all()  # the saver opens its own connection; ours reopens on first use
    stop, out = data_dir / "stop-saver", data_dir / "saves.json"
    child = subprocess.Popen([sys.executable, __file__, "--pace-ms", str(options.pace_ms),  # noqa: S603
                              "--saver", str(sample), token, str(stop), str(out)], env=os.environ.copy())
    client = Client(raise_request_exception=False)
    client.force_login(admin)
    if options.kind == "pairs":
        warm_up_pairs(client, admin, options.format)
    else:
        warm_up(client, admin)
    time.sleep(3.0)  # the saver's start-up, and a few saves before the upload
    seen = watch_transactions(threading.get_ident())
    upload = SimpleUploadedFile(name, content, content_type="application/octet-stream")
    with CpuMonitor(extra_roots=[child.pid]) as monitor:
        sent = time.time()
        response = client.post(url, {"files": [upload], **form})
        answered = time.time()
        time.sleep(3.0)
    stop.touch()
    child.wait(timeout=120)
    records = json.loads(out.read_text())
    if options.kind == "pairs":
        model = PairItem if options.format == "hades" else PairOriginal
        imported = model.objects.filter(project=target).count()
        print(f"upload answered {response.status_code} in {answered - sent:.2f} s; imported {imported} "
              f"{'items' if options.format == 'hades' else 'texts to perturb'}")
    else:
        imported = Sample.objects.filter(project=target).count()
        spans = SpanAnnotation.objects.filter(sample__project=target).count()
        print(f"upload answered {response.status_code} in {answered - sent:.2f} s; imported {imported} samples, "
              f"{spans} spans")
    began, ended, queries = seen.longest()
    print(f"write lock held (outermost transaction.atomic on the importing thread): longest {ended - began:.2f} s "
          f"({queries} queries), {len(seen.blocks)} blocks, {seen.held():.2f} s in all")
    during = [r for r in records if sent <= r[0] <= answered]
    locked = [r for r in records if any(b - 0.001 <= r[0] + r[1] and r[0] <= e for b, e, _ in seen.blocks)]
    print(describe_saves("concurrent span saves during the upload request", during))
    print(describe_saves("  of which overlapping a transaction of the import", locked))
    print(describe_saves("concurrent span saves before and after the upload", [r for r in records if r not in during]))
    for record in [r for r in during if r[2] != 201][:3]:
        print(f"  e.g. {record[2]} after {record[1]:.2f} s: {record[3]!r}")
    print(f"peak memory of the importing process (max RSS, file generation included): "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print(monitor.describe())
    return 0 if imported == options.samples else 1


if __name__ == "__main__":
    sys.exit(main())
