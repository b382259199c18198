"""Agreement and results built from the database, and the commands researchers script against.

The scenario (batch "b1", four samples; g1 wrote s0 and s1, g2 wrote s2 and s3):

- ann1, submitted: s0 Unwanted(+Intrinsic) and Benign -> U; s1 Unwanted.Extrinsic alone -> U;
  s2 an empty label list (ignored) -> C; s3 no span -> C.
- ann2, submitted: s0 Questionable -> Q; s1 Unwanted.Instrinsic (old spelling) -> U; s2 Benign -> B;
  s3 no span -> C.
- ann3, submitted but excluded from agreement: s3 Unwanted.
- ann4, assigned, never submitted: s2 Unwanted (ignored everywhere).

Nominal C|B|Q|U over (U,Q) (U,U) (C,B) (C,C): n_C=3, n_B=1, n_Q=1, n_U=3, n=8,
4 disagreeing coincidences: alpha = 1 - 7 * 4 / (64 - 20) = 4/11.
"""

from __future__ import annotations

import io
import json
from typing import Any

import krippendorff
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotate.models import Assignment, Batch, Membership, Passage, Project, Sample, SpanAnnotation
from annotate.services import stats
from annotate.taxonomy import category_of, label_categories, worst_category
from tests.conftest import login

pytestmark = pytest.mark.django_db

SUMMARY = "The bridge 🌉 reopened after nine weeks."


@pytest.fixture
def people() -> dict[str, Any]:
    # No password: hashing one costs about a third of a second and these users never log in.
    User = get_user_model()  # noqa: N806
    return {name: User.objects.create(username=name) for name in ("ann1", "ann2", "ann3", "ann4")}


def add_batch(project: Project, name: str, generators: list[str], metadata: list[dict] | None = None) -> list[Sample]:
    batch = Batch.objects.create(project=project, name=name, position=Batch.objects.filter(project=project).count())
    passage = Passage.objects.create(project=project, external_id=f"{name}-p", text="Source text.")
    return [
        Sample.objects.create(
            project=project,
            passage=passage,
            batch=batch,
            position=position,
            external_id=str(position),
            summary=SUMMARY,
            generator=generator,
            metadata=(metadata[position] if metadata else {}),
        )
        for position, generator in enumerate(generators)
    ]


def assign(sample: Sample, user: Any, *, submitted: bool = True, excluded: bool = False, round: int = 1) -> None:
    Assignment.objects.create(
        batch=sample.batch,
        annotator=user,
        round=round,
        status=Assignment.Status.SUBMITTED if submitted else Assignment.Status.ASSIGNED,
        excluded_from_agreement=excluded,
    )


def span(sample: Sample, user: Any, labels: list[str], start: int = 0, end: int = 3, round: int = 1) -> None:
    SpanAnnotation.objects.create(
        sample=sample, annotator=user, round=round, start=start, end=end, text=sample.summary[start:end], labels=labels
    )


@pytest.fixture
def scenario(people: dict[str, Any]) -> dict[str, Any]:
    project = Project.objects.create(name="Stats", slug="stats")
    metadata = [
        {"summarizer": "g1", "hhem": 0.1, "gpt": 0},
        {"summarizer": "g1", "hhem": 0.8, "gpt": 0},
        {"summarizer": "g2", "hhem": 0.6, "gpt": 1},
        {"summarizer": "g2", "hhem": None, "gpt": 1},
    ]
    s0, s1, s2, s3 = samples = add_batch(project, "b1", ["g1", "g1", "g2", "g2"], metadata)
    ann1, ann2, ann3, ann4 = (people[name] for name in ("ann1", "ann2", "ann3", "ann4"))
    assign(s0, ann1)
    assign(s0, ann2)
    assign(s0, ann3, excluded=True)
    assign(s0, ann4, submitted=False)
    span(s0, ann1, ["Unwanted", "Unwanted.Intrinsic"])
    span(s0, ann1, ["Benign"], 4, 10)
    span(s1, ann1, ["Unwanted.Extrinsic"])  # a child without its parent still counts as Unwanted
    span(s2, ann1, [])  # an empty label list is ignored
    span(s0, ann2, ["Questionable"])
    span(s1, ann2, ["Unwanted.Instrinsic"])  # the misspelling of older FaithBench dumps
    span(s2, ann2, ["Benign"])
    span(s3, ann3, ["Unwanted"])
    span(s2, ann4, ["Unwanted"])
    return {"project": project, "samples": samples, **people}


def run(command: str, *args: str) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


def run_agreement(scheme: str, level: str, aggregate: str, *extra: str) -> str:
    return run(
        "agreement", "--project", "stats", "--scheme", scheme, "--level", level, "--aggregate", aggregate, *extra
    )


# --------------------------------------------------------------------------- services


def test_batch_labels_pool_worst_labels_of_submitters_not_excluded(scenario: dict[str, Any]) -> None:
    s0, s1, s2, s3 = (sample.pk for sample in scenario["samples"])
    [labels] = stats.batch_labels(scenario["project"])
    assert labels.name == "b1"
    assert labels.annotators == ["ann1", "ann2"]
    assert labels.samples == [s0, s1, s2, s3]
    assert labels.labels == {
        ("ann1", s0): "U",
        ("ann1", s1): "U",
        ("ann2", s0): "Q",
        ("ann2", s1): "U",
        ("ann2", s2): "B",
    }


def test_project_agreement_by_hand_and_against_krippendorff(scenario: dict[str, Any]) -> None:
    report = stats.project_agreement(scenario["project"], "C|B|Q|U", "nominal", "pooled", 1)
    assert report["alpha"] == pytest.approx(4 / 11)
    expected = krippendorff.alpha([[3, 3, 0, 0], [2, 3, 1, 0]], level_of_measurement="nominal")
    assert report["alpha"] == pytest.approx(expected)
    assert report["units"] == 4
    assert report["annotators"] == 2
    assert report["reason"] is None
    assert (report["scheme"], report["level"], report["aggregate"], report["round"]) == (
        "C|B|Q|U",
        "nominal",
        "pooled",
        1,
    )
    assert report["per_batch"] == [
        {"batch": "b1", "alpha": pytest.approx(4 / 11), "reason": None, "units": 4, "annotators": 2}
    ]


def test_batch_with_one_annotator_is_undefined_and_left_out_of_the_mean(scenario: dict[str, Any]) -> None:
    lonely = add_batch(scenario["project"], "b2", ["g1", "g2"])
    assign(lonely[0], scenario["ann1"])
    span(lonely[0], scenario["ann1"], ["Unwanted"])
    mean = stats.project_agreement(scenario["project"], "C|B|Q|U", "nominal", "batch-mean", 1)
    assert mean["alpha"] == pytest.approx(4 / 11)
    assert [entry["batch"] for entry in mean["per_batch"]] == ["b1", "b2"]
    assert mean["per_batch"][1]["alpha"] is None
    assert "only one annotator" in mean["per_batch"][1]["reason"]
    pooled = stats.project_agreement(scenario["project"], "C|B|Q|U", "nominal", "pooled", 1)
    assert pooled["alpha"] == pytest.approx(4 / 11)  # b2's samples have one value each: no unit


def test_single_annotator_project_is_undefined_with_reason(people: dict[str, Any]) -> None:
    project = Project.objects.create(name="Solo", slug="solo")
    samples = add_batch(project, "only", ["g1", "g1"])
    assign(samples[0], people["ann1"])
    span(samples[0], people["ann1"], ["Unwanted"])
    report = stats.project_agreement(project, "C|U", "nominal", "pooled", 1)
    assert report["alpha"] is None
    assert report["reason"] == "no sample has two values: each batch has only one annotator"


def test_rounds_are_kept_apart(scenario: dict[str, Any]) -> None:
    s0, s1 = scenario["samples"][:2]
    for user in (scenario["ann1"], scenario["ann2"]):
        assign(s0, user, round=2)
    span(s0, scenario["ann1"], ["Unwanted"], round=2)
    span(s0, scenario["ann2"], ["Unwanted"], round=2)
    [labels] = stats.batch_labels(scenario["project"], round=2)
    assert labels.labels == {("ann1", s0.pk): "U", ("ann2", s0.pk): "U"}
    report = stats.project_agreement(scenario["project"], "C|U", "nominal", "pooled", 2)
    assert report["alpha"] == pytest.approx(1.0)


def test_unknown_round_is_a_clear_error(scenario: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"project 'stats' has no round 3 \(rounds with assignments: 1\)"):
        stats.batch_labels(scenario["project"], round=3)


def test_a_project_with_nothing_assigned_says_so_without_blaming_a_round_the_caller_never_gave(
    admin_user: Any, db: None
) -> None:
    """The figures' API answers under `round` (its parameter, default 1): with no assignment at all, the words say
    that nothing is assigned, not only that round 1 is unknown."""
    towns = Project.objects.create(name="Towns", slug="towns")
    Membership.objects.create(project=towns, user=admin_user, role=Membership.Role.ADMIN)
    with pytest.raises(ValueError) as refused:
        stats.batch_labels(towns, round=1)
    assert str(refused.value) == ("project 'towns' has no round 1: no batch of it is assigned to annotators yet, and "
                                  "these figures count assigned work (round defaults to 1)")
    answer = login(admin_user).get("/api/projects/towns/halu-rates/")
    assert answer.status_code == 400, answer.content
    assert "no batch of it is assigned to annotators yet" in answer.json()["round"][0]


def test_sample_worst_labels_pool_over_every_submitter(scenario: dict[str, Any]) -> None:
    verdicts = stats.sample_worst_labels(scenario["project"])
    # s3: only the excluded annotator marked it, and exclusion is for agreement only.
    assert [(verdict.generator, verdict.category) for verdict in verdicts] == [
        ("g1", "U"),
        ("g1", "U"),
        ("g2", "B"),
        ("g2", "U"),
    ]


def test_project_halu_rates(scenario: dict[str, Any]) -> None:
    assert stats.project_halu_rates(scenario["project"]) == {
        "g1": {"n": 2, "U": 100.0, "U+Q": 100.0, "U+Q+B": 100.0},
        "g2": {"n": 2, "U": 50.0, "U+Q": 50.0, "U+Q+B": 100.0},
    }


def test_project_detector_eval_by_hand(scenario: dict[str, Any]) -> None:
    # Truth: s0 h, s1 h, s2 c, s3 h. hhem (0.1, 0.8, 0.6, null) -> h c c, s3 missing:
    # recall h 1/2, c 1 -> 75; F1 2/3 and 2/3. gpt (0 0 1 1) -> h h c c: recall h 2/3, c 1 -> 83.33;
    # F1 h 4/5, c 2/3 -> 73.33.
    assert stats.project_detector_eval(scenario["project"]) == {
        "hhem": {"n": 3, "missing": 1, "invalid": 1, "balanced_accuracy": 75.0, "f1_macro": 66.67,
                 "rule": "p >= 0.5"},
        "gpt": {"n": 4, "missing": 0, "invalid": 0, "balanced_accuracy": 83.33, "f1_macro": 73.33,
                "rule": "1 = consistent (0/1 verdict)"},
    }


def test_batch_spans_for_span_agreement(scenario: dict[str, Any]) -> None:
    s0 = scenario["samples"][0].pk
    [spans] = stats.batch_spans(scenario["project"])
    assert spans.annotators == ["ann1", "ann2"]
    assert spans.summaries[s0] == SUMMARY
    assert sorted(spans.spans[("ann1", s0)]) == [(0, 3, "U"), (4, 10, "B")]
    assert ("ann3", scenario["samples"][3].pk) not in spans.spans


# --------------------------------------------------------------------------- commands


def test_agreement_command_json(scenario: dict[str, Any]) -> None:
    report = json.loads(run_agreement("C|B|Q|U", "nominal", "pooled", "--json"))
    assert report["alpha"] == pytest.approx(4 / 11)
    assert report["units"] == 4
    assert report["annotators"] == 2
    assert report["per_batch"][0]["batch"] == "b1"
    assert report["reason"] is None


def test_agreement_command_json_for_merging_and_dropping_schemes(scenario: dict[str, Any]) -> None:
    report = json.loads(run_agreement("C|U", "ordinal", "batch-mean", "--json"))
    # C|U: s0 (U, Q dropped) and s2 (C, B dropped) lose a value; s1 (U,U) and s3 (C,C) remain.
    assert report["alpha"] == pytest.approx(1.0)
    report = json.loads(run_agreement("C+B|Q+U", "interval", "pooled", "--round", "1", "--json"))
    assert report["alpha"] == pytest.approx(1.0)


def test_agreement_command_json_says_why_alpha_is_null(people: dict[str, Any]) -> None:
    project = Project.objects.create(name="Solo", slug="solo")
    samples = add_batch(project, "only", ["g1", "g1"])
    assign(samples[0], people["ann1"])
    output = run(
        "agreement", "--project", "solo", "--scheme", "C|U", "--level", "nominal", "--aggregate", "pooled", "--json"
    )
    report = json.loads(output)
    assert report["alpha"] is None
    assert report["reason"] == "no sample has two values: each batch has only one annotator"
    assert report["units"] == 0
    assert "alpha = undefined (no sample has two values" in run(
        "agreement", "--project", "solo", "--scheme", "C|U", "--level", "nominal", "--aggregate", "pooled"
    )


def test_agreement_command_prints_a_table(scenario: dict[str, Any]) -> None:
    output = run_agreement("C|B|Q|U", "nominal", "pooled")
    assert "alpha = 0.3636 over 4 samples, 2 annotators" in output
    assert "b1" in output


def test_agreement_command_bootstrap_interval(scenario: dict[str, Any]) -> None:
    report = json.loads(run_agreement("C|B|Q|U", "nominal", "pooled", "--bootstrap", "50", "--json"))
    assert len(report["interval"]) == 2
    assert report["bootstrap_resamples"] == 50


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--scheme", "C|X"], "unknown category 'X'"),
        (["--scheme", "C"], "at least two groups"),
        (["--level", "ratio"], "unknown level 'ratio'; use one of nominal, ordinal, interval"),
        (["--aggregate", "mean"], "unknown aggregate 'mean'; use one of pooled, batch-mean"),
        (["--round", "7"], "project 'stats' has no round 7"),
        (["--round", "zero"], "--round must be a positive whole number"),
        (["--project", "nope"], "no project with slug 'nope' (projects: stats)"),
    ],
)
def test_agreement_command_rejects_bad_arguments(scenario: dict[str, Any], arguments: list[str], message: str) -> None:
    options = {"--project": "stats", "--scheme": "C|U", "--level": "nominal", "--aggregate": "pooled"}
    options.update(dict(zip(arguments[::2], arguments[1::2], strict=True)))
    with pytest.raises(CommandError) as raised:
        run("agreement", *[part for pair in options.items() for part in pair])
    assert message in str(raised.value)


def test_halu_rates_command(scenario: dict[str, Any]) -> None:
    assert json.loads(run("halu_rates", "--project", "stats", "--json")) == {
        "g1": {"n": 2, "U": 100.0, "U+Q": 100.0, "U+Q+B": 100.0},
        "g2": {"n": 2, "U": 50.0, "U+Q": 50.0, "U+Q+B": 100.0},
    }
    table = run("halu_rates", "--project", "stats")
    assert "g2" in table and "50.00" in table
    with pytest.raises(CommandError, match="no project with slug 'x'"):
        run("halu_rates", "--project", "x")


def test_detector_eval_command(scenario: dict[str, Any]) -> None:
    report = json.loads(run("detector_eval", "--project", "stats", "--json"))
    assert report["gpt"] == {"n": 4, "missing": 0, "invalid": 0, "balanced_accuracy": 83.33, "f1_macro": 73.33,
                             "rule": "1 = consistent (0/1 verdict)"}
    # At 0.05 every hhem probability reads consistent: recall h 0, c 1 -> 50.
    strict = json.loads(run("detector_eval", "--project", "stats", "--threshold", "0.05", "--json"))
    assert strict["hhem"]["balanced_accuracy"] == 50.0
    assert strict["gpt"] == report["gpt"]
    assert "hhem" in run("detector_eval", "--project", "stats")
    with pytest.raises(CommandError, match="--threshold must be a number between 0 and 1"):
        run("detector_eval", "--project", "stats", "--threshold", "2")
    with pytest.raises(CommandError, match="has no round 2"):
        run("detector_eval", "--project", "stats", "--round", "2")


# --------------------------------------------------------------------------- the readers against straightforward ORM loops


def straightforward_batch_labels(project: Project, round: int) -> list[tuple[str, list[str], list[int], dict]]:
    """The worst labels as the first version of stats read them: ORM rows and dictionaries."""
    categories = label_categories(project.taxonomy)
    submitted = Assignment.objects.filter(batch__project=project, round=round, status=Assignment.Status.SUBMITTED)
    rosters: dict[int, list[str]] = {}
    for assignment in submitted.select_related("annotator").order_by("batch_id", "annotator__username"):
        people = rosters.setdefault(assignment.batch_id, [])
        if not assignment.excluded_from_agreement:
            people.append(assignment.annotator.username)
    found = []
    for batch in Batch.objects.filter(project=project, pk__in=list(rosters)).order_by("position", "id"):
        samples = list(batch.samples.order_by("position", "id").values_list("id", flat=True))
        labels: dict[tuple[str, int], str] = {}
        for span in SpanAnnotation.objects.filter(sample__batch=batch, round=round).select_related("annotator"):
            name = span.annotator.username
            category = category_of(span.labels, categories) if isinstance(span.labels, list) else None
            if name in rosters[batch.pk] and category is not None:
                labels[(name, span.sample_id)] = worst_category([labels.get((name, span.sample_id)), category])
        found.append((batch.name, rosters[batch.pk], samples, labels))
    return found


@pytest.fixture
def busy_project(people: dict[str, Any]) -> Project:
    """Three batches out of position order, rosters of one to four, exclusions, unsubmitted work, odd labels."""
    project = Project.objects.create(name="Busy", slug="busy")
    everyone = list(people.values()) + [get_user_model().objects.create(username=f"extra{n}") for n in range(2)]
    label_lists = [["Unwanted"], ["Benign"], ["Questionable"], [], ["Unwanted.Instrinsic"], ["Benign", "Questionable"]]
    for number, (position, roster_size) in enumerate([(2, 4), (0, 1), (1, 3)]):
        samples = add_batch(project, f"busy{number}", ["g1", "g2", "", "g1", "g3"][: 3 + number])
        Batch.objects.filter(pk=samples[0].batch_id).update(position=position)
        for index, person in enumerate(everyone[:roster_size]):
            assign(samples[0], person, excluded=(index == 1 and number == 0), submitted=index != 2 or number != 2)
        for offset, sample in enumerate(samples):
            for index, person in enumerate(everyone):  # also people outside the roster
                if (index + offset + number) % 3:
                    span(sample, person, label_lists[(index * 5 + offset + number) % len(label_lists)])
    return project


def test_batch_labels_equal_a_straightforward_orm_loop(busy_project: Project) -> None:
    found = [(entry.name, entry.annotators, entry.samples, entry.labels) for entry in stats.batch_labels(busy_project)]
    assert found == straightforward_batch_labels(busy_project, 1)
    assert [name for name, *_ in found] == ["busy1", "busy2", "busy0"]  # batch position order


def test_sample_worst_labels_count_only_those_who_submitted_the_batch(busy_project: Project) -> None:
    # DESIGN.md: a sample's worst label is over all the batch's annotators, that is, who submitted that batch.
    # busy_project has spans by people outside each roster and by someone who has not submitted busy2.
    categories = label_categories(busy_project.taxonomy)
    expected = []
    for sample in Sample.objects.filter(project=busy_project, batch__assignments__status="submitted").distinct().order_by(
        "batch_id", "position", "id"
    ):
        submitters = set(
            Assignment.objects.filter(batch=sample.batch, round=1, status=Assignment.Status.SUBMITTED)
            .values_list("annotator_id", flat=True)
        )
        found = [
            category_of(labels, categories)
            for labels in sample.spans.filter(round=1, annotator_id__in=submitters).values_list("labels", flat=True)
        ]
        expected.append((sample.pk, sample.generator or stats.UNKNOWN_GENERATOR, worst_category(found)))
    verdicts = stats.sample_worst_labels(busy_project)
    assert [(verdict.sample_id, verdict.generator, verdict.category) for verdict in verdicts] == expected
    # The rule matters on this data: pooling over every submitter of the round gives other labels.
    everyone = set(
        Assignment.objects.filter(batch__project=busy_project, status=Assignment.Status.SUBMITTED)
        .values_list("annotator_id", flat=True)
    )
    loose = [
        worst_category(
            category_of(labels, categories)
            for labels in Sample.objects.get(pk=sample_id).spans.filter(round=1, annotator_id__in=everyone)
            .values_list("labels", flat=True)
        )
        for sample_id, _, _ in expected
    ]
    assert loose != [category for _, _, category in expected]


def test_page_figure_sets_hold_the_same_numbers_as_the_single_figures(busy_project: Project) -> None:
    figures = stats.results_figures(busy_project, 1, 0.5, 1)
    assert figures["rates"] == stats.project_halu_rates(busy_project, 1)
    assert figures["distribution"] == stats.worst_label_distribution(busy_project, 1)
    assert figures["detectors"] == stats.project_detector_eval(busy_project, 0.5, 1)
    assert figures["selection"] == stats.challenging_groups(busy_project, 1, 0.5)
    assert set(stats.results_figures(busy_project, None, 0.5, 1)) == {"round", "selection"}
    schemes, levels = ["C|B|Q|U", "C+B|Q+U"], ["ordinal", "nominal"]
    for aggregate in ("pooled", "batch-mean"):
        sets = stats.agreement_figures(busy_project, schemes, levels, aggregate, [1], bootstrap=40)
        assert sets["reports"] == [
            stats.project_agreement(busy_project, scheme, level, aggregate, 1, bootstrap=40 if aggregate == "pooled" else 0)
            for scheme in schemes
            for level in levels
        ]
        assert sets["pairwise"] == [{"round": 1, "pairs": stats.project_pairwise_alpha(busy_project, "C|B|Q|U", "ordinal")}]
    [spans] = stats.span_figures(busy_project, "C+B|Q+U", [1], bootstrap=30)["rounds"]
    assert spans["spans"] == stats.span_agreement(busy_project, "C+B|Q+U", 1)
    assert spans["sample_alpha"] == stats.project_agreement(busy_project, "C+B|Q+U", "nominal", "pooled", 1, bootstrap=30)


def test_batch_disputes_read_only_their_batch_and_match_the_labels(busy_project: Project) -> None:
    for entry in stats.batch_labels(busy_project):
        batch = Batch.objects.get(project=busy_project, name=entry.name)
        found = stats.batch_disputes(busy_project, batch, 1, "C|B|Q|U")
        expected = []
        for sample in entry.samples:
            labels = {name: entry.labels.get((name, sample), "C") for name in entry.annotators}
            if len(set(labels.values())) > 1:
                expected.append({"sample_id": sample, "labels": labels})
        assert found["disputed"] == expected
        assert found["annotators"] == entry.annotators and found["samples"] == len(entry.samples)
