"""The judging app's rows, by topic: judges and prompts, runs and judgements, audits, synthetic data."""

from judging.models.audits import Audit, AuditItem, BlindScore, JudgesShown
from judging.models.judges import Judge, JudgingSettings, PromptVersion
from judging.models.runs import CallCache, Judgement, JudgeRun
from judging.models.synthetic import SyntheticItem, SyntheticRewrite, SyntheticSet

__all__ = [
    "Audit",
    "AuditItem",
    "BlindScore",
    "JudgesShown",
    "CallCache",
    "Judge",
    "JudgeRun",
    "Judgement",
    "JudgingSettings",
    "PromptVersion",
    "SyntheticItem",
    "SyntheticRewrite",
    "SyntheticSet",
]
