"""Synthetic hallucination sets: LLM rewrites of gold sentences, nested percentage items, and the paper's tables.

A set is created with its outputs fixed (one gold item per eligible output),
then executed in the background: the writer endpoint rewrites every sentence
of every output once per type, and the items are built from the rewrites. A
rewrite that fails is stored as failed, never invented, and the items of that
output and type are not built. Execution is resumable: stored rewrites are
never asked for again.
"""

from __future__ import annotations

import fcntl
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from annotate.models import Project, Sample
from annotate.text import split_sentences
from judging import prompts
from judging import synthetic as nesting
from judging.clients import Endpoint, EndpointError, chat, endpoint_for
from judging.models import Judge, Judgement, JudgeRun, PromptVersion, SyntheticItem, SyntheticRewrite, SyntheticSet
from judging.parsing import first_json_object
from judging.services.judges import current_prompt
from judging.services.runs import missing_key_variable
from judging.tables import cost_table, residual_table, sensitivity_table

# Said in every request whatever the project's edited prompt says: JSON mode refuses a request without "JSON".
REWRITE_SYSTEM = 'You rewrite one sentence of a text. Answer with one JSON object: {"rewritten": "<the new sentence>"}.'
IMPORT_PROBLEMS_SHOWN = 20

logger = logging.getLogger(__name__)


class SyntheticSetError(Exception):
    """A set that cannot be made as asked; the message names the field (and for imports the file and line)."""

    def __init__(self, message: str, *, field: str | None = None, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.problems = problems or [message]


@dataclass(frozen=True)
class RewriteOutcome:
    status: str
    rewritten: str
    raw: str
    error: str


def output_sentences(sample: Sample) -> list[list[int]]:
    """The output's sentence spans: stored by the embedding job, or split now with the same splitter."""
    return sample.sentences if sample.sentences is not None else split_sentences(sample.summary)


def sample_key(sample: Sample) -> str:
    """What seeds an output's replacement order: its external id (stable across imports), else its row id."""
    return sample.external_id or str(sample.pk)


def _prompt_of(synthetic_set: SyntheticSet, hallucination_type: str) -> PromptVersion | None:
    return synthetic_set.intrinsic_prompt if hallucination_type == nesting.INTRINSIC else synthetic_set.extrinsic_prompt


def _check_name(project: Project, name: str) -> str:
    name = name.strip()
    if not name:
        raise SyntheticSetError("the set needs a name", field="name")
    if len(name) > 100:
        raise SyntheticSetError("the name is longer than 100 characters", field="name")
    if SyntheticSet.objects.filter(project=project, name=name).exists():
        raise SyntheticSetError(f"a synthetic set named {name!r} already exists in this project", field="name")
    return name


def _check_project(project: Project) -> None:
    if project.kind != Project.Kind.SPANS:
        raise SyntheticSetError(f"project {project.slug!r} is a {project.kind} project; synthetic sets need a span "
                                "project (outputs with sources)", field="project")


def _skip_note(skipped: list[tuple[Sample, str]], considered: int, sentences_per_output: int) -> str:
    if not skipped:
        return ""
    shown = "; ".join(f"{sample_key(sample)} {reason}" for sample, reason in skipped[:10])
    more = f"; and {len(skipped) - 10} more" if len(skipped) > 10 else ""
    return (f"Skipped {len(skipped)} of {considered} outputs that do not have exactly {sentences_per_output} "
            f"sentences: {shown}{more}.")


def create_synthetic_set(
    project: Project,
    *,
    name: str,
    writer: Judge | None,
    seed: int = 0,
    samples: Iterable[Sample] | None = None,
    by: Any = None,
    queue: bool = True,
    sentences_per_output: int = nesting.DEFAULT_SENTENCES_PER_OUTPUT,
) -> SyntheticSet:
    """A set over the project's outputs (or the given ones) with exactly n sentences; the writer rewrites later.

    Outputs with another number of sentences are skipped and named in the
    set's notes. Nothing is written when the set cannot be made.
    """
    _check_project(project)
    name = _check_name(project, name)
    if writer is None:
        raise SyntheticSetError("a set written here needs a writer judge (rewrites written elsewhere come in by "
                                "import)", field="writer")
    if writer.project_id != project.pk or writer.kind != Judge.Kind.RUBRIC:
        raise SyntheticSetError(f"the writer {writer.name!r} is not a rubric LLM judge of this project", field="writer")
    if missing := missing_key_variable(writer):
        raise SyntheticSetError(missing, field="api_key_env")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SyntheticSetError(f"the seed must be a whole number >= 0, not {seed!r}", field="seed")
    if sentences_per_output < 1:
        raise SyntheticSetError("an output needs at least one sentence", field="sentences_per_output")
    chosen = list(samples) if samples is not None else list(
        Sample.objects.filter(project=project).select_related("passage"))
    if foreign := [sample for sample in chosen if sample.project_id != project.pk]:
        raise SyntheticSetError(f"sample {sample_key(foreign[0])} belongs to another project", field="samples")
    eligible: list[Sample] = []
    skipped: list[tuple[Sample, str]] = []
    for sample in chosen:
        reason = nesting.ineligibility(len(output_sentences(sample)), sentences_per_output)
        if reason is None:
            eligible.append(sample)
        else:
            skipped.append((sample, reason))
    if not eligible:
        raise SyntheticSetError(f"none of the {len(chosen)} outputs has exactly {sentences_per_output} sentences, "
                                "so no percentage set can be built", field="samples")
    with transaction.atomic():
        synthetic_set = SyntheticSet.objects.create(
            project=project, name=name, writer=writer, seed=seed, sentences_per_output=sentences_per_output,
            intrinsic_prompt=current_prompt(project, PromptVersion.Kind.INTRINSIC),
            extrinsic_prompt=current_prompt(project, PromptVersion.Kind.EXTRINSIC),
            total=len(eligible) * len(nesting.HALLUCINATION_TYPES) * sentences_per_output,
            error=_skip_note(skipped, len(chosen), sentences_per_output),
            created_by=by if getattr(by, "is_authenticated", False) else None,
        )
        # The gold items fix the set's outputs, so a resumed execution knows them without another list.
        SyntheticItem.objects.bulk_create([
            SyntheticItem(synthetic_set=synthetic_set, sample=sample, type=SyntheticItem.Type.GOLD, percent=0,
                          replaced=[], text=sample.summary)
            for sample in eligible
        ])
        if queue:
            _queue(synthetic_set)
    return synthetic_set


def _queue(synthetic_set: SyntheticSet) -> None:
    from judging import tasks

    set_id = synthetic_set.pk
    transaction.on_commit(lambda: tasks.execute_synthetic_set.delay(set_id))


def resume_synthetic_set(synthetic_set: SyntheticSet, *, retry_failed: bool = False) -> SyntheticSet:
    """Queue the set again (after a stop, or to retry its failed rewrites); stored good rewrites are kept."""
    if synthetic_set.writer is None:
        raise SyntheticSetError("this set was imported and has no writer to ask again", field="writer")
    if is_set_executing(synthetic_set.pk):
        raise SyntheticSetError("the set is being written now; wait until it is done or has stopped",
                                field="status")
    with transaction.atomic():
        if retry_failed:
            synthetic_set.rewrites.filter(status=SyntheticRewrite.Status.ERROR).delete()
        synthetic_set.done = synthetic_set.rewrites.count()
        synthetic_set.status = SyntheticSet.Status.QUEUED
        # Why it stopped last time no longer holds once it goes on; the notes on skipped outputs stay.
        synthetic_set.error = "\n".join(line for line in synthetic_set.error.splitlines()
                                        if not line.startswith("Stopped:"))
        synthetic_set.save(update_fields=["done", "status", "error"])
        _queue(synthetic_set)
    return synthetic_set


def _lock_path(set_id: int) -> Path:
    folder = Path(settings.DATA_DIR) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"synthetic-set-{set_id}.lock"


@contextmanager
def execution_lock(set_id: int) -> Iterator[bool]:
    """Hold the set's lock file while writing it; yields False when another process holds it.

    An flock belongs to the open file, so the kernel frees it however the
    holder ends (SIGKILL included): a free lock on a running set means nobody
    is writing it any more, and it may be queued again.
    """
    with open(_lock_path(set_id), "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def is_set_executing(set_id: int) -> bool:
    with execution_lock(set_id) as free:
        return not free


def resume_stale_synthetic_sets() -> list[int]:
    """Queue again every queued or running set that no process is writing (the worker calls this on start).

    The embedded broker drops a message once a worker takes it, so a worker
    killed mid-set would otherwise leave the set running for ever. A set whose
    message is still waiting gets a second one, which finds it done or locked.
    """
    from judging import tasks

    resumed = []
    for set_id in SyntheticSet.objects.filter(
        status__in=(SyntheticSet.Status.QUEUED, SyntheticSet.Status.RUNNING), writer__isnull=False
    ).order_by("pk").values_list("pk", flat=True):
        if not is_set_executing(set_id):
            tasks.execute_synthetic_set.delay(set_id)
            resumed.append(set_id)
    if resumed:
        logger.info("synthetic sets queued again after a worker start: %s", ", ".join(map(str, resumed)))
    return resumed


def _messages(prompt: str, *, source: str, output: str, sentence: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": REWRITE_SYSTEM},
        {"role": "user", "content": prompts.fill_rewrite_prompt(prompt, source=source, output=output, sentence=sentence)},
    ]


def write_rewrite(endpoint: Endpoint, messages: list[dict[str, str]], original: str) -> RewriteOutcome:
    """Ask the writer for one rewrite; any failure comes back as an error with the raw answer, never a guess."""
    try:
        answer = chat(endpoint, messages, json_schema=prompts.rewrite_schema(), temperature=0.0)
    except EndpointError as error:
        return RewriteOutcome("error", "", "", str(error))
    raw = answer.text or ""
    parsed = first_json_object(raw)
    if parsed is None:
        return RewriteOutcome("error", "", raw, "the answer holds no JSON object")
    if "rewritten" not in parsed:
        return RewriteOutcome("error", "", raw, 'the answer\'s JSON has no "rewritten" field')
    problem = nesting.rewrite_problem(original, parsed["rewritten"])
    if problem is not None:
        return RewriteOutcome("error", "", raw, problem)
    return RewriteOutcome("ok", parsed["rewritten"].strip(), raw, "")


def _fail(synthetic_set: SyntheticSet, message: str) -> SyntheticSet:
    notes = "\n".join(line for line in (synthetic_set.error, message) if line)
    SyntheticSet.objects.filter(pk=synthetic_set.pk).update(status=SyntheticSet.Status.FAILED, error=notes)
    synthetic_set.refresh_from_db()
    return synthetic_set


def _gold_items(synthetic_set: SyntheticSet) -> list[SyntheticItem]:
    return list(synthetic_set.items.filter(type=SyntheticItem.Type.GOLD).select_related("sample__passage")
                .order_by("sample_id"))


def execute_synthetic_set(set_id: int) -> SyntheticSet:
    """Write every rewrite the set still lacks, then build its items. Runs again safely (task redelivery).

    One process at a time per set (a lock file); a second delivery while the
    first is writing returns at once.
    """
    with execution_lock(set_id) as held:
        synthetic_set = SyntheticSet.objects.select_related(
            "project", "writer", "intrinsic_prompt", "extrinsic_prompt").get(pk=set_id)
        if not held or synthetic_set.status == SyntheticSet.Status.DONE:
            return synthetic_set
        synthetic_set = _execute(synthetic_set)
    if synthetic_set.status == SyntheticSet.Status.DONE:
        _lock_path(set_id).unlink(missing_ok=True)  # a done set is never written again
    return synthetic_set


def _execute(synthetic_set: SyntheticSet) -> SyntheticSet:
    writer = synthetic_set.writer
    if writer is None:
        if not synthetic_set.rewrites.exists():
            return _fail(synthetic_set, "The set has no writer (it was deleted) and no rewrites.")
    elif missing := missing_key_variable(writer):
        return _fail(synthetic_set, f"Stopped: {missing}")
    elif synthetic_set.intrinsic_prompt is None or synthetic_set.extrinsic_prompt is None:
        return _fail(synthetic_set, "Stopped: the set records no rewrite prompt to send.")
    synthetic_set.status = SyntheticSet.Status.RUNNING
    synthetic_set.save(update_fields=["status"])
    try:
        if writer is not None:
            _write_missing(synthetic_set, writer)
        build_items(synthetic_set)
    except Exception as error:
        _fail(synthetic_set, f"Stopped: {type(error).__name__}: {error}")
        raise
    SyntheticSet.objects.filter(pk=synthetic_set.pk).update(status=SyntheticSet.Status.DONE)
    synthetic_set.refresh_from_db()
    return synthetic_set


def _write_missing(synthetic_set: SyntheticSet, writer: Judge) -> None:
    n = synthetic_set.sentences_per_output
    stored = set(synthetic_set.rewrites.values_list("sample_id", "type", "sentence_index"))
    done = len(stored)
    jobs = []
    for gold in _gold_items(synthetic_set):
        sample = gold.sample
        spans = output_sentences(sample)
        if len(spans) != n:
            continue  # the output changed since the set was made; build_items says so
        for hallucination_type in nesting.HALLUCINATION_TYPES:
            prompt = _prompt_of(synthetic_set, hallucination_type)
            for index, (start, end) in enumerate(spans):
                if (sample.pk, hallucination_type, index) in stored:
                    continue
                original = sample.summary[start:end]
                messages = _messages(prompt.text, source=sample.passage.text, output=sample.summary,
                                     sentence=original)
                jobs.append((sample, hallucination_type, index, original, prompt, messages))
    SyntheticSet.objects.filter(pk=synthetic_set.pk).update(done=done)
    if not jobs:
        return
    endpoint = endpoint_for(writer)
    # Calls run in threads up to the writer's concurrency; rows are written here, in this thread, one per answer,
    # so a killed worker loses at most the answers in flight and a resumed run asks only for those.
    with ThreadPoolExecutor(max_workers=max(1, min(writer.concurrency, len(jobs)))) as pool:
        futures = {pool.submit(write_rewrite, endpoint, job[5], job[3]): job for job in jobs}
        try:
            for future in as_completed(futures):
                sample, hallucination_type, index, original, prompt, _ = futures[future]
                outcome = future.result()
                try:
                    SyntheticRewrite.objects.get_or_create(
                        synthetic_set=synthetic_set, sample=sample, sentence_index=index, type=hallucination_type,
                        defaults={"original": original, "rewritten": outcome.rewritten, "prompt": prompt,
                                  "raw": outcome.raw, "status": outcome.status, "error": outcome.error},
                    )
                except IntegrityError:
                    pass  # stored meanwhile by another delivery of the task
                done += 1
                SyntheticSet.objects.filter(pk=synthetic_set.pk).update(done=done)
        except BaseException:
            # A time limit or a bug: do not send the calls still waiting (what is stored stays stored).
            pool.shutdown(wait=False, cancel_futures=True)
            raise


def build_items(synthetic_set: SyntheticSet) -> int:
    """Create the items the stored rewrites allow and that do not exist yet; returns how many were created.

    An (output, type) gets its n items only when all n of its sentences were
    rewritten; otherwise none (the set summary counts them as not built).
    """
    n = synthetic_set.sentences_per_output
    written: dict[int, dict[str, dict[int, str]]] = defaultdict(lambda: defaultdict(dict))
    for sample_id, hallucination_type, index, rewritten in synthetic_set.rewrites.filter(
        status=SyntheticRewrite.Status.OK
    ).values_list("sample_id", "type", "sentence_index", "rewritten"):
        written[sample_id][hallucination_type][index] = rewritten
    existing = set(synthetic_set.items.values_list("sample_id", "type", "percent"))
    new_items = []
    for gold in _gold_items(synthetic_set):
        sample = gold.sample
        spans = output_sentences(sample)
        if len(spans) != n or sample.summary != gold.text:
            continue  # the output was edited after the set was made: its rewrites no longer fit
        planned = nesting.plan_items(gold.text, spans, written.get(sample.pk, {}), seed=synthetic_set.seed,
                                     sample_key=sample_key(sample))
        for item in planned:
            if (sample.pk, item.type, item.percent) not in existing:
                new_items.append(SyntheticItem(synthetic_set=synthetic_set, sample=sample, type=item.type,
                                               percent=item.percent, replaced=list(item.replaced), text=item.text))
    SyntheticItem.objects.bulk_create(new_items, ignore_conflicts=True)
    return len(new_items)


def synthetic_summary(synthetic_set: SyntheticSet, *, failures_shown: int = 20) -> dict[str, Any]:
    """What the set holds, for the page and `synthetic_set --json`: outputs, rewrites, items, what is missing."""
    synthetic_set.refresh_from_db()
    rewrites = Counter(synthetic_set.rewrites.values_list("status", flat=True))
    items = Counter(synthetic_set.items.values_list("type", flat=True))
    outputs = items.get(SyntheticItem.Type.GOLD, 0)
    typed_outputs = Counter(
        synthetic_set.items.exclude(type=SyntheticItem.Type.GOLD).filter(percent=100).values_list("type", flat=True))
    failures = [
        {"sample": sample_key(rewrite.sample), "sentence": rewrite.sentence_index, "type": rewrite.type,
         "error": rewrite.error, "raw": rewrite.raw}
        for rewrite in synthetic_set.rewrites.filter(status=SyntheticRewrite.Status.ERROR)
        .select_related("sample")[:failures_shown]
    ]
    finished = synthetic_set.status in (SyntheticSet.Status.DONE, SyntheticSet.Status.FAILED)
    return {
        "set": synthetic_set.pk,
        "name": synthetic_set.name,
        "status": synthetic_set.status,
        "seed": synthetic_set.seed,
        "sentences_per_output": synthetic_set.sentences_per_output,
        "writer": synthetic_set.writer.name if synthetic_set.writer else None,
        "prompts": {kind: (prompt.number if prompt else None) for kind, prompt in (
            ("intrinsic", synthetic_set.intrinsic_prompt), ("extrinsic", synthetic_set.extrinsic_prompt))},
        "outputs": outputs,
        "rewrites": {"needed": synthetic_set.total, "ok": rewrites.get("ok", 0), "error": rewrites.get("error", 0)},
        "items": {kind: items.get(kind, 0) for kind in SyntheticItem.Type.values},
        # Outputs whose items of a type were not built because a rewrite failed (or, imported, is missing).
        "not_built": {kind: (outputs - typed_outputs.get(kind, 0)) if finished else None
                      for kind in nesting.HALLUCINATION_TYPES},
        "failed_rewrites": failures,
        "notes": [line for line in synthetic_set.error.splitlines() if line],
    }


# ----------------------------------------------------------------------------------------- import


def _import_problem(filename: str, line: int, field: str | None, message: str) -> str:
    where = f"{filename}, line {line}" + (f", field {field!r}" if field else "")
    return f"{where}: {message}"


def import_rewrites(
    project: Project,
    name: str,
    jsonl: bytes,
    filename: str,
    *,
    seed: int = 0,
    by: Any = None,
    sentences_per_output: int = nesting.DEFAULT_SENTENCES_PER_OUTPUT,
) -> SyntheticSet:
    """A set from rewrites written elsewhere: JSONL lines {"sample", "sentence", "type", "rewritten"}.

    All or nothing: every problem is named by file, line and field, and a file
    with any problem writes nothing.
    """
    _check_project(project)
    name = _check_name(project, name)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SyntheticSetError(f"the seed must be a whole number >= 0, not {seed!r}", field="seed")
    try:
        text = jsonl.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SyntheticSetError(f"{filename}: not UTF-8 text ({error.reason} at byte {error.start})",
                                field="file") from error
    by_external: dict[str, list[Sample]] = defaultdict(list)
    for sample in Sample.objects.filter(project=project).select_related("passage"):
        by_external[sample.external_id].append(sample)
    problems: list[str] = []
    seen: dict[tuple[int, str, int], int] = {}
    accepted: list[tuple[Sample, str, int, str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        problem = _read_import_line(line, number, filename, by_external, sentences_per_output, seen, accepted)
        if problem:
            problems.append(problem)
    if not accepted and not problems:
        problems.append(f"{filename}: no rewrites in the file")
    if problems:
        shown = problems[:IMPORT_PROBLEMS_SHOWN]
        more = f"\n... and {len(problems) - len(shown)} more problems" if len(problems) > len(shown) else ""
        raise SyntheticSetError("\n".join(shown) + more, field="file", problems=problems)
    samples = list({sample.pk: sample for sample, *_ in accepted}.values())
    with transaction.atomic():
        synthetic_set = SyntheticSet.objects.create(
            project=project, name=name, writer=None, seed=seed, sentences_per_output=sentences_per_output,
            status=SyntheticSet.Status.RUNNING, total=len(accepted), done=len(accepted),
            created_by=by if getattr(by, "is_authenticated", False) else None,
        )
        SyntheticItem.objects.bulk_create([
            SyntheticItem(synthetic_set=synthetic_set, sample=sample, type=SyntheticItem.Type.GOLD, percent=0,
                          replaced=[], text=sample.summary)
            for sample in samples
        ])
        SyntheticRewrite.objects.bulk_create([
            SyntheticRewrite(synthetic_set=synthetic_set, sample=sample, sentence_index=index, type=kind,
                             original=original, rewritten=rewritten, status=SyntheticRewrite.Status.OK,
                             raw=json.dumps({"rewritten": rewritten}, ensure_ascii=False))
            for sample, kind, index, original, rewritten in accepted
        ])
        build_items(synthetic_set)
        synthetic_set.status = SyntheticSet.Status.DONE
        synthetic_set.error = _incomplete_note(accepted, sentences_per_output)
        synthetic_set.save(update_fields=["status", "error"])
    return synthetic_set


def _incomplete_note(accepted: list[tuple[Sample, str, int, str, str]], n: int) -> str:
    """Which imported (output, type) pairs lack some sentences, so their items were not built."""
    covered: dict[tuple[str, str], set[int]] = defaultdict(set)
    for sample, kind, index, *_ in accepted:
        covered[(sample_key(sample), kind)].add(index)
    lacking = [f"{kind} of {key} lacks sentence(s) {', '.join(str(i) for i in range(n) if i not in indices)}"
               for (key, kind), indices in covered.items() if len(indices) < n]
    if not lacking:
        return ""
    return f"Not built, because the file does not rewrite every sentence: {'; '.join(lacking[:10])}."


def _read_import_line(
    line: str,
    number: int,
    filename: str,
    by_external: dict[str, list[Sample]],
    n: int,
    seen: dict[tuple[int, str, int], int],
    accepted: list[tuple[Sample, str, int, str, str]],
) -> str | None:
    """Check one line; on success append it to `accepted` and return None, else return the problem."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        return _import_problem(filename, number, None, f"not a JSON object ({error.msg} at column {error.colno})")
    if not isinstance(record, dict):
        return _import_problem(filename, number, None, f"not a JSON object (got {type(record).__name__})")
    for field in ("sample", "sentence", "type", "rewritten"):
        if field not in record:
            return _import_problem(filename, number, field, "missing")
    external = record["sample"]
    if isinstance(external, bool) or not isinstance(external, str | int):
        return _import_problem(filename, number, "sample", "must be the sample's external id (text or number)")
    matches = by_external.get(str(external), [])
    if not matches:
        return _import_problem(filename, number, "sample", f"no sample with external id {str(external)!r} in "
                                                           "this project")
    if len(matches) > 1:
        return _import_problem(filename, number, "sample", f"external id {str(external)!r} names {len(matches)} "
                                                           "samples in this project")
    sample = matches[0]
    spans = output_sentences(sample)
    if (reason := nesting.ineligibility(len(spans), n)) is not None:
        return _import_problem(filename, number, "sample", f"output {str(external)!r} {reason}")
    kind = record["type"]
    if kind not in nesting.HALLUCINATION_TYPES:
        return _import_problem(filename, number, "type", f"{kind!r} is not 'intrinsic' or 'extrinsic'")
    index = record["sentence"]
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
        return _import_problem(filename, number, "sentence", f"{index!r} is not a sentence index 0..{n - 1}")
    start, end = spans[index]
    original = sample.summary[start:end]
    if (problem := nesting.rewrite_problem(original, record["rewritten"])) is not None:
        return _import_problem(filename, number, "rewritten", problem)
    key = (sample.pk, kind, index)
    if key in seen:
        return _import_problem(filename, number, "sentence", f"sentence {index} of {str(external)!r} ({kind}) was "
                                                             f"already given on line {seen[key]}")
    seen[key] = number
    accepted.append((sample, kind, index, original, record["rewritten"].strip()))
    return None


# ----------------------------------------------------------------------------------------- tables


def latest_runs(synthetic_set: SyntheticSet) -> list[JudgeRun]:
    """Each judge's most recent run over the set (any status: a run in progress shows what it has so far)."""
    latest: dict[int, JudgeRun] = {}
    for run in synthetic_set.runs.select_related("judge").order_by("-created_at", "-id"):
        latest.setdefault(run.judge_id, run)
    return sorted(latest.values(), key=lambda run: run.judge.name)


def table_rows(runs: Iterable[JudgeRun]) -> list[dict[str, Any]]:
    """One plain row per judgement of a synthetic item, as judging.tables reads them."""
    rows = []
    judgements = (Judgement.objects.filter(run__in=list(runs), synthetic_item__isnull=False)
                  .select_related("run__judge", "synthetic_item").order_by("run__judge__name", "id"))
    for judgement in judgements:
        item = judgement.synthetic_item
        judge = judgement.run.judge
        ok = judgement.status == Judgement.Status.OK
        rows.append({
            "judge": judge.name, "mode": judge.mode, "type": item.type, "percent": item.percent,
            "expected": item.expected_score, "score": judgement.display_score if ok else None,
            "latency": judgement.latency_seconds, "output_tokens": judgement.output_tokens, "cost": judgement.cost,
            "sample": item.sample_id, "cached": judgement.cached, "status": judgement.status,
        })
    return rows


def paper_tables(synthetic_set: SyntheticSet) -> dict[str, Any]:
    """The residual, sensitivity and cost tables of the judges' latest runs over the set."""
    runs = latest_runs(synthetic_set)
    rows = table_rows(runs)
    return {
        "residual": residual_table(rows),
        "sensitivity": sensitivity_table(rows, sentences_per_output=synthetic_set.sentences_per_output),
        "cost": cost_table(rows),
        "runs": [{"run": run.pk, "judge": run.judge.name, "mode": run.judge.mode, "status": run.status,
                  "judged": run.done, "total": run.total} for run in runs],
    }
