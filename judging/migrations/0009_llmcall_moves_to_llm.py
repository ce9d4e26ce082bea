# The call ledger now belongs to the llm app (state only: the table stays).
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("judging", "0008_judged_responses_protected"),
        ("llm", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="judgeitem",
                    name="call",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="llm.llmcall",
                    ),
                ),
                migrations.DeleteModel(name="LLMCall"),
            ],
            database_operations=[],
        )
    ]
