"""@study_view: the URL's study read once, by the caller's role (studies/decorators.py)."""

import pytest
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.test import RequestFactory

from studies.decorators import study_view
from studies.models import Membership
from studies.selectors import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(alice, bob, make_study):
    study = make_study(alice, slug="deco", open=False)
    Membership.objects.create(study=study, user=bob, role=Role.VIEWER)
    return study


def request_by(user, method="get"):
    request = getattr(RequestFactory(), method)("/")
    request.user = user
    return request


@study_view(need=Role.VIEWER, post_need=Role.EDITOR)
def settings_like(request, study, pk):
    return HttpResponse(f"{study.slug} {study.role} {pk}")


@study_view(need=Role.EDITOR)
def editors_only(request, study):
    return HttpResponse(study.slug)


def test_it_passes_the_study_with_the_callers_role_in_one_query(
        study, bob, django_assert_num_queries):
    with django_assert_num_queries(1):
        response = settings_like(request_by(bob), slug="deco", pk=7)
    assert response.content == b"deco viewer 7"


def test_it_hides_a_study_from_someone_without_a_role(study, django_user_model):
    charlie = django_user_model.objects.create_user("charlie", password="x")
    with pytest.raises(Http404):
        settings_like(request_by(charlie), slug="deco", pk=1)
    with pytest.raises(Http404):
        settings_like(request_by(charlie), slug="no-such-study", pk=1)


def test_it_refuses_a_role_below_need(study, bob, alice):
    with pytest.raises(PermissionDenied):
        editors_only(request_by(bob), slug="deco")
    assert editors_only(request_by(alice), slug="deco").content == b"deco"


def test_a_post_needs_the_post_role(study, bob, alice):
    with pytest.raises(PermissionDenied):
        settings_like(request_by(bob, "post"), slug="deco", pk=1)
    assert settings_like(request_by(alice, "post"), slug="deco", pk=1).status_code == 200


def test_it_reads_the_slug_under_the_name_an_api_route_gives_it(study, bob):
    @study_view(need=Role.VIEWER, slug_kwarg="study_slug")
    def api_like(request, study):
        return HttpResponse(study.slug)

    assert api_like(request_by(bob), study_slug="deco").content == b"deco"
