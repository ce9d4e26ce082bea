"""A local HTTP server that speaks the part of Prolific's API Concord uses.

Studies, submissions, bonus payments, messages and participant groups live in
memory; tests add submissions and read what Concord sent. `fail_next` makes
the next requests answer 500; `drop_next` makes the next requests take
effect and then close the connection without an answer (a lost answer: the
caller cannot know whether it happened); `limit_next` makes the next requests
answer 429 with a Retry-After header, doing nothing (Prolific's rate limit).
As on Prolific, paying a bulk bonus
payment pays again for every request (`paid` lists each payment made), and a
bonus or a message to someone without a submission in the study is a 400.
"""

from __future__ import annotations

import csv
import io
import json
import re
import socket
import threading
import uuid
from decimal import Decimal, InvalidOperation
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STUDY_FIELDS = (
    "name",
    "external_study_url",
    "completion_codes",
    "total_available_places",
    "estimated_completion_time",
    "reward",
)
TRANSITIONS = {"PUBLISH": "ACTIVE", "PAUSE": "PAUSED", "START": "ACTIVE", "STOP": "COMPLETED"}
Answer = tuple[int, dict | str]


class FakeProlific:
    """On `port` (0: any free one), or on `listening`, a socket bound and
    listening already (the demo's: run_demo binds it before it starts the web
    server and the worker that are told its address, so no other program can
    take the port in between)."""

    def __init__(
        self,
        token: str = "test-token",
        page_size: int = 2,
        port: int = 0,
        listening: socket.socket | None = None,
    ) -> None:
        self.token = token
        self.page_size = page_size
        self.studies: dict[str, dict] = {}
        self.submissions: dict[str, dict] = {}
        self.requests: list[tuple[str, str, dict | None]] = []
        self.fail_next = 0
        self.drop_next = 0
        self.limit_next = 0  # answer 429 (rate limited, nothing done) to the next requests
        self.bulk_bonuses: dict[str, dict] = {}
        self.paid: list[tuple[str, str, Decimal]] = []  # (bulk id, participant, amount)
        self.messages: list[dict] = []
        self.groups: dict[str, dict] = {}
        # the server's threads answer while a test or the demo's bots add
        # submissions: one at a time, so no listing meets a dict mid-change
        self.lock = threading.RLock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                return None

            def do_GET(self):
                fake.handle(self, "GET")

            def do_POST(self):
                fake.handle(self, "POST")

            def do_PATCH(self):
                fake.handle(self, "PATCH")

            def do_DELETE(self):
                fake.handle(self, "DELETE")

        if listening is None:
            self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        else:
            self.server = ThreadingHTTPServer(
                listening.getsockname(), Handler, bind_and_activate=False
            )
            self.server.socket.close()
            self.server.socket = listening
            self.server.server_address = listening.getsockname()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/v1/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeProlific:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add_submission(self, study_id: str, participant_id: str, status: str) -> str:
        submission_id = uuid.uuid4().hex[:24]
        with self.lock:
            self.submissions[submission_id] = {
                "id": submission_id,
                "study_id": study_id,
                "participant_id": participant_id,
                "status": status,
            }
        return submission_id

    def took_part(self, study_id: str) -> set[str]:
        with self.lock:
            return {
                s["participant_id"] for s in self.submissions.values() if s["study_id"] == study_id
            }

    def handle(self, request: BaseHTTPRequestHandler, method: str) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = json.loads(request.rfile.read(length)) if length else None
        path = request.path.split("/api/v1", 1)[-1]
        self.requests.append((method, path, body))
        if request.headers.get("Authorization") != f"Token {self.token}":
            return self.reply(request, 401, {"error": "Invalid token"})
        if self.fail_next:
            self.fail_next -= 1
            return self.reply(request, 500, {"error": "Internal error"})
        if self.limit_next:  # as Prolific: too many requests, nothing done, retry later
            self.limit_next -= 1
            return self.reply(
                request, 429, {"error": "Request was throttled."}, {"Retry-After": "0"}
            )
        with self.lock:
            status, payload = self.answer(method, path, body or {})
        if self.drop_next:  # it happened, but the answer is lost
            self.drop_next -= 1
            request.close_connection = True
            return None
        return self.reply(request, status, payload)

    def answer(self, method: str, path: str, body: dict) -> Answer:
        """What Prolific answers (status, JSON), having done what it does."""
        for route in (self.study_routes, self.bonus_routes, self.people_routes):
            if (answer := route(method, path, body)) is not None:
                return answer
        return 404, {"error": f"unknown {method} {path}"}

    def study_routes(self, method: str, path: str, body: dict) -> Answer | None:
        if method == "POST" and path == "/studies/":
            missing = [k for k in STUDY_FIELDS if k not in body]
            if missing:
                return 400, {"error": f"missing {missing}"}
            for code in body.get("completion_codes") or []:
                for action in code.get("actions") or []:
                    # as Prolific: a screen-out pays less than the reward, a few times
                    if action.get("action") == "FIXED_SCREEN_OUT_PAYMENT" and not (
                        0 < int(action.get("fixed_screen_out_reward") or 0) < int(body["reward"])
                        and int(action.get("slots") or 0) > 0
                    ):
                        return 400, {"error": "fixed_screen_out_reward below reward, slots > 0"}
            created = {**body, "id": uuid.uuid4().hex[:24], "status": "UNPUBLISHED"}
            self.studies[created["id"]] = created
            return 201, created
        if method == "GET" and (match := re.fullmatch(r"/studies/(\w+)/", path)):
            study = self.studies.get(match[1])
            return (200, study) if study is not None else (404, {"error": "no such study"})
        if method == "PATCH" and (match := re.fullmatch(r"/studies/(\w+)/", path)):
            study = self.studies.get(match[1])
            if study is None:
                return 404, {"error": "no such study"}
            places = body.get("total_available_places")
            if not isinstance(places, int) or places < 1:
                return 400, {"error": "total_available_places"}
            study["total_available_places"] = places
            return 200, study
        if match := re.fullmatch(r"/studies/(\w+)/transition/", path):
            study = self.studies.get(match[1])
            if study is None:
                return 404, {"error": "no such study"}
            if body.get("action") not in TRANSITIONS:
                return 400, {"error": f"unknown action {body.get('action')!r}"}
            study["status"] = TRANSITIONS[body["action"]]
            return 200, study
        if match := re.fullmatch(r"/studies/(\w+)/submissions/(?:\?page=(\d+))?", path):
            page = int(match[2] or 1)
            mine = [s for s in self.submissions.values() if s["study_id"] == match[1]]
            chunk = mine[(page - 1) * self.page_size : page * self.page_size]
            more = len(mine) > page * self.page_size
            next_link = {"href": f"{self.url}studies/{match[1]}/submissions/?page={page + 1}"}
            return 200, {
                "results": chunk,
                "_links": {"next": next_link if more else {"href": None}},
            }
        if match := re.fullmatch(r"/submissions/(\w+)/transition/", path):
            submission = self.submissions.get(match[1])
            if submission is None:
                return 404, {"error": "no such submission"}
            if body.get("action") == "REJECT" and (
                len(body.get("message", "")) < 100 or not body.get("rejection_category")
            ):
                return 400, {"error": "message of 100+ chars and category"}
            submission["status"] = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}[body["action"]]
            return 200, submission
        if method == "POST" and path == "/submissions/bulk-approve/":
            ids = body.get("submission_ids") or []
            unknown = [i for i in ids if i not in self.submissions]
            if not ids or unknown:
                return 400, {"error": f"unknown submissions {unknown}"}
            for i in ids:
                self.submissions[i]["status"] = "APPROVED"
            return 200, "Bulk approve in progress"
        return None

    def bonus_routes(self, method: str, path: str, body: dict) -> Answer | None:
        if method == "POST" and path == "/submissions/bonus-payments/":
            study_id = body.get("study_id", "")
            lines = []
            for row in csv.reader(io.StringIO(body.get("csv_bonuses", ""))):
                try:
                    pid, amount = row[0], Decimal(row[1])
                except (IndexError, ValueError, InvalidOperation):
                    return 400, {"error": f"bad CSV line {row}"}
                if len(row) != 2 or not amount.is_finite() or amount <= 0:
                    return 400, {"error": f"bad CSV line {row}"}
                lines.append((pid, amount))
            strangers = sorted({pid for pid, _ in lines} - self.took_part(study_id))
            if not lines or strangers:
                return 400, {"error": f"Participants not in the study: {strangers}"}
            pence = int(sum(a for _, a in lines) * 100)
            fees = round(pence / 3)
            bulk_id = uuid.uuid4().hex[:24]
            self.bulk_bonuses[bulk_id] = {"study_id": study_id, "lines": lines}
            return 201, {
                "id": bulk_id,
                "study": study_id,
                "amount": pence,
                "fees": fees,
                "total_amount": pence + fees,
            }
        if method == "POST" and (match := re.fullmatch(r"/bulk-bonus-payments/(\w+)/pay/", path)):
            bulk = self.bulk_bonuses.get(match[1])
            if bulk is None:
                return 404, {"error": "no such bonus payment"}
            # not idempotent, as on Prolific: every request pays
            self.paid += [(match[1], pid, amount) for pid, amount in bulk["lines"]]
            return 202, {}
        return None

    def people_routes(self, method: str, path: str, body: dict) -> Answer | None:
        if method == "POST" and path == "/messages/bulk/":
            ids, text, study_id = (
                body.get("ids") or [],
                body.get("body") or "",
                body.get("study_id"),
            )
            if not ids or not text.strip() or not study_id:
                return 400, {"error": "ids, body and study_id are required"}
            strangers = sorted(set(ids) - self.took_part(study_id))
            if strangers:
                return 400, {"error": f"Participants not in the study: {strangers}"}
            self.messages += [{"to": pid, "body": text, "study_id": study_id} for pid in ids]
            return 200, {}
        if method == "POST" and path == "/participant-groups/":
            if not body.get("name") or not (body.get("workspace_id") or body.get("project_id")):
                return 400, {"error": "name and workspace_id or project_id are required"}
            group_id = uuid.uuid4().hex[:24]
            self.groups[group_id] = {"id": group_id, "name": body["name"], "members": set()}
            return 201, {"id": group_id, "name": body["name"]}
        if match := re.fullmatch(r"/participant-groups/(\w+)/participants/", path):
            group = self.groups.get(match[1])
            if group is None:
                return 404, {"error": "no such group"}
            ids = set(body.get("participant_ids") or [])
            if method == "POST":
                group["members"] |= ids
            elif method == "DELETE":
                group["members"] -= ids
            members = [{"participant_id": m} for m in sorted(group["members"])]
            return 200, {"results": members}
        return None

    @staticmethod
    def reply(
        request: BaseHTTPRequestHandler,
        status: int,
        payload: dict | str,
        headers: dict[str, str] | None = None,
    ) -> None:
        data = json.dumps(payload).encode()
        request.send_response(status)
        for name, value in (headers or {}).items():
            request.send_header(name, value)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)
