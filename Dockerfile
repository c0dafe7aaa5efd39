FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 CONCORD_VAR_DIR=/var/lib/concord
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends gettext && rm -rf /var/lib/apt/lists/*
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# collectstatic needs settings, not the production key: a throw-away one (DEBUG is off, so a
# weak key would be refused).
RUN SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(50))')" \
    python manage.py collectstatic --noinput -v0
# The analyses' compiled kernels, into their on-disk cache now, so that no first analysis pays
# for their compilation (`make kernels` does the same on a checkout).
RUN python -m core.stats.kernels
RUN useradd --system concord && mkdir -p /var/lib/concord && chown concord /var/lib/concord
USER concord
EXPOSE 8000
CMD ["gunicorn", "config.wsgi", "--bind", "0.0.0.0:8000", "--worker-class", "gthread", "--workers", "2", "--threads", "8"]
