"""Concord settings: one module, configured from the environment.

Every setting that differs between a laptop, CI and production is read from an environment
variable by a small typed reader that fails loudly on a malformed value. With no environment at
all, Concord runs on the embedded default: SQLite (WAL) and a Celery broker on the file system,
so `make run` needs no server.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import django_stubs_ext
import environ
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _

# Django's generic classes (ModelAdmin[AccessToken], QuerySet[Item]) subscriptable at run time,
# as the type checker reads them (mypy --strict over the apps, with django-stubs).
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()


def envbool(name: str, default: bool) -> bool:
    """Read a boolean variable; anything but the usual spellings is an error."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def envint(name: str, default: int) -> int:
    """Read an integer variable; a non-integer is an error."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None


def envfloat(name: str, default: float) -> float:
    """Read a number variable; anything else is an error."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None


def envlist(name: str, default: list[str]) -> list[str]:
    """Read a comma-separated list."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [part.strip() for part in raw.split(",") if part.strip()]


# Local state of the embedded default (SQLite file, broker folders, generated secret key).
VAR_DIR = Path(os.environ.get("CONCORD_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = envbool("DEBUG", False)


def _secret_key() -> str:
    # Production passes SECRET_KEY; a bare machine gets a random key kept in var/ so that
    # sessions survive restarts and no key is ever committed.
    if key := os.environ.get("SECRET_KEY", ""):
        # A guessable key lets anyone forge sessions and password-reset links: with DEBUG off,
        # refuse to start rather than warn (Django's deploy check only warns, W009).
        if not DEBUG and (weakness := _secret_key_weakness(key)):
            raise ImproperlyConfigured(
                f"SECRET_KEY {weakness}: set a random value of at least 50 characters, e.g. the "
                "output of python -c 'import secrets; print(secrets.token_urlsafe(50))'")
        return key
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


def _secret_key_weakness(key: str) -> str:
    # Django's own criteria (check --deploy, W009), plus the placeholder of .env.example.
    if "change-me" in key:
        return "is the placeholder of .env.example"
    if key.startswith("django-insecure-"):
        return "is a development key (django-insecure-…)"
    if len(key) < 50:
        return f"is {len(key)} characters long"
    if len(set(key)) < 5:
        return f"has only {len(set(key))} distinct characters"
    return ""


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "django_htmx",
    "csp",
    "axes",
    "studies",
    "annotation",
    "imports",
    "jobs",
    "analysis",
    "judges",
    "exports",
    "demo",
    "tokens",
]

MIDDLEWARE = [
    # The page script's answers (JSON POSTs to /a/<token>/answer/) go through ANSWER_MIDDLEWARE
    # below instead of the rest of this list (issue 26); everything else goes on.
    "config.middleware.LeanAnswerMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.NulRefusalMiddleware",  # a NUL in a link: 404, before any lookup
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.middleware.NoStoreMiddleware",  # after WhiteNoise: static files keep their caching
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "config.middleware.MessageMiddleware",  # Django's, the storage built when first used
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.CSPMiddleware",  # django-csp's, the header kept once built
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",
    # Last, so that it sees a view's database error first: 503 with Retry-After, not a 500.
    "config.middleware.DatabaseUnavailableMiddleware",
]
# What an answer posted by the page's script goes through (config.middleware.LeanAnswerMiddleware),
# in MIDDLEWARE's order: every protection of the route (security headers, the NUL refusal,
# no-store, the CSRF token and Origin check, X-Frame-Options, the content security policy, the
# database's 503). Left out: what it never uses (static files, the session and the user, the
# browser's language, APPEND_SLASH, messages, htmx, the log-in lockout).
ANSWER_MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.NulRefusalMiddleware",
    "config.middleware.NoStoreMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.CSPMiddleware",
    "config.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "csp.context_processors.nonce",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
# DATABASE_URL selects PostgreSQL (psycopg 3 with its built-in pool); without it, SQLite in WAL
# mode with IMMEDIATE transactions, so concurrent writers queue instead of failing.
#
# While PostgreSQL is down a request must fail fast, so that it is answered 503 with Retry-After
# (config/middleware.py) instead of hanging: a connection attempt gives up after
# DATABASE_CONNECT_TIMEOUT seconds, and a request waits at most DATABASE_POOL_TIMEOUT seconds for
# a pooled connection (with DATABASE_POOL_MAX at least the threads of a process, a request never
# waits for one while the database is up).
if os.environ.get("DATABASE_URL"):
    _db = env.db("DATABASE_URL")
    if _db["ENGINE"] in {"django.db.backends.postgresql", "django.db.backends.postgresql_psycopg2"}:
        _db["ENGINE"] = "django.db.backends.postgresql"
        _db.setdefault("OPTIONS", {}).setdefault(
            "connect_timeout", envint("DATABASE_CONNECT_TIMEOUT", 3))
        if envbool("DATABASE_POOL", True):
            _db["OPTIONS"]["pool"] = {
                "min_size": envint("DATABASE_POOL_MIN", 2),
                "max_size": envint("DATABASE_POOL_MAX", 20),
                "timeout": envfloat("DATABASE_POOL_TIMEOUT", 2),
                # The pool retries a failed connection with exponential back-off (1, 2, 4, … s)
                # for this long, then gives up until a request asks again. With its default,
                # five minutes, the pauses grow past a minute: after a long outage the pool would
                # notice the database is back only that much later.
                "reconnect_timeout": envfloat("DATABASE_POOL_RECONNECT_TIMEOUT", 5),
            }
            _db["CONN_MAX_AGE"] = 0
    DATABASES = {"default": _db}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "concord.sqlite3",
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Celery ---------------------------------------------------------------------------------
# REDIS_URL (or CELERY_BROKER_URL) selects Redis; without it, kombu's filesystem transport and
# Celery's file result backend, which need no server. The record of a run lives in our own
# AnalysisRun table; the result backend only carries chord plumbing.
REDIS_URL = os.environ.get("REDIS_URL", "")
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", REDIS_URL) or "filesystem://"
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", REDIS_URL) or (
    "file://" + str(VAR_DIR / "celery" / "results")
)
if CELERY_BROKER_URL == "filesystem://":
    _queue = VAR_DIR / "celery" / "queue"
    for _sub in ("queue", "processed", "results", "control"):
        (VAR_DIR / "celery" / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue),
        "data_folder_out": str(_queue),
        "processed_folder": str(VAR_DIR / "celery" / "processed"),
        "store_processed": False,
        # broadcast (ping, purge) exchanges; kombu's default is ./control in the working directory
        "control_folder": str(VAR_DIR / "celery" / "control"),
    }
else:
    # A task of a killed worker is redelivered after this many seconds (kombu's default: one
    # hour). Keep it above the longest task: a task still running then gets a second copy. The
    # jobs' heartbeat and sweep (jobs.sweep) re-send a lost job within about a minute anyway, and
    # a copy of a job whose heartbeat is fresh waits instead of running it twice.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": envint("CELERY_VISIBILITY_TIMEOUT", 300),
        # scan for lost tasks on every restore interval (~10 s), not one in ten: a killed
        # worker's task is back within the visibility timeout plus about ten seconds
        "unacked_restore_throttle": 1,
        # Redis down: a refused or silent connection fails in seconds, not Redis-py's default
        "socket_connect_timeout": envfloat("CELERY_BROKER_CONNECTION_TIMEOUT", 2.0),
        "socket_timeout": envfloat("CELERY_BROKER_SOCKET_TIMEOUT", 5.0),
    }
# --- Cache ----------------------------------------------------------------------------------
# The open link's enrolment limits (annotation.limits) count in the cache, so every process must
# see one count: Redis when REDIS_URL is set (gunicorn's workers share it); otherwise each
# process's own memory, enough for `make run`'s one server process. A cache that does not answer
# within a second lets the request through (limits fail open; an answer never waits on Redis).
if REDIS_URL:
    CACHES = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "concord",
        "OPTIONS": {"socket_connect_timeout": 1.0, "socket_timeout": 1.0},
    }}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Sending a task: connect within CELERY_BROKER_CONNECTION_TIMEOUT, retry the publish
# CELERY_PUBLISH_MAX_RETRIES times (0.25 s apart), then give up: the run or export is marked
# failed with the reason and the researcher is told at once (jobs.services.job_send).
CELERY_BROKER_CONNECTION_TIMEOUT = envfloat("CELERY_BROKER_CONNECTION_TIMEOUT", 2.0)
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": envint("CELERY_PUBLISH_MAX_RETRIES", 2),
    "interval_start": 0,
    "interval_step": 0.25,
    "interval_max": 0.5,
}
# The Redis result backend (chords) retries a lost connection 20 times a second apart by default.
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"retry_policy": {
    "max_retries": envint("CELERY_PUBLISH_MAX_RETRIES", 2), "interval_start": 0,
    "interval_step": 0.25, "interval_max": 0.5}}
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = envfloat("CELERY_BROKER_CONNECTION_TIMEOUT", 2.0)
CELERY_REDIS_SOCKET_TIMEOUT = envfloat("CELERY_BROKER_SOCKET_TIMEOUT", 5.0)
# Periodic work, sent by one `celery -A config beat` process (make run, docker-compose.yml and
# the tests start one): the jobs' sweep (jobs.sweep) every CONCORD_SWEEP_SECONDS.
CONCORD_SWEEP_SECONDS = envfloat("CONCORD_SWEEP_SECONDS", 15.0)
# The live quality flags of open studies' participants (analysis.live), every
# CONCORD_LIVE_QUALITY_SECONDS; 0 turns it off.
CONCORD_LIVE_QUALITY_SECONDS = envfloat("CONCORD_LIVE_QUALITY_SECONDS", 60.0)
# The reclaim of abandoned assignments (annotation.reclaim.participants_reclaim) every
# CONCORD_RECLAIM_SWEEP_SECONDS: a participant who answered nothing and was shown nothing for
# CONCORD_RECLAIM_AFTER_SECONDS leaves their unanswered items to new participants.
CONCORD_RECLAIM_AFTER_SECONDS = envfloat("CONCORD_RECLAIM_AFTER_SECONDS", 2 * 3600.0)
CONCORD_RECLAIM_SWEEP_SECONDS = envfloat("CONCORD_RECLAIM_SWEEP_SECONDS", 60.0)
CELERY_BEAT_SCHEDULE = {
    "jobs-sweep": {"task": "jobs.tasks.sweep_jobs", "schedule": CONCORD_SWEEP_SECONDS,
                   "options": {"expires": CONCORD_SWEEP_SECONDS}},
    "assignments-reclaim": {"task": "annotation.tasks.reclaim_assignments",
                            "schedule": CONCORD_RECLAIM_SWEEP_SECONDS,
                            "options": {"expires": CONCORD_RECLAIM_SWEEP_SECONDS}},
    # Kept upload folders older than a day that no import job needs (imports.services).
    "imports-sweep": {"task": "imports.tasks.sweep_imports", "schedule": 3600.0,
                      "options": {"expires": 3600.0}},
}
if CONCORD_LIVE_QUALITY_SECONDS > 0:
    CELERY_BEAT_SCHEDULE["live-quality"] = {
        "task": "analysis.tasks.live_quality", "schedule": CONCORD_LIVE_QUALITY_SECONDS,
        "options": {"expires": CONCORD_LIVE_QUALITY_SECONDS}}
(VAR_DIR / "celery").mkdir(exist_ok=True)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celery" / "beat-schedule")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600

# --- Auth -----------------------------------------------------------------------------------
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "studies:list"
LOGOUT_REDIRECT_URL = "login"
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = 1  # hours
AXES_RESET_ON_SUCCESS = True
AXES_ENABLED = envbool("AXES_ENABLED", True)
# Lock a user name at one address, not the address: researchers behind one proxy or one office
# NAT share an address, and ten wrong guesses at bob's password must not lock alice out.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]

# The client's address, for the lock-out. Behind N reverse proxies (nginx, a load balancer) every
# request comes from the last proxy; each proxy appends the address it was connected from to
# X-Forwarded-For, so the client is the N-th entry from the right, and anything further left was
# written by the client itself. Without TRUSTED_PROXY_COUNT the header is ignored: it is then
# the client's to invent, and a new value per guess would buy new guesses.
TRUSTED_PROXY_COUNT = envint("TRUSTED_PROXY_COUNT", 0)
if TRUSTED_PROXY_COUNT < 0:
    raise ImproperlyConfigured(f"TRUSTED_PROXY_COUNT={TRUSTED_PROXY_COUNT} is negative")
if TRUSTED_PROXY_COUNT:
    AXES_IPWARE_META_PRECEDENCE_ORDER = ("HTTP_X_FORWARDED_FOR",)
    AXES_IPWARE_PROXY_ORDER = "left-most"
    # django-ipware counts the proxies *listed* in the header: all but the last one, whose
    # address is REMOTE_ADDR. Not strict: a client-written prefix must not void the header.
    AXES_IPWARE_PROXY_COUNT = TRUSTED_PROXY_COUNT - 1
    IPWARE_STRICT = False
else:
    AXES_IPWARE_META_PRECEDENCE_ORDER = ("REMOTE_ADDR",)

# --- E-mail ---------------------------------------------------------------------------------
# Password-reset and invitation mails. EMAIL_URL (smtp+tls://user:password@host:587, smtp+ssl://…:465) or
# EMAIL_HOST and its companions select SMTP; without either, mails are printed on the console
# (the embedded default), so `make run` needs no mail server.
EMAIL_USE_TLS = EMAIL_USE_SSL = False
if os.environ.get("EMAIL_URL"):
    _email = env.email_url("EMAIL_URL")
    EMAIL_BACKEND = _email["EMAIL_BACKEND"]
    EMAIL_HOST = _email["EMAIL_HOST"] or "localhost"
    EMAIL_PORT = _email["EMAIL_PORT"] or 25
    EMAIL_HOST_USER = _email["EMAIL_HOST_USER"] or ""
    EMAIL_HOST_PASSWORD = _email["EMAIL_HOST_PASSWORD"] or ""
    EMAIL_USE_TLS = bool(_email.get("EMAIL_USE_TLS"))
    EMAIL_USE_SSL = bool(_email.get("EMAIL_USE_SSL"))
elif os.environ.get("EMAIL_HOST"):
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_HOST = os.environ["EMAIL_HOST"]
    EMAIL_PORT = envint("EMAIL_PORT", 587)
    EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
    EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
    EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", True)
    EMAIL_USE_SSL = envbool("EMAIL_USE_SSL", False)
else:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL are exclusive: choose one")
# A mail server that does not answer must not hold a request for long.
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "concord@localhost")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# --- Internationalisation -------------------------------------------------------------------
LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("fr", _("French"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_I18N = True
TIME_ZONE = "UTC"
USE_TZ = True

# --- Static files ---------------------------------------------------------------------------
STATIC_URL = "/static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", VAR_DIR / "static"))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG

# --- Uploads --------------------------------------------------------------------------------
# Item and response files are validated whole before anything is written; this is their limit.
# After a study is paused or closed, an answer to an item that was already on the annotator's
# screen is still accepted for this long (docs/lifecycle.md): no answer is lost by a close.
CONCORD_ANSWER_GRACE_SECONDS = envint("CONCORD_ANSWER_GRACE_SECONDS", 2 * 3600)
# An open link enrols at most this many new participants a minute from one client address, and
# at most CONCORD_JOIN_RATE_PER_STUDY a minute in all (0: no limit). One client with fresh cookies
# and invented platform ids could otherwise take every place of a study in seconds. Behind a
# reverse proxy set TRUSTED_PROXY_COUNT, or every annotator shares the proxy's address; a class
# joining from one NAT in the same minute needs a higher per-address limit (docs/deployment.md).
CONCORD_JOIN_RATE_PER_ADDRESS = envint("CONCORD_JOIN_RATE_PER_ADDRESS", 10)
CONCORD_JOIN_RATE_PER_STUDY = envint("CONCORD_JOIN_RATE_PER_STUDY", 300)
# Password-reset mails (studies.accounts): requests an hour from one client address (then 429),
# and mails an hour to one e-mail address (then the usual page, and no mail); 0: no limit.
CONCORD_PASSWORD_RESET_PER_ADDRESS = envint("CONCORD_PASSWORD_RESET_PER_ADDRESS", 10)
CONCORD_PASSWORD_RESET_PER_EMAIL = envint("CONCORD_PASSWORD_RESET_PER_EMAIL", 3)
# Invitations by e-mail on a study's sharing page (studies.accounts): one owner sends at most
# this many an hour (then a 429 page); each mail goes to an address the owner typed.
CONCORD_INVITES_PER_HOUR = envint("CONCORD_INVITES_PER_HOUR", 20)
# Anyone may make a researcher account on /accounts/signup/ (linked from the log-in page) when
# on; off (the default), accounts come from invitations, `create_researcher` or the admin.
CONCORD_OPEN_SIGNUP = envbool("CONCORD_OPEN_SIGNUP", False)
# Accounts made by sign-up an hour from one client address (then a 429 page).
CONCORD_SIGNUP_PER_ADDRESS = envint("CONCORD_SIGNUP_PER_ADDRESS", 5)
for _name in ("CONCORD_JOIN_RATE_PER_ADDRESS", "CONCORD_JOIN_RATE_PER_STUDY",
              "CONCORD_PASSWORD_RESET_PER_ADDRESS", "CONCORD_PASSWORD_RESET_PER_EMAIL",
              "CONCORD_INVITES_PER_HOUR", "CONCORD_SIGNUP_PER_ADDRESS"):
    if globals()[_name] < 0:
        raise ImproperlyConfigured(f"{_name}={globals()[_name]} is negative (0: no limit)")
# New revisions of one answer an annotator may store a minute (0: no limit); beyond, the answer
# waits (429) and the page sends it again: a script cannot fill the revisions table.
CONCORD_REVISIONS_PER_MINUTE = envint("CONCORD_REVISIONS_PER_MINUTE", 30)
if CONCORD_REVISIONS_PER_MINUTE < 0:
    raise ImproperlyConfigured(f"CONCORD_REVISIONS_PER_MINUTE={CONCORD_REVISIONS_PER_MINUTE} is "
                               "negative (0: no limit)")
CONCORD_MAX_UPLOAD_BYTES = envint("CONCORD_MAX_UPLOAD_BYTES", 10 * 1024 * 1024)
# A methods bundle (import_bundle, "Import a bundle"): the zip's size, its number of members and
# what its members may unpack to, each and together (a zip bomb is refused from its declared
# sizes before anything is decompressed; docs/exports.md#replaying-a-bundle).
CONCORD_BUNDLE_MAX_BYTES = envint("CONCORD_BUNDLE_MAX_BYTES", 50 * 1024 * 1024)
CONCORD_BUNDLE_MAX_MEMBERS = envint("CONCORD_BUNDLE_MAX_MEMBERS", 64)
CONCORD_BUNDLE_MAX_UNPACKED_BYTES = envint("CONCORD_BUNDLE_MAX_UNPACKED_BYTES", 500 * 1024 * 1024)
# The page imports a bundle while the researcher waits (about 10 s per 20 000 answer rows on the
# development machine): a bundle whose revisions.csv has more rows is left to the command.
CONCORD_BUNDLE_SYNC_MAX_ROWS = envint("CONCORD_BUNDLE_SYNC_MAX_ROWS", 20_000)
# The command line's own limit (import_items, import_responses; --max-bytes overrides it): a
# crowd study's file of ten million answers is about 260 MB, far over the browser's limit.
CONCORD_CLI_MAX_BYTES = envint("CONCORD_CLI_MAX_BYTES", 2 * 1024**3)
# A browser upload of items or responses larger than this is imported by a background job (a
# progress page, then the result) instead of while the researcher waits; the file is kept under
# VAR_DIR/imports until its job has run. Smaller files are imported (responses: previewed) at once.
CONCORD_IMPORT_SYNC_MAX_BYTES = envint("CONCORD_IMPORT_SYNC_MAX_BYTES", 2 * 1024 * 1024)
# A coreference upload (gold + system) of more documents than this is imported by a background
# job too, whatever its size: each document's metrics take milliseconds (python -m
# bench.coref_import: 5 000 documents, 2.6 MB, took over a minute on the busy 2-core machine).
CONCORD_COREF_SYNC_MAX_DOCUMENTS = envint("CONCORD_COREF_SYNC_MAX_DOCUMENTS", 200)
IMPORTS_DIR = VAR_DIR / "imports"
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

# --- Annotator pages ------------------------------------------------------------------------
# Seconds an item takes, per question, by display: the instructions page's estimate of a study's
# duration until it has enough answers of its own to take their median instead.
CONCORD_ITEM_SECONDS = {
    "text": envint("CONCORD_ITEM_SECONDS_TEXT", 20),
    "pair": envint("CONCORD_ITEM_SECONDS_PAIR", 15),
    "coref": envint("CONCORD_ITEM_SECONDS_COREF", 45),
}

# --- Analyses and exports -------------------------------------------------------------------
# Exact trust coefficients for at least this many annotators fan out over the workers as a Celery
# chord of CONCORD_TRUST_CHUNKS subset chunks, merged exactly; smaller runs compute in one task.
CONCORD_TRUST_FANOUT_MIN_K = envint("CONCORD_TRUST_FANOUT_MIN_K", 15)
CONCORD_TRUST_CHUNKS = envint("CONCORD_TRUST_CHUNKS", 8)
# The sections of a run (per question × scale: agreement, each competence model, spread,
# systems; per question: filtering; the study's; the comparisons) as Celery tasks any number of
# workers share (analysis.sections): "on", "off", or "auto" — on for a run on PostgreSQL of at
# least CONCORD_ANALYSIS_FANOUT_MIN_ANSWERS answers whose tasks go to a broker (never with
# CELERY_TASK_ALWAYS_EAGER). The document is the same either way.
CONCORD_ANALYSIS_FANOUT = os.environ.get("CONCORD_ANALYSIS_FANOUT", "auto").strip().lower()
if CONCORD_ANALYSIS_FANOUT not in ("auto", "on", "off"):
    raise ImproperlyConfigured(f"CONCORD_ANALYSIS_FANOUT={CONCORD_ANALYSIS_FANOUT!r}: "
                               "auto, on or off")
CONCORD_ANALYSIS_FANOUT_MIN_ANSWERS = envint("CONCORD_ANALYSIS_FANOUT_MIN_ANSWERS", 200_000)
# Threads one analysis may use for its compiled kernels (MACE's restarts, the bootstrap of the
# correlations side by side; the results are the same): 0 = every core of the machine.
CONCORD_ANALYSIS_THREADS = envint("CONCORD_ANALYSIS_THREADS", 0)
# Exports of studies with more responses than this run as background jobs (a file to download
# when done); smaller ones stream straight to the browser.
CONCORD_EXPORT_SYNC_MAX = envint("CONCORD_EXPORT_SYNC_MAX", 20_000)
EXPORTS_DIR = VAR_DIR / "exports"
# A queued run that no worker has picked up after this many seconds is reported as such.
CONCORD_WORKER_WAIT_SECONDS = envint("CONCORD_WORKER_WAIT_SECONDS", 20)
# A running job's task refreshes its heartbeat every CONCORD_HEARTBEAT_SECONDS; one older than
# CONCORD_HEARTBEAT_STALE_SECONDS shows the job stalled and the sweep sends it again, at most
# until CONCORD_JOB_MAX_ATTEMPTS attempts (then it fails with the reason). A job saved but not
# sent after CONCORD_JOB_SEND_GRACE_SECONDS (its web process died before sending) is sent by
# the sweep. Docs: docs/deployment.md ("Background jobs").
CONCORD_HEARTBEAT_SECONDS = envfloat("CONCORD_HEARTBEAT_SECONDS", 10.0)
CONCORD_HEARTBEAT_STALE_SECONDS = envfloat("CONCORD_HEARTBEAT_STALE_SECONDS", 45.0)
CONCORD_JOB_MAX_ATTEMPTS = envint("CONCORD_JOB_MAX_ATTEMPTS", 3)
CONCORD_JOB_SEND_GRACE_SECONDS = envfloat("CONCORD_JOB_SEND_GRACE_SECONDS", 30.0)
# Tests only: a job's task sleeps this long once running (heartbeat beating), so a test can
# kill its worker in the middle. Never set it in a deployment.
CONCORD_JOB_TEST_DELAY_SECONDS = envfloat("CONCORD_JOB_TEST_DELAY_SECONDS", 0.0)

# --- Security -------------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the questionnaire script reads the token from the form instead
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
_https = urlsplit(SITE_URL).scheme == "https"
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", _https)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", _https)


def envsamesite(name: str, *, secure: bool, secure_name: str) -> str:
    """Read a cookie's SameSite policy: Lax (default), Strict or None; None needs Secure."""
    raw = os.environ.get(name, "")
    value = {"": "Lax", "lax": "Lax", "strict": "Strict", "none": "None"}.get(raw.strip().lower())
    if value is None:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a SameSite policy (use Lax, Strict "
                                   "or None)")
    if value == "None" and not secure:
        # Browsers drop a SameSite=None cookie that is not Secure: fail here, not in the frame.
        raise ImproperlyConfigured(f"{name}=None needs {secure_name}=1 (serve Concord over "
                                   "HTTPS: browsers refuse SameSite=None cookies that are not "
                                   "Secure)")
    return value


# MTurk shows the annotator pages in a frame on mturk.com, where a Lax cookie is not sent with a
# POST: such studies need None (docs/running-a-study.md).
SESSION_COOKIE_SAMESITE = envsamesite("SESSION_COOKIE_SAMESITE", secure=SESSION_COOKIE_SECURE,
                                      secure_name="SESSION_COOKIE_SECURE")
CSRF_COOKIE_SAMESITE = envsamesite("CSRF_COOKIE_SAMESITE", secure=CSRF_COOKIE_SECURE,
                                   secure_name="CSRF_COOKIE_SECURE")
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
if envbool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Item text and instructions are researcher-supplied HTML: besides sanitising them, the policy
# forbids inline scripts and styles, so anything that slips through cannot run.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF, "https://app.prolific.com", "https://www.mturk.com",
                        "https://workersandbox.mturk.com"],
        "frame-ancestors": [SELF],
    },
}

# --- REST API -------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # A personal access token first (scripts; no CSRF, no cookie), then the browser session.
        "tokens.authentication.AccessTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # A token's scope (read or write) and its one study, if it is limited to one.
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated",
                                   "tokens.permissions.TokenScope",
                                   "tokens.permissions.TokenStudy"],
    # DRF's JSON parser with a nesting limit and no NUL or lone surrogate: a 400, never a 500.
    "DEFAULT_PARSER_CLASSES": ["studies.parsers.JSONParser",
                               "rest_framework.parsers.FormParser",
                               "rest_framework.parsers.MultiPartParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "studies.pagination.Pagination",
    "PAGE_SIZE": 100,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend",
                                "tokens.permissions.TokenStudyFilter"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Concord API",
    "DESCRIPTION": "Studies, items, participants, responses and analysis results of Concord.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Two models have a `source` with different choices: name both enums.
    "ENUM_NAME_OVERRIDES": {
        "ParticipantSourceEnum": "studies.models.Participant.Source",
        "ResponseSourceEnum": "annotation.models.Response.Source",
        "ItemRoleEnum": "studies.models.Item.Role",
        "MemberRoleEnum": "studies.models.Membership.Role",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
