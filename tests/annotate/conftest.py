"""Fixtures shared by several modules of tests/annotate, registered here so the test modules need not import them."""

from __future__ import annotations

from tests.annotate.results_scene import empty_cache, quick_passwords, scene  # noqa: F401
