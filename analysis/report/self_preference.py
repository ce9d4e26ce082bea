"""The report's self-preference part (analysis.statistics.self_preference):
per judge, its bias toward the systems of its own model family, against the
report's reference, with the meeting-clustered interval.

A judge's model is its configuration's (`model` for Concord's LLM judges,
`judge_model` for the paper's published ones), else its name; a panel's
families are its members'; a system's model is its `model_name`, else its
name. A metric has no family.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.report.panels import PANEL_KIND
from analysis.report.scope import Scope
from analysis.statistics.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, ClusterBootstrap
from analysis.statistics.self_preference import family, self_preference


def judge_families(names: list[str], panels: dict[str, dict]) -> dict[str, set[str]]:
    """Each judge's families (empty: a metric, or nothing to read one from)."""
    from judging.models import Evaluator

    found: dict[str, set[str]] = {}
    rows = Evaluator.objects.filter(name__in=names).values_list("name", "kind", "config")
    kinds = {}
    for name, kind, config in rows:
        config = config if isinstance(config, dict) else {}
        kinds[name] = kind
        if kind == "metric":
            found[name] = set()
            continue
        model = config.get("model") or config.get("judge_model") or name
        found[name] = {family(str(model))}
    for name in names:
        if kinds.get(name) == PANEL_KIND and "reason" not in panels.get(name, {"reason": ""}):
            members = judge_families(panels[name]["members"], {})
            found[name] = set().union(*members.values()) if members else set()
    return found


def system_families(systems: list[str]) -> dict[str, str]:
    from generation.models import System

    models = dict(System.objects.filter(name__in=systems).values_list("name", "model_name"))
    return {s: family(models.get(s) or s) for s in systems}


def self_preference_part(scope: Scope, rs: pd.DataFrame, wide: pd.DataFrame) -> dict:
    """`wide`: the report's responses x evaluators table of scores."""
    reference = scope.reference
    if reference is None:
        return {"computable": False, "reason": "no reference: the bias is against human scores"}
    meta = rs.drop_duplicates("response_id").set_index("response_id").reindex(wide.index)
    systems = meta["system"].astype(str).to_numpy()
    system_family = system_families(sorted(set(systems)))
    boot: ClusterBootstrap | None = None  # made once, for the first judge with its family
    families = judge_families(list(scope.judges), scope.panels)
    out: dict[str, dict] = {}
    for judge in scope.judges:
        if judge not in wide.columns:
            continue
        own_families = families.get(judge, set())
        if not own_families:
            out[judge] = {"computable": False, "reason": f"{judge}: no model family (a metric)"}
            continue
        own_systems = sorted(s for s, f in system_family.items() if f in own_families)
        read = f"family {', '.join(sorted(own_families))}"
        if not own_systems:
            out[judge] = {
                "computable": False,
                "reason": f"{judge} ({read}): no system of its family in the selection",
            }
            continue
        if boot is None:
            names, codes = np.unique(meta["meeting"].astype(str).to_numpy(), return_inverse=True)
            boot = ClusterBootstrap(codes, len(names), DEFAULT_RESAMPLES, DEFAULT_SEED)
        bias = (wide[judge] - wide[reference]).to_numpy(float)
        found = self_preference(boot, bias, np.isin(systems, own_systems))
        if found.get("computable") is False:
            found["reason"] = f"{judge} ({read}): {found['reason']}"
            out[judge] = found
            continue
        out[judge] = {
            "families": sorted(own_families),
            "own_systems": own_systems,
            "other_systems": sorted(set(system_family) - set(own_systems)),
            **found,
        }
    if not out:
        return {"computable": False, "reason": "no judge scores the selection"}
    return out
