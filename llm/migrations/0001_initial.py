# The call ledger moves here from judging: the table judging_llmcall is taken
# over as it is (state only), then renamed in 0002.
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = [("judging", "0008_judged_responses_protected")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="LLMCall",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("request_hash", models.CharField(max_length=64)),
                        (
                            "attempt",
                            models.PositiveSmallIntegerField(
                                default=0, help_text="Raised by a refresh."
                            ),
                        ),
                        ("base_url", models.CharField(max_length=300)),
                        ("model", models.CharField(max_length=200)),
                        ("system_fingerprint", models.CharField(blank=True, max_length=200)),
                        ("params", models.JSONField(default=dict)),
                        ("messages", models.JSONField(default=list)),
                        ("template_version", models.CharField(blank=True, max_length=60)),
                        ("parser_version", models.CharField(blank=True, max_length=20)),
                        (
                            "status",
                            models.CharField(
                                choices=[("ok", "Answered"), ("api_error", "API error")],
                                max_length=10,
                            ),
                        ),
                        ("raw_output", models.TextField(blank=True)),
                        ("finish_reason", models.CharField(blank=True, max_length=40)),
                        ("prompt_tokens", models.PositiveIntegerField(default=0)),
                        ("completion_tokens", models.PositiveIntegerField(default=0)),
                        ("cost", models.FloatField(default=0)),
                        ("latency_ms", models.FloatField(default=0)),
                        ("error", models.TextField(blank=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        "ordering": ["-created_at"],
                        "db_table": "judging_llmcall",
                        "indexes": [
                            models.Index(
                                fields=["request_hash", "status"],
                                name="judging_llm_request_e99051_idx",
                            )
                        ],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("request_hash", "attempt"), name="llmcall_unique"
                            )
                        ],
                    },
                )
            ],
            database_operations=[],
        )
    ]
