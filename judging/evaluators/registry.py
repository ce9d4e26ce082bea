"""The one registry of evaluator plug-ins, by name.

A plug-in registers itself with `@register` in its module
(`judging.evaluators.judges`, `.metrics`); the package imports those modules,
so that importing anything of `judging.evaluators` fills the registry. This
module imports no plug-in, so that the judges' configuration
(`judging.evaluators.config`) can look a judge up here without an import
circle.
"""

from __future__ import annotations

from typing import Any, TypeVar

from core.errors import ErrorCode, Invalid
from judging.evaluators.base import ConfigError, EvaluatorPlugin, Metric, ModelJudge

REGISTRY: dict[str, type[EvaluatorPlugin[Any]]] = {}
Plugin = TypeVar("Plugin", bound=type[EvaluatorPlugin[Any]])


class UnknownEvaluator(Invalid, ValueError):
    """A name no plug-in is registered under; the message lists those that are."""

    code = ErrorCode.EVALUATOR_UNKNOWN


def register(cls: Plugin) -> Plugin:
    if cls.name in REGISTRY:
        raise ValueError(f"Two evaluator plug-ins are named {cls.name!r}.")
    REGISTRY[cls.name] = cls
    return cls


def model_judges() -> dict[str, type[ModelJudge[Any]]]:
    """The LLM judges' protocols, by name (rubric, prometheus, custom, pairwise)."""
    return {n: c for n, c in REGISTRY.items() if issubclass(c, ModelJudge)}


# Lists show Concord's own metrics first, then each benchmark's official ones
# (a name's prefix: "zeroscrolls.rouge"), whatever order their modules load in.
FAMILIES = (
    "",
    "zeroscrolls",
    "scrolls",
    "leval",
    "longbench_v2",
    "ruler",
    "babilong",
    "loogle",
    "helmet",
)


def _family_rank(name: str) -> int:
    family = name.split(".", 1)[0] if "." in name else ""
    return FAMILIES.index(family) if family in FAMILIES else len(FAMILIES)


def metrics() -> dict[str, type[Metric]]:
    """The automatic metrics, by name: Concord's first, then each benchmark's
    official ones, each family in the order it registered them."""
    found = [(n, c) for n, c in REGISTRY.items() if issubclass(c, Metric)]
    ranked = sorted(enumerate(found), key=lambda pair: (_family_rank(pair[1][0]), pair[0]))
    return {name: cls for _, (name, cls) in ranked}


def judge_class(name: object) -> type[ModelJudge[Any]]:
    """The LLM judge protocol named `name` (ConfigError naming the known ones)."""
    known = model_judges()
    if not isinstance(name, str) or name not in known:
        raise ConfigError(
            f"Unknown judge protocol {name!r}; the known protocols are {', '.join(known)}."
        )
    return known[name]


def metric_class(name: object) -> type[Metric]:
    """The metric named `name` (UnknownEvaluator naming the known ones)."""
    known = metrics()
    if not isinstance(name, str) or name not in known:
        raise UnknownEvaluator(f"Unknown metric {name!r}; known: {', '.join(known)}.")
    return known[name]
