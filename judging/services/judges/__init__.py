"""Judges of a project, the prompts they use (versioned), and the project's triage settings: every write here.

Settings are checked before anything is written, and a refusal names the field
(``JudgeSettingsError.field``) so a page can put the message beside it. An API
key is never accepted: a judge stores the NAME of the environment variable that
holds it, and a value that looks like a key is refused without echoing it.

Split by topic: ``validation`` (the limits, JudgeSettingsError and the checks of each setting), ``edit``
(creating and changing a judge, the `judge` command's endpoint judge), ``prompts`` (prompt versions,
PromptRefused) and ``triage_settings`` (the project's triage). The names other code uses are importable from
here; a test that replaces a function replaces it in the module that calls it (e.g. ``edit.check_new_judge``).
"""

from __future__ import annotations

from judging.services.judges.edit import (
    ENDPOINT_JUDGE_SETTINGS,
    changes_refused,
    check_judge_update,
    check_new_judge,
    create_judge,
    endpoint_judge,
    endpoint_judge_changes,
    find_endpoint_judge,
    update_judge,
)
from judging.services.judges.prompts import PromptRefused, current_prompt, save_prompt
from judging.services.judges.triage_settings import judging_settings, update_judging_settings
from judging.services.judges.validation import (
    MAX_CONCURRENCY,
    MAX_RETRIES,
    MAX_TIMEOUT_SECONDS,
    NLI_SETTINGS,
    RUBRIC_SETTINGS,
    JudgeSettingsError,
    clean_api_key_env,
    clean_base_url,
    clean_judge_settings,
    clean_nli_model_path,
    looks_like_api_key,
)

__all__ = [
    "ENDPOINT_JUDGE_SETTINGS",
    "MAX_CONCURRENCY",
    "MAX_RETRIES",
    "MAX_TIMEOUT_SECONDS",
    "NLI_SETTINGS",
    "RUBRIC_SETTINGS",
    "JudgeSettingsError",
    "PromptRefused",
    "changes_refused",
    "check_judge_update",
    "check_new_judge",
    "clean_api_key_env",
    "clean_base_url",
    "clean_judge_settings",
    "clean_nli_model_path",
    "create_judge",
    "current_prompt",
    "endpoint_judge",
    "endpoint_judge_changes",
    "find_endpoint_judge",
    "judging_settings",
    "looks_like_api_key",
    "save_prompt",
    "update_judge",
    "update_judging_settings",
]
