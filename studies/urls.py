from django.urls import path

from . import views

app_name = "studies"

urlpatterns = [
    path("", views.study_index, name="list"),
    path("new/", views.study_new, name="new"),
    path("<slug:slug>/", views.study_detail, name="detail"),
    path("<slug:slug>/items/", views.items_upload, name="items_upload"),
    path("<slug:slug>/invite/", views.invite, name="invite"),
    path("<slug:slug>/preview/", views.preview, name="preview"),
    path("<slug:slug>/open/", views.study_set_status, {"action": "open"}, name="open"),
    path("<slug:slug>/close/", views.study_set_status, {"action": "close"}, name="close"),
]
