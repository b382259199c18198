"""Our ES modules load as the browser will load them: every relative import names a file that Django's static
finders serve (the test server's too) and that exports each imported name, so a module moved or renamed fails
here, not in a reader's console. Pages share front-end code through static/js/ (STYLE.md: a shared module), never
by reaching into another page's folder: the audit page imports nothing from static/annotate/.

No JavaScript runs here: the imports are read as text, which is all a static import is."""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders

STATIC_DIR = Path(settings.BASE_DIR) / "static"
# import { a, b as c } from "./x.js";  export { a } from "./x.js";  import "./x.js";  (braces may span lines)
NAMED_IMPORT = re.compile(r'^\s*(?:import|export)\s*\{([^}]*)\}\s*from\s*"([^"]+)"', re.MULTILINE)
BARE_IMPORT = re.compile(r'^\s*import\s*"([^"]+)"', re.MULTILINE)
OUR_FOLDERS = ("annotate", "judging")  # one folder per app's pages; static/js holds what they share


def our_modules() -> list[str]:
    """Every .js file of ours under static/ that is an ES module (vendored code left out), as a static path."""
    modules = []
    for path in sorted(STATIC_DIR.rglob("*.js")):
        relative = path.relative_to(STATIC_DIR).as_posix()
        if relative.startswith("vendor/"):
            continue
        text = path.read_text(encoding="utf-8")
        if NAMED_IMPORT.search(text) or BARE_IMPORT.search(text) or re.search(r"^\s*export\b", text, re.MULTILINE):
            modules.append(relative)
    return modules


def imports_of(module: str) -> list[tuple[str, list[str]]]:
    """(the static path imported, the names imported from it) for each relative import of ``module``."""
    text = (STATIC_DIR / module).read_text(encoding="utf-8")
    found = [(spec, names) for names, spec in NAMED_IMPORT.findall(text)] + [(spec, "") for spec in BARE_IMPORT.findall(text)]
    result = []
    for spec, names in found:
        if not spec.startswith(("./", "../")):
            continue
        target = posixpath.normpath(posixpath.join(posixpath.dirname(module), spec))
        imported = [name.split(" as ")[0].strip() for name in names.split(",") if name.strip()]
        result.append((target, imported))
    return result


def exports(module: str) -> set[str]:
    """The names ``module`` exports: declarations and export lists, re-exports included."""
    text = (STATIC_DIR / module).read_text(encoding="utf-8")
    names = set(re.findall(r"^\s*export\s+(?:async\s+)?(?:function\*?|const|let|var|class)\s+([\w$]+)", text, re.MULTILINE))
    for listed, _spec in re.findall(r'^\s*export\s*\{([^}]*)\}(?:\s*from\s*"([^"]+)")?', text, re.MULTILINE):
        names.update(name.split(" as ")[-1].strip() for name in listed.split(",") if name.strip())
    return names


MODULES = our_modules()


def test_the_pages_entry_modules_and_the_shared_ones_are_read() -> None:
    """The reader finds what it should (else the tests below would pass on nothing)."""
    for module in ("annotate/main.js", "annotate/pairs/label.js", "judging/audit/main.js",
                   "js/typing.js", "js/savestatus.js", "js/settle.js", "js/keys.js"):
        assert module in MODULES, f"static/{module} is missing or no longer read as an ES module"


@pytest.mark.parametrize("module", MODULES)
def test_each_relative_import_names_a_served_file_that_exports_the_names(module: str) -> None:
    for target, names in imports_of(module):
        assert finders.find(target) is not None, f"static/{module} imports static/{target}, which no static finder serves"
        missing = sorted(set(names) - exports(target))
        assert not missing, f"static/{module} imports {', '.join(missing)} from static/{target}, which does not export it"


@pytest.mark.parametrize("module", [module for module in MODULES if module.startswith(OUR_FOLDERS)])
def test_a_page_imports_shared_code_from_static_js_not_from_another_apps_folder(module: str) -> None:
    own = module.split("/")[0]
    for target, _names in imports_of(module):
        folder = target.split("/")[0]
        assert folder in (own, "js"), (
            f"static/{module} imports static/{target}: code two apps' pages share belongs in static/js/"
        )


def test_the_shared_helpers_live_in_static_js_only() -> None:
    """One copy each: the old places are gone, so nobody imports a stale twin."""
    for name, home in {
        "isTyping": "js/typing.js", "showSaveStatus": "js/savestatus.js", "settleGuard": "js/settle.js",
        "shortcutKey": "js/keys.js",
    }.items():
        owners = [module for module in MODULES if name in exports(module)]
        assert owners == [home], f"{name} is exported by {owners}, not by static/{home} alone"


# The module of each labeling page that holds its settle window (its delay, its words), on the shared guard.
SETTLE_PAGES = {
    "annotate/done.js": "DONE_SETTLE_MS",  # the span page: D and Done
    "annotate/pairs/label/settle.js": "SETTLE_MS",  # the pair labeling page: an answer
    "judging/audit/settle.js": "SETTLE_MS",  # the audit page: a verdict's keys
}


@pytest.mark.parametrize(("module", "delay"), SETTLE_PAGES.items())
def test_each_labeling_page_holds_its_settle_window_with_the_shared_guard(module: str, delay: str) -> None:
    """One behaviour on the three pages (static/js/settle.js): each builds its guard with its own delay and its own
    words for a refused press (refused: ...), and keeps no settle timer of its own beside it."""
    assert ("js/settle.js", ["settleGuard"]) in imports_of(module), f"static/{module} does not use static/js/settle.js"
    text = (STATIC_DIR / module).read_text(encoding="utf-8")
    guard = re.search(r"settleGuard\(\{(.*?)\}\);", text, re.DOTALL)
    assert guard, f"static/{module} builds no settle guard"
    assert re.search(rf"\bms:\s*{delay}\b", guard.group(1)), f"static/{module}'s guard does not wait {delay}"
    assert re.search(r"\brefused:", guard.group(1)), f"static/{module}'s guard does not say why a press waits"
    assert not re.search(rf"setTimeout\([^;]*\b{delay}\b", text), f"static/{module} times its window itself"


# The module of each labeling page that reads its keys: each reads them through the shared static/js/keys.js, so
# Caps Lock is one behaviour on the three pages (a letter reads as with Caps Lock off), not three copies.
KEY_PAGES = ("annotate/keys.js", "annotate/pairs/label.js", "judging/audit/keys.js")


@pytest.mark.parametrize("module", KEY_PAGES)
def test_each_labeling_page_reads_its_keys_through_the_shared_helper(module: str) -> None:
    assert ("js/keys.js", ["shortcutKey"]) in imports_of(module), f"static/{module} does not use static/js/keys.js"
    text = (STATIC_DIR / module).read_text(encoding="utf-8")
    # Its own case folding beside the helper would be a second answer to "which key was it".
    assert not re.search(r"\bkey\.toLowerCase\(\)", text), f"static/{module} folds the key's case itself"
