from django.apps import AppConfig


class AdaptiveConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "adaptive"
    verbose_name = "Adaptive human studies"

    def ready(self) -> None:
        # a completed task may answer the goal: look again (adaptive.signals)
        from adaptive import signals  # noqa: F401
