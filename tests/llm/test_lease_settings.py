"""The lease and outage settings docs/deployment.md names are read from the
environment (CONCORD_GATE_LEASE_SECONDS was documented and never read)."""

from tests.test_settings import manage

ENV = {
    "DJANGO_SETTINGS_MODULE": "config.settings.base",
    "CONCORD_GATE_LEASE_SECONDS": "7",
    "CONCORD_RUN_LEASE_SECONDS": "30",
    "CONCORD_RUN_LEASE_MARGIN_SECONDS": "4",
    "CONCORD_DATABASE_OUTAGE_SECONDS": "60",
}


def printed(code: str, **env: str) -> list[str]:
    result = manage("shell", "-c", code, env={**ENV, **env})
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_the_gate_lease_comes_from_the_environment():
    assert printed("from llm import gate; print(gate.lease_seconds())")[-1] == "7.0"


def test_the_run_lease_margin_and_the_outage_wait_come_from_the_environment():
    read = (
        "from runs import lifecycle; from core import database;"
        " print(lifecycle.lease_margin(), database.outage_seconds())"
    )
    assert printed(read)[-2:] == ["4.0", "60.0"]
    # the margin is at most a third of the run's lease
    assert printed(read, CONCORD_RUN_LEASE_MARGIN_SECONDS="20")[-2:] == ["10.0", "60.0"]
