"""The judges page's forms: they turn typed text into values and say which field is wrong.

They only check types and ranges a browser could get wrong; the services
(judging.services.judges, runs, triage) decide what a valid judge, run or
threshold is, and their errors are shown on the field they name.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.utils import pretty_name

from annotate.models import Batch, Project
from judging.confirm import run_question
from judging.labels import SETTING_LABELS as LABELS
from judging.models import Judge, JudgeRun, PromptVersion
from judging.services.overview import ScopeSizes


def _messages_by_label(name: str, field: forms.Field) -> dict[str, str]:
    """Django's own messages for a field ("Ensure this value is greater than or equal to 1.") in the app's words,
    naming the field by its label as the services' refusals do ("Concurrency must be at least 1, not 0.")."""
    label = str(field.label or pretty_name(name)).replace("%", "%%")  # the messages are %-formatted with params
    number = "a whole number" if isinstance(field, forms.IntegerField) else "a number"
    worded = {
        "required": f"{label} is required.",
        "min_value": f"{label} must be at least %(limit_value)s, not %(show_value)s.",
        "max_value": f"{label} must be at most %(limit_value)s, not %(show_value)s.",
        "max_length": f"{label} must be at most %(limit_value)d characters (it has %(show_value)d).",
        "invalid_choice": f"{label} must be one of the choices offered.",
    }
    if isinstance(field, forms.FloatField | forms.IntegerField):
        worded["invalid"] = f"{label} must be {number}."
    return worded


class WordedForm(forms.Form):
    """A form whose field errors name the field by its label, in the app's words, never Django's English."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            field.error_messages = {**field.error_messages, **_messages_by_label(name, field)}  # a per-form copy

    def add_error(self, field: str | None, error: Any) -> None:
        """Django's bounds errors quote the cleaned number ("-1.0" for a typed "-1"); ours quote what was typed,
        so the person recognises their own input in the message."""
        if field in self.fields and isinstance(error, ValidationError) and hasattr(error, "error_list"):
            typed = self[field].data
            if isinstance(typed, str) and typed.strip():
                for item in error.error_list:
                    if item.code in ("min_value", "max_value") and isinstance(item.params, dict):
                        item.params = {**item.params, "show_value": typed.strip()}
        super().add_error(field, error)


class RubricJudgeForm(WordedForm):
    """A rubric LLM judge on an OpenAI-compatible endpoint. The API key itself is never asked for."""

    name = forms.CharField(max_length=100, label=LABELS["name"])
    base_url = forms.CharField(max_length=500, label=LABELS["base_url"],
                               widget=forms.TextInput(attrs={"placeholder": "http://localhost:11434/v1"}))
    model = forms.CharField(max_length=200, label=LABELS["model"])
    api_key_env = forms.CharField(
        max_length=100, required=False, label=LABELS["api_key_env"],
        help_text="Name of the server's environment variable that holds the key; empty for local servers.",
        widget=forms.TextInput(attrs={"placeholder": "OPENAI_API_KEY"}),
    )
    with_reasoning = forms.BooleanField(required=False, initial=True, label=LABELS["with_reasoning"])
    concurrency = forms.IntegerField(min_value=1, max_value=256, initial=4, label=LABELS["concurrency"])
    timeout_seconds = forms.FloatField(min_value=0.1, initial=60.0, label=LABELS["timeout_seconds"])
    max_retries = forms.IntegerField(min_value=0, max_value=20, initial=4, label=LABELS["max_retries"])
    # Blank: not known (the calls' cost is not known); 0: free (a local server). Blank at first: no price is guessed.
    price_input_per_mtok = forms.FloatField(
        min_value=0, required=False, label=LABELS["price_input_per_mtok"],
        help_text="Empty: not known (the cost shows as not known); 0: free, e.g. a local server.",
    )
    price_output_per_mtok = forms.FloatField(
        min_value=0, required=False, label=LABELS["price_output_per_mtok"],
        help_text="Empty: not known; 0: free.",
    )

    kind = Judge.Kind.RUBRIC


class NliJudgeForm(WordedForm):
    """An NLI judge: a local sequence-classification model, the reference scored in sliding windows."""

    name = forms.CharField(max_length=100, label=LABELS["name"])
    nli_model_path = forms.CharField(max_length=500, label=LABELS["nli_model_path"])
    nli_consistent_label = forms.CharField(
        max_length=50, required=False, label=LABELS["nli_consistent_label"],
        help_text="The output class that means consistent; empty = read it from the model's config.",
    )
    nli_max_length = forms.IntegerField(min_value=16, max_value=8192, initial=512, label=LABELS["nli_max_length"])
    nli_overlap = forms.IntegerField(min_value=0, max_value=1024, initial=32, label=LABELS["nli_overlap"])
    nli_batch_size = forms.IntegerField(min_value=1, max_value=1024, initial=32, label=LABELS["nli_batch_size"])

    kind = Judge.Kind.NLI


JUDGE_FORMS: dict[str, type[forms.Form]] = {Judge.Kind.RUBRIC: RubricJudgeForm, Judge.Kind.NLI: NliJudgeForm}


def judge_settings(form: forms.Form) -> dict[str, Any]:
    """A valid judge form's values as create_judge/update_judge take them (the name apart)."""
    return {name: value for name, value in form.cleaned_data.items() if name != "name"}


def edit_form(judge: Judge, data: Any = None) -> forms.Form:
    """The form of a judge's kind filled with its settings (``prefix`` keeps its fields apart on the page)."""
    form_class = JUDGE_FORMS[judge.kind]
    initial = {name: getattr(judge, name) for name in form_class.base_fields}
    return form_class(data, initial=initial, prefix=f"judge-{judge.pk}")


class TriageSettingsForm(WordedForm):
    first_pass = forms.ModelChoiceField(queryset=Judge.objects.none(), required=False, label=LABELS["first_pass"],
                                        empty_label="(none)")
    explainer = forms.ModelChoiceField(queryset=Judge.objects.none(), required=False, label=LABELS["explainer"],
                                       empty_label="(none)")
    llm_flag_at_most = forms.IntegerField(min_value=1, max_value=5, label=LABELS["llm_flag_at_most"])
    nli_flag_below = forms.FloatField(min_value=0, max_value=1, label=LABELS["nli_flag_below"])
    blind_by_default = forms.BooleanField(required=False, label=LABELS["blind_by_default"])
    audits_per_item = forms.IntegerField(min_value=1, max_value=20, label=LABELS["audits_per_item"])

    def __init__(self, project: Project, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        judges = Judge.objects.filter(project=project)
        self.fields["first_pass"].queryset = judges  # type: ignore[attr-defined]
        self.fields["explainer"].queryset = judges.exclude(kind=Judge.Kind.NLI).exclude(  # type: ignore[attr-defined]
            kind=Judge.Kind.RUBRIC, with_reasoning=False
        )


RUN_SCOPES = [(JudgeRun.Scope.ALL, "All samples"), (JudgeRun.Scope.BATCH, "One batch"),
              (JudgeRun.Scope.FLAGGED, "The flagged samples")]


class JudgeSelect(forms.Select):
    """A judge choice whose options carry their judge's kind (data-kind), so the page can show what applies to the
    chosen kind only (pages.css hides a run form's ask_again unless a rubric judge is chosen), and the question asked
    before its run starts (data-confirm, judging.confirm; run_confirm.js puts the chosen samples' count in)."""

    per = "sample"  # what the run judges, as the question names it (a synthetic set's form: "synthetic item")

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        judge = getattr(value, "instance", None)
        if isinstance(judge, Judge):
            option["attrs"]["data-kind"] = judge.kind
            option["attrs"]["data-confirm"] = run_question(judge, self.per)
        return option


class SampleCountSelect(forms.Select):
    """A choice whose options carry how many samples each covers (data-samples, from ``samples``: the option's value
    -> count), so the question asked before a run or triage starts can say it. Options without a count get none."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.samples: dict[str, int] = {}

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        count = self.samples.get(str(value))
        if count is not None:
            option["attrs"]["data-samples"] = count
        return option


def _count_batches(field: forms.Field, sizes: ScopeSizes, *, every: str | None = None) -> None:
    """Give a batch choice's options their sample counts; `every`: the value of an option meaning every sample."""
    counts = {str(batch): samples for batch, samples in sizes.batches.items()}
    if every is not None:
        counts[every] = sizes.every
    field.widget.samples = counts  # a new dict: widgets are copied shallowly per form


class JudgeRunChoiceForm(WordedForm):
    """Which of the project's runnable judges to run, and for a rubric judge whether to ask again for the cached
    answers that could not be read. Shared by the judges page's run form and a synthetic set's."""

    judge = forms.ModelChoiceField(queryset=Judge.objects.none(), widget=JudgeSelect, empty_label="Choose a judge")
    ask_again = forms.BooleanField(
        required=False,
        label="Ask again for answers that could not be read (parse errors), instead of reusing them",
        help_text="Rubric judges. Otherwise every answer the endpoint gave is reused from the cache, unpaid.",
    )

    def __init__(self, project: Project, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        judges = Judge.objects.filter(project=project).exclude(kind=Judge.Kind.IMPORTED)
        self.fields["judge"].queryset = judges  # type: ignore[attr-defined]
        if not judges.filter(kind=Judge.Kind.RUBRIC).exists():
            del self.fields["ask_again"]  # no rubric judge: nothing it could apply to

    def judging(self, per: str) -> JudgeRunChoiceForm:
        """The form, its question naming what the run judges (``per``: "synthetic item"; "sample" by default)."""
        self.fields["judge"].widget.per = per
        return self

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        judge = cleaned.get("judge")
        if judge is None or judge.kind != Judge.Kind.RUBRIC:
            # The box is hidden while another kind of judge is chosen: a tick left in it is not a choice made.
            cleaned["ask_again"] = False
        return cleaned


class StartRunForm(JudgeRunChoiceForm):
    """A run of a judge over a scope; on the page, its scope and batch options carry their sample counts
    (show_sizes) for the question asked before the run starts."""

    scope = forms.ChoiceField(choices=RUN_SCOPES, initial=JudgeRun.Scope.ALL, widget=SampleCountSelect)
    batch = forms.ModelChoiceField(queryset=Batch.objects.none(), required=False, empty_label="(scope: one batch)",
                                   widget=SampleCountSelect)
    field_order = ["judge", "scope", "batch", "ask_again"]

    def __init__(self, project: Project, *args: Any, **kwargs: Any) -> None:
        super().__init__(project, *args, **kwargs)
        self.fields["batch"].queryset = Batch.objects.filter(project=project).order_by("position", "id")  # type: ignore[attr-defined]

    def show_sizes(self, sizes: ScopeSizes) -> StartRunForm:
        """The form, its options counting their samples (the batch scope has none: the chosen batch's counts)."""
        self.fields["scope"].widget.samples = {JudgeRun.Scope.ALL: sizes.every, JudgeRun.Scope.FLAGGED: sizes.flagged}
        _count_batches(self.fields["batch"], sizes)
        return self

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("scope") == JudgeRun.Scope.BATCH and cleaned.get("batch") is None:
            self.add_error("batch", "Choose the batch to judge (the scope is one batch).")
        return cleaned


class StartTriageForm(WordedForm):
    """A triage over every sample or one batch; on the page, as StartRunForm's, its options count their samples."""

    batch = forms.ModelChoiceField(queryset=Batch.objects.none(), required=False, empty_label="(every sample)",
                                   widget=SampleCountSelect)

    def __init__(self, project: Project, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["batch"].queryset = Batch.objects.filter(project=project).order_by("position", "id")  # type: ignore[attr-defined]

    def show_sizes(self, sizes: ScopeSizes) -> StartTriageForm:
        """The form, its options counting their samples ("every sample" too)."""
        _count_batches(self.fields["batch"], sizes, every="")
        return self


class PromptForm(WordedForm):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 24, "spellcheck": "false"}), strip=False)
    note = forms.CharField(max_length=300, required=False, label="What changed (kept with the version)")


PROMPT_KINDS = {kind.value for kind in PromptVersion.Kind}
