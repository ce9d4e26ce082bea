"""The ground floor every app stands on: one catalogue of errors
(`core.errors`), the API's shared rules (`core.api`: error answers, the
schema; `core.serializers`, `core.filters`, `core.parsers`: strict bodies and
filters), surviving a database blip (`core.database`), spreadsheet-safe CSV
cells (`core.spreadsheet`), download names (`core.downloads`), the product's
404 page (`core.not_found`), counted words (`core.words`) and SQLite's
backend (`core.sqlite_backend`).

It imports no app: `config/` (settings, URLs, the Celery app) sits on top,
and the apps in between (tests/test_layering.py). Where a rule needs an
app's knowledge (which related objects a user may name), the app plugs it in
through a setting (`CONCORD_SCOPE_CHOICES`).
"""
