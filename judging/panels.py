"""A judge panel's configuration: its members (two or more evaluators that
score responses) and the rule that makes one score of theirs
(analysis.statistics.panels). The console's form, the API and the admin check
a panel here; the report makes its scores (analysis.report.panels)."""

from __future__ import annotations

from judging.evaluators import ConfigError
from judging.models import HUMAN_EVALUATORS, Evaluator, EvaluatorKind
from judging.panel_rules import RULES

# evaluators that give each response a score a panel can pool: not people (a
# panel is a judge), not pairwise verdicts, not another panel
MEMBER_KINDS = (EvaluatorKind.LLM_RUBRIC, EvaluatorKind.METRIC, EvaluatorKind.IMPORTED)


def possible_members():
    return Evaluator.objects.filter(kind__in=MEMBER_KINDS).exclude(HUMAN_EVALUATORS)


def checked_panel(config: object) -> dict:
    """The configuration as stored ({"members": [...], "rule": ...}), or
    ConfigError saying what is wrong."""
    if not isinstance(config, dict):
        raise ConfigError('A panel\'s configuration is {"members": [names], "rule": "mean"}.')
    unknown = sorted(set(config) - {"members", "rule"})
    if unknown:
        raise ConfigError(f"Unknown key(s) {', '.join(unknown)}: a panel has members and a rule.")
    members = config.get("members")
    if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
        raise ConfigError("members: a list of evaluator names.")
    if len(set(members)) != len(members) or len(members) < 2:
        raise ConfigError("members: at least two different evaluators.")
    found = set(possible_members().filter(name__in=members).values_list("name", flat=True))
    missing = [m for m in members if m not in found]
    if missing:
        raise ConfigError(
            f"members: {', '.join(missing)} is not an evaluator that scores responses "
            "(an LLM rubric judge, a metric or imported judge scores)."
        )
    rule = config.get("rule", "mean")
    if rule not in RULES:
        raise ConfigError(f"rule: one of {', '.join(RULES)}.")
    return {"members": list(members), "rule": rule}
