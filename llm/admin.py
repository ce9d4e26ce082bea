from django.contrib import admin
from django.http import HttpRequest

from llm.models import LLMCall


@admin.register(LLMCall)
class LLMCallAdmin(admin.ModelAdmin):
    """The call ledger (read only)."""

    list_display = (
        "created_at",
        "model",
        "purpose",
        "status",
        "finish_reason",
        "prompt_tokens",
        "completion_tokens",
        "cost",
        "latency_ms",
        "short_hash",
        "attempt",
    )
    list_filter = ("purpose", "status", "model", "finish_reason")
    search_fields = ("request_hash", "raw_output")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: LLMCall | None = None) -> bool:
        return False

    @admin.display(description="request")
    def short_hash(self, obj: LLMCall) -> str:
        return obj.request_hash[:12]
