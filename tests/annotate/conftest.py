"""Fixtures shared by several modules of tests/annotate, registered here so the test modules need not import them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Batch, Membership, Project
from annotate.services import ingest
from tests.annotate.results_scene import empty_cache, quick_passwords, scene  # noqa: F401


@pytest.fixture
def imported(admin_user: Any) -> Batch:
    """The example FaithBench batch imported into a new project "fb" whose admin is admin_user."""
    from tests.annotate.test_ingest import example  # a test module: imported when the fixture is used

    project = Project.objects.create(name="FaithBench", slug="fb")
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    ingest.import_files(project, [("batch_1.json", json.dumps(example()).encode())])
    return Batch.objects.get(project=project)


@pytest.fixture
def two_item_pairs(admin_user: Any, alice: Any, bob: Any) -> Project:
    """A pairs project "pairs" of two open items; admin_user administers it, alice and bob judge."""
    from tests.pairs.conftest import make_pair_items

    project = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    for user, role in ((admin_user, Membership.Role.ADMIN), (alice, Membership.Role.ANNOTATOR),
                       (bob, Membership.Role.ANNOTATOR)):
        Membership.objects.create(project=project, user=user, role=role)
    make_pair_items(project, 2)
    return project
