"""A judge panel's configuration: its members (two or more evaluators) and the
rule that makes one judgment of theirs (analysis.statistics.panels). The
members either all score responses (LLM rubric judges, metrics, imported judge
scores: any rule) or all compare a response with the baseline's (LLM pairwise
judges: the majority of their verdicts). The console's form, the API and the
admin check a panel here; the report makes its judgments (analysis.report.panels)."""

from __future__ import annotations

from judging.evaluators import ConfigError
from judging.models import HUMAN_EVALUATORS, Evaluator, EvaluatorKind
from judging.panel_rules import PAIRWISE_RULES, RULES

# evaluators that give each response a score a panel can pool: not people (a
# panel is a judge), not another panel
MEMBER_KINDS = (EvaluatorKind.LLM_RUBRIC, EvaluatorKind.METRIC, EvaluatorKind.IMPORTED)
# evaluators whose verdicts (first / second / tie) a pairwise panel pools
PAIRWISE_MEMBER_KINDS = (EvaluatorKind.LLM_PAIRWISE,)


def possible_members():
    """Every evaluator a panel may have as a member, of either sort."""
    return Evaluator.objects.filter(kind__in=MEMBER_KINDS + PAIRWISE_MEMBER_KINDS).exclude(
        HUMAN_EVALUATORS
    )


def checked_panel(config: object) -> dict:
    """The configuration as stored ({"members": [...], "rule": ..., "pairwise":
    bool}), or ConfigError saying what is wrong. Whether the panel compares
    pairs follows from its members; a "pairwise" key given must agree."""
    if not isinstance(config, dict):
        raise ConfigError('A panel\'s configuration is {"members": [names], "rule": "mean"}.')
    unknown = sorted(set(config) - {"members", "rule", "pairwise"})
    if unknown:
        raise ConfigError(f"Unknown key(s) {', '.join(unknown)}: a panel has members and a rule.")
    members = config.get("members")
    if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        raise ConfigError("members: a list of evaluator names.")
    if len(set(members)) != len(members) or len(members) < 2:
        raise ConfigError("members: at least two different evaluators.")
    kinds = dict(possible_members().filter(name__in=members).values_list("name", "kind"))
    missing = [m for m in members if m not in kinds]
    if missing:
        raise ConfigError(
            f"members: {', '.join(missing)} is not an evaluator a panel can pool "
            "(an LLM rubric or pairwise judge, a metric or imported judge scores)."
        )
    comparing = {kinds[m] in PAIRWISE_MEMBER_KINDS for m in members}
    if len(comparing) > 1:
        raise ConfigError(
            "members: all score answers or all compare two answers; a panel cannot pool "
            "a pairwise judge's verdicts with scores."
        )
    pairwise = comparing.pop()
    if "pairwise" in config and config["pairwise"] is not pairwise:
        raise ConfigError(
            f"pairwise: {str(pairwise).lower()}, as the members "
            f"{'compare pairs' if pairwise else 'score answers'}."
        )
    rule = config.get("rule", "majority" if pairwise else "mean")
    allowed = PAIRWISE_RULES if pairwise else RULES
    if rule not in allowed:
        raise ConfigError(
            f"rule: one of {', '.join(allowed)}"
            + (" for pairwise judges (a verdict has no mean)." if pairwise else ".")
        )
    return {"members": list(members), "rule": rule, "pairwise": pairwise}
