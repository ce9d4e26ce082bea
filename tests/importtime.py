"""Reading `python -X importtime` output: which module first imported what.

`-X importtime` prints one line per module once it has finished importing,
indented two spaces per level of nesting, so a module's importer is the next
line below it that is one level shallower. Only `import` statements are
timed: a module that Django or Celery loads with importlib.import_module (a
models, urls or tasks module) is not listed, and what it imports appears at
the top level. A chain therefore ends at the module imported by such a one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Loaded lazily, where they are used: a process that only starts (manage.py,
# the web server, the worker) must not pay for them.
HEAVY_PACKAGES = (
    "numpy",
    "pandas",
    "scipy",
    "sklearn",
    "matplotlib",
    "pingouin",
    "krippendorff",
    "rouge_score",
    "openai",
    "httpx",
    "torch",
    "transformers",
    "tokenizers",
)
LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


@dataclass(frozen=True)
class Import:
    module: str
    cumulative_us: int
    chain: tuple[str, ...]  # the module, then who imported it, up to the top level

    @property
    def seconds(self) -> float:
        return self.cumulative_us / 1e6

    def describe(self) -> str:
        return f"{self.module} ({self.seconds:.2f} s), imported by " + " <- ".join(self.chain[1:])


def parse(stderr: str) -> list[Import]:
    """Every module in the order its import finished, with its chain of importers."""
    rows = []
    for line in stderr.splitlines():
        match = LINE.match(line)
        if match:
            rows.append((len(match[3]) // 2, match[4], int(match[2])))
    imports = []
    for index, (depth, module, cumulative) in enumerate(rows):
        chain, wanted = [module], depth - 1
        for later_depth, later_module, _ in rows[index + 1 :]:
            if wanted < 0:
                break
            if later_depth == wanted:
                chain.append(later_module)
                wanted -= 1
        imports.append(Import(module, cumulative, tuple(chain)))
    return imports


def heavy_imports(stderr: str, packages: tuple[str, ...] = HEAVY_PACKAGES) -> list[Import]:
    """The first import of each of these packages (its top-level module), if any."""
    found = {}
    for entry in parse(stderr):
        if entry.module in packages and entry.module not in found:
            found[entry.module] = entry
    return list(found.values())


def top_level_seconds(stderr: str) -> float:
    """Time spent importing, all modules together."""
    return sum(entry.cumulative_us for entry in parse(stderr) if len(entry.chain) == 1) / 1e6
