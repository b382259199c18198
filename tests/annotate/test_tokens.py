"""Named API tokens: the /account/tokens/ page, the Token authentication of the API, the management command."""

from __future__ import annotations

import hashlib
import html
import json
import re
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from annotate.models import ApiToken
from annotate.services import tokens
from tests.conftest import login

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def shown_key(response: Any) -> str:
    found = re.search(r'value="([^"]+)" data-role="new-key"', response.content.decode())
    assert found, response.content.decode()
    return html.unescape(found.group(1))


def api(key: str, **extra: Any) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {key}", **extra)


def test_made_key_is_shown_once_and_only_its_digest_is_stored(alice: Any) -> None:
    client = login(alice)
    response = client.post("/account/tokens/", {"name": "nightly export"})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    key = shown_key(response)
    token = ApiToken.objects.get(user=alice)
    assert token.name == "nightly export"
    assert token.digest == hashlib.sha256(key.encode()).hexdigest()
    assert token.prefix == key[:8] and key.startswith("fl_") and len(key) > 40
    stored = [str(value) for value in ApiToken.objects.filter(pk=token.pk).values().get().values()]
    assert all(key not in value for value in stored)

    listed = client.get("/account/tokens/").content.decode()
    assert key not in listed and f"<code>{token.prefix}…</code>" in listed and "nightly export" in listed
    assert "never" in listed  # not used yet


def test_made_key_authenticates_api_calls_and_records_the_use(project: Any, alice: Any) -> None:
    key = shown_key(login(alice).post("/account/tokens/", {"name": "script"}))
    response = api(key).get("/api/projects/")
    assert response.status_code == 200
    assert [row["slug"] for row in response.json()["results"]] == ["demo"]
    assert ApiToken.objects.get(user=alice).last_used_at is not None


def test_token_auth_needs_no_csrf_token(sample: Any, alice: Any) -> None:
    _, key = tokens.create_api_token(alice, "writer")
    client = api(key, enforce_csrf_checks=True)
    response = client.post("/api/spans/", {"sample": sample.pk, "start": 0, "end": 4, "labels": ["Benign"]},
                           content_type="application/json")
    assert response.status_code == 201, response.content
    assert response.json()["annotator"] == "alice"


def test_last_use_is_written_at_most_once_a_minute(project: Any, alice: Any) -> None:
    token, key = tokens.create_api_token(alice, "script")
    recent = timezone.now() - timedelta(seconds=30)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=recent)
    assert api(key).get("/api/projects/").status_code == 200
    assert ApiToken.objects.get(pk=token.pk).last_used_at == recent
    older = timezone.now() - timedelta(minutes=2)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=older)
    assert api(key).get("/api/projects/").status_code == 200
    assert ApiToken.objects.get(pk=token.pk).last_used_at > older + timedelta(minutes=1)


def test_revoked_key_gets_401(project: Any, alice: Any) -> None:
    token, key = tokens.create_api_token(alice, "laptop")
    client = login(alice)
    response = client.post(f"/account/tokens/{token.pk}/revoke/")
    assert response.status_code == 200
    assert "Token &#x27;laptop&#x27; (" in response.content.decode() and "is revoked" in response.content.decode()
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    refused = api(key).get("/api/projects/")
    assert refused.status_code == 401
    assert refused.json() == {"detail": "This API token was revoked."}
    assert refused["WWW-Authenticate"] == "Token"
    listed = client.get("/account/tokens/").content.decode()
    assert "revoked " in listed and f'/account/tokens/{token.pk}/revoke/' not in listed


@pytest.mark.parametrize(
    ("header", "detail"),
    [
        ("Token fl_not-a-real-key", "Unknown API token."),
        ("Token two parts", "Authorization header: give exactly one key after 'Token', without spaces."),
        ("Token", "Authorization header: give exactly one key after 'Token', without spaces."),
    ],
)
def test_unknown_or_malformed_keys_get_401(project: Any, alice: Any, header: str, detail: str) -> None:
    tokens.create_api_token(alice, "real")
    response = Client(HTTP_AUTHORIZATION=header).get("/api/projects/")
    assert response.status_code == 401 and response.json() == {"detail": detail}
    assert response["WWW-Authenticate"] == "Token"


def test_anonymous_api_call_gets_401_with_the_token_challenge(project: Any) -> None:
    response = Client().get("/api/projects/")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Token"


def test_key_of_an_inactive_user_gets_401(project: Any, alice: Any) -> None:
    _, key = tokens.create_api_token(alice, "old")
    alice.is_active = False
    alice.save()
    response = api(key).get("/api/projects/")
    assert response.status_code == 401 and response.json() == {"detail": "The token's user is inactive."}


def test_another_users_token_cannot_be_revoked_or_seen(alice: Any, bob: Any) -> None:
    token, key = tokens.create_api_token(alice, "alice's script")
    bob_client = login(bob)
    assert bob_client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 404
    assert ApiToken.objects.get(pk=token.pk).revoked_at is None
    assert "alice&#x27;s script" not in bob_client.get("/account/tokens/").content.decode()
    assert login(alice).post("/account/tokens/999999/revoke/").status_code == 404


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "name: give the token a name, e.g. the script or machine that will use it"),
        ("   ", "name: give the token a name"),
        ("x" * 101, "name: at most 100 characters (it has 101)"),
        ("taken", "name: you already have an active token called 'taken'; choose another name"),
    ],
)
def test_bad_names_are_refused_and_nothing_is_made(alice: Any, name: str, message: str) -> None:
    tokens.create_api_token(alice, "taken")
    response = login(alice).post("/account/tokens/", {"name": name})
    assert response.status_code == 400
    assert message in html.unescape(response.content.decode())
    assert 'data-role="new-key"' not in response.content.decode()
    assert ApiToken.objects.filter(user=alice).count() == 1


def test_a_revoked_tokens_name_can_be_used_again(alice: Any) -> None:
    token, _ = tokens.create_api_token(alice, "ci")
    tokens.revoke_api_token(token)
    assert login(alice).post("/account/tokens/", {"name": "ci"}).status_code == 200
    assert ApiToken.objects.filter(user=alice, name="ci").count() == 2


def test_htmx_variants_answer_the_fragment(alice: Any) -> None:
    client = login(alice)
    made = client.post("/account/tokens/", {"name": "htmx"}, **HTMX)
    page = made.content.decode()
    assert made.status_code == 200 and "<html" not in page and 'id="tokens"' in page
    assert shown_key(made).startswith("fl_")
    token = ApiToken.objects.get(user=alice)
    revoked = client.post(f"/account/tokens/{token.pk}/revoke/", **HTMX)
    assert revoked.status_code == 200 and "<html" not in revoked.content.decode()
    failed = client.post("/account/tokens/", {"name": ""}, **HTMX)
    assert failed.status_code == 400 and "<html" not in failed.content.decode()
    assert 'id="tokens"' in client.get("/account/tokens/", **HTMX).content.decode()


def test_tokens_page_is_for_logged_in_users_and_answers_only_its_methods(alice: Any) -> None:
    anonymous = Client().get("/account/tokens/")
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
    assert Client().post("/account/tokens/", {"name": "x"}).status_code == 302
    assert not ApiToken.objects.exists()
    client = login(alice)
    assert client.put("/account/tokens/").status_code == 405
    token, _ = tokens.create_api_token(alice, "x")
    assert client.get(f"/account/tokens/{token.pk}/revoke/").status_code == 405
    assert ApiToken.objects.get(pk=token.pk).revoked_at is None


def test_revoking_needs_the_csrf_token(alice: Any) -> None:
    token, _ = tokens.create_api_token(alice, "x")
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    assert client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 403
    assert ApiToken.objects.get(pk=token.pk).revoked_at is None


def test_site_header_links_the_tokens_page(alice: Any) -> None:
    assert 'href="/account/tokens/" data-role="api-tokens-link"' in login(alice).get("/").content.decode()


def test_create_api_token_command_prints_a_working_key(project: Any, alice: Any) -> None:
    out = StringIO()
    call_command("create_api_token", "alice", "--name", "ci", stdout=out)
    key = out.getvalue().strip()
    assert ApiToken.objects.get(user=alice).name == "ci"
    assert api(key).get("/api/projects/").status_code == 200
    with pytest.raises(CommandError, match="username: no user called 'nobody'"):
        call_command("create_api_token", "nobody", "--name", "ci", stdout=StringIO())
    with pytest.raises(CommandError, match="name: you already have an active token called 'ci'"):
        call_command("create_api_token", "alice", "--name", "ci", stdout=StringIO())


def test_schema_documents_the_token_scheme(alice: Any) -> None:
    response = login(alice).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    schema = json.loads(response.content)
    scheme = schema["components"]["securitySchemes"]["tokenAuth"]
    assert (scheme["type"], scheme["in"], scheme["name"]) == ("apiKey", "header", "Authorization")
