"""Launching sweeps: one system per combination of the grid, one run per seed."""

from __future__ import annotations

import itertools
import json

from django.db import transaction

from generation.config import GenerationConfig, GenerationConfigError
from generation.models import Sweep, System
from generation.runner import GenerationError, create_generation_run
from runs.lifecycle import enqueue_on_commit
from users.models import Project, default_project

# The paper's search (Appendix A.2): decoding x chat template x QA markers, then
# the repetition penalty for the best of those.
PAPER_GRID = {
    "temperature": [0.0, 0.6],
    "chat_template": ["tokenizer", "raw"],
    "qa_markers": [False, True],
}
PAPER_SEEDS = [2023, 2024, 2025]


def combinations(grid: dict) -> list[dict]:
    if not grid:
        return [{}]
    keys = sorted(grid)
    for key in keys:
        if not isinstance(grid[key], list) or not grid[key]:
            raise GenerationError(f"Grid {key!r}: give a non-empty list of values.")
    return [
        dict(zip(keys, values, strict=True))
        for values in itertools.product(*(grid[k] for k in keys))
    ]


def point_name(base: System, point: dict) -> str:
    if not point:
        return base.name
    inside = ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(point.items()))
    return f"{base.name} [{inside}]"


@transaction.atomic
def launch_sweep(
    name: str,
    base: System,
    dataset,
    mode: str,
    grid: dict,
    seeds: list[int],
    project: Project | None = None,
) -> Sweep:
    """Create the sweep's systems and runs (the caller queues them) in the
    project (default: the base system's, else the default project). A base
    system of another project is refused, and so is a grid point whose name
    another project's system holds."""
    project = project or base.project or default_project()
    if base.project_id not in (None, project.pk):
        raise GenerationError(f"{base.name} belongs to another project.")
    if not seeds:
        raise GenerationError("Give at least one seed.")
    if any(not isinstance(s, int) or s < 0 for s in seeds):
        raise GenerationError("Seeds are non-negative integers.")
    sweep = Sweep.objects.create(
        name=name,
        base_system=base,
        dataset=dataset,
        mode=mode,
        grid=grid,
        seeds=seeds,
        project=project,
    )
    for point in combinations(grid):
        config = {**base.config, **point}
        try:
            GenerationConfig.from_dict(config)
        except (GenerationConfigError, TypeError) as error:
            raise GenerationError(f"Grid point {point}: {error}") from None
        system, _ = System.objects.get_or_create(
            name=point_name(base, point),
            defaults={
                "model_name": base.model_name,
                "backend": base.backend,
                "config": config,
                "description": f"Sweep {name} over {base.name}.",
                "project": project,
            },
        )
        if system.project_id not in (None, project.pk):
            raise GenerationError(
                f"The name {system.name!r} is taken by another project's system: "
                "sweep under another base name."
            )
        if system.config != config:
            raise GenerationError(
                f"A system named {system.name!r} exists with another configuration."
            )
        for seed in seeds:
            sweep.runs.add(create_generation_run(system, dataset, mode, seed, project))
    return sweep


def enqueue_sweep(sweep: Sweep) -> None:
    """Queue every run of the sweep once the transaction commits."""
    for run in sweep.runs.select_related("system"):
        enqueue_on_commit(run)
