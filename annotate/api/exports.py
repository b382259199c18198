"""Project exports through the API: which formats a project has, the query that asks for one (every problem in one
400), and the download itself (streamed, or a zip of FaithBench batch files)."""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header
from rest_framework import serializers

from annotate.api.errors import field_error
from annotate.api.serializers import MAX_ROUND
from annotate.api.validation import QueryParamsSerializer
from annotate.models import Project
from annotate.services import export
from annotate.services.pairs import export as pair_export

# The CSV byte-order mark's query parameter, worded once for every export endpoint (spans, judgements, audits).
BOM_HELP = (
    "format=csv only: start the file with the UTF-8 byte order mark (EF BB BF), so Excel reads accented and other "
    "non-ASCII text right. Without it (the default) the bytes are unchanged. With another format: 400."
)


def export_formats(project: Project) -> tuple[str, tuple[str, ...]]:
    """The project's kind in words and the export formats it has (a pairs project's differ from a span project's)."""
    if project.kind == Project.Kind.PAIRS:
        return "pairs", pair_export.FORMATS
    return "span annotation", export.FORMATS


FORMAT_HELP = (
    "Span projects: jsonl (a sample a line), csv (a span a row), faithbench (a zip of <batch>.json FaithBench files). "
    "Pairs projects: pairs (FaithLab's pair format with votes and consensus) or hades (the HaDes format), one JSONL "
    "file each. A format of the other kind gets 400."
)


class ExportQuerySerializer(QueryParamsSerializer):
    """Checked against the project (``context["project"]``), every problem in one answer."""

    format = serializers.ChoiceField(
        choices=[*export.FORMATS, *pair_export.FORMATS], help_text=FORMAT_HELP,
        error_messages={
            "required": f"choose a format: {', '.join(export.FORMATS)} for a span annotation project, "
                        f"{', '.join(pair_export.FORMATS)} for a pairs project",
            "invalid_choice": f"format \"{{input}}\" is not an export format: send {', '.join(export.FORMATS)} for a "
                              f"span annotation project, {', '.join(pair_export.FORMATS)} for a pairs project",
        },
    )
    round = serializers.IntegerField(
        default=1, min_value=1, max_value=MAX_ROUND,
        help_text="Span projects: the round to export (default 1). A pairs export holds every round; leave it out.",
    )
    pseudonyms = serializers.BooleanField(
        default=False, help_text="Annotators as annotator-1, -2, ... instead of names (a pairs export names nobody)."
    )
    bom = serializers.BooleanField(default=False, help_text=BOM_HELP)

    def validate_format(self, value: str) -> str:
        project = self.context["project"]
        kind, formats = export_formats(project)
        if value not in formats:
            raise serializers.ValidationError(
                f"{value!r} does not apply to {project.slug!r}, a {kind} project; its formats are {', '.join(formats)}"
            )
        return value

    def validate_bom(self, value: bool) -> bool:
        # Read from the query as sent: the format may itself be refused, and this problem still comes with it.
        if value and (refusal := export.bom_refusal(str(self.initial_data.get("format", "")))) is not None:
            raise serializers.ValidationError(refusal)
        return value

    def validate_round(self, value: int) -> int:
        project = self.context["project"]
        if project.kind == Project.Kind.PAIRS:
            if "round" in self.initial_data:
                raise serializers.ValidationError(
                    f"{project.slug!r} is a pairs project: its export holds every round's items, each line with its "
                    "round; leave round out"
                )
            return value
        try:
            export.ExportOptions(round=value).check(project)  # a round the project lacks, named with the format's
        except export.ExportError as error:
            raise serializers.ValidationError(error.detail) from None
        return value


def _faithbench_zip(project: Project, options: export.ExportOptions) -> StreamingHttpResponse:
    """The FaithBench batch files, one <batch>.json each as the export command writes them, in a zip streamed
    as it is written, so a large project's download starts before a proxy gives up waiting."""
    response = StreamingHttpResponse(export.faithbench_zip_chunks(project, options),
                                     content_type=export.CONTENT_TYPES[options.format])
    # Written as FileResponse(as_attachment=True) writes it, as the page's download of a finished export is sent.
    response["Content-Disposition"] = content_disposition_header(True, export.download_name(project, options))
    return response


def _pairs_download(project: Project, fmt: str) -> StreamingHttpResponse:
    """A pairs project's export, streamed a line at a time as the project page's links give it.

    Items the format cannot carry are a 400 on ``format`` naming them, found before the response starts.
    """
    try:
        lines = pair_export.export_lines(project, fmt)
    except export.ExportError as error:
        raise field_error(error.field, error.detail) from None
    response = StreamingHttpResponse(lines, content_type="application/jsonl; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-{fmt}.jsonl"'
    return response



def export_download(project: Project, query_params: Any) -> StreamingHttpResponse:
    """The download GET /api/projects/<slug>/export/ answers, after checking every query parameter at once."""
    query = ExportQuerySerializer(data=query_params, context={"project": project})
    query.is_valid(raise_exception=True)
    if project.kind == Project.Kind.PAIRS:
        return _pairs_download(project, query.validated_data["format"])
    options = export.ExportOptions(**query.validated_data)
    try:
        # Checked before the response starts: a round the project lacks is a 400, not an empty 200.
        options.check(project)
    except export.ExportError as error:
        raise field_error(error.field, error.detail) from None
    if options.format == "faithbench":
        return _faithbench_zip(project, options)
    lines = export.jsonl_lines(project, options) if options.format == "jsonl" else export.csv_lines(project, options)
    response = StreamingHttpResponse(lines, content_type=export.CONTENT_TYPES[options.format])
    response["Content-Disposition"] = f'attachment; filename="{export.download_name(project, options)}"'
    return response
