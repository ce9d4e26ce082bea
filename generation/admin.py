from django.contrib import admin

from generation.models import GenerationRun, System


@admin.register(System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ("name", "model_name", "backend")
    list_filter = ("backend",)
    search_fields = ("name", "model_name")


@admin.register(GenerationRun)
class GenerationRunAdmin(admin.ModelAdmin):
    list_display = (
        "__str__",
        "system",
        "dataset",
        "mode",
        "seed",
        "origin",
        "status",
        "response_count",
    )
    list_filter = (
        "system",
        "dataset__version",
        "dataset__split",
        "dataset__language",
        "mode",
        "origin",
        "status",
    )
    list_select_related = ("system", "dataset__benchmark")
    readonly_fields = ("created_at", "updated_at")

    def get_queryset(self, request):
        return super().get_queryset(request).with_counts()

    @admin.display(description="responses", ordering="response_count")
    def response_count(self, obj):
        return obj.response_count
