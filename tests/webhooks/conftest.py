"""A local webhook receiver on 127.0.0.1 that checks every request's signature
with the snippet of docs/webhooks.md (read from the page and run), and
answers the statuses it is told to."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import REPO
from users.models import Membership, Project, ProjectRole
from webhooks.models import WebhookEndpoint


def documented_verify():
    """The `verify` function of docs/webhooks.md, as a reader would copy it."""
    page = (REPO / "docs" / "webhooks.md").read_text()
    section = page.split("## Verifying a delivery", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "docs/webhooks.md", "exec"), namespace)  # noqa: S102 (our own page)
    return namespace["verify"]


verify = documented_verify()


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    verified: bool

    @property
    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Answers `plan` in turn (then 200); `delay` seconds before each answer."""

    secret: str = ""
    plan: list[int] = field(default_factory=list)
    delay: float = 0.0
    received: list[Received] = field(default_factory=list)
    url: str = ""

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k: v for k, v in self.headers.items()}
                ok = verify(receiver.secret, body, headers.get("Concord-Signature", ""))
                with receiver.lock:
                    receiver.received.append(Received(headers, body, ok))
                    status = receiver.plan.pop(0) if receiver.plan else 200
                time.sleep(receiver.delay)
                answer = b'{"ok": true}' if status < 300 else b"down for maintenance"
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/concord"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def allow_private(settings):
    settings.CONCORD_WEBHOOKS_ALLOW_PRIVATE = True


@pytest.fixture
def receiver(allow_private):
    receiving = Receiver()
    yield receiving
    receiving.close()


def free_port() -> int:
    """A port nobody listens on (bound, then let go)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def project_with(researcher, slug: str = "lab", role: str = ProjectRole.RESEARCHER) -> Project:
    project, _ = Project.objects.get_or_create(slug=slug, defaults={"name": slug.title()})
    Membership.objects.get_or_create(project=project, user=researcher, defaults={"role": role})
    return project


def endpoint_for(project: Project, receiver: Receiver, events: list[str]) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.create(project=project, url=receiver.url, events=events)
    receiver.secret = endpoint.secret
    return endpoint
