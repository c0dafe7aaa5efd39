from django.urls import path

from . import views

app_name = "annotation"

urlpatterns = [
    path("a/<str:token>/", views.consent, name="consent"),
    path("a/<str:token>/instructions/", views.instructions, name="instructions"),
    path("a/<str:token>/next/", views.next_item, name="next"),
    path("a/<str:token>/answer/", views.answer, name="answer"),
    path("a/<str:token>/done/", views.done, name="done"),
    path("join/<str:open_token>/", views.join, name="join"),
]
