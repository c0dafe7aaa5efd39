"""Routes of the annotation app: the annotator's pages and the responses API."""

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from . import apis, open_link, views

app_name = "annotation"

router = SimpleRouter()
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/responses", apis.ResponseViewSet,
                basename="response")
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/timing", apis.TimingViewSet,
                basename="timing")

urlpatterns = [
    # Answers first: the most frequent request (see config/urls.py).
    path("a/<str:token>/answer/", views.answer, name="answer"),
    path("a/<str:token>/", views.consent, name="consent"),
    path("a/<str:token>/instructions/", views.instructions, name="instructions"),
    path("a/<str:token>/next/", views.next_item, name="next"),
    path("a/<str:token>/item/<int:position>/", views.item_at, name="item"),
    path("a/<str:token>/done/", views.done, name="done"),
    path("join/<str:open_token>/", open_link.join, name="join"),
    path("api/", include(router.urls)),
]
