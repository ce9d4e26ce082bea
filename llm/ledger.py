"""The call ledger's reads and writes, batched where a run allows it.

A run looks up the answers it may already have in one query per thousand
requests (`prefetch`) instead of one per item, and writes each call as soon as
it is answered: the row is what makes a resumed run not pay again, so it is
never held back.
"""

from __future__ import annotations

import hashlib
import json
import threading
from contextlib import nullcontext

from django.db import IntegrityError, connection, transaction
from django.db.models import Max

from llm.models import LLMCall
from llm.text import storable

PREFETCH_CHUNK = 1000


def request_hash(endpoint: str, model: str, messages: list[dict], params: dict) -> str:
    canonical = json.dumps(
        {"base_url": endpoint.rstrip("/"), "model": model, "messages": messages, "params": params},
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def estimated_tokens(messages: list[dict], params: dict) -> int:
    return sum(len(m.get("content", "")) for m in messages) // 4 + int(params.get("max_tokens", 0))


class Ledger:
    """One run's view of the ledger: the answers it has looked up, the last
    attempt number of each request, and the writes."""

    def __init__(
        self,
        endpoint: str,
        model: str,
        purpose: str,
        template_version: str = "",
        parser_version: str = "",
    ) -> None:
        self.endpoint = endpoint
        self.model = model
        self.purpose = purpose
        self.template_version = template_version
        self.parser_version = parser_version
        self.answers: dict[str, LLMCall | None] = {}  # None: looked up, no answer
        self.last_attempt: dict[str, int] = {}
        self.lock = threading.Lock()

    def prefetch(self, digests) -> None:
        """Look up many requests at once (the raw messages are not loaded)."""
        todo = [d for d in dict.fromkeys(digests) if d not in self.answers]
        for start in range(0, len(todo), PREFETCH_CHUNK):
            chunk = todo[start : start + PREFETCH_CHUNK]
            found: dict[str, LLMCall | None] = dict.fromkeys(chunk)
            attempts: dict[str, int] = {}
            for call in (
                LLMCall.objects.filter(request_hash__in=chunk)
                .defer("messages")
                .order_by("request_hash", "attempt")
            ):
                attempts[call.request_hash] = call.attempt
                if call.status == LLMCall.Status.OK:
                    found[call.request_hash] = call  # the latest answer wins
            with self.lock:
                self.answers.update(found)
                self.last_attempt.update(attempts)

    def answer(self, digest: str) -> LLMCall | None:
        """The latest answer to this request, if any."""
        with self.lock:
            if digest in self.answers:
                return self.answers[digest]
        self.prefetch([digest])
        with self.lock:
            return self.answers[digest]

    def store(self, digest: str, messages: list[dict], params: dict, **fields) -> LLMCall:
        """Write a call under the request's next attempt number (a refresh or a
        retry after an API error keeps the earlier rows)."""
        if digest not in self.last_attempt and digest not in self.answers:
            self.prefetch([digest])
        if "raw_output" in fields:
            fields["raw_output"] = storable(fields["raw_output"])
        for _ in range(5):
            with self.lock:
                attempt = self.last_attempt.get(digest, -1) + 1
            try:
                # In autocommit a plain INSERT is one round trip; inside a
                # transaction a savepoint keeps a duplicate from breaking it.
                with transaction.atomic() if connection.in_atomic_block else nullcontext():
                    call = LLMCall.objects.create(
                        request_hash=digest,
                        attempt=attempt,
                        purpose=self.purpose,
                        base_url=self.endpoint,
                        model=self.model,
                        params=params,
                        messages=messages,
                        template_version=self.template_version,
                        parser_version=self.parser_version,
                        **fields,
                    )
            except IntegrityError:  # another process stored the same request at once
                last = LLMCall.objects.filter(request_hash=digest).aggregate(m=Max("attempt"))
                with self.lock:
                    self.last_attempt[digest] = last["m"] or 0
                continue
            with self.lock:
                self.last_attempt[digest] = attempt
                if call.status == LLMCall.Status.OK:
                    self.answers[digest] = call
            return call
        raise RuntimeError("Could not store an LLM call after 5 tries.")
