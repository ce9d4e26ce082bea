"""Judge panels in a report: each panel (an evaluator of kind "panel" whose
configuration names its members and its rule) becomes rows of the score table,
one per response every member scored, so that every statistic reads it as it
reads any judge; the report's "panels" part says how each was made.

The panel's scores are made when the report is built, never stored: a learned
panel's weights depend on the report's reference, and a member's new judgments
change the panel at once.

A panel of pairwise judges becomes rows of the pairwise verdicts instead (its
majority verdict per pair and order), so that win rates, position bias,
agreement with human pairwise studies and rankings read it as any pairwise
judge.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.statistics import panels as panel_statistics
from analysis.statistics.panels import PAIRWISE_RULE_TEXT, RULE_TEXT, PanelError

PANEL_KIND = "panel"


def panel_members(config: object) -> tuple[list[str], str]:
    """A panel's members and rule as its configuration holds them."""
    config = config if isinstance(config, dict) else {}
    members = config.get("members")
    members = [str(m) for m in members] if isinstance(members, list) else []
    return members, str(config.get("rule", "mean"))


def is_pairwise(config: object) -> bool:
    """Whether a panel pools pairwise verdicts (judging.panels.checked_panel)."""
    return isinstance(config, dict) and config.get("pairwise") is True


def _panel_configs(selection) -> list[tuple[str, object]]:
    """The panels a selection reads: the ones it names as judges or
    evaluators, or (none named) every panel of its project and the shared ones."""
    from django.db.models import Q

    from judging.models import Evaluator

    panels = Evaluator.objects.filter(kind=PANEL_KIND)
    named = (*selection.judges, *selection.evaluators)
    if named:
        panels = panels.filter(name__in=named)
    elif selection.project:
        panels = panels.filter(Q(project__isnull=True) | Q(project__slug=selection.project))
    return list(panels.values_list("name", "config"))


def panels_for(selection) -> dict[str, tuple[list[str], str]]:
    """The panels of scores a selection reads (_panel_configs)."""
    return {
        name: panel_members(config)
        for name, config in _panel_configs(selection)
        if not is_pairwise(config)
    }


def pairwise_panels_for(selection) -> dict[str, tuple[list[str], str]]:
    """The panels of pairwise judges a selection reads (_panel_configs)."""
    return {
        name: panel_members(config)
        for name, config in _panel_configs(selection)
        if is_pairwise(config)
    }


def member_costs(names: list[str]) -> dict[str, float | None]:
    """Each member's recorded cost per response judged (its judging runs'
    cost over the responses it has scores for); None where nothing is
    recorded (imported scores, metrics, runs answered from the ledger)."""
    from django.db.models import Count, Sum

    from judging.models import JudgingRun, Judgment, PairwiseVerdict

    spent = dict(
        JudgingRun.objects.filter(evaluator__name__in=names)
        .values_list("evaluator__name")
        .annotate(Sum("cost"))
    )
    judged = dict(
        Judgment.objects.filter(evaluator__name__in=names)
        .values_list("evaluator__name")
        .annotate(Count("response", distinct=True))
    )
    # a pairwise judge's responses: those it compared with the baseline's
    judged |= dict(
        PairwiseVerdict.objects.filter(evaluator__name__in=names)
        .values_list("evaluator__name")
        .annotate(Count("response", distinct=True))
    )
    return {
        name: float(spent[name]) / judged[name] if spent.get(name) and judged.get(name) else None
        for name in names
    }


def with_panels(
    table: pd.DataFrame, reference: str | None, panels: dict[str, tuple[list[str], str]]
) -> tuple[pd.DataFrame, dict[str, dict]]:
    """The table with each computable panel's rows added, and each panel's
    account (its members, rule, weights, responses and cost, or why not)."""
    if not panels or table.empty:
        return table, {}
    scores = table.groupby(["response_id", "evaluator"], observed=True)["score"].mean()
    wide = scores.unstack("evaluator")
    wide.columns = [str(c) for c in wide.columns]
    meta = table.drop_duplicates("response_id").set_index("response_id")
    added: list[pd.DataFrame] = []
    accounts: dict[str, dict] = {}
    for name in sorted(panels):
        members, rule = panels[name]
        try:
            rows, account = panel_rows(name, members, rule, wide, meta, reference)
        except PanelError as error:
            accounts[name] = {"computable": False, "reason": f"{name}: {error}"}
            continue
        added.append(rows)
        accounts[name] = account
    with_costs(accounts, panels)
    if not added:
        return table, accounts
    joined = pd.concat([table, *added], ignore_index=True)
    for column in ("evaluator", "evaluator_kind", "rater"):
        joined[column] = joined[column].astype(str).astype("category")
    return joined, accounts


def with_costs(accounts: dict[str, dict], panels: dict[str, tuple[list[str], str]]) -> None:
    """Each computable panel's cost per response: the sum of its members'."""
    costs = member_costs(sorted({m for members, _ in panels.values() for m in members}))
    for account in accounts.values():
        if account.get("computable") is False:
            continue
        each: dict[str, float | None] = {m: costs.get(m) for m in account["members"]}
        account["member_cost_per_response"] = each
        known = [c for c in each.values() if c is not None]
        account["cost_per_response"] = sum(known) if len(known) == len(each) else None


def panel_rows(
    name: str,
    members: list[str],
    rule: str,
    wide: pd.DataFrame,
    meta: pd.DataFrame,
    reference: str | None,
) -> tuple[pd.DataFrame, dict]:
    if len(members) < 2:
        raise PanelError("a panel has at least two members")
    if rule not in RULE_TEXT:
        raise PanelError(f"unknown rule {rule!r}")
    missing = [m for m in members if m not in wide.columns]
    if missing:
        raise PanelError(f"no score in this selection from {', '.join(missing)}")
    scored = wide[members].dropna()
    if scored.empty:
        raise PanelError("no response of the selection is scored by every member")
    values = scored.to_numpy(float)
    account: dict = {
        "members": members,
        "rule": rule,
        "rule_text": RULE_TEXT[rule],
        "responses": int(len(scored)),
        "weights": None,
    }
    if rule == "learned":
        if reference is None or reference not in wide.columns:
            raise PanelError("a learned panel needs a reference (a human evaluator) to learn from")
        labels = wide[reference].reindex(scored.index).to_numpy(float)
        meetings = meta.loc[scored.index, "meeting"].astype(str).to_numpy()
        fitted = panel_statistics.learned(values, labels, meetings)
        combined = fitted.scores
        account["weights"] = {
            "learned_from": reference,
            "labelled_responses": int((~np.isnan(labels)).sum()),
            "folds": fitted.folds,
            "intercept": fitted.weights.intercept,
            "members": dict(zip(members, fitted.weights.weights.tolist(), strict=True)),
        }
    else:
        combined = panel_statistics.combine(values, rule)
    rows = meta.loc[scored.index].reset_index()
    rows["evaluator"] = name
    rows["evaluator_kind"] = PANEL_KIND
    rows["rater"] = ""
    rows["judgment_seed"] = np.nan
    rows["judgment_probability"] = np.nan
    rows["order"] = 0
    rows["score"] = combined
    return rows, account


# --- Panels of pairwise judges ------------------------------------------------------------------


def with_pairwise_panels(
    verdicts: pd.DataFrame, panels: dict[str, tuple[list[str], str]]
) -> pd.DataFrame:
    """The verdict table with each pairwise panel's majority verdicts added
    (seed 0, no rater, kind "panel"), where every member judged a pair in an order."""
    added = []
    for name in sorted(panels):
        members, rule = panels[name]
        if len(members) < 2 or rule not in PAIRWISE_RULE_TEXT or verdicts.empty:
            continue
        rows = panel_statistics.majority_verdicts(verdicts, members)
        if rows.empty:
            continue
        added.append(
            # a panel's verdict has no token probability: its confidence is its members' dissent
            rows.assign(
                evaluator=name, seed=0, rater="", evaluator_kind=PANEL_KIND, probability=np.nan
            )[list(verdicts.columns)]
        )
    if not added:
        return verdicts
    return pd.concat([verdicts, *added], ignore_index=True)


def pairwise_panel_accounts(
    verdicts: pd.DataFrame, panels: dict[str, tuple[list[str], str]]
) -> dict[str, dict]:
    """How each pairwise panel was made (from its rows in `verdicts`:
    with_pairwise_panels), or why it could not be."""
    accounts: dict[str, dict] = {}
    present = set(verdicts["evaluator"].astype(str)) if len(verdicts) else set()
    for name in sorted(panels):
        members, rule = panels[name]
        mine = verdicts[verdicts["evaluator"].astype(str) == name] if name in present else None
        if mine is None:
            absent = [m for m in members if m not in present]
            reason = (
                f"no verdict in this selection from {', '.join(absent)}"
                if absent
                else "no pair of the selection is judged by every member in the same order"
            )
            accounts[name] = {"computable": False, "reason": f"{name}: {reason}"}
            continue
        accounts[name] = {
            "members": members,
            "rule": rule,
            "rule_text": PAIRWISE_RULE_TEXT[rule],
            "responses": int(mine["response_id"].nunique()),
            "weights": None,
            "pairwise": True,
        }
    with_costs(accounts, panels)
    return accounts
