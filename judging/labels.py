"""The names a person sees for a judge's and the triage's settings, in one place.

The judges page's forms show these labels, and the services' refusals begin with them ("Endpoint (base URL) must
be an http(s) URL ..."), so a message beside a field names it as the form does, and an API answer (whose keys stay
the field names) reads in the same words. Pure: no Django imports, so the model clients can use it too.
"""

from __future__ import annotations

SETTING_LABELS: dict[str, str] = {
    # a judge
    "name": "Name",
    "kind": "Kind",
    "base_url": "Endpoint (base URL)",
    "model": "Model",
    "api_key_env": "API key variable",
    "with_reasoning": "With reasoning",
    "concurrency": "Concurrency",
    "timeout_seconds": "Timeout (s)",
    "max_retries": "Max retries",
    "price_input_per_mtok": "Price per million input tokens (US$)",
    "price_output_per_mtok": "Price per million output tokens (US$)",
    "nli_model_path": "Model directory (on the server)",
    "nli_consistent_label": "Consistent label",
    "nli_max_length": "Max tokens",
    "nli_overlap": "Window overlap (tokens)",
    "nli_batch_size": "Batch size (windows)",
    # the project's triage
    "first_pass": "First pass",
    "explainer": "Explainer",
    "llm_flag_at_most": "Flag LLM scores at most",
    "nli_flag_below": "Flag NLI p below",
    "blind_by_default": "Auditors score before seeing the judge (blind)",
    "audits_per_item": "Auditors per flagged output",
}


def setting_label(field: str) -> str:
    """The label of a setting as the forms show it; a field without one is written out ("some_field" -> "Some
    field") rather than shown as a code name."""
    return SETTING_LABELS.get(field) or field.replace("_", " ").capitalize()
