"""The round wizard's fields: their defaults and bounds, and reading them from a request into a RoundForm (values as
typed, numbers for the service, a problem per field)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from annotate.services.pairs import rounds

# What the wizard offers before anyone changes a field (the seed: a fresh one per visit, see read_round_form).
DEFAULTS = {
    "size": str(rounds.DEFAULT_SIZE),
    "low": f"{rounds.DEFAULT_LOW:g}",
    "high": f"{rounds.DEFAULT_HIGH:g}",
    "paraphrase_max": f"{rounds.DEFAULT_PARAPHRASE_MAX:g}",
    "drop_fraction": f"{rounds.DEFAULT_DROP_FRACTION:g}",
    "seed": "",
}
# The filters of a round drawn by the detector; round 1 is drawn at random and takes none of them.
FILTER_FIELDS = ("low", "high", "paraphrase_max", "drop_fraction")


@dataclass(frozen=True)
class WizardField:
    """One field of the wizard: its label, as the page shows it and as its messages name it, and its bounds."""

    label: str
    low: str
    high: str | None = None
    fraction: bool = True  # any decimal (step="any"); False: whole numbers
    help: str = ""


WIZARD_FIELDS = {
    "size": WizardField("Items to draw", "1", fraction=False),
    "low": WizardField("Lowest P(H) kept", "0", "1"),
    "high": WizardField("Highest P(H) kept", "0", "1"),
    "paraphrase_max": WizardField("Paraphrase threshold", "-1", "1",
                                  help="an item whose span similarity is above it is dropped as a paraphrase"),
    "drop_fraction": WizardField("Share of date/name swaps dropped", "0", "1"),
    "seed": WizardField("Seed", "0", fraction=False, help="blank: a new one"),
}


@dataclass
class RoundForm:
    """The wizard's fields as typed (to show them again) and as numbers (to call the service), with problems."""

    values: dict[str, str]
    parameters: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def _number(form: RoundForm, name: str, kind: type, low: float, high: float | None) -> None:
    raw = form.values[name].strip()
    if not raw:
        # A cleared field (or one the browser left empty: it sends no value it cannot read as a number) is named with
        # what it takes, not quoted as '' (the list under the form takes this message as it is: see wizard_fields).
        number = "a whole number" if kind is int else "a number"
        wanted = f"{number} between {low:g} and {high:g}" if high is not None else f"{number}, {low:g} or more"
        form.errors[name] = f"{WIZARD_FIELDS[name].label} is empty: enter {wanted}"
        return
    try:
        value = kind(raw)
    except ValueError:
        form.errors[name] = f"{raw!r} is not {'a whole number' if kind is int else 'a number'}"
        return
    if value < low or (high is not None and value > high):
        form.errors[name] = (f"{raw} is not between {low:g} and {high:g}" if high is not None
                             else f"{raw} is below {low:g}")
        return
    form.parameters[name] = value


def read_round_form(data: QueryDict, *, fresh_seed: bool = False, random_draw: bool = False) -> RoundForm:
    """The wizard's fields from the request; a first visit gets a fixed random seed, so that the round created
    draws exactly the items the preview showed.

    ``random_draw`` (round 1): the filter fields are not read, since the wizard does not show them and a random
    draw applies none; a stale value in the URL cannot then fail a form with no such field."""
    defaults = {**DEFAULTS, "seed": str(secrets.randbelow(2**31))} if fresh_seed else DEFAULTS
    form = RoundForm({name: default if random_draw and name in FILTER_FIELDS else data.get(name, default)
                      for name, default in defaults.items()})
    _number(form, "size", int, 1, None)
    for name in ("low", "high", "drop_fraction"):
        _number(form, name, float, 0, 1)
    _number(form, "paraphrase_max", float, -1, 1)  # a cosine similarity
    if "low" in form.parameters and "high" in form.parameters and form.parameters["low"] > form.parameters["high"]:
        form.errors["high"] = f"{form.values['high']} is below the lowest P(H) kept ({form.values['low']})"
        del form.parameters["high"]
    if form.values["seed"].strip():
        _number(form, "seed", int, 0, 2**63 - 1)
    else:
        form.parameters["seed"] = None
    return form


def wizard_fields(form: RoundForm, *, round_one: bool) -> list[dict[str, Any]]:
    """The fields the wizard shows (round 1: no filter), each with its value as typed and its problem, if any."""
    return [
        {"name": name, "spec": spec, "value": form.values[name], "error": form.errors.get(name, ""),
         "listed": _listed(spec, form.errors.get(name, ""))}
        for name, spec in WIZARD_FIELDS.items()
        if not (round_one and name in FILTER_FIELDS)
    ]


def _listed(spec: WizardField, error: str) -> str:
    """The problem as the list under the form shows it: named by the field's label, once."""
    if not error or error.startswith(spec.label):
        return error
    return f"{spec.label}: {error}"
