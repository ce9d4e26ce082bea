"""A local OpenAI-compatible chat server for tests and benchmarks.

Answers like a rubric judge: \\boxed{N} (or Prometheus' [RESULT] N when the
prompt asks for it), N chosen from the response being judged; LooGLE's judges
and HELMET's long-QA judge as they answer (True/False, a score 0-100; a
JSON of fluency and correctness). Configurable
latency and faults: `plan` lists what the next requests get ("429", "500",
"timeout", "garbled", "truncated", "400", "notjson": a 200 whose body is an
HTML error page, as a misconfigured proxy sends), then normal answers
(`no_usage`: without the token usage, as some servers answer); response texts
containing GARBLE or TRUNCATE always get that fault.

`log` keeps every chat request's client address, prompt (a hash of its body),
and when it arrived and was answered (`/log` serves it to another process:
the cluster rehearsal counts what each host was paid for, and when).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class BackloggedServer(ThreadingHTTPServer):
    """A listen backlog like a real server's (the standard library's is 5: 64
    clients connecting at once would see refused connections)."""

    request_queue_size = 256
    daemon_threads = True


class FakeOpenAI:
    def __init__(
        self,
        latency: float = 0.0,
        plan: list[str] | None = None,
        retry_after: float = 0.2,
        hang: float = 5.0,
        first_wins: bool = False,
        no_usage: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.latency, self.retry_after, self.hang = latency, retry_after, hang
        self.first_wins = first_wins  # a pairwise judge with position bias
        self.no_usage = no_usage  # answers without `usage`, as some servers send them
        self.plan = list(plan or [])
        # Batch API: uploaded files, batches, and how many polls before "completed"
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.polls_before_done = 2
        self.batch_requests = 0
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        # per chat request: client, prompt hash, arrived / answered (time.time())
        self.log: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        # with `logprobs: true`: per request (its last user message), the
        # probability the answer's tokens gave its score or verdict
        self.answer_probability: dict[str, float] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                return None

            def setup(self):
                super().setup()
                # Headers and body go out in two writes: without this, Nagle's
                # algorithm and delayed ACKs add ~40 ms to every answer.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self):
                if self.path.endswith("/files"):
                    return fake.upload(self)
                if self.path.endswith("/batches"):
                    return fake.create_batch(self)
                fake.handle(self)

            def do_GET(self):
                if "/batches/" in self.path:
                    return fake.retrieve_batch(self)
                if self.path.endswith("/content"):
                    return fake.file_content(self)
                if self.path.endswith("/log"):
                    with fake.lock:
                        entries = [dict(entry) for entry in fake.log]
                    return fake.reply(self, 200, {"requests": entries})
                # /stats: for a server running in another process (benchmarks)
                fake.reply(self, 200, {"count": fake.count, "max_in_flight": fake.max_in_flight})

        self.server = BackloggedServer((host, port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def count(self) -> int:
        return len(self.requests)

    def score_for(self, judged: str, top: int) -> int:
        if "According to the transcript" in judged:
            return top if top == 5 else 9
        if "does not say" in judged:
            return 1 if top == 5 else 2
        digest = int(hashlib.sha256(judged.encode()).hexdigest(), 16)
        return 1 + digest % top

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = json.loads(request.rfile.read(length) or b"{}")
        entry = {
            "client": request.client_address[0],
            "prompt": hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16],
            "arrived": time.time(),
            "answered": None,
        }
        with self.lock:
            self.requests.append(body)
            self.log.append(entry)
            fault = self.plan.pop(0) if self.plan else "ok"
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        answered = threading.Event()

        def stop_counting() -> None:
            # before the answer is written: a client that has its answer may
            # send its next request before this thread gets to a `finally`
            with self.lock:
                if not answered.is_set():
                    answered.set()
                    self.in_flight -= 1
                    entry["answered"] = time.time()

        request.stop_counting = stop_counting  # type: ignore[attr-defined]
        try:
            time.sleep(self.latency)
            user = next(
                (
                    m["content"]
                    for m in reversed(body.get("messages", []))
                    if m.get("role") == "user"
                ),
                "",
            )
            judged = re.search(r"### Response to evaluate:\n(.*?)\n\n### Reference", user, re.S)
            judged = judged.group(1) if judged else user
            if "GARBLE" in judged:
                fault = "garbled"
            elif "TRUNCATE" in judged:
                fault = "truncated"
            if fault == "429":
                return self.reply(
                    request,
                    429,
                    {"error": {"message": "Rate limit"}},
                    {"Retry-After": str(self.retry_after)},
                )
            if fault in ("500", "400"):
                return self.reply(request, int(fault), {"error": {"message": f"fault {fault}"}})
            if fault == "notjson":
                page = b"<html><body>502 Bad Gateway</body></html>"
                stop_counting()
                request.send_response(200)
                request.send_header("Content-Type", "text/html")
                request.send_header("Content-Length", str(len(page)))
                request.end_headers()
                request.wfile.write(page)
                return None
            if fault == "timeout":
                time.sleep(self.hang)
                return self.reply(request, 500, {"error": {"message": "too late"}})
            system = next(
                (m["content"] for m in body.get("messages", []) if m.get("role") == "system"), ""
            )
            if fault == "ok" and system.startswith(
                ("Given one question, there", "There is a ground")
            ):
                text = self.loogle_answer(system, user)
                return self.reply(request, 200, self.answer(body, text, "stop"))
            if fault == "ok" and user.startswith(
                "Please act as an impartial judge and evaluate the quality of the provided answer"
            ):
                return self.reply(request, 200, self.answer(body, self.helmet_answer(user), "stop"))
            if "[The Start of Assistant A's Answer]" in user:
                text = self.verdict(user)
                letter = text.rindex("[[") + 2
                tokens = self.tokens(body, user, text, (letter, letter + 1))
                return self.reply(request, 200, self.answer(body, text, "stop", tokens))
            prometheus = "[RESULT]" in user
            top = 5 if prometheus else 10
            score = self.score_for(judged, top)
            text = (
                f"Feedback: the response matches the reference. [RESULT] {score}"
                if prometheus
                else f"The response covers the reference answer. \\boxed{{{score}}}"
            )
            finish = "stop"
            at = text.rindex(str(score))
            span: tuple[int, int] | None = (at, at + len(str(score)))
            if fault == "garbled":
                text, span = "I think this answer is rather good, maybe an eight out of ten.", None
            elif fault == "truncated":
                text, finish, span = "The response covers the refer", "length", None
            tokens = self.tokens(body, user, text, span)
            return self.reply(request, 200, self.answer(body, text, finish, tokens))
        finally:
            stop_counting()

    # --- Batch API ---------------------------------------------------------------------------

    def upload(self, request: BaseHTTPRequestHandler) -> None:
        import email

        length = int(request.headers.get("Content-Length") or 0)
        raw = request.rfile.read(length)
        message = email.message_from_bytes(
            b"Content-Type: " + request.headers["Content-Type"].encode() + b"\r\n\r\n" + raw
        )
        content = next(
            part.get_payload(decode=True)
            for part in message.get_payload()
            if part.get_param("name", header="content-disposition") == "file"
        )
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = content
        self.reply(
            request,
            200,
            {
                "id": file_id,
                "object": "file",
                "bytes": len(content),
                "created_at": 0,
                "filename": "input.jsonl",
                "purpose": "batch",
            },
        )

    def create_batch(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = json.loads(request.rfile.read(length))
        batch_id = f"batch-{len(self.batches) + 1}"
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": body["input_file_id"],
            "completion_window": "24h",
            "status": "validating",
            "created_at": int(time.time()) - 1,
            "polls": 0,
            "output_file_id": None,
        }
        self.reply(request, 200, self.public(self.batches[batch_id]))

    @staticmethod
    def public(batch: dict) -> dict:
        return {k: v for k, v in batch.items() if k != "polls"}

    def retrieve_batch(self, request: BaseHTTPRequestHandler) -> None:
        batch = self.batches[request.path.rstrip("/").rsplit("/", 1)[-1]]
        batch["polls"] += 1
        if batch["polls"] > self.polls_before_done and batch["status"] != "completed":
            lines = []
            for line in self.files[batch["input_file_id"]].decode().splitlines():
                request_line = json.loads(line)
                body = request_line["body"]
                user = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
                judged = re.search(r"### Response to evaluate:\n(.*?)\n\n### Reference", user, re.S)
                judged = judged.group(1) if judged else user
                top = 5 if "[RESULT]" in user else 10
                score = self.score_for(judged, top)
                text = (
                    f"Feedback: fine. [RESULT] {score}"
                    if top == 5
                    else f"The response covers the reference answer. \\boxed{{{score}}}"
                )
                if "GARBLE" in judged:
                    text = "I think this answer is rather good."
                self.batch_requests += 1
                lines.append(
                    json.dumps(
                        {
                            "id": f"req-{len(lines)}",
                            "custom_id": request_line["custom_id"],
                            "error": None,
                            "response": {
                                "status_code": 200,
                                "body": self.completion(body, text, "stop"),
                            },
                        }
                    )
                )
            output_id = f"file-{len(self.files) + 1}"
            self.files[output_id] = "\n".join(lines).encode()
            batch.update(status="completed", output_file_id=output_id)
        elif batch["status"] == "validating":
            batch["status"] = "in_progress"
        self.reply(request, 200, self.public(batch))

    def file_content(self, request: BaseHTTPRequestHandler) -> None:
        file_id = request.path.rstrip("/").rsplit("/", 2)[-2]
        data = self.files[file_id]
        request.send_response(200)
        request.send_header("Content-Type", "application/octet-stream")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    @staticmethod
    def loogle_answer(system: str, user: str) -> str:
        """LooGLE's judges (llm_score.py): QA "True" when the answer holds the
        reference, else "False" ("False." when it says "unsure", which LooGLE
        counts as neither); a summary scored by the share of the reference's
        words it holds, 0-100 (" 85" with a space when it says "spaced")."""
        if system.startswith("Given one question"):
            reference = user.split("\ngroudtruth = ", 1)[1].split("\npredict_answer = ", 1)[0]
            answer = user.split("\npredict_answer = ", 1)[1]
            if "unsure" in answer:
                return "False."
            return "True" if reference.strip().lower() in answer.lower() else "False"
        reference = system.split("\nGroundtruth = ", 1)[1].split(" \nGenerated = ", 1)[0]
        generated = system.split(" \nGenerated = ", 1)[1].rsplit(" \nScore = ", 1)[0]
        words = set(reference.lower().split())
        score = round(100 * len(words & set(generated.lower().split())) / max(len(words), 1))
        return f" {score}" if "spaced" in generated else str(score)

    @staticmethod
    def helmet_answer(user: str) -> str:
        """HELMET's long-QA judge: fluent, and correct (3) when the answer holds
        one of the right answers, else 0."""
        import ast

        listed = user.split("\nCorrect answers: ", 1)[1].split("\nAnswer: ", 1)
        answers, answer = ast.literal_eval(listed[0]), listed[1].lower()
        correct = 3 if any(a.lower() in answer for a in answers) else 0
        return f'The answer agrees. {{"fluency": 1, "correctness": {correct}}}'

    def verdict(self, user: str) -> str:
        if self.first_wins:
            return "Assistant A is better. [[A]]"
        a = user.split("[The Start of Assistant A's Answer]", 1)[1].split("[The End", 1)[0]
        b = user.split("[The Start of Assistant B's Answer]", 1)[1].split("[The End", 1)[0]
        a_good, b_good = "According to the transcript" in a, "According to the transcript" in b
        if a_good != b_good:
            return f"One answer matches the reference. [[{'A' if a_good else 'B'}]]"
        return "Neither is clearly better. [[C]]"

    def tokens(
        self, body: dict, user: str, text: str, span: tuple[int, int] | None
    ) -> list[tuple[str, float]] | None:
        """With `logprobs: true`: the answer as tokens and their log-probabilities.
        Words before and after the score are tokens of probability 0.95; the
        score (verdict) is a token per character, each of a probability drawn
        from the prompt, whose product is kept in `answer_probability`."""
        if not body.get("logprobs"):
            return None
        start, end = span if span is not None else (len(text), len(text))
        words = [(t, math.log(0.95)) for t in re.findall(r"\s*\S+|\s+", text[:start])]
        digest = int(hashlib.sha256(user.encode()).hexdigest(), 16)
        chosen = []
        for position, character in enumerate(text[start:end]):
            probability = 0.3 + 0.69 * ((digest >> (10 * position)) % 1000) / 1000
            chosen.append((character, math.log(probability)))
        if span is not None:
            with self.lock:
                self.answer_probability[user] = math.exp(sum(lp for _, lp in chosen))
        after = [(t, math.log(0.95)) for t in re.findall(r"\s*\S+|\s+", text[end:])]
        return words + chosen + after

    def answer(
        self, body: dict, text: str, finish: str, tokens: list[tuple[str, float]] | None = None
    ) -> dict:
        completion = self.completion(body, text, finish)
        if self.no_usage:
            del completion["usage"]
        if tokens is not None:
            completion["choices"][0]["logprobs"] = {
                "content": [
                    {"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
                    for t, lp in tokens
                ]
            }
        return completion

    @staticmethod
    def completion(body: dict, text: str, finish: str) -> dict:
        prompt_tokens = sum(len(m.get("content", "")) for m in body.get("messages", [])) // 4
        completion_tokens = len(text) // 4
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "system_fingerprint": "fp_fake_1",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    @staticmethod
    def reply(
        request: BaseHTTPRequestHandler, status: int, payload: dict, headers: dict | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        stop_counting = getattr(request, "stop_counting", None)
        if stop_counting is not None:
            stop_counting()
        try:
            request.send_response(status)
            request.send_header("Content-Type", "application/json")
            request.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                request.send_header(key, value)
            request.end_headers()
            request.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout fault)


def serve_forever_in_this_process(latency: float, host: str = "127.0.0.1", port: int = 0) -> None:
    """`python -m tests.fakes.openai_server [LATENCY [HOST [PORT]]]`: prints the
    URL, then serves."""
    with FakeOpenAI(latency=latency, host=host, port=port) as fake:
        print(fake.url, flush=True)
        fake.thread.join()


if __name__ == "__main__":
    import sys

    serve_forever_in_this_process(
        float(sys.argv[1]) if len(sys.argv) > 1 else 0.0,
        sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1",
        int(sys.argv[3]) if len(sys.argv) > 3 else 0,
    )
