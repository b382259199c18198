"""The role-by-URL matrix: every URL of the project asked by every role (test_roles_matrix.py).

``expectations`` holds who may do what, URL by URL; ``world`` the demo data
and the accounts that ask; ``urls`` the URL patterns, their parameters filled
from the demo, and asking them; ``leaks`` what annotators must never see.
"""

from __future__ import annotations

import pytest

# The helper modules hold assertions about the demo data: pytest explains them as it does the tests' own.
pytest.register_assert_rewrite("tests.roles.leaks", "tests.roles.urls", "tests.roles.world")
