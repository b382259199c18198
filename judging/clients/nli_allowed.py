"""Which model directories an operator lets a project admin who is not site staff give an NLI judge: the id of a model
in the local Hugging Face cache, or a directory inside the folders of settings.FAITHLAB_NLI_MODEL_DIRS (by default
that cache and DATA_DIR/models).

Without this rule a project admin could name any path on the server: the refusals would tell whether it exists and
holds a config.json (a map of the server's file system), and the worker would load whatever directory was named.
The rule is checked before the path is looked at, and its refusal is the same whether the path exists or not.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from judging.clients.nli import cached_snapshot, is_model_id
from judging.labels import setting_label

MODEL_DIRS_SETTING = "FAITHLAB_NLI_MODEL_DIRS"


def allowed_model_folders() -> tuple[Path, ...]:
    """FAITHLAB_NLI_MODEL_DIRS, or when it is empty the local Hugging Face cache (HF_HUB_CACHE / HF_HOME, as
    huggingface_hub reads them) and DATA_DIR/models."""
    if settings.FAITHLAB_NLI_MODEL_DIRS:
        return tuple(Path(folder) for folder in settings.FAITHLAB_NLI_MODEL_DIRS)
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE), Path(settings.DATA_DIR) / "models"


def _resolved(path: Path) -> Path | None:
    """``path`` made absolute with every symlink and .. followed (Path.resolve), or None when it cannot be."""
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL byte
        return None


def model_path_allowed(path: str) -> bool:
    """Whether a project admin who is not site staff may give an NLI judge ``path``: once resolved it lies inside
    an allowed folder, or it is the id of a model in the local Hugging Face cache (and no folder of that name,
    relative to the server's working directory, would be taken instead)."""
    resolved = _resolved(Path(path))
    if resolved is not None:
        for folder in allowed_model_folders():
            allowed = _resolved(folder)
            if allowed is not None and resolved.is_relative_to(allowed):
                return True
    if not is_model_id(path):
        return False
    try:
        shadowed = Path(path).is_dir()
    except (OSError, ValueError):
        shadowed = True
    return not shadowed and cached_snapshot(path) is not None


def model_path_refusal(path: str) -> str:
    """Why a project admin who is not site staff may not give an NLI judge ``path``, or "" (allowed). The message
    says nothing of whether the path exists."""
    if model_path_allowed(path):
        return ""
    folders = ", ".join(str(folder) for folder in allowed_model_folders())
    return (f"{setting_label('nli_model_path')}: a project admin may give only the id of a model in the local "
            f"Hugging Face cache, or a model directory inside the folders an operator allows in {MODEL_DIRS_SETTING} "
            f"({folders}). An operator copies the model there (or sets {MODEL_DIRS_SETTING} in the environment of the "
            "web server and the worker), or site staff create the judge.")
