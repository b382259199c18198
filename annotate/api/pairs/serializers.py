"""The pairs API's serializers and shared schema components (they are also the OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from annotate.api.schema import FIELD_ERRORS_SCHEMA
from annotate.api.serializers import MAX_ROUND, ErrorSerializer
from annotate.api.validation import QueryParamsSerializer, RejectsUnknownFields
from annotate.models import JudgeFlag, PairItem, PairRound
from annotate.services.pairs import flags, queue

LABEL_HELP = "H hallucination, N not hallucination, ? cannot determine."


class PairProjectQuerySerializer(QueryParamsSerializer):
    project = serializers.CharField(max_length=100, help_text="The pairs project's slug.")


class PairProgressSerializer(serializers.Serializer):
    answered = serializers.IntegerField(help_text="Your counted answers in the project.")
    left = serializers.IntegerField(
        help_text="Items left for you: open items you may still be served, plus the one served to you and not "
                  "answered yet (the project page and the labeling page show the same figure).")


def span_field(**options: Any) -> serializers.ListField:
    """[start, end) in code points."""
    return serializers.ListField(child=serializers.IntegerField(min_value=0), min_length=2, max_length=2, **options)


class PairToJudgeSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The item's id: answer at /api/pairs/{id}/judgements/.")
    original = serializers.CharField(allow_null=True, help_text="The original text (null for HaDes release rows).")
    perturbed = serializers.CharField(help_text="The perturbed text.")
    original_span = span_field(
        allow_null=True, help_text="[start, end) of the replaced words in the original (code points)."
    )
    perturbed_span = span_field(help_text="[start, end) of the item's span in the perturbed text.")
    other_spans = serializers.ListField(
        child=span_field(),
        help_text="The other replaced spans of the same perturbed text, [start, end) each, in text order.",
    )
    original_words = serializers.CharField(allow_blank=True)
    perturbed_words = serializers.CharField(allow_blank=True)
    served_at = serializers.DateTimeField(help_text="When the server served it to you; time per item counts from here.")
    progress = PairProgressSerializer()


class PairTakenBackSerializer(serializers.Serializer):
    label = serializers.ChoiceField(choices=list(queue.LABELS), help_text="The label of the answer taken back.")


class PairUndoneSerializer(PairToJudgeSerializer):
    taken_back = PairTakenBackSerializer(
        help_text="The answer the undo took back, on this item: your last answer in the project, wherever it was "
        "given (another tab, a script)."
    )


class PairJudgementRequestSerializer(RejectsUnknownFields):
    label = serializers.ChoiceField(
        choices=list(queue.LABELS),
        help_text=LABEL_HELP,
        error_messages={"invalid_choice": '"{input}" is not a label; answer one of H, N, ? (' + LABEL_HELP + ")"},
    )


class PairJudgementResultSerializer(serializers.Serializer):
    item = serializers.IntegerField(help_text="The item you judged.")
    label = serializers.ChoiceField(choices=list(queue.LABELS))
    seconds = serializers.FloatField(
        allow_null=True,
        help_text="Server-measured: from serving the item to receiving the answer; null when not known (the server "
        "clock went back in between).",
    )
    answered_at = serializers.DateTimeField()
    next = PairToJudgeSerializer(
        allow_null=True, help_text="Your next item, served already (null when nothing is left for you)."
    )
    progress = PairProgressSerializer()


class PairConflictSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What happened, for a person to read; nothing was changed.")
    code = serializers.ChoiceField(
        choices=["already_judged", "not_served", "serve_expired", "round_closed", "nothing_to_undo"],
        help_text="already_judged: you judged this item before with another label (the same label again is a "
        "retry, answered 200; undo your last answer to change it); not_served: it was not served to you; "
        "serve_expired: your serve expired and its slot went to another judge; round_closed: the item's round "
        "was closed (the next round was created) while it was on your screen; nothing_to_undo: no answer to "
        "undo, or your last answer is in a closed round and final.",
    )


class VotesSerializer(serializers.Serializer):
    H = serializers.IntegerField()
    N = serializers.IntegerField()
    unsure = serializers.IntegerField(help_text='"?" answers: judges who could not determine.')


# A row of the item list. Reviewers get the state and votes; annotators only their own answer.
class PairItemRowSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField(allow_blank=True)
    item_id = serializers.CharField(
        help_text="The item's name in exports (the pair format's item_id) and on the pages: external_id, or "
        "item-<id> for an item made here.")
    round = serializers.IntegerField(allow_null=True, help_text="The round's number; null in the pool.")
    original_words = serializers.CharField(allow_blank=True)
    perturbed_words = serializers.CharField(allow_blank=True)
    state = serializers.ChoiceField(choices=PairItem.State.values, required=False, help_text="Reviewers only.")
    consensus = serializers.CharField(
        allow_blank=True, required=False, help_text="Reviewers only: H or N with consensus (or labelled), else ''."
    )
    votes = VotesSerializer(required=False, help_text="Reviewers only: counted answers.")
    judges_needed = serializers.IntegerField(required=False, help_text="Reviewers only.")
    selection = serializers.JSONField(required=False, help_text="Reviewers only: why the round drew the item.")
    your_label = serializers.CharField(required=False, help_text="Annotators only: your answer, H, N or ?.")
    answered_at = serializers.DateTimeField(required=False, help_text="Annotators only: when you answered.")


class PairItemQuerySerializer(PairProjectQuerySerializer):
    state = serializers.ChoiceField(choices=PairItem.State.values, required=False, help_text="Reviewers only.")
    round = serializers.IntegerField(min_value=1, max_value=MAX_ROUND, required=False)


class PairRoundRowSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    status = serializers.ChoiceField(choices=PairRound.Status.values)
    size = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)
    your_answers = serializers.IntegerField(help_text="Your counted answers in this round.")
    items_by_state = serializers.DictField(
        child=serializers.IntegerField(), required=False, help_text="Reviewers only: the round's items per state."
    )
    filters = serializers.JSONField(required=False, help_text="Reviewers only.")
    funnel = serializers.JSONField(required=False, help_text="Reviewers only.")
    ratio = serializers.JSONField(required=False, help_text="Reviewers only: the subsampling ratio's figures.")
    promised_h_share = serializers.FloatField(allow_null=True, required=False, help_text="Reviewers only.")
    expected_h_share = serializers.FloatField(
        allow_null=True, required=False, help_text="Reviewers only: the share of H expected of the drawn items "
        "themselves, if the detector errs on the pool as on the counts behind R (it differs from promised_h_share "
        "when the pool's predicted mix differs from the counts'); null for a random round or one created before "
        "this figure was kept.")
    detector = serializers.IntegerField(allow_null=True, required=False, help_text="Reviewers only.")


# --- figures (annotate.api.pairs.figures): agreement per round and overall, one round's detector metrics and balance


def _share(what: str) -> serializers.FloatField:
    return serializers.FloatField(
        allow_null=True, help_text=f"Percent of the items {what}, to 2 decimals; null when there is no item (see "
        "reason).")


class PairAgreementFiguresSerializer(serializers.Serializer):
    alpha = serializers.FloatField(
        allow_null=True, help_text="Krippendorff's alpha, nominal, over items x judges (H and N; ? and absent judges "
        "missing); null when undefined, with the reason.")
    items = serializers.IntegerField(
        help_text="Items whose judging is finished (consensus or no consensus), counted by the answers that decided "
        "them (counted judges only).")
    consensus = _share("with a strict majority of the valid votes")
    agree80 = _share("whose majority label holds at least 80% of the valid votes")
    unanimous = _share("whose valid votes are all the same label")
    no_consensus = _share("without consensus (a tie, or no valid vote)")
    reason = serializers.CharField(allow_null=True, help_text="Why alpha (and, with no item, every share) is null.")


class PairRoundAgreementSerializer(PairAgreementFiguresSerializer):
    round = serializers.IntegerField(allow_null=True, help_text="The round's number (null: items outside any round).")


class PairAgreementReportSerializer(PairAgreementFiguresSerializer):
    round = serializers.IntegerField(allow_null=True, help_text="The round asked for; null: every round together.")
    rounds = PairRoundAgreementSerializer(
        many=True, required=False, help_text="Without ?round= only: the same figures for every round, in order.")


class PairAgreementQuerySerializer(QueryParamsSerializer):
    round = serializers.IntegerField(
        min_value=1, max_value=MAX_ROUND, required=False,
        help_text="One round's figures; leave it out for every round together, with each round listed.")


class SelectingDetectorSerializer(serializers.Serializer):
    number = serializers.IntegerField(help_text="Detector k is trained before round k + 1.")
    encoder = serializers.CharField()
    trained_on = serializers.IntegerField(help_text="Consensus or imported-label items it was trained on.")
    trained_h = serializers.IntegerField(help_text="Of those, items labelled H.")


def _metric(text: str) -> serializers.FloatField:
    return serializers.FloatField(allow_null=True, help_text=f"{text}; null when undefined (see undefined).")


class DetectorMetricsSerializer(serializers.Serializer):
    n = serializers.IntegerField(
        help_text="Consensus items scored (those with a span vector from the detector's encoder).")
    accuracy = _metric("Share predicted right (predicted H when P(H) >= 0.5)")
    precision_h = _metric("Precision of H")
    recall_h = _metric("Recall of H")
    f1_h = _metric("F1 of H, 2TP / (2TP + FP + FN)")
    precision_n = _metric("Precision of N")
    recall_n = _metric("Recall of N")
    f1_n = _metric("F1 of N")
    g_mean = _metric("sqrt(recall H x recall N)")
    auc = _metric("AUC of P(H)")
    brier = _metric("Brier score of P(H), the mean of (P(H) - label)^2")


class RoundDetectorMetricsSerializer(serializers.Serializer):
    detector = SelectingDetectorSerializer(
        allow_null=True, help_text="The detector that selected the round; null for round 1 (drawn at random).")
    metrics = DetectorMetricsSerializer(
        allow_null=True, help_text="Its metrics on the round's consensus items (held out: it was trained before "
        "they were judged); null when there are none, with the reason.")
    undefined = serializers.DictField(
        child=serializers.CharField(), help_text="Why each metric that is null is undefined, by the metric's key.")
    reason = serializers.CharField(
        allow_null=True, help_text="Why metrics is null, or which consensus items the metrics leave out.")


class RoundBalanceSerializer(serializers.Serializer):
    h = serializers.IntegerField(help_text="Consensus items of the round labelled H.")
    n = serializers.IntegerField(help_text="Consensus items of the round labelled N.")
    h_share = serializers.FloatField(
        allow_null=True, help_text="h / (h + n), the balance reached; null: see undefined.")
    promised_h_share = serializers.FloatField(
        allow_null=True, help_text="The share of H the subsampling ratio R promised; null: see undefined.")
    expected_h_share = serializers.FloatField(
        allow_null=True, help_text="The share of H expected of the round's drawn items themselves: each predicted-H "
        "item H with chance TP/(TP+FP), each predicted-N one with FN/(FN+TN). R balances the counted items; when "
        "the pool's predicted mix differs from theirs, this differs from promised_h_share. Null: see "
        "expected_explanation (null too for a random round or one created before this figure was kept).")
    expected_explanation = serializers.CharField(
        allow_null=True, help_text="The counted items' and the pool's predicted mixes, and how expected_h_share is "
        "computed (or why it is null).")
    undefined = serializers.DictField(
        child=serializers.CharField(), help_text="Why h_share or promised_h_share is null, by its key.")


class PairRoundDetailSerializer(PairRoundRowSerializer):
    agreement = PairRoundAgreementSerializer(required=False, help_text="Reviewers only: the round's agreement.")
    detector_metrics = RoundDetectorMetricsSerializer(
        required=False, help_text="Reviewers only: the selecting detector's metrics on the round's consensus items.")
    balance = RoundBalanceSerializer(
        required=False, help_text="Reviewers only: the H share reached beside the share R promised.")


class JudgeFlagSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    judge = serializers.CharField(help_text="The judge's username.")
    rule = serializers.ChoiceField(choices=JudgeFlag.Rule.values)
    rule_name = serializers.CharField()
    figures = serializers.DictField(help_text="What the rule measured, e.g. {judgements, mean_seconds, limit_seconds}.")
    explanation = serializers.CharField(help_text="The rule and its figures in words.")
    status = serializers.ChoiceField(choices=JudgeFlag.Status.values)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    reviewed_by = serializers.CharField(allow_null=True)
    reviewed_at = serializers.DateTimeField(allow_null=True)
    judge_blocked = serializers.BooleanField()


class FlagQuerySerializer(QueryParamsSerializer):
    status = serializers.ChoiceField(choices=JudgeFlag.Status.values, required=False)


# The flags page's rule (annotate.views.pairs.flags.block): no block without a reason, which is kept with the block.
NO_REASON = "say why you block this judge; it is kept with the block. Nothing was changed"


class BlockRequestSerializer(RejectsUnknownFields):
    # min_length and the pattern say in the schema what trimming and the blank check do (spaces alone are blank).
    reason = serializers.CharField(
        min_length=1, max_length=flags.MAX_REASON, validators=[RegexValidator(r"\S", f"reason is empty: {NO_REASON}.")],
        help_text="Why you block the judge (required, as on the flags page); kept with the block, spaces trimmed.",
        error_messages={
            "required": f"reason is required: {NO_REASON}.",
            "blank": f"reason is empty: {NO_REASON}.",
            "null": f"reason is null: {NO_REASON}.",
        },
    )


class BlockResultSerializer(serializers.Serializer):
    flag = JudgeFlagSerializer()
    items_recomputed = serializers.IntegerField(help_text="Items the judge had judged, decided again without them.")
    items_reopened = serializers.IntegerField(help_text="Of those, items that went back to the queue.")


class UnblockResultSerializer(serializers.Serializer):
    flag = JudgeFlagSerializer(help_text="The flag the block was reached through, dismissed now.")
    items_recomputed = serializers.IntegerField(
        help_text="Items the judge had answered, decided again with their answers counting."
    )



class RoundJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["queued", "running", "done", "failed"])
    round = serializers.IntegerField(allow_null=True, help_text="The round the job draws (null for an old job).")
    error = serializers.CharField(allow_blank=True, help_text="Why it failed; \"Cancelled by <user> at <time>.\" "
                                  "once cancelled.")
    created_by = serializers.CharField(allow_null=True, help_text="Who started the job.")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    cancelled_by = serializers.CharField(allow_null=True, help_text="Who cancelled it; null unless cancelled.")


# --------------------------------------------------------------------------- shared schema components


PROJECT_QUERY = [PairProjectQuerySerializer]
NOT_A_PAIRS_PROJECT = OpenApiResponse(
    FIELD_ERRORS_SCHEMA,
    description="The project is a span project: `project` names its kind and where its figures are (to its members; "
    "anyone else gets 404).",
)
NO_PROJECT = OpenApiResponse(ErrorSerializer, description="No such pairs project among yours.")
class PairRefusedSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Why you may not judge here, for a person to read; nothing was changed.")
    code = serializers.ChoiceField(
        choices=["not_a_judge", "blocked"], required=False,
        help_text="not_a_judge: your role does not judge pairs; blocked: an admin blocked you in this project. "
        "Absent when the refusal came before the queue's checks.",
    )


REFUSED = OpenApiResponse(
    PairRefusedSerializer,
    description="Your role does not judge pairs (annotators and admins do), or you are blocked (see code).",
)
