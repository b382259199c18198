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
