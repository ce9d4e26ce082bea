"""The OpenAPI schema tells the truth: Schemathesis reads /api/schema/ from the
app (in-process, WSGI) and sends what it describes, then checks every answer:
no 500, and no status code, content type or body the schema does not declare.

Its four phases run with a fixed seed and a bounded number of examples:
examples, coverage (boundary and invalid values of each parameter), fuzzing
and stateful (sequences of calls linked by the ids they return). Every
operation runs against the synthetic ELITR data, a built and open study with
a participant who rated and commented, a metric's judging run and an LLM
judge's run with an item that needs a human, as a researcher with an API
token.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token

from corpus.importers.synthetic import write_synthetic_elitr
from corpus.models import Dataset
from judging.importing import import_elitr_bench
from tests.api_objects import api_models, build_api_objects, build_other_project_objects
from tests.conftest import rolled_back_once
from users.models import Membership, Project, User
from webhooks.models import WebhookEndpoint
from webhooks.services import do_send_test

SEED = 20240611
TOKEN = "schemathesis-researcher-token-0000000000"  # 40 characters, as DRF's keys
# Per operation in the fuzzing phase, and call sequences in the stateful one;
# raise it to search longer (CONCORD_SCHEMATHESIS_EXAMPLES=200).
MAX_EXAMPLES = int(os.environ.get("CONCORD_SCHEMATHESIS_EXAMPLES", "15"))

CONFIG = schemathesis.Config.from_dict(
    {
        "seed": SEED,
        "headers": {"Authorization": f"Token {TOKEN}"},
        "generation": {"max-examples": MAX_EXAMPLES, "database": "none", "deterministic": True},
        "phases": {
            "examples": {"enabled": True},
            "coverage": {"enabled": True},
            "fuzzing": {"enabled": True},
            "stateful": {"enabled": True},
        },
        # What the schema promises; not whether the server accepts every value
        # the schema allows (a study's settings are checked together, beyond
        # what a JSON schema can say).
        "checks": {
            "enabled": False,
            "not_a_server_error": {"enabled": True},
            "status_code_conformance": {"enabled": True},
            "content_type_conformance": {"enabled": True},
            "response_schema_conformance": {"enabled": True},
        },
    }
)
schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application(), config=CONFIG)

# The objects a path's {id} names, so that generated ids also hit stored rows.
MODELS = api_models()


@schema.hook
def flatmap_path_parameters(context, path_parameters):
    """A random id almost never exists: draw stored ids as well."""
    if not path_parameters or "id" not in path_parameters:
        return st.just(path_parameters)
    model = MODELS[context.operation.path.split("/")[2]]
    stored = list(model.objects.order_by("pk").values_list("pk", flat=True)[:3])
    # and the newest, which include the other project's objects
    stored += list(model.objects.order_by("-pk").values_list("pk", flat=True)[:2])
    return st.sampled_from([path_parameters, *({**path_parameters, "id": pk} for pk in stored)])


@schema.hook
def flatmap_body(context, body):
    """A drawn dataset id matches a stored one only while ids are small (a test
    run alone); after other tests the sequences have moved on: offer a stored
    dataset as well, so that creating a study or a run can succeed and its
    links be followed."""
    if not isinstance(body, dict) or "dataset" not in body:
        return st.just(body)
    stored = list(Dataset.objects.order_by("pk").values_list("pk", flat=True)[:3])
    return st.sampled_from([body, *({**body, "dataset": pk} for pk in stored)])


@pytest.fixture
def wsgi_requests_in_the_test_transaction():
    """Django closes the database connection after each request it serves
    (request_started/finished signals), which would end the test's transaction;
    Django's own test client disconnects them the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(scope="module")
def api_data_once(django_db_setup, django_db_blocker, tmp_path_factory):
    """The data every operation runs against, built once for the module (it
    took 2-4 s per operation when each of the ~75 built its own) inside a
    transaction rolled back at the module's end: each test's own transaction
    (pytest-django's `db`) is a savepoint within it, so every operation still
    starts from the same rows."""
    with rolled_back_once(django_db_blocker):
        import_elitr_bench(
            write_synthetic_elitr(tmp_path_factory.mktemp("data"), meetings=2),
            with_responses=True,
        )
        researcher = User.objects.create_user("rita", password="pw-rita-123", role="researcher")
        Token.objects.create(user=researcher, key=TOKEN)
        build_api_objects(researcher)
        # A second project, which the token's researcher is not a member of: its
        # objects are drawn as path ids too, and must answer as ids that do not
        # exist (404, declared) and never a 500 or a leak.
        other = Project.objects.create(name="Other team", slug="other")
        owner = User.objects.create_user("otto", role="researcher")
        Membership.objects.create(project=other, user=owner, role="owner")
        build_other_project_objects(other)
        # a webhook endpoint with a delivery (sent by nobody: the transaction never commits)
        endpoint = WebhookEndpoint.objects.create(
            project=Project.objects.get(slug="default"),
            url="https://hooks.example.org/concord",
            events=["run.failed"],
        )
        do_send_test(endpoint, researcher)
        yield


@pytest.fixture
def api_data(api_data_once, db, wsgi_requests_in_the_test_transaction):
    """The module's data, in this test's own transaction."""


FIXTURE_SHARED = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@contextmanager
def rolled_back():
    """Each example (and each call sequence) starts from the fixture's data, so
    that Hypothesis can replay and shrink what it found."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


@schema.parametrize()
@FIXTURE_SHARED
def test_every_operation_keeps_to_the_schema(case, api_data):
    with rolled_back():
        case.call_and_validate()


def test_call_sequences_keep_to_the_schema(api_data):
    """Calls chained by the links Schemathesis infers from the schema (a study's
    id from POST /api/studies/ to its actions, a participant's from a list to
    exclude and reinstate, ...); each answer is checked as above."""
    answered = []

    class Recorded(schema.as_state_machine()):
        def setup(self):
            self.savepoint = rolled_back()
            self.savepoint.__enter__()

        def teardown(self):
            self.savepoint.__exit__(None, None, None)

        def after_call(self, response, case):
            answered.append((case.method, case.path, response.status_code))

    Recorded.run(
        settings=settings(
            # twice the examples of one operation: a sequence spends draws on every
            # operation's parameters before it reaches a link
            max_examples=2 * MAX_EXAMPLES,
            stateful_step_count=6,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
    )
    # Not vacuous: some sequences reached stored objects through their ids.
    linked = {
        (method, path) for method, path, status in answered if "{id}" in path and status < 300
    }
    assert len(linked) >= 2, answered
