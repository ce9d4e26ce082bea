"""`docker compose up` gives a working Concord: the Dockerfile's image runs
compose.yaml's web, workers and beat against PostgreSQL and Redis; the
synthetic meeting comes in, a participant arriving from Prolific rates
through the web container over HTTP, a metric run finishes on a worker
container, and `down` then `up` keeps it all. The CA bundle pip needs here
goes into the build as a BuildKit secret: the test checks that no layer holds it.

Needs Docker (Debian's docker.io: this test starts dockerd when none answers),
docker compose (or Debian's docker-compose) and debootstrap (see stack.py);
without them it skips with the reason, or fails with CONCORD_REQUIRE_SERVICES=1.
Prints the time of each phase. Every service runs on the host's network, on
free ports bound to 127.0.0.1.
"""

from __future__ import annotations

import http.client
import json
import re
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest

from tests.conftest import REPO
from tests.deploy import stack
from tests.deploy.stack import Stack, phase

pytestmark = pytest.mark.docker

ALLOWED_HOST = "concord.test"
# What the check prints: the participant's work and the metric run, from the database.
STATE_SCRIPT = """
import json
from annotator.models import Assignment
from judging.models import JudgingRun, Judgment
a = Assignment.objects.select_related("participant").get(participant__prolific_pid={pid!r})
run = JudgingRun.objects.get(pk={run})
print(json.dumps({{
    "assignment": a.status, "code": a.completion_code, "items": len(a.item_order),
    "ratings": sorted(a.ratings.values_list("item_id", "score")),
    "run": [run.status, run.done, run.total, run.failed, run.queue_name],
    "judgments": Judgment.objects.filter(evaluator__name="metric: rouge").count(),
}}))
"""


class Participant:
    """A participant's browser behind the TLS proxy (X-Forwarded-Proto: https).
    Cookies are kept by hand: Concord sets them Secure, which cookie jars never
    send over plain HTTP."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookies: dict[str, str] = {}

    def request(
        self, method: str, path: str, form: dict | None = None, json_answer: bool = False
    ) -> tuple[int, str, str]:
        """(status, Location, body)."""
        headers = {"Host": ALLOWED_HOST, "X-Forwarded-Proto": "https"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            body = urlencode(form)
            headers |= {
                "Content-Type": "application/x-www-form-urlencoded",
                "Origin": f"https://{ALLOWED_HOST}",
                "Referer": f"https://{ALLOWED_HOST}{path}",
                "X-CSRFToken": self.cookies.get("csrftoken", ""),
            }
        if json_answer:
            headers["Accept"] = "application/json"
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            for cookie in response.headers.get_all("Set-Cookie") or []:
                name, _, value = cookie.split(";", 1)[0].partition("=")
                self.cookies[name.strip()] = value.strip()
            location = response.headers.get("Location", "")
            return response.status, urlsplit(location).path, response.read().decode()
        finally:
            connection.close()

    def get(self, path: str, expect: int = 200) -> tuple[str, str]:
        status, location, body = self.request("GET", path)
        assert status == expect, f"GET {path}: {status} {body[:500]}"
        return location, body

    def post(self, path: str, form: dict, expect: int = 302) -> tuple[str, str]:
        status, location, body = self.request("POST", path, form)
        assert status == expect, f"POST {path}: {status} {body[:500]}"
        return location, body


def csrf_token(page: str) -> str:
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert match, "no CSRF token on the page"
    return match.group(1)


def take_part(web_port: int, link: str) -> tuple[str, int, Participant]:
    """Arrive by the study link, consent, rate every item, finish: the
    completion code shown, the number of ratings sent and the browser."""
    browser = Participant(web_port)
    path, _, query = link.partition("?")
    params = dict(pair.split("=", 1) for pair in query.split("&"))
    _, consent = browser.get(link)
    assert "consent" in consent.lower()
    resume, _ = browser.post(
        path, params | {"consent": "yes", "csrfmiddlewaretoken": csrf_token(consent)}
    )
    item_url, _ = browser.get(resume, expect=302)
    rated = 0
    while "/item/" in item_url:
        _, page = browser.get(item_url)
        values = re.findall(r'name="score" value="(\d+)"', page)
        assert values, f"no scale on {item_url}"
        form = {"score": values[len(values) // 2], "seconds": "30"}
        status, _, answer = browser.request(
            "POST", item_url, form | {"csrfmiddlewaretoken": csrf_token(page)}, json_answer=True
        )
        assert status == 200, f"rating {item_url}: {status} {answer[:500]}"
        saved = json.loads(answer)
        assert saved["saved"] is True
        rated += 1
        item_url = saved["next"]
    assert item_url.endswith("/finish/"), item_url
    _, finish = browser.get(item_url)
    done, _ = browser.post(item_url, {"csrfmiddlewaretoken": csrf_token(finish)})
    _, page = browser.get(done)
    code = re.search(r'id="completion-code">([^<]+)<', page)
    assert code, f"no completion code on the done page: {page[:2000]}"
    return code.group(1).strip(), rated, browser


def state(stack_: Stack, pid: str, run_id: int) -> dict:
    out = stack_.manage("shell", "-c", STATE_SCRIPT.format(pid=pid, run=run_id))
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def docker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[stack.Docker]:
    started = time.monotonic()
    with stack.docker_daemon(tmp_path_factory.mktemp("dockerd")) as daemon:
        phase("docker daemon", started)
        yield daemon


@pytest.fixture
def running(docker: stack.Docker, tmp_path: Path) -> Iterator[Stack]:
    """Images built (the base one kept between runs), the stack up and healthy;
    removed with its volumes afterwards."""
    started = time.monotonic()
    stack.ensure_base_image(docker, tmp_path)
    phase("base image", started)
    started = time.monotonic()
    ca = stack.ca_bundle()
    stack.build_images(docker, ca)
    phase("images built", started)
    if ca is not None:
        started = time.monotonic()
        leaked = stack.layers_holding(docker, stack.APP_IMAGE, ca.read_bytes())
        assert not leaked, f"the CA bundle is in the image: {leaked}"
        phase("no layer holds the CA bundle", started)
    db_port, redis_port, web_port = stack.free_ports(3)
    env = docker.env | {
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": ALLOWED_HOST,
        "POSTGRES_PASSWORD": secrets.token_hex(16),
        "CONCORD_IMAGE": stack.APP_IMAGE,
        "CONCORD_POSTGRES_IMAGE": stack.POSTGRES_IMAGE,
        "CONCORD_REDIS_IMAGE": stack.REDIS_IMAGE,
        "CONCORD_DB_HOST": "127.0.0.1",
        "CONCORD_DB_PORT": str(db_port),
        "CONCORD_REDIS_HOST": "127.0.0.1",
        "CONCORD_REDIS_PORT": str(redis_port),
        "CONCORD_TEST_WEB_PORT": str(web_port),
    }
    config = tmp_path / "compose.yaml"
    stack.host_network_config(docker, env, config)
    running = Stack(docker, f"concordtest{secrets.token_hex(4)}", env, config)
    try:
        started = time.monotonic()
        running.compose("up", "-d", "--no-build", timeout=600)
        running.wait_healthy()
        phase("up and healthy", started)
        yield running
    finally:
        started = time.monotonic()
        running.compose("down", "-v", "--remove-orphans", check=False, timeout=300)
        phase("down -v", started)


def test_compose_up_serves_a_study_runs_a_metric_and_keeps_the_data(running: Stack):
    started = time.monotonic()
    setup = running.manage("demo_setup", "--synthetic", "--no-download", timeout=600)
    link = re.search(r"Crowd study participant link: (\S+)", setup)
    assert link, setup[-2000:]
    phase("synthetic meeting imported", started)

    started = time.monotonic()
    code, rated, browser = take_part(running.web_port, link.group(1))
    pid = dict(p.split("=", 1) for p in link.group(1).split("?")[1].split("&"))["PROLIFIC_PID"]
    phase(f"participant rated {rated} items over HTTP", started)

    started = time.monotonic()
    queued = running.manage(
        "judge",
        "--evaluator",
        "metric: rouge",
        "--benchmark",
        "elitr-bench-synthetic",
        "--split",
        "test2",
    )
    run_match = re.search(r"Run (\d+) queued: (\d+) items", queued)
    assert run_match, queued
    run_id = int(run_match.group(1))
    deadline = time.monotonic() + 300
    while (before := state(running, pid, run_id))["run"][0] in ("queued", "running"):
        assert time.monotonic() < deadline, f"run {run_id} not finished: {before}"
        time.sleep(2)
    assert before["run"][:2] == ["done", int(run_match.group(2))], before
    assert before["run"][3] == 0 and before["run"][4] == "default", before
    assert "judging.run_judging[" in running.logs("worker-default")
    assert before["judgments"] >= before["run"][1] > 0
    phase(f"metric run {run_id} done on the default worker", started)

    assert before["assignment"] == "completed" and before["code"] == code
    assert len(before["ratings"]) == rated == before["items"] > 0

    started = time.monotonic()
    running.compose("down", timeout=300)
    assert not running.containers()
    running.compose("up", "-d", "--no-build", timeout=600)
    running.wait_healthy()
    phase("down (volumes kept) and up again", started)
    assert state(running, pid, run_id) == before
    # the participant's browser comes back by the study link: led to the same code
    resume, _ = browser.get(link.group(1), expect=302)
    done, _ = browser.get(resume, expect=302)
    _, page = browser.get(done)
    assert f'id="completion-code">{code}<' in page


def test_compose_refuses_to_start_without_its_secrets(tmp_path: Path):
    """Without DJANGO_SECRET_KEY or POSTGRES_PASSWORD, compose names the missing one."""
    cli = stack.buildkit_cli() or "docker"
    compose = stack.compose_cli(cli)
    stack.require(compose is not None, "no docker compose (apt-get install docker-compose)")
    assert compose is not None
    empty = tmp_path / "empty.env"
    empty.write_text("")
    secrets_ = {
        "DJANGO_SECRET_KEY": "k" * 50,
        "DJANGO_ALLOWED_HOSTS": ALLOWED_HOST,
        "POSTGRES_PASSWORD": "p",
    }
    base = [*compose, "--env-file", str(empty), "-f", str(REPO / "compose.yaml"), "config"]
    for missing in ("DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS", "POSTGRES_PASSWORD"):
        env = {k: v for k, v in secrets_.items() if k != missing}
        result = stack.run(base, env={"PATH": "/usr/bin:/bin:/usr/local/bin"} | env, check=False)
        assert result.returncode != 0, missing
        assert f"set {missing}" in result.stderr, result.stderr
    complete = stack.run(base, env={"PATH": "/usr/bin:/bin:/usr/local/bin"} | secrets_)
    assert "config.settings.production" in complete.stdout
