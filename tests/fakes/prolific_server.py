"""A local HTTP server that speaks the part of Prolific's API Concord uses.

Studies and submissions live in memory; tests add submissions and read what
Concord sent. `fail_next` makes the next requests answer 500.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeProlific:
    def __init__(self, token: str = "test-token", page_size: int = 2) -> None:
        self.token = token
        self.page_size = page_size
        self.studies: dict[str, dict] = {}
        self.submissions: dict[str, dict] = {}
        self.requests: list[tuple[str, str, dict | None]] = []
        self.fail_next = 0
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

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
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
        self.submissions[submission_id] = {
            "id": submission_id,
            "study_id": study_id,
            "participant_id": participant_id,
            "status": status,
        }
        return submission_id

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
        if method == "POST" and path == "/studies/":
            missing = [
                k
                for k in (
                    "name",
                    "external_study_url",
                    "completion_codes",
                    "total_available_places",
                    "estimated_completion_time",
                    "reward",
                )
                if k not in body
            ]
            if missing:
                return self.reply(request, 400, {"error": f"missing {missing}"})
            study = {**body, "id": uuid.uuid4().hex[:24], "status": "UNPUBLISHED"}
            self.studies[study["id"]] = study
            return self.reply(request, 201, study)
        if method == "PATCH" and (match := re.fullmatch(r"/studies/(\w+)/", path)):
            study = self.studies.get(match[1])
            if study is None:
                return self.reply(request, 404, {"error": "no such study"})
            places = body.get("total_available_places")
            if not isinstance(places, int) or places < 1:
                return self.reply(request, 400, {"error": "total_available_places"})
            study["total_available_places"] = places
            return self.reply(request, 200, study)
        if match := re.fullmatch(r"/studies/(\w+)/transition/", path):
            study = self.studies.get(match[1])
            if study is None:
                return self.reply(request, 404, {"error": "no such study"})
            study["status"] = "ACTIVE" if body.get("action") == "PUBLISH" else study["status"]
            return self.reply(request, 200, study)
        if match := re.fullmatch(r"/studies/(\w+)/submissions/(?:\?page=(\d+))?", path):
            page = int(match[2] or 1)
            mine = [s for s in self.submissions.values() if s["study_id"] == match[1]]
            chunk = mine[(page - 1) * self.page_size : page * self.page_size]
            more = len(mine) > page * self.page_size
            next_link = {"href": f"{self.url}studies/{match[1]}/submissions/?page={page + 1}"}
            return self.reply(
                request,
                200,
                {
                    "results": chunk,
                    "_links": {"next": next_link if more else {"href": None}},
                },
            )
        if match := re.fullmatch(r"/submissions/(\w+)/transition/", path):
            submission = self.submissions.get(match[1])
            if submission is None:
                return self.reply(request, 404, {"error": "no such submission"})
            if body.get("action") == "REJECT" and (
                len(body.get("message", "")) < 100 or not body.get("rejection_category")
            ):
                return self.reply(request, 400, {"error": "message of 100+ chars and category"})
            submission["status"] = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}[body["action"]]
            return self.reply(request, 200, submission)
        return self.reply(request, 404, {"error": f"unknown {method} {path}"})

    @staticmethod
    def reply(request: BaseHTTPRequestHandler, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)
