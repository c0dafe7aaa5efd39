from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from analysis.apis import AnalysisRunViewSet, results
from annotation.apis import ResponseViewSet
from studies.apis import ItemViewSet, ParticipantViewSet, StudyViewSet

router = SimpleRouter()
router.register("studies", StudyViewSet, basename="study")
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/items", ItemViewSet, basename="item")
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/participants", ParticipantViewSet,
                basename="participant")
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/responses", ResponseViewSet,
                basename="response")
router.register(r"studies/(?P<study_slug>[-a-z0-9]+)/runs", AnalysisRunViewSet, basename="run")

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="studies:list", permanent=False)),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("studies/", include("studies.urls")),
    path("studies/<slug:slug>/results/", include("analysis.urls")),
    path("", include("annotation.urls")),
    path("api/studies/<slug:study_slug>/results/", results, name="results"),
    path("api/", include(router.urls)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("admin/", admin.site.urls),
]
