from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("llm", "0001_initial"),
        ("judging", "0009_llmcall_moves_to_llm"),
    ]

    operations = [
        migrations.AlterModelTable(name="llmcall", table=None),
        migrations.AlterModelOptions(
            name="llmcall", options={"ordering": ["-created_at"], "verbose_name": "LLM call"}
        ),
        migrations.RenameIndex(
            model_name="llmcall",
            new_name="llmcall_hash_status",
            old_name="judging_llm_request_e99051_idx",
        ),
        migrations.AddField(
            model_name="llmcall",
            name="purpose",
            field=models.CharField(
                choices=[("judge", "Judging"), ("generate", "Generation")],
                default="judge",
                max_length=10,
            ),
        ),
    ]
