"""Importing a project's data through the API (its admins): the files the project page's import form takes.

A thin view over the page's importers, chosen by the project's kind: a span project reads FaithBench batch files
or samples JSONL (annotate.services.ingest), a pairs project raw texts to perturb, FaithLab pair files or HaDes
release files (annotate.services.pairs.ingest). The same rules hold: all or nothing, every problem named with its
file, line and field (400, under ``file``), the same size limits, and the same follow-up jobs (a span import
queues sentence embedding, as the page's does).
"""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import access
from annotate.api.errors import field_error
from annotate.api.parsers import FILE_PARSERS, read_file_field, refuse_stopped_upload
from annotate.api.serializers import ErrorSerializer, FieldErrorsSerializer
from annotate.api.validation import RejectsUnknownFields, UploadField
from annotate.models import Project
from annotate.services import ingest
from annotate.services.pairs import ingest as pair_ingest

FORMATS_OF_KIND: dict[str, tuple[str, ...]] = {
    Project.Kind.SPANS: ingest.FORMATS,
    Project.Kind.PAIRS: pair_ingest.FORMATS,
}
# Fields that only one kind of project reads.
SPAN_OPTIONS = ("annotators", "roster", "allow_repeats")
PAIR_OPTIONS = ("skip_existing", "consensus_as_label")
# An importer's message about one of the form's options starts with its name; every other one is about the files.
OPTION_MESSAGE = re.compile(r"(format|annotators|skip_existing|consensus_as_label|allow_repeats): |roster name ")


# Form fields other than these are refused by name (RejectsUnknownFields), not dropped unread. (A comment, not a
# docstring, which would become the schema's description.)
class ImportRequestSerializer(RejectsUnknownFields):
    file = UploadField(
        help_text="The file to import; repeat the field to send several, which are imported together, all or "
        "nothing (README: File formats, Pair file formats).",
        error_messages={
            "required": "No file was sent: send one or more files as the field 'file' of a multipart/form-data body.",
            "invalid": "'file' must be a file part of a multipart/form-data body, not a text field.",
        },
    )
    format = serializers.ChoiceField(
        choices=[*ingest.FORMATS, *pair_ingest.FORMATS],
        help_text="A span project takes `faithbench` (FaithBench batch files, one batch a file, named after it) or "
        "`jsonl` (unannotated samples, a JSON object a line); a pairs project `raw` (texts to perturb), `pairs` "
        "(FaithLab pair files) or `hades` (HaDes release files).",
    )
    annotators = serializers.ChoiceField(
        choices=list(ingest.ANNOTATOR_MATCHING), required=False,
        help_text="Span projects: who is who in FaithBench files, by `annotator_name` (`by-name`, the default) or "
        "by name and `annotator_id` (`by-id`).",
    )
    roster = serializers.CharField(
        required=False, allow_blank=True,
        help_text="Span projects: the names of the people who annotated every batch, comma-separated; without it, "
        "whoever left a labelled span in a batch.",
    )
    skip_existing = serializers.BooleanField(
        required=False,
        help_text="Pairs projects, `hades` files: leave out rows already in the project instead of refusing them.",
    )
    consensus_as_label = serializers.BooleanField(
        required=False,
        help_text="Pairs projects, `pairs` files: take an exported line's `consensus` (`H` or `N`) as its item's "
        "label when the line has no `label` of its own (absent, null or `?`; a line's own label wins), so the item "
        "is imported labelled, as a HaDes row with 1 or 0 is; a consensus `none` or null leaves it in the pool. "
        "Off by default: the consensus is not imported, and `warnings` counts the lines that carried one. Votes are "
        "never imported: figures such as pair agreement start afresh.",
    )
    allow_repeats = serializers.BooleanField(
        required=False,
        help_text="Span projects: import samples the project already holds, or that the files give twice (the same "
        "source, summary and generator), as new copies. Without it they are refused, each named, and nothing is "
        "imported: a second copy counts twice in every figure.",
    )


class ImportedBatchSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class ImportResultSerializer(serializers.Serializer):
    project = serializers.CharField()
    kind = serializers.CharField(help_text="The project's kind, `spans` or `pairs`: it says which fields follow.")
    format = serializers.CharField()
    summary = serializers.CharField(help_text="What was imported, as the project page says it.")
    warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="What to check, as the page warns of it: annotator names with several ids, usernames taken "
        "outside the project, spellings merged ignoring case, annotations samples JSONL lines carried, and each field "
        "the format does not define, which was not imported: how many lines (or files) had it and the first (span "
        "projects); pair lines whose exported consensus (H or N) was not imported, how many and the first, without "
        "`consensus_as_label` (pairs projects).",
    )
    batches = ImportedBatchSerializer(many=True, required=False, help_text="Span projects: the batches made.")
    samples = serializers.IntegerField(required=False, help_text="Span projects.")
    spans = serializers.IntegerField(required=False, help_text="Span projects.")
    annotators = serializers.ListField(
        child=serializers.CharField(), required=False,
        help_text="Span projects: the usernames given the batches' submitted round.",
    )
    unread_annotations = serializers.IntegerField(
        required=False,
        help_text="Span projects, samples JSONL: the annotations the lines carried (a JSONL export's lines do), which "
        "that format does not import; `warnings` says so and names the format that carries them (FaithBench).",
    )
    embedding_job = serializers.IntegerField(
        required=False, allow_null=True,
        help_text="Span projects: the sentence embedding job queued after the import; its progress is on the "
        "project page.",
    )
    originals = serializers.IntegerField(required=False, help_text="Pairs projects.")
    perturbed_texts = serializers.IntegerField(required=False, help_text="Pairs projects.")
    items = serializers.IntegerField(required=False, help_text="Pairs projects.")
    labelled = serializers.IntegerField(required=False, help_text="Pairs projects: of the items, those with a label.")
    pool = serializers.IntegerField(required=False, help_text="Pairs projects: of the items, those left to label.")
    skipped = serializers.ListField(
        child=serializers.CharField(), required=False,
        help_text="Pairs projects, with skip_existing: the rows left out as already imported (`file: line N`).",
    )


# Not required: a file that was read may come with another field at fault (`{"format": [...]}`) alone.
class ImportRefusedSerializer(FieldErrorsSerializer):
    file = serializers.ListField(
        child=serializers.CharField(), min_length=1, required=False,
        help_text="Every problem found (up to 100, then how many more), each naming the file, the line or sample "
        "and the field, as the project page lists them; nothing was imported.",
    )


def _sentence(text: str) -> str:
    return f"{text[:1].upper()}{text[1:]}."


def _refused(failure: ingest.ImportFailed, hints: dict[str, str] | None = None) -> serializers.ValidationError:
    """The importer's refusal as a 400: each message under the option it names, the others under ``file``; then
    ``hints``, a message for a field each."""
    listed = failure.messages if isinstance(failure, ingest.ImportProblems) else [str(failure)]
    total = failure.total if isinstance(failure, ingest.ImportProblems) else 1
    errors: dict[str, list[str]] = {}
    for message in listed:
        named = OPTION_MESSAGE.match(message)
        field = ("roster" if named.group(0) == "roster name " else named.group(1)) if named else "file"
        errors.setdefault(field, []).append(message)
    if total > len(listed):
        errors.setdefault("file", []).append(f"... and {total - len(listed)} more")
    for field, message in (hints or {}).items():
        errors.setdefault(field, []).append(message)
    return serializers.ValidationError(errors)


def _check_options(project: Project, data: Any, fmt: str) -> None:
    """The format and options the project's kind reads; another kind's are refused by name, nothing imported."""
    kind = f"a {project.kind} project ({project.get_kind_display().lower()})"
    formats = FORMATS_OF_KIND[project.kind]
    if fmt not in formats:
        raise field_error("format", f"{fmt!r} is not a format of {project.slug!r}, {kind}: it imports "
                                    f"{', '.join(formats)}; nothing was imported")
    others = PAIR_OPTIONS if project.kind == Project.Kind.SPANS else SPAN_OPTIONS
    sent = [name for name in others if name in data]
    if sent:
        raise serializers.ValidationError(
            {name: [f"{name} is not read for {project.slug!r}, {kind}; leave it out (nothing was imported)"]
             for name in sent}
        )


def _import_spans(project: Project, request: Request, body: dict[str, Any], files: list[tuple[str, bytes]]) -> Any:
    try:
        report = ingest.import_files(
            project, files, roster=ingest.parse_roster(body.get("roster", "")), created_by=request.user,
            annotators=body.get("annotators") or ingest.BY_NAME, fmt=body["format"],
            allow_repeats=body.get("allow_repeats", False),
        )
    except ingest.ImportFailed as failure:
        # The page's "tick 'Allow repeats'", in the API's words.
        repeats = isinstance(failure, ingest.ImportProblems) and failure.repeats
        hint = {"allow_repeats": "send allow_repeats=true to import these samples again as new copies"}
        raise _refused(failure, hint if repeats else None) from None
    return {
        "summary": _sentence(report.describe()),
        "warnings": report.warnings(),
        "batches": [{"id": batch.pk, "name": batch.name} for batch in report.batches],
        "samples": report.samples,
        "spans": report.spans,
        "annotators": report.annotators,
        "unread_annotations": report.unread_annotations,
        "embedding_job": report.job.pk if report.job else None,
    }


def _import_pairs(project: Project, request: Request, body: dict[str, Any], files: list[tuple[str, bytes]]) -> Any:
    try:
        report = pair_ingest.import_pairs(project, files, body["format"], user=request.user,
                                          skip_existing=body.get("skip_existing", False),
                                          consensus_as_label=body.get("consensus_as_label", False))
    except pair_ingest.PairImportFailed as failure:
        # The page's "tick 'Leave out rows already imported'", in the API's words.
        hint = {"skip_existing": "send skip_existing=true to import the other rows and leave these out"}
        raise _refused(failure, hint if failure.already_imported else None) from None
    return {
        "summary": _sentence(report.describe()),
        "warnings": report.warnings(),
        "originals": report.originals,
        "perturbed_texts": report.perturbed_texts,
        "items": report.items,
        "labelled": report.labelled,
        "pool": report.pool,
        "skipped": [line.where for line in report.skipped],
    }


def _require_multipart(request: Request, project: Project) -> None:
    """A body of another type carries no file, and its fields are not read: one 400 saying what to send, rather
    than "format: This field is required." about a format that was sent (in JSON). The example is in the formats
    of the project's kind."""
    sent = request.content_type.split(";")[0].strip().lower()
    if sent != "multipart/form-data":
        example = ("-F format=pairs -F file=@pairs.jsonl (format raw, pairs or hades)"
                   if project.kind == Project.Kind.PAIRS else "-F format=faithbench -F file=@batch_1.json")
        raise field_error("file", f"The body must be multipart/form-data (this one is {sent or 'untyped'}), with the "
                                  f"file(s) as 'file' and the format as 'format', e.g. curl {example}; nothing was "
                                  "imported")


class ProjectImportView(APIView):
    parser_classes = FILE_PARSERS

    @extend_schema(
        request={"multipart/form-data": ImportRequestSerializer},
        responses={
            201: ImportResultSerializer,
            400: OpenApiResponse(
                ImportRefusedSerializer,
                description="Nothing was imported: `file` lists every problem of the files (each naming the file, "
                "the line or sample and the field, as the project page does), or says no file was sent, or that a "
                "body that is not multipart/form-data (JSON, say) is not read: send `file` and `format` as "
                "multipart/form-data; `format` names a format the project's kind does "
                "not import; an option of the other kind, or a field the import does not take, is named. A sample "
                "the project holds already (span projects) is named with the batch that holds it, and "
                "`allow_repeats` says how to import it anyway.",
            ),
            403: OpenApiResponse(ErrorSerializer, description="Only the project's admins import data."),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        """Import files into the project (admins), as its page's import form does: all or nothing. A span project
        takes FaithBench batch files or samples JSONL and queues sentence embedding; a pairs project takes raw
        texts, pair files or HaDes files."""
        project, _ = access.get_project_for_user(request.user, slug, admin=True)
        _require_multipart(request, project)
        refuse_stopped_upload(request)
        form = ImportRequestSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        body = form.validated_data
        _check_options(project, request.data, body["format"])
        files = read_file_field(request)
        importer = _import_pairs if project.kind == Project.Kind.PAIRS else _import_spans
        result = importer(project, request, body, files)
        answer = {"project": project.slug, "kind": project.kind, "format": body["format"], **result}
        return Response(answer, status=status.HTTP_201_CREATED)

