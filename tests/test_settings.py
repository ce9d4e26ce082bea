"""Production settings: refuse unsafe defaults, pass `check --deploy`."""

import os
import subprocess
import sys

from tests.conftest import REPO

PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "config.settings.production",
    "DJANGO_SECRET_KEY": "k" * 20 + "-production-key-for-the-deploy-check-0123456789",
    "DJANGO_ALLOWED_HOSTS": "concord.example.org",
    "DATABASE_URL": "postgres://concord@127.0.0.1:5432/concord",
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
}


def manage(*args: str, env: dict) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_check_deploy_is_clean():
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_refuses_the_development_key():
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "DJANGO_SECRET_KEY"}
    result = manage("check", env=env)
    assert result.returncode != 0
    assert "Set DJANGO_SECRET_KEY" in result.stderr


def test_production_needs_a_database_url():
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "DATABASE_URL"}
    result = manage("check", env=env)
    assert result.returncode != 0
    assert "Set DATABASE_URL" in result.stderr


def test_production_needs_allowed_hosts():
    """The development default (localhost) must not silently serve production."""
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "DJANGO_ALLOWED_HOSTS"}
    result = manage("check", env=env)
    assert result.returncode != 0
    assert "Set DJANGO_ALLOWED_HOSTS" in result.stderr
    blank = manage("check", env={**env, "DJANGO_ALLOWED_HOSTS": " , "})
    assert blank.returncode != 0
    assert "Set DJANGO_ALLOWED_HOSTS" in blank.stderr


def test_production_refuses_a_wildcard_host():
    result = manage(
        "check", env={**PRODUCTION_ENV, "DJANGO_ALLOWED_HOSTS": "concord.example.org,*"}
    )
    assert result.returncode != 0
    assert "not '*'" in result.stderr


def test_production_serves_the_hosts_it_is_given():
    env = {**PRODUCTION_ENV, "DJANGO_ALLOWED_HOSTS": "a.example.org, b.example.org"}
    result = manage(
        "shell", "-c", "from django.conf import settings; print(settings.ALLOWED_HOSTS)", env=env
    )
    assert result.returncode == 0, result.stderr
    assert "['a.example.org', 'b.example.org']" in result.stdout


def test_the_report_cache_is_shared_by_the_web_processes(tmp_path):
    """Files under var/ on one machine, Redis when CONCORD_CACHE_URL names one;
    never a per-process memory cache (config.settings.base.report_cache)."""
    import pytest

    from config.settings.base import report_cache

    files = report_cache("", tmp_path)
    assert files["BACKEND"] == "django.core.cache.backends.filebased.FileBasedCache"
    assert files["LOCATION"] == str(tmp_path / "cache" / "reports")
    redis = report_cache("redis://cache.internal:6379/2", tmp_path)
    assert redis["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert redis["LOCATION"] == "redis://cache.internal:6379/2"
    assert files["TIMEOUT"] == redis["TIMEOUT"] == 7 * 24 * 3600
    with pytest.raises(ValueError, match="only redis:// or rediss://"):
        report_cache("memcached://cache.internal:11211", tmp_path)
