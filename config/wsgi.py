"""WSGI entry point (gunicorn config.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

# Load the URLconf, and with it every view module and what they import, as the worker starts:
# otherwise each worker's first requests pay for it (a third of a second of CPU per worker, while
# the other threads of that worker wait), which under load shows as the slowest answers.
get_resolver().reverse_dict  # noqa: B018 - builds the reverse map too
