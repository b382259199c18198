"""A pairs project's settings row, and which perturbation model settings are still missing.

The perturbation models are local paths: the project's own (PairConfig) or,
when blank, the server's PAIRS_MASKED_LM / PAIRS_CAUSAL_LM /
PAIRS_SPACY_PIPELINE settings. ``missing_model_settings`` only looks at the
file system (no model is loaded), so the project page can call it on every
view and say exactly what to fill in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist

from annotate.checkpoints import CAUSAL_LM_HEADS, MASKED_LM_HEADS, CheckpointProblem, require_head
from annotate.models import PairConfig, Project
from annotate.perturbation.models import CAUSAL_HINT, CAUSAL_WANTED, MASKED_HINT, MASKED_WANTED


def get_config(project: Project) -> PairConfig:
    """The project's pair settings as stored now, created with the defaults when missing."""
    return PairConfig.objects.get_or_create(project=project)[0]


def loaded_config(project: Project) -> PairConfig:
    """The settings loaded with the project (``select_related("pair_config")``, as the queue's lookups do):
    no query on the hot path; falls back to get_config when the project came without them."""
    try:
        return project.pair_config
    except ObjectDoesNotExist:
        return get_config(project)


@dataclass(frozen=True)
class ModelPath:
    path: str
    setting: str  # the environment setting the server value comes from
    from_project: bool  # True: the project's own path; False: the server setting (or nothing)

    @property
    def origin(self) -> str:
        return "the project's setting" if self.from_project else self.setting


@dataclass(frozen=True)
class ModelPaths:
    masked_lm: ModelPath
    causal_lm: ModelPath
    spacy_pipeline: ModelPath


def _choose(project_value: str, setting: str) -> ModelPath:
    if project_value.strip():
        return ModelPath(project_value.strip(), setting, True)
    return ModelPath(str(getattr(settings, setting, "") or "").strip(), setting, False)


def model_paths(config: PairConfig) -> ModelPaths:
    return ModelPaths(
        masked_lm=_choose(config.masked_lm, "PAIRS_MASKED_LM"),
        causal_lm=_choose(config.causal_lm, "PAIRS_CAUSAL_LM"),
        spacy_pipeline=_choose(config.spacy_pipeline, "PAIRS_SPACY_PIPELINE"),
    )


def _model_problem(model: ModelPath, what: str, hint: str, heads: tuple[str, ...], wanted: str) -> str | None:
    if not model.path:
        return hint
    try:
        require_head(model.path, heads, wanted)
    except CheckpointProblem as problem:
        return f"The {what} path {model.path!r} ({model.origin}) {problem}. {hint}"
    return None


def _spacy_problem(pipeline: ModelPath) -> str | None:
    if not pipeline.path or Path(pipeline.path).expanduser().is_dir():
        return None
    import spacy

    if spacy.util.is_package(pipeline.path):
        return None
    return (
        f"The spaCy pipeline {pipeline.path!r} ({pipeline.origin}) is neither a local pipeline directory nor an "
        "installed spaCy package: set PAIRS_SPACY_PIPELINE (environment) or the project's spaCy pipeline to a "
        "local spaCy pipeline directory, or leave both blank for spaCy's blank English with FaithLab's entity rules."
    )


def missing_model_settings(project: Project) -> list[str]:
    """One sentence per setting still to fill in before perturbation can run; empty when all is set."""
    paths = model_paths(get_config(project))
    problems = [
        _model_problem(paths.masked_lm, "masked LM", MASKED_HINT, MASKED_LM_HEADS, MASKED_WANTED),
        _model_problem(paths.causal_lm, "causal LM", CAUSAL_HINT, CAUSAL_LM_HEADS, CAUSAL_WANTED),
        _spacy_problem(paths.spacy_pipeline),
    ]
    return [problem for problem in problems if problem]
