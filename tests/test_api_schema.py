"""The OpenAPI schema and its vendored UI, under the strict CSP."""

import re

import pytest

pytestmark = pytest.mark.django_db


def test_it_serves_the_openapi_schema_to_researchers_only(client, alice):
    assert client.get("/api/schema/", HTTP_ACCEPT="application/json").status_code == 401
    page = client.get("/api/docs/")
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    assert client.get("/api/docs/?script").status_code == 302


def test_it_serves_the_openapi_schema_with_every_route(alice_client):
    client = alice_client
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = set(schema["paths"])
    for path in ("/api/studies/", "/api/studies/{study_slug}/items/",
                 "/api/studies/{study_slug}/participants/", "/api/studies/{study_slug}/responses/",
                 "/api/studies/{study_slug}/runs/", "/api/studies/{study_slug}/results/"):
        assert path in paths, path


def test_the_api_ui_is_vendored_and_needs_no_inline_script(alice_client):
    client = alice_client
    page = client.get("/api/docs/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "cdn" not in html.lower()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>\s*\S", html), "inline script under CSP"
    for src in re.findall(r'src="([^"]+)"', html):
        assert src.startswith("/"), src
        assert client.get(src).status_code == 200, src


def test_the_schema_describes_the_writes_without_a_warning(tmp_path):
    from django.core.management import call_command

    out = tmp_path / "schema.yml"
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(out))
    text = out.read_text()
    for write in ("/api/studies/{slug}/open/", "/api/studies/{study_slug}/participants/{id}/revoke/",
                  "accessToken"):
        assert write in text, write
