"""The sweep page: the grid once judged (paper Tables 6-8), next to the runs.
Registered here because the scores come from judging, to the right of
generation."""

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from analysis.report.sweeps import sweep_table
from generation.models import Sweep
from judging.models import Evaluator
from users.admin_scope import ProjectScopedAdmin


@admin.register(Sweep)
class SweepAdmin(ProjectScopedAdmin):
    list_display = ("name", "base_system", "dataset", "mode", "run_count", "created_at")
    readonly_fields = ("name", "base_system", "dataset", "mode", "grid", "seeds", "grids")
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # launched with `manage.py sweep` (it makes the systems and runs)

    def has_change_permission(self, request: HttpRequest, obj: Sweep | None = None) -> bool:
        return False

    @admin.display(description="runs")
    def run_count(self, obj: Sweep) -> int:
        return obj.runs.count()

    @admin.display(description="grid once judged (mean per seed, mean, sample std)")
    def grids(self, obj: Sweep) -> str:
        evaluators = (
            Evaluator.objects.filter(judgments__response__run__in=obj.runs.all())
            .distinct()
            .order_by("name")
        )
        if not evaluators:
            return "Not judged yet: run a judge over these runs (Judging runs > Add)."
        parts = []
        for evaluator in evaluators:
            rows = sweep_table(obj, evaluator.name)
            seeds = sorted({s for row in rows for s in row["seeds"]}, key=lambda s: (s is None, s))

            def cell(value: float | None) -> str:
                return "-" if value is None else f"{value:.2f}"

            body = format_html_join(
                "",
                "<tr><td>{}</td>{}<td>{}</td><td>{}</td></tr>",
                (
                    (
                        row["system"],
                        format_html_join(
                            "", "<td>{}</td>", ((cell(row["seeds"].get(s)),) for s in seeds)
                        ),
                        cell(row["mean"]),
                        cell(row["std"]),
                    )
                    for row in rows
                ),
            )
            head = format_html_join("", "<th>{}</th>", ((s,) for s in seeds))
            parts.append(
                format_html(
                    "<h3>{}</h3><table><tr><th>system</th>{}<th>mean</th>"
                    "<th>std</th></tr>{}</table>",
                    evaluator.name,
                    head,
                    body,
                )
            )
        return format_html_join("", "{}", ((p,) for p in parts))
