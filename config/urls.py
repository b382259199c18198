from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.decorators import login_required
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotate.api.errors import api_not_found

urlpatterns = [
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # A person who is not signed in is sent to the login page, as on every other page.
    path("api/docs/", login_required(SpectacularSwaggerView.as_view(url_name="api-schema")), name="api-docs"),
    path("api/", include("judging.api.urls")),
    path("api/", include("annotate.api.urls")),
    # Any other /api/ address: a JSON 404, never Django's HTML page. An endpoint's address without its final slash
    # is redirected there for GET and HEAD (as APPEND_SLASH does) and named in a 404 for other methods.
    re_path(r"^api/", api_not_found, name="api-not-found"),
    path("", include("judging.urls")),
    path("", include("annotate.urls")),
]

# A 500 under /api/ answers JSON, as the API's other errors do; pages keep templates/500.html.
handler500 = "annotate.api.errors.server_error"
