"""The agreement page's query: schemes, levels, aggregate, rounds, bootstrap resamples and the per-batch table's
page, read from the URL (BadQuery names a bad parameter) and written back into links."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import QueryDict

from annotate import agreement
from annotate.views.figures import parse_choice, parse_int, parse_rounds, parse_schemes

PAGE_BOOTSTRAP = 200  # resamples for the page's intervals; the agreement command's --bootstrap takes any
MAX_BOOTSTRAP = 2000


@dataclass
class AgreementQuery:
    schemes: list[str]
    levels: list[str]
    aggregate: str
    rounds: list[int]
    bootstrap: int
    level_param: str = ""
    round_param: str = ""
    batch_page: int = 1

    @property
    def focus_scheme(self) -> str:
        return self.schemes[0]

    @property
    def focus_level(self) -> str:
        return self.levels[0]

    @property
    def pooled_bootstrap(self) -> int:
        return self.bootstrap if self.aggregate == "pooled" else 0

    def params(self, **override: Any) -> dict[str, Any]:
        values: dict[str, Any] = {
            "scheme": ", ".join(self.schemes),
            "level": self.level_param,
            "aggregate": self.aggregate,
            "round": self.round_param,
            "bootstrap": self.bootstrap if self.bootstrap != PAGE_BOOTSTRAP else "",
            "bpage": self.batch_page if self.batch_page > 1 else "",
        }
        return values | override


def read_agreement_query(query: QueryDict, known_rounds: list[int]) -> AgreementQuery:
    schemes = parse_schemes(query.getlist("scheme"))
    level_param = (query.get("level") or "").strip()
    levels = [parse_choice(level_param, "level", agreement.LEVELS, "nominal")] if level_param else list(agreement.LEVELS)
    aggregate = parse_choice(query.get("aggregate"), "aggregate", agreement.AGGREGATES, "pooled")
    rounds = parse_rounds(query.get("round"), known_rounds)
    bootstrap = parse_int(query.get("bootstrap"), "bootstrap", PAGE_BOOTSTRAP, 0, MAX_BOOTSTRAP)
    batch_page = parse_int(query.get("bpage"), "bpage", 1, 1)
    round_param = (query.get("round") or "").strip()
    return AgreementQuery(schemes, levels, aggregate, rounds, bootstrap, level_param, round_param, batch_page)
