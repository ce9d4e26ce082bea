#!/bin/sh
# The image's entrypoint: what each container of compose.yaml runs.
#   web            gunicorn (CONCORD_WEB_BIND, CONCORD_WEB_PORT, CONCORD_WEB_WORKERS)
#   worker QUEUE   a Celery worker of one queue: default, llm or gpu
#                  (CONCORD_WORKER_CONCURRENCY, else the queue's usual number)
#   beat           the periodic tasks (exactly one per installation)
#   migrate        the database schema (one container, before the others start)
#   anything else  run as given (e.g. python manage.py createsuperuser)
# Each waits for the database first (CONCORD_WAIT_FOR_DB=0 skips it).
set -eu

if [ "$#" -eq 0 ]; then
    set -- web
fi

wait_for_db() {
    if [ "${CONCORD_WAIT_FOR_DB:-1}" = 1 ]; then
        python /app/deploy/container.py wait-for-db
    fi
}

case "$1" in
web)
    wait_for_db
    exec gunicorn config.wsgi:application \
        --bind "${CONCORD_WEB_BIND:-0.0.0.0}:${CONCORD_WEB_PORT:-8000}" \
        --workers "${CONCORD_WEB_WORKERS:-4}" --timeout 60 \
        --access-logfile - --forwarded-allow-ips "${CONCORD_FORWARDED_ALLOW_IPS:-*}"
    ;;
worker)
    queue="${2:?worker needs a queue: default, llm or gpu}"
    case "$queue" in
    default) concurrency=4 ;;
    llm) concurrency=32 ;;
    gpu) concurrency=1 ;;
    *)
        echo "Unknown queue '$queue': default, llm or gpu (config/celery.py)." >&2
        exit 2
        ;;
    esac
    wait_for_db
    exec celery -A config worker -Q "$queue" -n "$queue@%h" \
        -c "${CONCORD_WORKER_CONCURRENCY:-$concurrency}" --loglevel "${CELERY_LOG_LEVEL:-INFO}"
    ;;
beat)
    wait_for_db
    exec celery -A config beat --schedule /var/lib/concord/celerybeat-schedule \
        --loglevel "${CELERY_LOG_LEVEL:-INFO}"
    ;;
migrate)
    wait_for_db
    exec python manage.py migrate --noinput
    ;;
*)
    exec "$@"
    ;;
esac
