"""manage.py judge --project SLUG --base-url URL --model NAME ...: a rubric judge run in the foreground.

The same service as the background job (judging.services.runs.execute_run),
so what this prints is what the pages show. Every answer in the call cache is
reused (a repeated run makes no call); --ask-again asks again for those that
could not be read as a score. Everything that can be checked
before a run is checked first (project, settings, the key variable, the
endpoint and its model), and a refusal writes nothing. The project's judge for
the endpoint, model and mode is shared: a key variable, concurrency or price
other than its own is refused, naming the judge and each change, unless
--update (judging.services.judges.endpoint_judge). While the run executes, a
progress line goes to stderr every few seconds (--quiet: none); Ctrl-C cancels
the run, keeping the answers of the calls in flight, prints one line and exits
with 130 (judging.services.runs.interrupt).

With --json, one object: ``run``, ``items``, ``scored``, ``failed``, ``calls``
(HTTP requests sent, retries included), ``cached`` (answered from the call
cache), ``seconds``, the token and cost totals of the run's page (``input_tokens``,
``output_tokens`` and ``cost`` of the calls sent, ``calls_with_usage``,
``calls_without_usage``, ``cached_input_tokens_saved``,
``cached_output_tokens_saved``, ``cached_answers_with_usage``,
``cached_answers_without_usage``; null when unknown, the reason in ``reasons``,
e.g. a cost null for a judge without prices), and ``judgements``: one entry per sample, in the samples' order
in the project, each the JSONL export's row of that judgement (the same keys and values, built by the same
function: judging.services.export.judgement_row): ``sample_id`` (the database id, the API's ``sample``),
``sample_external_id``, ``batch`` (external ids may repeat across batches), ``judge``, ``kind``, ``mode``, ``run``,
``rubric_version``, ``status`` (ok, parse_error, error), ``score`` and ``p`` (null unless ``status`` is ok),
``display_score``, ``reasoning``, ``raw`` (the endpoint's last answer) and ``error`` (null when blank),
``latency``, ``input_tokens``, ``output_tokens`` and ``cost`` (what this run spent: null, null and 0 for an answer
from the call cache, whose earlier call's figures are in ``cached_call_latency``, ``cached_call_input_tokens`` and
``cached_call_output_tokens``; a cost null, not known, for a call sent while the judge had no prices), ``cached``
and ``sentence_scores``; ``sample`` is, as before, the external id, i.e. the id in the imported file, or the
database id as text when there is none, and ``probability`` is ``p`` again.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.management.commands.agreement import get_project, positive_int
from annotate.models import Project
from judging.clients import EndpointError, check_endpoint, endpoint_for
from judging.clients.chat.allowed import operator_command
from judging.management.foreground import PROGRESS_SECONDS, ProgressLines, cancel_at_once, cancelled_line, stop_at_once
from judging.models import Judge, JudgeRun
from judging.services.judges import (
    JudgeSettingsError,
    changes_refused,
    clean_judge_settings,
    endpoint_judge,
    endpoint_judge_changes,
    find_endpoint_judge,
)
from judging.services.runs import (
    BLOCKING_SETTINGS,
    execute_new_run,
    interrupt,
    missing_key_variable,
    needs_endpoint,
    quick_check,
    run_summary,
    start_run,
)
from judging.services.runs.interrupt import EXIT_INTERRUPTED, cancel_on_ctrl_c

OPTION_OF = {
    "base_url": "--base-url",
    "model": "--model",
    "api_key_env": "--api-key-env",
    "concurrency": "--concurrency",
    "with_reasoning": "--score-only",
    "price_input_per_mtok": "--price-input",
    "price_output_per_mtok": "--price-output",
}


class Command(BaseCommand):
    help = (
        "Score a span project's samples with a rubric LLM judge on any OpenAI-compatible endpoint, in the "
        "foreground. Creates or reuses the project's judge for that endpoint, model and mode; identical calls are "
        "answered from the cache. --json prints {run, items, scored, failed, calls, cached, seconds, input_tokens, "
        "output_tokens, cost, ... (the run page's token and cost totals; null when unknown, why in reasons), judgements: "
        "[{sample, sample_id, sample_external_id, batch, status, score, reasoning, raw, error, latency, input_tokens, "
        "output_tokens, cost, cached, ...}]} (each judgement as the JSONL export's row of it); sample is the external "
        "id (database id when none), sample_id the database id."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="slug of a span project")
        parser.add_argument("--base-url", required=True, help="the endpoint, e.g. http://127.0.0.1:11434/v1")
        parser.add_argument("--model", required=True, help="the model name the endpoint serves")
        parser.add_argument("--api-key-env", default=None,
                            help="NAME of the environment variable holding the API key (never the key itself); "
                                 "leave out for servers that need no key (an existing judge keeps its own)")
        parser.add_argument("--score-only", action="store_true",
                            help='ask for {"score"} alone instead of {"reasoning", "score"}')
        parser.add_argument("--concurrency", default=None, help="calls in flight at once (1-256; default: the "
                                                                "judge's setting, 4 for a new judge)")
        parser.add_argument("--price-input", default=None, metavar="USD",
                            help="US$ per million input tokens, kept on the judge: 0 for a free (local) server, whose "
                                 "calls then cost 0; an empty value ('') for not known (default: the judge's; not known "
                                 "for a new judge, and then the run's cost is not known: give the prices before the "
                                 "first run, since later runs answered from the call cache pay nothing)")
        parser.add_argument("--price-output", default=None, metavar="USD",
                            help="US$ per million output tokens, the same (0 free, '' not known)")
        parser.add_argument("--samples", default="all", choices=("all", "flagged"),
                            help="all samples of the project (default) or the flagged ones")
        parser.add_argument("--ask-again", action="store_true",
                            help="ask again for the calls whose cached answer could not be read as a score (parse "
                                 "errors) instead of reusing it; by default every cached answer is reused")
        parser.add_argument("--update", action="store_true",
                            help="let --api-key-env, --concurrency, --price-input and --price-output change the "
                                 "project's existing judge for this endpoint, model and mode (refused without it, "
                                 "naming the judge and each change)")
        parser.add_argument("--quiet", action="store_true",
                            help=f"no progress lines on stderr (by default one every {PROGRESS_SECONDS:g} s)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        with operator_command():  # whoever runs a command may name any API-key variable
            self._handle(**options)

    def _handle(self, **options: Any) -> None:
        # From here on, Ctrl-C cancels the run executing here instead of leaving it "running" (interrupt module).
        self.started: list[JudgeRun] = []
        with cancel_on_ctrl_c("judge"):
            try:
                self._judge(options)
            except KeyboardInterrupt:  # the second Ctrl-C
                stop_at_once(cancel_at_once(self.started, "judge"))

    def _judge(self, options: dict[str, Any]) -> None:
        project = get_project(options["project"])
        if project.kind != Project.Kind.SPANS:
            raise CommandError(f"project {project.slug!r} is a {project.kind} project: judges score span projects "
                               "(an output against its source)")
        concurrency = None if options["concurrency"] is None else positive_int(options["concurrency"],
                                                                                "--concurrency")
        settings = {"base_url": options["base_url"], "model": options["model"],
                    "with_reasoning": not options["score_only"]}
        if options["api_key_env"] is not None:
            settings["api_key_env"] = options["api_key_env"]
        if concurrency is not None:
            settings["concurrency"] = concurrency
        prices = {field: options[option] for field, option in (("price_input_per_mtok", "price_input"),
                                                               ("price_output_per_mtok", "price_output"))
                  if options[option] is not None}
        try:
            cleaned = clean_judge_settings(Judge.Kind.RUBRIC, settings | prices)
        except JudgeSettingsError as error:
            raise CommandError(f"{OPTION_OF.get(error.field, error.field)}: {error}") from None
        prices = {field: cleaned[field] for field in prices}
        # The project's judge for this endpoint, model and mode is shared (its pages, its triage, later runs): a
        # setting given here that differs from its own is refused, before anything is written, unless --update.
        existing = find_endpoint_judge(project, base_url=cleaned["base_url"], model=cleaned["model"],
                                       with_reasoning=cleaned["with_reasoning"])
        changes = endpoint_judge_changes(existing, cleaned) if existing is not None else {}
        if changes and not options["update"]:
            raise CommandError(changes_refused(existing, changes, OPTION_OF))
        if existing is not None:
            unsaved = copy.copy(existing)  # the judge as the run will use it; saved only when the run starts
            for field, (_, given) in changes.items():
                setattr(unsaved, field, given)
        else:
            unsaved = Judge(project=project, name=cleaned["model"], kind=Judge.Kind.RUBRIC, **cleaned)
        # The key variable and the endpoint are checked before anything is written.
        problem = missing_key_variable(unsaved)
        if problem:
            raise CommandError(f"--api-key-env: {problem}")
        scope = JudgeRun.Scope.FLAGGED if options["samples"] == "flagged" else JudgeRun.Scope.ALL
        # A run answered wholly from the cache sends nothing, not even this check.
        checked = needs_endpoint(project, unsaved, scope=scope, ask_again=options["ask_again"])
        if checked:
            try:
                check_endpoint(quick_check(endpoint_for(unsaved)))
            except EndpointError as error:
                if error.setting in BLOCKING_SETTINGS:
                    option, value = OPTION_OF[error.setting], getattr(unsaved, error.setting)
                    raise CommandError(f"{option} {value}: {error}") from None
                # The endpoint answered (a 429, a 5xx): the calls retry and record their own outcome.
        if interrupt.requested():
            self.stderr.write("Interrupted (Ctrl-C) before the run started: nothing was written.")
            raise SystemExit(EXIT_INTERRUPTED)

        def start() -> JudgeRun:
            judge = endpoint_judge(project, base_url=cleaned["base_url"], model=cleaned["model"],
                                   api_key_env=cleaned.get("api_key_env"), with_reasoning=cleaned["with_reasoning"],
                                   concurrency=concurrency, prices=prices, update=options["update"])
            run = start_run(project, judge, scope=scope, queue=False, ask_again=options["ask_again"])
            self.started.append(run)
            return run

        # Executed here, its lock held from before it is committed: a worker starting meanwhile leaves it alone.
        progress = None if options["quiet"] else ProgressLines(self.stderr)
        try:
            run = execute_new_run(start, endpoint_checked=checked, progress=progress)
        except JudgeSettingsError as error:  # the judge changed meanwhile (another --update): nothing was written
            raise CommandError(f"{OPTION_OF.get(error.field, '--' + error.field)}: {error}") from None
        assert run is not None
        judge = run.judge
        if run.cancelled and interrupt.requested():
            self.stderr.write(cancelled_line(run))
            raise SystemExit(EXIT_INTERRUPTED)
        if progress is not None:
            progress.ended(run)
        if run.status == JudgeRun.Status.FAILED:
            raise CommandError(f"run {run.pk} failed: {run.error}")
        summary = run_summary(run)
        if options["json"]:
            self.stdout.write(json.dumps(summary, ensure_ascii=False))
            return
        self.stdout.write(
            f"run {run.pk} of judge {judge.name!r}: {summary['items']} items, {summary['scored']} scored, "
            f"{summary['failed']} failed, {summary['calls']} calls, {summary['cached']} cached, "
            f"{summary['seconds']} s"
        )
        for entry in summary["judgements"]:
            shown = entry["score"] if entry["status"] == "ok" else f"{entry['status']}: {entry['error'] or ''}"
            self.stdout.write(f"  {entry['batch']}/{entry['sample']}: {shown}")
