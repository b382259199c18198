"""Reading one judgement line: its fields checked one by one, each error naming the file, the line and the field."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from annotate.imported_json import not_text
from annotate.services.ingest.checks import ImportFailed, _shown, max_length
from annotate.services.pairs.ingest.lines import Line
from judging.models import Judge, Judgement
from judging.services.ingest.samples import SampleFinder

FIELDS = frozenset({
    "sample", "batch", "source", "output", "judge", "score", "p", "reasoning", "raw", "error", "status",
    "latency", "input_tokens", "output_tokens", "cost", "sentence_scores", "cached", "run",
    "cached_call_latency", "cached_call_input_tokens", "cached_call_output_tokens",
})
# Keys of judging.services.export's JSONL that say how the judge was set up, or name the sample in the exporting
# project's own ways (its database id; the external id again, under the API's name): an import makes its own judge
# and finds the sample by ``sample``.
EXPORT_ONLY = frozenset({"kind", "mode", "rubric_version", "display_score", "sample_id", "sample_external_id"})
# An answer from the call cache made no call: an export writes null latency and tokens for it and the earlier call's
# figures under these keys; the import keeps those as the row's, as a run here stores a cached answer's.
CACHED_CALL = {"latency": "cached_call_latency", "input_tokens": "cached_call_input_tokens",
               "output_tokens": "cached_call_output_tokens"}
MAX_RUN_LABEL = 100  # characters of a "run" given as a name
STATUSES = tuple(Judgement.Status.values)  # ok, parse_error, error
MAX_TOKENS = 2_147_483_647  # PositiveIntegerField
# The most one judgement may report. Larger is a mistake (a unit: milliseconds as seconds, cents as dollars), and
# a file of values near 1e308 made the run's sums overflow to infinity (its API a 500 ever after). A week covers
# the slowest call, batch APIs' 24-hour windows included; US$ 10,000 is thousands of times the dearest call made
# today. Sums of a run's judgements (a billion of them) stay far from overflowing.
MAX_LATENCY_SECONDS = 7 * 24 * 3600
MAX_COST_USD = 10_000.0


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


CSV_HEADER_SHOWN = 80  # characters of a CSV file's header line quoted in its refusal
CSV_SNIFF = 64 * 1024  # bytes (or characters) read to tell a CSV file


def csv_refusal(file: str, content: bytes | str) -> str | None:
    """The one message for a CSV file (an export's CSV, say), or None when the file may be JSONL.

    Read line by line, each CSV row would be its own "not valid JSON" error, a
    hundred of them for one wrong format. A file is taken for CSV when its
    first non-blank line is not JSON yet holds commas (a header such as
    ``sample,batch,judge,...``), or when it is named .csv and its first line is
    not JSON. A JSONL file starts with ``{``, so none is refused; other lines
    that are JSON but not objects get read_lines' own message.
    """
    if not_text(content) is not None:  # UTF-16, an archive: read_lines says what it is, not "a CSV file"
        return None
    # The start of the file tells; a JSONL line longer than this still starts with "{".
    start = content[:CSV_SNIFF]
    text = start.decode("utf-8-sig", errors="replace") if isinstance(start, bytes) else start
    first = next((line.strip() for line in text.split("\n") if line.strip()), "")
    if not first or first.startswith("{") or _is_json(first):
        return None
    named_csv = file.lower().endswith(".csv")
    if "," not in first and not named_csv:
        return None
    header = first if len(first) <= CSV_HEADER_SHOWN else first[:CSV_HEADER_SHOWN] + "..."
    return (f"{file}: this is a CSV file (its first line is {header!r}); only JSONL imports: one JSON object a "
            "line, as the JSONL export writes. Nothing was imported.")


@dataclass
class ParsedJudgement:
    line: Line
    sample_id: int
    judge: str
    status: str
    score: int | None
    probability: float | None
    reasoning: str
    raw: str
    error: str
    latency: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    sentence_scores: list[float | None] | None
    cached: bool
    source_run: str | None  # the run named by the line (as text), None when the line names none

    @property
    def run_key(self) -> tuple[str, str | None]:
        """Lines with the same key become one imported run."""
        return (self.judge, self.source_run)


def _string(row: dict[str, Any], name: str, where: str, *, limit: int | None = None) -> str:
    value = row.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ImportFailed(f"{where}: field '{name}' must be a string, got {_shown(value)}")
    if limit is not None and len(value) > limit:
        raise ImportFailed(f"{where}: field '{name}' has {len(value)} characters; the limit is {limit}")
    return value


def _number(
    row: dict[str, Any], name: str, where: str, *, at_most: float = math.inf, why: str = ""
) -> float | None:
    """A number from 0 to ``at_most``; ``why`` says what the bound is, after it."""
    value = row.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ImportFailed(f"{where}: field '{name}' must be a number, got {_shown(value)}")
    if why and value > at_most:
        raise ImportFailed(f"{where}: field '{name}' must be at most {at_most:g}{why}, got {_shown(value)}")
    if not 0 <= value <= at_most:
        limit = "" if at_most == math.inf or why else f" and at most {at_most:g}"
        raise ImportFailed(f"{where}: field '{name}' must be 0 or more{limit}, got {_shown(value)}")
    return float(value)


def _latency(row: dict[str, Any], name: str, where: str) -> float | None:
    return _number(row, name, where, at_most=MAX_LATENCY_SECONDS,
                   why=" seconds (a week: a longer call is a mistake, milliseconds given as seconds, say)")


def _cost(row: dict[str, Any], where: str) -> float | None:
    return _number(row, "cost", where, at_most=MAX_COST_USD,
                   why=" US$ for one call (no call costs that much: cents given as dollars, say)")


def _count(row: dict[str, Any], name: str, where: str) -> int | None:
    value = row.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise ImportFailed(f"{where}: field '{name}' must be a whole number from 0 to {MAX_TOKENS}, got {_shown(value)}")
    return value


def _score(row: dict[str, Any], where: str) -> int | None:
    """An integer 1..5 exactly as given: 4.0, "4" and true are refused, never coerced."""
    value = row.get("score")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise ImportFailed(f"{where}: field 'score' must be an integer from 1 to 5, got {_shown(value)}")
    return value


def _sentence_scores(row: dict[str, Any], where: str, *, probability: bool) -> list[float | None] | None:
    """Per-sentence figures on the line's own scale (p 0..1, or score 1..5); null where a sentence has none."""
    value = row.get("sentence_scores")
    if value is None:
        return None
    low, high = (0.0, 1.0) if probability else (1.0, 5.0)
    scale = "p, from 0 to 1" if probability else "scores, from 1 to 5"
    if not isinstance(value, list) or not value:
        raise ImportFailed(f"{where}: field 'sentence_scores' must be a list with one figure (or null) per output "
                           f"sentence, got {_shown(value)}")
    for figure in value:
        if figure is None:
            continue
        if isinstance(figure, bool) or not isinstance(figure, int | float) or not low <= figure <= high:
            raise ImportFailed(f"{where}: field 'sentence_scores' holds {_shown(figure)}; its figures are {scale} "
                               "like the line's number (or null)")
    return [None if figure is None else float(figure) for figure in value]


def _call_figures(row: dict[str, Any], where: str, *, cached: bool) -> dict[str, Any]:
    """Latency and tokens as stored: the line's own, or for an answer from the cache its ``cached_call_*`` (a file
    written before those keys gave the earlier call's figures as the line's own, and still may)."""
    figures: dict[str, Any] = {"latency": _latency(row, "latency", where),
                               "input_tokens": _count(row, "input_tokens", where),
                               "output_tokens": _count(row, "output_tokens", where)}
    for name, earlier in CACHED_CALL.items():
        given = _latency(row, earlier, where) if name == "latency" else _count(row, earlier, where)
        if given is None:
            continue
        if not cached:
            raise ImportFailed(f"{where}: field '{earlier}' is only for an answer from the call cache (cached true); "
                               f"this judgement's own call gives '{name}'")
        if figures[name] is not None:
            raise ImportFailed(f"{where}: fields '{name}' and '{earlier}' are both given; an answer from the call "
                               f"cache made no call of its own: give the earlier call's figure as '{earlier}' only")
        figures[name] = given
    return figures


def _flag(row: dict[str, Any], name: str, where: str) -> bool:
    value = row.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ImportFailed(f"{where}: field '{name}' must be true or false, got {_shown(value)}")
    return value


def _source_run(row: dict[str, Any], where: str) -> str | None:
    """The run the line came from where it was judged: a whole number (an export's run id) or a name."""
    value = row.get("run")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str) or (isinstance(value, int) and value < 0):
        raise ImportFailed(f"{where}: field 'run' must be a run id (a whole number) or a run name, got {_shown(value)}")
    label = str(value)
    if not label.strip() or len(label) > MAX_RUN_LABEL:
        raise ImportFailed(f"{where}: field 'run' must be a run id or a name of 1 to {MAX_RUN_LABEL} characters, "
                           f"got {_shown(value)}")
    return label


def _sample_of(line: Line, finder: SampleFinder) -> int:
    row, where = line.row, line.where
    batch = row.get("batch")
    if batch is not None and (not isinstance(batch, str | int) or isinstance(batch, bool) or str(batch) == ""):
        raise ImportFailed(f"{where}: field 'batch' must be a batch name, got {_shown(batch)}")
    batch_name = None if batch is None else str(batch)
    has_id = row.get("sample") is not None
    has_texts = row.get("source") is not None or row.get("output") is not None
    if has_id and has_texts:
        raise ImportFailed(f"{where}: give field 'sample' or fields 'source' and 'output', not both")
    if has_id:
        external_id = row["sample"]
        if isinstance(external_id, bool) or not isinstance(external_id, str | int) or str(external_id) == "":
            raise ImportFailed(f"{where}: field 'sample' must be a sample's external id, got {_shown(external_id)}")
        return finder.by_external_id(str(external_id), batch_name, where)
    if not has_texts:
        raise ImportFailed(f"{where}: missing field 'sample' (the sample's external id) or 'source' and 'output'")
    for name in ("source", "output"):
        if not isinstance(row.get(name), str):
            raise ImportFailed(f"{where}: field '{name}' must be a string (the {'passage' if name == 'source' else 'summary'} "
                               f"text, exactly), got {_shown(row.get(name))}")
    return finder.by_texts(row["source"], row["output"], batch_name, where)


def parse_line(line: Line, finder: SampleFinder) -> ParsedJudgement:
    row, where = line.row, line.where
    for name in row:
        if name not in FIELDS and name not in EXPORT_ONLY:
            raise ImportFailed(f"{where}: unknown field {name!r}; a judgement line has only {', '.join(sorted(FIELDS))}")
    judge = row.get("judge")
    if not isinstance(judge, str) or not judge.strip():
        missing = "missing field 'judge'" if judge is None else f"field 'judge' must be a name, got {_shown(judge)}"
        raise ImportFailed(f"{where}: {missing}")
    if judge != judge.strip():
        raise ImportFailed(f"{where}: field 'judge' {_shown(judge)} starts or ends with white space")
    if len(judge) > max_length(Judge, "name"):
        raise ImportFailed(f"{where}: field 'judge' has {len(judge)} characters; the limit is {max_length(Judge, 'name')}")
    status = row.get("status", "ok")
    if status not in STATUSES:
        raise ImportFailed(f"{where}: field 'status' must be one of {', '.join(STATUSES)}, got {_shown(status)}")
    score = _score(row, where)
    probability = _number(row, "p", where, at_most=1.0)
    if status == Judgement.Status.OK:
        if score is None and probability is None:
            raise ImportFailed(f"{where}: missing field 'score' (an integer 1..5) or 'p' (0..1); status is ok")
        if score is not None and probability is not None:
            raise ImportFailed(f"{where}: fields 'score' and 'p' are both given; a judgement has one of them")
    elif score is not None or probability is not None:
        given = "score" if score is not None else "p"
        raise ImportFailed(
            f"{where}: field '{given}' must be absent when status is {status}: a failed judgement has no number"
        )
    sentence_scores = _sentence_scores(row, where, probability=probability is not None)
    if sentence_scores is not None and status != Judgement.Status.OK:
        raise ImportFailed(f"{where}: field 'sentence_scores' must be absent when status is {status}")
    cached = _flag(row, "cached", where)
    figures = _call_figures(row, where, cached=cached)
    return ParsedJudgement(
        line=line,
        sample_id=_sample_of(line, finder),
        judge=judge,
        status=status,
        score=score,
        probability=probability,
        reasoning=_string(row, "reasoning", where),
        raw=_string(row, "raw", where),
        error=_string(row, "error", where),
        latency=figures["latency"],
        input_tokens=figures["input_tokens"],
        output_tokens=figures["output_tokens"],
        cost=_cost(row, where),
        sentence_scores=sentence_scores,
        cached=cached,
        source_run=_source_run(row, where),
    )
