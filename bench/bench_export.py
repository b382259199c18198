"""Export speed and memory: 10k, 30k and 100k samples with 3 spans each, every format.

Each size is built once in its own SQLite file in a temporary folder; each export then runs in a fresh child process, so its peak RSS is the
export's own. Prints seconds, peak MB and seconds per 10k samples, whose
flatness across sizes shows the growth is linear.

    .venv/bin/python bench/bench_export.py [--sizes 10000,30000,100000] [--formats faithbench,jsonl,csv]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
WORDS = "the council bridge repairs engineers cables river flood club season vaccine trial results quarter".split()


def setup_django(data_dir: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    os.environ["FAITHLAB_DATA_DIR"] = data_dir
    os.environ["DATABASE_URL"] = f"sqlite:///{data_dir}/bench.sqlite3"
    import django

    django.setup()


def build(size: int) -> None:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from annotate.models import Assignment, Batch, Passage, Project, Sample, SpanAnnotation

    call_command("migrate", verbosity=0)
    rng = random.Random(size)
    people = [get_user_model().objects.create(username=f"annotator{i}") for i in range(3)]
    project = Project.objects.create(name="bench", slug="bench")
    labels = [["Unwanted", "Unwanted.Intrinsic"], ["Questionable"], ["Benign"], ["Unwanted.Extrinsic"]]
    for first in range(0, size, 50):
        batch = Batch.objects.create(project=project, name=f"batch-{first // 50}", position=first // 50)
        Assignment.objects.bulk_create([Assignment(batch=batch, annotator=p, status="submitted") for p in people])
        passages = Passage.objects.bulk_create([
            Passage(project=project, external_id=f"p{first}-{i}", text=" ".join(rng.choices(WORDS, k=120)))
            for i in range(5)
        ])
        samples = Sample.objects.bulk_create([
            Sample(project=project, passage=passages[i // 10], batch=batch, position=i, external_id=str(i),
                   summary=" ".join(rng.choices(WORDS, k=40)), generator=f"gen-{i % 10}",
                   metadata={"summarizer": f"gen-{i % 10}", "hhem-2.1": round(rng.random(), 3)})
            for i in range(min(50, size - first))
        ])
        spans = []
        for sample in samples:
            for person in people:
                start = rng.randrange(0, len(sample.summary) - 20)
                spans.append(SpanAnnotation(sample=sample, annotator=person, start=start, end=start + 15,
                                            text=sample.summary[start:start + 15], labels=rng.choice(labels),
                                            note="bench"))
        SpanAnnotation.objects.bulk_create(spans)


def child(fmt: str, out: str) -> None:
    from annotate.models import Project
    from annotate.services import export

    began = time.perf_counter()
    export.export_to_path(Project.objects.get(slug="bench"), Path(out), export.ExportOptions(format=fmt))
    seconds = time.perf_counter() - began
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,30000,100000")
    parser.add_argument("--formats", default="faithbench,jsonl,csv")
    parser.add_argument("--child", nargs=3, metavar=("DATA_DIR", "FORMAT", "OUT"))
    args = parser.parse_args()
    if args.child:
        setup_django(args.child[0])
        child(args.child[1], args.child[2])
        return
    print(f"{'samples':>8} {'format':>10} {'seconds':>8} {'peak MB':>8} {'s per 10k':>9}")
    for size in map(int, args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as data_dir:
            began = time.perf_counter()
            build_process = subprocess.run(
                [sys.executable, __file__, "--child", data_dir, "build", str(size)], capture_output=True, text=True
            )
            if build_process.returncode != 0:
                raise SystemExit(build_process.stderr)
            built = time.perf_counter() - began
            for fmt in args.formats.split(","):
                out = Path(data_dir) / ("out" if fmt == "faithbench" else f"out.{fmt}")
                result = subprocess.run([sys.executable, __file__, "--child", data_dir, fmt, str(out)],
                                        capture_output=True, text=True)
                if result.returncode != 0:
                    raise SystemExit(result.stderr)
                figures = json.loads(result.stdout.strip().splitlines()[-1])
                print(f"{size:>8} {fmt:>10} {figures['seconds']:>8.2f} {figures['peak_mb']:>8.0f} "
                      f"{figures['seconds'] / size * 10_000:>9.3f}", flush=True)
            print(f"{'':>8} (built {size} samples x 3 spans in {built:.1f}s)", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child" and sys.argv[3] == "build":
        setup_django(sys.argv[2])
        build(int(sys.argv[4]))
    else:
        main()
