"""Uploads built to exhaust a reader, each small on disk (or sparse), and a way
to measure how much memory reading one takes: the reader runs in a child
process, whose peak resident size is compared with its size once Django and
the readers' libraries are loaded (its idle size)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import REPO

MB = 1024 * 1024
# What reading any upload may add to a process's idle size (docs/deployment.md).
MEMORY_BOUND_MB = 300


def parquet_bomb(path: Path, columns: dict[str, str], rows: int = 20_000_000) -> Path:
    """`rows` rows, every column dictionary-encoded to one value: a few hundred KB
    on disk, gigabytes once read as Python objects."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    group = 1_000_000
    indices = pa.array(np.zeros(group, dtype=np.int8))
    table = pa.table(
        {
            name: pa.DictionaryArray.from_arrays(indices, pa.array([value]))
            for name, value in columns.items()
        }
    )
    with pq.ParquetWriter(path, table.schema) as writer:
        for _ in range(rows // group):
            writer.write_table(table, row_group_size=group)
    return path


def parquet_text_bomb(path: Path, columns: dict[str, str], rows: int, big: str) -> Path:
    """Few enough rows for the row limit, each repeating `big` (one dictionary
    entry, stored once): small on disk, rows * len(big) once read."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    indices = pa.array(np.zeros(rows, dtype=np.int8))
    table = pa.table(
        {
            name: pa.DictionaryArray.from_arrays(indices, pa.array([value]))
            for name, value in columns.items()
        }
        | {"response": pa.DictionaryArray.from_arrays(indices, pa.array([big]))}
    )
    pq.write_table(table, path, compression="zstd")
    return path


def deep_jsonl(path: Path, first: dict, depth: int = 100_000) -> Path:
    """A good first line, then one nested `depth` lists deep (200 KB)."""
    path.write_text(json.dumps(first) + "\n" + "[" * depth + "]" * depth + "\n")
    return path


def sparse_file(path: Path, length: int) -> Path:
    """`length` bytes of zeros that take no room on disk."""
    with path.open("wb") as handle:
        handle.truncate(length)
    return path


def zip_bomb(path: Path, member: str, length: int) -> Path:
    """A zip holding `member`: `length` zero bytes, deflated about 1000 times,
    written in chunks so that building it needs no memory to speak of."""
    chunk = bytes(16 * MB)
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open(member, "w", force_zip64=True) as out,
    ):
        written = 0
        while written < length:
            out.write(chunk[: min(len(chunk), length - written)])
            written += len(chunk)
    return path


CHILD = """
import json, os, resource, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
import django
django.setup()
import numpy, pyarrow, pyarrow.parquet  # the readers' libraries, loaded before idle is measured
from corpus.importers.errors import ImportFailure
from corpus.importers.formats import read_benchmark
from corpus.importers.elitr_bench import parse_elitr_bench
from generation.response_import import read_response_file

def status(name):  # in KB; this process's own (getrusage's maxrss may be the forking parent's)
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) for line in lines if line.startswith(name + ":"))

idle = status("VmRSS")
try:  # start the peak (VmHWM) afresh; without it the peak counts Django's start too
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
except OSError:
    pass
# a safety net for the machine: a reader that reads whole fails fast, not after minutes
limit = (status("VmSize") + 2 * 1024 * 1024) * 1024
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
try:
    exec(sys.argv[1])
    error = None
except ImportFailure as failure:
    error = str(failure)
except MemoryError:
    error = "MemoryError"
peak = status("VmHWM")
print(json.dumps({"idle_mb": idle / 1024, "peak_mb": peak / 1024, "error": error}))
"""


def read_in_child(code: str) -> dict:
    """Run `code` (which may call read_benchmark, read_response_file and
    parse_elitr_bench) in a fresh process: its idle and peak resident sizes in
    MB, and the refusal it met (None if it met none)."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["added_mb"] = result["peak_mb"] - result["idle_mb"]
    return result
