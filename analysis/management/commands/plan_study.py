"""python manage.py plan_study --judge NAME --width W --budget-gbp B
[--hourly-gbp 9] [--minutes-per-item 2] [--rate 0.3] [--floor 0.5]
[--uncertainty-judge NAME] [--replays 300] [--json]
[selection options as agreement_report's]

The plan of a human study before anything is spent (analysis.planning.study_plan):
for "every system's mean human score within +-W (95%)", which design
answers it for the fewest paid places while its intervals keep their
coverage (a fixed uniform design on humans alone, a fixed design with the
judge (PPI), or adaptive waves with an anytime interval) and why; the places
it is expected to pay for, their cost at the reward, the worst case, and the
chance of an answer within the budget, each design's figures beside it,
simulated on the selection's data (the judge's scores, the reference's human
scores where there are some). In the adaptive design each response goes to a
human with a probability that rises with the disagreement between the judge
and `--uncertainty-judge` (uniform without one), never below the floor.
`--json` gives the plan's as_dict ("design", "design_reason", "designs",
"first_wave", ...)."""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from analysis.management.selection_options import add_selection_arguments
from analysis.report.selection import Selection, SelectionError


class Command(BaseCommand):
    help = "Plan a human study: its design, cost and chance of an answer within a budget."

    def add_arguments(self, parser: CommandParser) -> None:
        from analysis.planning.items_for_humans import FLOOR

        parser.add_argument("--judge", required=True, help="The judge scoring every response.")
        parser.add_argument("--uncertainty-judge", help="A second judge: disagreement sets pi.")
        parser.add_argument("--width", type=float, required=True, help="Half-width goal.")
        parser.add_argument("--budget-gbp", required=True, help="Money for places, fees included.")
        parser.add_argument("--hourly-gbp", default="9.00")
        parser.add_argument("--minutes-per-item", type=float, default=2.0)
        parser.add_argument("--rate", type=float, default=0.3, help="Share of draws sent.")
        parser.add_argument("--floor", type=float, default=FLOOR, help="Uniform share of pi.")
        parser.add_argument("--replays", type=int, default=300)
        parser.add_argument("--json", action="store_true", help="The plan as JSON.")
        add_selection_arguments(
            parser, reference_help="The human evaluator (default: the reference rule's)."
        )

    def handle(self, *args: str, **options: Any) -> None:
        import numpy as np
        import pandas as pd

        from analysis.planning.items_for_humans import inclusion_probabilities
        from analysis.planning.study_plan import Budget, Goal, plan
        from analysis.report.scope import resolve
        from analysis.report.scores import response_scores

        try:
            budget_pence = int(Decimal(options["budget_gbp"]) * 100)
            hourly = Decimal(options["hourly_gbp"])
        except (InvalidOperation, ValueError, OverflowError):
            raise CommandError(
                "--budget-gbp and --hourly-gbp: amounts such as 250 or 9.50."
            ) from None
        if not 0 < options["minutes_per_item"] <= 120 or not 1 <= options["replays"] <= 10000:
            raise CommandError("--minutes-per-item in (0, 120]; --replays from 1 to 10000.")
        if not 0 < options["rate"] <= 1 or not 0 < options["floor"] <= 1:
            raise CommandError("--rate and --floor: in (0, 1].")
        try:
            selection = Selection.from_options(options)
            scope = resolve(selection)
            goal = Goal(width=options["width"])
            reward = int(hourly * 100 * Decimal(str(options["minutes_per_item"])) / 60)
            budget = Budget(pence=budget_pence, reward_pence=max(reward, 1))
        except (SelectionError, ValueError) as error:
            raise CommandError(str(error)) from None
        scores = response_scores(scope.table)
        wide = scores.pivot(index="response_id", columns="evaluator", values="score")
        wide.columns = [str(c) for c in wide.columns]
        judge = options["judge"]
        if judge not in wide:
            raise CommandError(f"{judge} scores no response of this selection.")
        wide = wide[wide[judge].notna()]
        systems = scores.drop_duplicates("response_id").set_index("response_id")["system"]
        names = sorted({str(s) for s in systems.loc[wide.index]})
        code = np.array([names.index(str(systems[r])) for r in wide.index])
        human = wide[scope.reference].to_numpy() if scope.reference in wide else None
        other = options["uncertainty_judge"]
        if other and other not in wide:
            raise CommandError(f"{other} scores no response of this selection.")
        spread = (wide[judge] - wide[other]).abs().fillna(0) if other else wide[judge] * 0 + 1
        probability = inclusion_probabilities(
            pd.Series(spread.to_numpy()),
            count=options["rate"] * len(wide),
            floor=options["floor"],
        ).to_numpy()
        result = plan(
            wide[judge].to_numpy(),
            code,
            names,
            human,
            goal,
            budget,
            probability=probability,
            replays=options["replays"],
        )
        if options["json"]:
            self.stdout.write(json.dumps(result.as_dict(), indent=2))
            return
        self.stdout.write(result.summary())
        for name, d in result.designs.items():
            self.stdout.write(
                f"  {name}: {d.paid_median:.0f} paid places expected ({d.paid_p95:.0f} in the "
                f"worst 1 of 20), coverage {d.coverage:.2f}, answered in {d.answered:.0%}"
                + (
                    f", first wave {', '.join(map(str, d.first_wave))}"
                    if name != "adaptive"
                    else ""
                )
                + (" <- chosen" if name == result.design else "")
            )
        for assumption in result.assumptions:
            self.stdout.write(f"Assumed: {assumption}.")
