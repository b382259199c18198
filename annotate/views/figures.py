"""Shared by the agreement, disputes and results pages (htmx): who may see them, reading the query,
rendering, and the note on stale figures. Admins and auditors only.

Annotators get 403 on all of them: the figures pool everyone's work, and an
annotator must not see another annotator's round-1 labels. Every number comes
from annotate.services.stats: the agreement and results figures through the
figure store in annotate.services.results_cache (stale figures are shown with
their age while a task refreshes them, and the page polls once for the new
ones), the disputes of one batch directly. The page modules
(annotate.views.agreement, annotate.views.results) only read the query, shape
the figures into rows and render. A form change re-renders only the
``results`` partial when the request comes from htmx.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.utils.timesince import timesince

from annotate import access, agreement
from annotate.models import Membership, Project
from annotate.services.results_cache import ServedFigures

Role = Membership.Role

# The five label schemes of DESIGN.md's agreement table, all shown unless the query names others; from coarse to
# fine, FaithBench's binary C+B|Q+U first: the first scheme is the one the pairwise and span tables use.
DEFAULT_SCHEMES: tuple[str, ...] = ("C+B|Q+U", "C|U", "C+B|Q|U", "C|B|U", "C|B|Q|U")
MAX_SCHEMES = 6
DEFAULT_THRESHOLD = 0.5
SHOWN = "shown"  # query parameter of the stale note's poll: the data version the page shows
POLL_SECONDS = 2


def get_project_for_results(user: Any, slug: str) -> tuple[Project, str]:
    """The project, for its admins and auditors; 404 for outsiders, 403 for annotators.

    (Belongs in annotate/access.py beside get_project_for_exporter.)
    """
    project, role = access.get_project_for_user(user, slug)
    if role not in (Role.ADMIN, Role.AUDITOR):
        raise access.Forbidden(
            "Only the project's admins and auditors see agreement and results: they pool every annotator's work"
        )
    return project, role


class BadQuery(ValueError):
    """A query parameter the page cannot use; the message names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class BadQueries(BadQuery):
    """Several bad parameters of one request, each in ``problems``: the page names them all at once."""

    def __init__(self, problems: list[BadQuery]) -> None:
        ValueError.__init__(self, "; ".join(map(str, problems)))
        self.field = problems[0].field
        self.problems = problems


def read_each(**readers: Callable[[], Any]) -> dict[str, Any]:
    """Every reader's value by name. A bad parameter does not stop the others being read: one BadQuery,
    or BadQueries for several, is raised once all have run, so a fix-one-resubmit loop is never needed."""
    values: dict[str, Any] = {}
    problems: list[BadQuery] = []
    for name, read in readers.items():
        try:
            values[name] = read()
        except BadQuery as problem:
            problems.append(problem)
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise BadQueries(problems)
    return values


def each_problem(error: BadQuery) -> list[str]:
    """The messages a page lists, one a line."""
    return [str(problem) for problem in error.problems] if isinstance(error, BadQueries) else [str(error)]


# --------------------------------------------------------------------------- reading the query


def parse_schemes(values: list[str]) -> list[str]:
    """Canonical scheme texts from repeated and/or comma-separated ``scheme`` values; the defaults when none."""
    texts = [part for value in values for part in value.split(",") if part.strip()]
    if not texts:
        return list(DEFAULT_SCHEMES)
    if len(texts) > MAX_SCHEMES:
        raise BadQuery("scheme", f"at most {MAX_SCHEMES} schemes at once")
    schemes = []
    for text in texts:
        try:
            schemes.append(agreement.parse_scheme(text).text)
        except agreement.SchemeError as error:
            raise BadQuery("scheme", str(error)) from None
    return list(dict.fromkeys(schemes))


def parse_choice(raw: str | None, name: str, choices: tuple[str, ...], default: str) -> str:
    value = (raw or "").strip() or default
    if value not in choices:
        raise BadQuery(name, f"{value!r} is not one of {', '.join(choices)}")
    return value


def parse_int(raw: str | None, name: str, default: int, low: int, high: int | None = None) -> int:
    text = (raw or "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise BadQuery(name, f"must be a whole number {bound}, not {text!r}")
    return value


def parse_id(raw: str | None, name: str) -> int:
    text = (raw or "").strip()
    if not text:
        raise BadQuery(name, f"which {name}? give its id, e.g. {name}=12")
    if not text.isdigit() or len(text) > 18:
        raise BadQuery(name, f"{text!r} is not an id")
    return int(text)


def parse_threshold(raw: str | None) -> float:
    text = (raw or "").strip()
    if not text:
        return DEFAULT_THRESHOLD
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise BadQuery("threshold", f"must be a number between 0 and 1, not {text!r}")
    return value


def parse_round(raw: str | None, known: list[int], *, default: int | None) -> int | None:
    text = (raw or "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise BadQuery("round", f"{text!r} is not a round number (1, 2, ...)")
    if int(text) not in known:
        listed = ", ".join(map(str, known)) if known else "none yet"
        raise BadQuery("round", f"the project has no round {int(text)} (rounds with assignments: {listed})")
    return int(text)


def parse_rounds(raw: str | None, known: list[int]) -> list[int]:
    """Every round side by side by default (or for ``all``), else the one asked for."""
    if (raw or "").strip().lower() in ("", "all"):
        return list(known)
    chosen = parse_round(raw, known, default=None)
    return [chosen] if chosen is not None else []


def _render(request: HttpRequest, template: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    """The whole page, or only its ``results`` partial for htmx."""
    name = f"{template}#results" if request.htmx else template
    return render(request, name, context, status=status)


def _url(name: str, slug: str, **query: Any) -> str:
    params = QueryDict(mutable=True)
    for key, value in query.items():
        if isinstance(value, list):
            params.setlist(key, [str(item) for item in value])
        elif value is not None and value != "":
            params[key] = str(value)
    encoded = params.urlencode()
    return reverse(name, args=[slug]) + (f"?{encoded}" if encoded else "")


def _age(seconds: float, computed_at: Any) -> str:
    if seconds < 60:
        whole = int(seconds)
        return f"{whole} second{'' if whole == 1 else 's'}"
    return timesince(computed_at, depth=1)


def _freshness(request: HttpRequest, served: ServedFigures, poll_url: str, target: str) -> dict[str, Any]:
    """What the stale note shows: the figures' age, and where to poll for the refreshed ones.

    The page polls only when it was not itself the answer to a poll: one
    automatic update per page view, however busy the campaign.
    """
    polled = bool(request.GET.get(SHOWN))
    return {
        "stale": not served.fresh,
        "age": _age(served.age_seconds, served.computed_at),
        "computed_at": served.computed_at,
        "poll_url": None if served.fresh or polled else poll_url,
        "poll_seconds": POLL_SECONDS,
        "target": target,
    }


def _nothing_newer(request: HttpRequest, served: ServedFigures) -> bool:
    """A poll of the stale note while its refresh is still running: answered 204, which htmx does not swap."""
    return bool(request.htmx) and request.GET.get(SHOWN) == served.version and served.refreshing
