"""The judging API's serializers: what the judge and run endpoints read and answer (they are also the schema).

Request serializers check shapes only (types, lengths, ranges a column can
hold); the services (judging.services.judges, .runs, .ingest) check meaning
and name the field at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from annotate.api.serializers import MAX_ID, FieldErrorsSerializer
from annotate.api.validation import RejectsUnknownFields, UploadField
from judging.costs import COST_PRECISION, us_dollars
from judging.models import Judge, Judgement, JudgeRun
from judging.models.judges import SCORE_LABELS
from judging.services.judges import (
    MAX_CONCURRENCY,
    MAX_RETRIES,
    MAX_TIMEOUT_SECONDS,
    NLI_SETTINGS,
    RUBRIC_SETTINGS,
)

RUN_SCOPES = [JudgeRun.Scope.ALL, JudgeRun.Scope.BATCH, JudgeRun.Scope.FLAGGED]


# The settings each kind of judge uses (judging.services.judges); the others are null in its row. An imported judge
# uses none: its outputs were made elsewhere, and the endpoint columns hold only the model's defaults.
SETTINGS_OF_KIND = {Judge.Kind.RUBRIC: frozenset(RUBRIC_SETTINGS), Judge.Kind.NLI: frozenset(NLI_SETTINGS),
                    Judge.Kind.IMPORTED: frozenset()}
NOT_ITS_KIND = "Null when the judge's kind does not use it (imported judges use no setting; {kinds} only)."


class JudgeSerializer(serializers.ModelSerializer):
    mode = serializers.CharField(read_only=True, help_text='"reasoning" or "score only" for rubric judges, else the kind.')
    api_key_env = serializers.CharField(
        read_only=True, allow_null=True,
        help_text="The NAME of the environment variable holding the endpoint's key (blank: none needed); the key "
        "itself is never stored. " + NOT_ITS_KIND.format(kinds="rubric judges"),
    )

    class Meta:
        model = Judge
        fields = [
            "id", "name", "kind", "mode", "base_url", "model", "api_key_env", "with_reasoning", "concurrency",
            "timeout_seconds", "max_retries", "price_input_per_mtok", "price_output_per_mtok", "nli_model_path",
            "nli_max_length", "nli_overlap", "nli_batch_size", "nli_consistent_label", "created_at",
        ]
        read_only_fields = fields
        extra_kwargs = {
            **{name: {"allow_null": True, "help_text": NOT_ITS_KIND.format(kinds="rubric judges")}
               for name in RUBRIC_SETTINGS if name != "api_key_env"},
            **{name: {"allow_null": True, "help_text": NOT_ITS_KIND.format(kinds="NLI judges")}
               for name in NLI_SETTINGS},
            **{name: {"allow_null": True, "help_text": f"US dollars per million {side} tokens: null when not known (the "
                      "cost of a call that reports such tokens is then null), 0 when free (a local server). "
                      + NOT_ITS_KIND.format(kinds="rubric judges")}
               for name, side in (("price_input_per_mtok", "input"), ("price_output_per_mtok", "output"))},
        }

    def to_representation(self, judge: Judge) -> dict[str, Any]:
        """A setting the judge's kind does not use is null, not its column's default (an imported judge's
        "concurrency 4" or an NLI judge's base URL mean nothing)."""
        data = super().to_representation(judge)
        used = SETTINGS_OF_KIND.get(judge.kind, frozenset())
        for name in (*RUBRIC_SETTINGS, *NLI_SETTINGS):
            if name not in used:
                data[name] = None
        return data


class JudgeCreateSerializer(RejectsUnknownFields):
    """A new rubric or NLI judge. Send only the settings of its kind; the others are refused by name, and so is a
    field no judge has."""

    name = serializers.CharField(max_length=100, help_text="Unique in the project.")
    kind = serializers.ChoiceField(
        choices=[Judge.Kind.RUBRIC, Judge.Kind.NLI],
        help_text="rubric: an OpenAI-compatible chat endpoint; nli: a local sequence-classification model. "
        "Imported judges are made by importing their outputs.",
    )
    base_url = serializers.CharField(max_length=500, required=False, help_text="rubric: e.g. http://localhost:11434/v1")
    model = serializers.CharField(max_length=200, required=False, help_text="rubric: the endpoint's model name.")
    api_key_env = serializers.CharField(
        max_length=100, required=False, allow_blank=True,
        help_text="rubric: the NAME of the environment variable holding the key (e.g. OPENAI_API_KEY), never the key.",
    )
    with_reasoning = serializers.BooleanField(required=False, help_text="rubric: reasoning then score (default), or "
                                              "score only.")
    concurrency = serializers.IntegerField(min_value=1, max_value=MAX_CONCURRENCY, required=False)
    timeout_seconds = serializers.FloatField(min_value=0, max_value=MAX_TIMEOUT_SECONDS, required=False)
    max_retries = serializers.IntegerField(min_value=0, max_value=MAX_RETRIES, required=False)
    price_input_per_mtok = serializers.FloatField(
        min_value=0, max_value=1e9, required=False, allow_null=True,
        help_text="US dollars per million input tokens: null (the default) when not known, and then the cost of a "
        "call that reports input tokens is null; 0 when free (a local server: such calls cost 0).",
    )
    price_output_per_mtok = serializers.FloatField(
        min_value=0, max_value=1e9, required=False, allow_null=True,
        help_text="US dollars per million output tokens: null when not known, 0 when free (as the input price).",
    )
    nli_model_path = serializers.CharField(
        max_length=500, required=False,
        help_text="nli: a local model directory, or the id of a model already in the server's Hugging Face cache "
                  "(never downloaded).",
    )
    nli_max_length = serializers.IntegerField(min_value=16, max_value=100_000, required=False)
    nli_overlap = serializers.IntegerField(min_value=0, max_value=100_000, required=False)
    nli_batch_size = serializers.IntegerField(min_value=1, max_value=4096, required=False)
    nli_consistent_label = serializers.CharField(max_length=50, required=False, allow_blank=True)

    def accepted_values(self) -> dict[str, Any]:
        """After a failed ``is_valid()``: the fields that passed, valued as ``validated_data`` would hold them.

        DRF keeps no value when any field fails; with these the service checks the rest of the request too, so
        one 400 names every field at fault (a bad base_url beside a bad concurrency, not after it is fixed).
        """
        values: dict[str, Any] = {}
        if not isinstance(self.initial_data, Mapping):
            return values
        for name, field in self.fields.items():
            if name in self.errors:
                continue
            given = field.get_value(self.initial_data)
            if given is empty:
                continue
            try:
                values[field.source] = field.run_validation(given)
            except serializers.ValidationError:  # only as a whole serializer: it passed on its own
                continue
        return values


RESUMED_HELP = (
    "Times the run went on after its worker, or the pool process executing it, stopped mid-run (killed, out of "
    "memory): queued again by a starting worker, or its task delivered again by Celery. The calls in flight at each "
    "stop (about the judge's concurrency, each with its retries), and answers not yet written, reach no judgement: "
    "calls, tokens and cost leave them out."
)


class JudgeRunSerializer(serializers.ModelSerializer):
    judge_name = serializers.CharField(source="judge.name", read_only=True)
    rubric_version = serializers.IntegerField(
        source="rubric.number", read_only=True, allow_null=True, default=None,
        help_text="The rubric version the run used (rubric judges).",
    )
    percent = serializers.IntegerField(read_only=True, help_text="done / total, 0..100.")
    seconds = serializers.FloatField(read_only=True, allow_null=True, help_text="Wall time, once finished.")
    all_failed = serializers.BooleanField(
        read_only=True, help_text="Done, yet no target got a score: every call failed (status stays done)."
    )
    status_label = serializers.CharField(
        read_only=True, help_text='The status as the pages show it: "Done: 15 of 15 failed" when all_failed.'
    )
    cancelled_by = serializers.CharField(
        source="cancelled_by.username", read_only=True, allow_null=True, default=None,
        help_text="Who cancelled the run (status failed, status_label \"Cancelled\"); null unless cancelled, or once "
        "that user has been deleted (cancelled_at still says when).",
    )
    cancelled_at = serializers.DateTimeField(
        read_only=True, allow_null=True, help_text="When the run was cancelled; null unless cancelled."
    )

    class Meta:
        model = JudgeRun
        fields = [
            "id", "judge", "judge_name", "scope", "purpose", "batch", "synthetic_set", "status", "status_label",
            "all_failed", "total", "done", "percent", "scored", "failed", "calls", "cached", "flagged", "error",
            "cancelled_by", "cancelled_at",
            "rubric_version", "ask_again", "resumed", "created_at", "started_at", "finished_at", "seconds",
        ]
        read_only_fields = fields
        extra_kwargs = {"ask_again": {"help_text": "Cached answers that could not be read as a score were asked "
                                                   "again instead of reused (rubric judges)."},
                        "resumed": {"help_text": RESUMED_HELP}}


class JudgeRunStartSerializer(JudgeRunSerializer):
    existing = serializers.SerializerMethodField(
        help_text="True: the same run (judge, scope, batch, ask_again, rubric version) was still queued or running, "
        "and this is it (200); false: a new run was started (201)."
    )

    class Meta(JudgeRunSerializer.Meta):
        fields = [*JudgeRunSerializer.Meta.fields, "existing"]
        read_only_fields = fields

    def get_existing(self, run: JudgeRun) -> bool:
        return bool(self.context.get("existing", False))


class JudgeRunRequestSerializer(RejectsUnknownFields):
    judge = serializers.IntegerField(min_value=1, max_value=MAX_ID, help_text="The id of a rubric or NLI judge of "
                                     "the project.")
    scope = serializers.ChoiceField(
        choices=RUN_SCOPES, default=JudgeRun.Scope.ALL,
        help_text="all: every sample of the project; batch: the samples of `batch`; flagged: the audit queue's.",
    )
    batch = serializers.IntegerField(
        min_value=1, max_value=MAX_ID, required=False, allow_null=True, help_text="The batch's id (scope batch)."
    )
    ask_again = serializers.BooleanField(
        default=False,
        help_text="Rubric judges: ask again for the calls whose cached answer could not be read as a score (parse "
                  "errors; the new answer replaces the cached one) instead of reusing it. By default every answer "
                  "the endpoint gave is reused from the call cache, so a repeated run makes no call.",
    )


USAGE_NULL = "Null when unknown, its reason in `reasons`."


class UsDollarsField(serializers.FloatField):
    """A US$ figure, rounded to judging.costs.COST_DECIMALS places (sums of floats carry noise such as
    0.06115000000000002); its help text says so."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["help_text"] = f"{kwargs.get('help_text', 'US dollars.')} {COST_PRECISION}"
        super().__init__(**kwargs)

    def to_representation(self, value: Any) -> float | None:
        return us_dollars(super().to_representation(value))
NLI_NULL = " Null for an NLI judge (a local model: no tokens, no price)."


class RunSummarySerializer(serializers.Serializer):
    """The `judge --json` object without its judgements."""

    run = serializers.IntegerField()
    judge = serializers.CharField(help_text="The judge's name.")
    mode = serializers.CharField(help_text='"reasoning", "score only", or the judge\'s kind.')
    status = serializers.ChoiceField(choices=JudgeRun.Status.values)
    error = serializers.CharField(allow_blank=True, help_text="Why the run failed, if it did.")
    items = serializers.IntegerField(help_text="Samples the run judges.")
    scored = serializers.IntegerField()
    failed = serializers.IntegerField(help_text="parse_error or error: no score.")
    calls = serializers.IntegerField(help_text="Endpoint requests sent, retries included.")
    cached = serializers.IntegerField(help_text="Judgements answered from the call cache, without a call.")
    flagged = serializers.IntegerField(help_text="First-pass runs: outputs sent to the audit queue.")
    resumed = serializers.IntegerField(min_value=0, help_text=RESUMED_HELP)
    seconds = serializers.FloatField(allow_null=True, help_text="Wall time, once finished.")
    # The run page's token and cost figures (judging.services.runs.figures.usage_totals): null where unknown.
    input_tokens = serializers.IntegerField(
        allow_null=True, help_text="Input tokens of the calls this run sent (answers from the call cache left out; "
        "0 when it sent none): a partial total, of `calls_with_usage` calls, when `calls_without_usage` is above 0. "
        + USAGE_NULL)
    output_tokens = serializers.IntegerField(allow_null=True, help_text="Output tokens, counted as `input_tokens`.")
    cost = UsDollarsField(
        allow_null=True, help_text="US$ of the calls this run sent: their tokens x the judge's prices when each was "
        "sent (answers from the call cache cost 0); partial as `input_tokens` is. Null when unknown, its reason in "
        "`reasons`: a call sent reported its tokens while the judge had no prices (one such call is enough: a "
        "total of the others would read as the run's; each such judgement's `cost` is null too), no call sent "
        "reported its usage, an NLI judge, stored costs that add up past the largest number. An imported run's "
        "is what the file reported.")
    calls_with_usage = serializers.IntegerField(
        allow_null=True, help_text="Calls sent that came back with an answer and reported their token usage." + NLI_NULL)
    calls_without_usage = serializers.IntegerField(
        allow_null=True, help_text="Calls sent that came back with an answer without token usage (some local "
        "servers): above 0 beside `calls_with_usage`, the tokens and cost are a partial total." + NLI_NULL)
    cached_input_tokens_saved = serializers.IntegerField(
        allow_null=True, help_text="Input tokens of the answers from the call cache: paid by an earlier call, not "
        "in `cost`; of `cached_answers_with_usage` answers. " + USAGE_NULL)
    cached_output_tokens_saved = serializers.IntegerField(
        allow_null=True, help_text="Output tokens, counted as `cached_input_tokens_saved`.")
    cached_answers_with_usage = serializers.IntegerField(
        allow_null=True, help_text="Answers from the call cache whose earlier call reported its token usage." + NLI_NULL)
    cached_answers_without_usage = serializers.IntegerField(
        allow_null=True, help_text="Answers from the call cache that came without token usage." + NLI_NULL)
    reasons = serializers.DictField(
        child=serializers.CharField(), help_text="Why each null token or cost figure above is null, under its name.")


class JudgeRunDetailSerializer(JudgeRunSerializer):
    summary = serializers.SerializerMethodField()

    class Meta(JudgeRunSerializer.Meta):
        fields = [*JudgeRunSerializer.Meta.fields, "summary"]
        read_only_fields = fields

    @extend_schema_field(RunSummarySerializer)
    def get_summary(self, run: JudgeRun) -> dict[str, Any]:
        from judging.services.runs import run_summary

        summary = run_summary(run, with_judgements=False)
        return {name: summary.get(name) for name in RunSummarySerializer().fields}


CACHED_CALL_HELP = ("Answered from the call cache (`cached`): the {what} of the call whose answer was served (an "
                    "earlier run's, or this run's own for an identical request), counted on that call's row, not "
                    "here; null otherwise.")
RUN_SPENT_HELP = ("What this run spent on the judgement: null for an answer from the call cache (`cached`: no call "
                  "was made; the earlier call's figure is `{cached}`), so the rows of a run add up to what it cost.")


class JudgementSerializer(serializers.ModelSerializer):
    sample = serializers.IntegerField(
        source="sample_id", read_only=True, allow_null=True,
        help_text="The sample's database id, as /api/samples/{id}/ takes it (the same as `sample_id`); not the id "
        "in the imported file, which is `sample_external_id` (the exports' and `judge --json`'s `sample`). Null "
        "for a synthetic item.",
    )
    sample_id = serializers.IntegerField(
        read_only=True, allow_null=True,
        help_text="The sample's database id, under the name the exports and `judge --json` give it too: join on "
        "it (external ids may repeat across batches). Null for a synthetic item.",
    )
    sample_external_id = serializers.CharField(
        source="sample.external_id", read_only=True, allow_null=True, default=None,
        help_text="The sample's external id (its id in the imported file; \"\" when it has none), the exports' "
        "`sample` and `sample_external_id`. Null for a synthetic item.",
    )
    latency_seconds = serializers.FloatField(
        source="run_latency_seconds", read_only=True, allow_null=True,
        help_text="The call's whole time, retries and their waits included. "
        + RUN_SPENT_HELP.format(cached="cached_call_latency_seconds"),
    )
    input_tokens = serializers.IntegerField(source="run_input_tokens", read_only=True, allow_null=True,
                                            help_text=RUN_SPENT_HELP.format(cached="cached_call_input_tokens"))
    output_tokens = serializers.IntegerField(source="run_output_tokens", read_only=True, allow_null=True,
                                             help_text=RUN_SPENT_HELP.format(cached="cached_call_output_tokens"))
    cost = UsDollarsField(
        source="run_cost", read_only=True, allow_null=True,
        help_text="US dollars this run paid for the call: 0 for an answer from the call cache (a true 0: nothing "
        "was paid). Null when not known: the endpoint reported no token usage, or the call reported its tokens "
        "while the judge had no prices (US$ per million tokens, set on the judges page), so it was priced at "
        "nothing, which is not what it cost (the run's `cost` is null then too). An imported judgement's is what "
        "the file gave, 0 included.",
    )
    cached_call_latency_seconds = serializers.FloatField(read_only=True, allow_null=True,
                                                         help_text=CACHED_CALL_HELP.format(what="latency"))
    cached_call_input_tokens = serializers.IntegerField(read_only=True, allow_null=True,
                                                        help_text=CACHED_CALL_HELP.format(what="input tokens"))
    cached_call_output_tokens = serializers.IntegerField(read_only=True, allow_null=True,
                                                         help_text=CACHED_CALL_HELP.format(what="output tokens"))
    p = serializers.FloatField(source="probability", read_only=True, allow_null=True,
                               help_text="NLI judges: P(consistent), the max over the reference's windows.")
    display_score = serializers.FloatField(
        read_only=True, allow_null=True, help_text="The score, or 1 + 4p for an NLI judge (our scaling); null unless ok."
    )
    label = serializers.SerializerMethodField(help_text='The rubric level\'s label ("very faithful"), null if no score.')
    prompt_version = serializers.IntegerField(source="prompt_version.number", read_only=True, allow_null=True,
                                              default=None)

    class Meta:
        model = Judgement
        fields = [
            "id", "sample", "sample_id", "sample_external_id", "synthetic_item", "status", "score", "p",
            "display_score", "label", "reasoning", "raw", "error", "prompt_version", "request_mode", "latency_seconds",
            "input_tokens", "output_tokens", "cost", "cached", "cached_call_latency_seconds",
            "cached_call_input_tokens", "cached_call_output_tokens", "attempts", "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_label(self, judgement: Judgement) -> str | None:
        return SCORE_LABELS.get(judgement.score) if judgement.score is not None else None


# A form field the import does not take is refused by name (RejectsUnknownFields), not dropped unread: a misspelt
# `flagg=true` imported without flagging anything. (A comment, not a docstring, which would become the schema's.)
class JudgementImportRequestSerializer(RejectsUnknownFields):
    file = UploadField(
        help_text="JSONL, one judgement a line (README: LLM judges and audit). Repeat the field to send several files.",
        error_messages={
            "required": "No file was sent: send one or more JSONL files as the field 'file' of a multipart/form-data "
                        "body.",
            "invalid": "'file' must be a file part of a multipart/form-data body (a JSONL file), not a text field.",
        },
    )
    flag = serializers.BooleanField(
        default=False, help_text="Flag each imported run's outputs below the project's thresholds for audit."
    )


class ImportedRunSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    judge = serializers.CharField()
    judge_created = serializers.BooleanField(help_text="False when an imported judge of that name was reused.")
    items = serializers.IntegerField()
    scored = serializers.IntegerField()
    failed = serializers.IntegerField()
    flagged = serializers.IntegerField(
        allow_null=True, help_text="Outputs this run flagged for audit; another run may flag the same sample (null "
        "unless flag).")


class JudgementImportReportSerializer(serializers.Serializer):
    project = serializers.CharField()
    judgements = serializers.IntegerField()
    flagged = serializers.IntegerField(
        allow_null=True, help_text="Distinct samples the import's runs flagged, each once however many runs flagged "
        "it: the audit items they account for (null unless flag).")
    flagged_new = serializers.IntegerField(
        allow_null=True, help_text="Of `flagged`, the samples that were not in the audit queue before (null unless "
        "flag).")
    runs = ImportedRunSerializer(
        many=True, help_text="One new run per judge named in the files (per judge and run, where lines name a run).")


# Not required: a file that was read may come with another field at fault (`{"flag": [...]}`) alone.
class ImportErrorsSerializer(FieldErrorsSerializer):
    file = serializers.ListField(
        child=serializers.CharField(), min_length=1, required=False,
        help_text="Every problem found (up to 100), each naming the file, the line and the field; nothing was imported.",
    )


class ImportRepeatedSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Nothing was imported, and why, for a person to read.")
    file = serializers.ListField(
        child=serializers.CharField(), min_length=1,
        help_text="Each group of lines imported before (one judge, and the run its lines name): its lines, the "
        "imported run that holds the same judgements, and when it was imported.",
    )
