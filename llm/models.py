"""The call ledger: every request to a language model, with what came back."""

from django.db import models


class LLMCall(models.Model):
    """One request to an LLM and its answer (or its final failure).

    An identical request (same hash of endpoint, model, messages and sampling
    parameters) is answered from here instead of calling again, so a resumed
    run never pays twice; raw outputs can be re-parsed later without any call.
    A refresh or a retry after an API error adds a row under the next attempt
    number and keeps the earlier ones."""

    class Status(models.TextChoices):
        OK = "ok", "Answered"
        API_ERROR = "api_error", "API error"

    class Purpose(models.TextChoices):
        JUDGE = "judge", "Judging"
        GENERATE = "generate", "Generation"

    request_hash = models.CharField(max_length=64)
    attempt = models.PositiveSmallIntegerField(default=0, help_text="Raised by a refresh.")
    purpose = models.CharField(max_length=10, choices=Purpose.choices, default=Purpose.JUDGE)
    base_url = models.CharField(max_length=300)
    model = models.CharField(max_length=200)
    system_fingerprint = models.CharField(max_length=200, blank=True)
    params = models.JSONField(default=dict)
    messages = models.JSONField(default=list)
    template_version = models.CharField(max_length=60, blank=True)
    parser_version = models.CharField(max_length=20, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices)
    raw_output = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=40, blank=True)
    token_logprobs = models.JSONField(
        null=True,
        blank=True,
        help_text="Each answer token and its log-probability, [[token, logprob], ...], "
        "where the request asked for them and the server gave them.",
    )
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost = models.FloatField(default=0)
    usage_counted = models.BooleanField(
        default=False,
        help_text="The server sent no token usage: Concord counted the tokens "
        "(4 characters a token).",
    )
    latency_ms = models.FloatField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "LLM call"
        constraints = [
            models.UniqueConstraint(fields=["request_hash", "attempt"], name="llmcall_unique")
        ]
        indexes = [models.Index(fields=["request_hash", "status"], name="llmcall_hash_status")]

    def __str__(self) -> str:
        return f"{self.model} {self.request_hash[:10]} ({self.status})"
