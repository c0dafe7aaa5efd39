"""The OpenAPI schema and its vendored UI, under the strict CSP."""

import re

import pytest

pytestmark = pytest.mark.django_db


def test_it_serves_the_openapi_schema_with_every_route(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = set(schema["paths"])
    for path in ("/api/studies/", "/api/studies/{study_slug}/items/",
                 "/api/studies/{study_slug}/participants/", "/api/studies/{study_slug}/responses/",
                 "/api/studies/{study_slug}/runs/", "/api/studies/{study_slug}/results/"):
        assert path in paths, path


def test_the_api_ui_is_vendored_and_needs_no_inline_script(client):
    page = client.get("/api/docs/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "cdn" not in html.lower()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>\s*\S", html), "inline script under CSP"
    for src in re.findall(r'src="([^"]+)"', html):
        assert src.startswith("/"), src
        assert client.get(src).status_code == 200, src
