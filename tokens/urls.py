from django.urls import path

from . import views

app_name = "tokens"

urlpatterns = [
    path("account/tokens/", views.token_index, name="index"),
    path("account/tokens/<int:token_id>/revoke/", views.token_revoke_view, name="revoke"),
]
