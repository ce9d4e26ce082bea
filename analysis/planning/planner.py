"""The human budget planner: per system, how many gold ratings give a 95% CI
of the target width on its mean, without a judge and with each judge (PPI++),
and how many more than the selection holds. JSON-ready values;
analysis.report.build types them (BudgetPlan)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.statistics import ppi
from analysis.statistics.stats import not_computable


def planner(
    frame: pd.DataFrame, gold: str, judges: list[str], width: float, system_names: list[str]
) -> dict:
    """Per system: how many gold ratings give a 95% CI of `width` on its mean,
    without a judge and with each judge (PPI++), and how many more than the
    selection holds."""
    systems: dict = {}
    for system in system_names:
        rows = frame[frame["system"].astype(str) == system]
        rated = rows[rows[gold].notna()]
        if len(rated) < 2:
            systems[system] = not_computable(
                f"{len(rated)} gold-rated response(s); at least 2 are needed to estimate a variance"
            )
            continue
        gold_values = rated[gold].to_numpy(float)
        gold_only = ppi.gold_only_needed(gold_values, width)
        entry: dict = {
            "responses": int(len(rows)),
            "gold_now": int(len(rated)),
            "judges": {},
            "gold_only": gold_only,
            "ceiling": int(np.ceil(gold_only / 2)),
            "gold_only_more": max(0, gold_only - int(len(rated))),
            "gold_only_reachable": gold_only <= len(rows),
        }
        for judge in judges:
            known = rated[rated[judge].notna()]
            everything = rows[judge].dropna().to_numpy(float)
            if len(known) < 2 or len(everything) < 2:
                continue
            plan = ppi.gold_needed(
                known[gold].to_numpy(float), known[judge].to_numpy(float), everything, width
            )
            entry["judges"][judge] = {
                "ppi": plan["ppi"],
                "more": None if plan["ppi"] is None else max(0, plan["ppi"] - len(known)),
                "beyond_ceiling": plan["ppi"] is not None and plan["ppi"] < entry["ceiling"],
            }
        systems[system] = entry
    return {
        "gold": gold,
        "target_width": width,
        "systems": systems,
        "summary": planner_summary(systems, width),
    }


def planner_summary(systems: dict, width: float) -> str:
    words = [f"For a 95% CI of width {width:g} on a system's mean:"]
    for system, entry in systems.items():
        if entry.get("computable", True) is False:
            continue
        if entry["gold_only_reachable"]:
            text = f"{system} needs {entry['gold_only']} gold ratings"
        else:
            text = (
                f"{system} would need {entry['gold_only']} gold ratings, more than its "
                f"{entry['responses']} responses"
            )
        reachable = {j: b["ppi"] for j, b in entry["judges"].items() if b["ppi"] is not None}
        if reachable:
            judge = min(reachable, key=lambda name: reachable[name])
            text += f", {reachable[judge]} with {judge}'s scores on the rest (PPI++)"
        elif entry["judges"]:
            text += ", and no judge brings it within reach"
        words.append(text + ";")
    words.append(
        "a judge no better than the evaluated model saves at most half the ratings (Dorner, "
        "Nastl & Hardt, ICLR 2025): read savings beyond that ceiling with care."
    )
    return " ".join(words)
