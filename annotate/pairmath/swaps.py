"""Obvious swaps among pair items: a DATE replaced by a definitely different DATE, a PERSON name by another name.

HaDes drops most of these before a round (step 5 of the round funnel): a judge
answers them at a glance and they teach the detector little. These rules run
on the item's original and perturbed words, plus a few words of text before
each span (for a title such as "Mayor" or "Dr."). They are a small rule set,
not a trained recogniser, and lean towards "" when unsure: a swap missed here
only stays in the pool, while a false "date"/"name" would drop an item the
team may want judged.

A phrase is a DATE when it is made only of date parts: a year (1000-2099,
"1990s", "'90s"), a month or weekday name, a day number next to a month, a
season next to a year, a century ("19th century"), or a numeric date
(2024-03-01, 01/03/2024). Two dates are definitely different when a part they
both name differs ("March 1911" vs "June 1911"), or when they name no part in
common ("March" vs "1911"); "March 1911" vs "1911" is not (one is a more
precise form of the other).

A phrase is a PERSON name when it is one to four capitalised name words
("Ines Varga", "J. R. Tolkien", "Ludwig van Beethoven") and either a title
precedes it or opens it ("Mayor Ines Varga", "Dr. Lee"), or it has at least
two name words and none of them marks a place or an organisation ("New",
"River", "University", ...). Two names are different when they differ after
case and punctuation are set aside.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
            ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
            ("october", "oct"), ("november", "nov"), ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
WEEKDAYS = {
    name: number
    for number, names in enumerate(
        [("monday", "mon"), ("tuesday", "tue", "tues"), ("wednesday", "wed"), ("thursday", "thu", "thurs"),
         ("friday", "fri"), ("saturday", "sat"), ("sunday", "sun")]
    )
    for name in names
}
SEASONS = {"spring", "summer", "autumn", "fall", "winter"}
# Words that may sit inside a date phrase without being a part of it.
DATE_FILLERS = {"the", "of", "in", "on", "early", "late", "mid", "around", "about", "circa", "ad", "bc", "bce", "ce"}
TITLES = {
    "mr", "mrs", "ms", "miss", "mx", "dr", "prof", "professor", "sir", "dame", "lady", "lord", "mayor", "president",
    "senator", "governor", "captain", "colonel", "lieutenant", "sergeant", "judge",
    "minister", "chancellor", "king", "queen", "prince", "princess", "pope", "bishop", "archbishop", "rev",
    "reverend", "father", "sister", "brother", "coach", "chairman", "chairwoman", "ceo", "director", "officer",
    "inspector", "detective", "agent", "councillor", "councilor", "alderman", "rabbi", "imam",
}
# Name words that make a capitalised phrase a place or an organisation rather than a person.
NOT_PERSON = {
    "new", "san", "santa", "los", "las", "fort", "port", "mount", "mt", "lake", "north", "south", "east", "west",
    "northern", "southern", "eastern", "western", "upper", "lower", "great", "united", "republic", "kingdom",
    "river", "street", "road", "avenue", "square", "bridge", "city", "county", "state", "island", "islands",
    "bay", "valley", "hill", "hills", "park", "hall", "tower", "castle", "church", "cathedral", "museum",
    "hospital", "school", "college", "university", "institute", "academy", "airport", "station", "harbour",
    "harbor", "company", "corporation", "inc", "ltd", "llc", "group", "bank", "party", "council", "club", "fc",
    "association", "society", "foundation", "ministry", "department", "agency", "court", "house", "center",
    "centre", "theatre", "theater", "stadium", "arena", "festival", "award", "prize", "cup", "league", "the",
    "and", "of",
}
# Lower-case particles allowed between name words: "Ludwig van Beethoven", "Leonardo da Vinci".
PARTICLES = {"van", "von", "de", "der", "den", "da", "di", "del", "della", "du", "la", "le", "bin", "ibn", "al"}

_TOKEN = re.compile(r"[A-Za-z]+\.?|'\d0s|\d{3}0s|\d+(?:st|nd|rd|th)?|[-/]|[^\sA-Za-z\d]")
_NUMERIC_DATE = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$|^(\d{1,2})[/.](\d{1,2})[/.](\d{2,4})$")
_NAME_WORD = re.compile(r"^[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)*$|^[A-Z][a-z]*[A-Z][a-z]+$")  # Varga, O'Neil, McDonald
_INITIAL = re.compile(r"^[A-Z]\.$")


@dataclass(frozen=True)
class DateParts:
    """What a date phrase names; a part is None when the phrase does not name it."""

    year: int | None = None
    decade: int | None = None
    century: int | None = None
    month: int | None = None
    day: int | None = None
    weekday: int | None = None
    season: str | None = None
    named: frozenset[str] = field(default_factory=frozenset)  # which parts are set


def _year(text: str) -> int | None:
    if text.isdigit() and len(text) == 4 and 1000 <= int(text) <= 2099:
        return int(text)
    return None


def parse_date(phrase: str) -> DateParts | None:
    """The date parts of ``phrase`` when every word of it is a date part or filler, else None."""
    text = phrase.strip().lower().rstrip(".,;:")
    if not text:
        return None
    parts: dict[str, int | str] = {}
    numeric = _NUMERIC_DATE.match(text)
    if numeric:
        if numeric.group(1):
            year, month, day = int(numeric.group(1)), int(numeric.group(2)), int(numeric.group(3))
        else:  # day/month/year, the order most of the world writes
            day, month, year = int(numeric.group(4)), int(numeric.group(5)), int(numeric.group(6))
        if not (1 <= month <= 12 and 1 <= day <= 31):
            return None
        parts = {"year": year, "month": month, "day": day}
        return DateParts(**parts, named=frozenset(parts))  # type: ignore[arg-type]
    tokens = [token for token in _TOKEN.findall(text) if token not in {",", "-", "/"}]
    if not tokens:
        return None
    numbers: list[int] = []
    for index, token in enumerate(tokens):
        bare = token.rstrip(".")
        if bare in DATE_FILLERS:
            continue
        if bare in MONTHS and "month" not in parts:
            parts["month"] = MONTHS[bare]
        elif bare in WEEKDAYS and "weekday" not in parts:
            parts["weekday"] = WEEKDAYS[bare]
        elif bare in SEASONS and "season" not in parts:
            parts["season"] = "autumn" if bare == "fall" else bare
        elif bare == "century" and numbers:
            parts["century"] = numbers.pop()
        elif _year(bare) is not None and "year" not in parts:
            parts["year"] = _year(bare)  # type: ignore[assignment]
        elif re.fullmatch(r"(\d{3})0s", bare) and "decade" not in parts:
            parts["decade"] = int(bare[:-1])
        elif re.fullmatch(r"'(\d)0s", bare) and "decade" not in parts:
            parts["decade"] = 1900 + int(bare[1:-1])  # '90s: the 1990s, as almost always meant
        elif re.fullmatch(r"\d{1,2}(?:st|nd|rd|th)?", bare):
            number = int(re.sub(r"\D", "", bare))
            following = tokens[index + 1].rstrip(".") if index + 1 < len(tokens) else ""
            if following == "century":
                numbers.append(number)
            elif 1 <= number <= 31 and "day" not in parts:
                parts["day"] = number
            else:
                return None
        else:
            return None
    if numbers:
        return None
    # A bare day number ("3") or season ("summer") is not a date on its own; a day needs a month,
    # a season needs a year.
    if "day" in parts and "month" not in parts:
        return None
    if "season" in parts and not ({"year", "decade"} & parts.keys()):
        return None
    if not parts:
        return None
    return DateParts(**parts, named=frozenset(parts))  # type: ignore[arg-type]


def _implied(date: DateParts) -> dict[str, int | str]:
    """The parts a date names, plus the coarser ones its year or decade implies (1911: the 1910s, 20th century)."""
    parts: dict[str, int | str] = {part: getattr(date, part) for part in date.named}
    if date.year is not None:
        parts.setdefault("decade", date.year // 10 * 10)
        parts.setdefault("century", (date.year - 1) // 100 + 1)  # 1900 is the last year of the 19th century
    decade = parts.get("decade")
    if isinstance(decade, int):
        parts.setdefault("century", decade // 100 + 1)  # the 1900s decade: 20th century
    return parts


def dates_differ(first: DateParts, second: DateParts) -> bool:
    """Definitely different: a part both name (or imply) differs, or they have no part in common."""
    one, other = _implied(first), _implied(second)
    shared = one.keys() & other.keys()
    if not shared:
        return True
    return any(one[part] != other[part] for part in shared)


def _words(phrase: str) -> list[str]:
    return re.findall(r"[A-Za-z][A-Za-z'.-]*", phrase)


def _title_before(context_before: str) -> bool:
    """Whether the last word before the span is a title ("Mayor", "Dr.")."""
    words = _words(context_before)
    return bool(words) and words[-1].rstrip(".").lower() in TITLES


def is_person_name(phrase: str, context_before: str = "") -> bool:
    """Whether ``phrase`` reads as a person's name (see the module's rules)."""
    if re.search(r"\d", phrase):
        return False
    words = phrase.split()
    titled = bool(words) and words[0].rstrip(".").lower() in TITLES and words[0][:1].isupper()
    if titled:
        words = words[1:]
    if not 1 <= len(words) <= 4:
        return False
    for position, word in enumerate(words):
        bare = word.rstrip(",;:")
        if bare.lower() in PARTICLES and 0 < position < len(words) - 1:
            continue
        if not (_NAME_WORD.match(bare) or _INITIAL.match(bare)):
            return False
        lowered = bare.rstrip(".").lower()
        if lowered in MONTHS or lowered in WEEKDAYS or lowered in NOT_PERSON:
            return False
    if not _NAME_WORD.match(words[-1].rstrip(",;:")):
        return False  # a name ends with a name word, not an initial
    if titled or _title_before(context_before):
        return True
    name_words = [word for word in words if _NAME_WORD.match(word.rstrip(",;:"))]
    return len(name_words) >= 2 or (len(name_words) == 1 and any(_INITIAL.match(word) for word in words))


def _normal(phrase: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", phrase.lower()).split())


def swap_kind(
    original_words: str | None,
    perturbed_words: str,
    *,
    original_before: str = "",
    perturbed_before: str = "",
) -> str:
    """ "date", "name" or "": what kind of obvious swap replaced ``original_words`` with ``perturbed_words``.

    ``original_before`` / ``perturbed_before`` are the texts before each span
    (only their last word is read, for a title). No original (a HaDes row):
    nothing to compare, "".
    """
    if original_words is None or not original_words.strip() or not perturbed_words.strip():
        return ""
    if _normal(original_words) == _normal(perturbed_words):
        return ""
    old_date, new_date = parse_date(original_words), parse_date(perturbed_words)
    if old_date is not None and new_date is not None:
        return "date" if dates_differ(old_date, new_date) else ""
    if is_person_name(original_words, original_before) and is_person_name(perturbed_words, perturbed_before):
        return "name"
    return ""
