"""A read-only view of files inside folders, zip archives and tar archives.

ELITR-Bench ships as password-protected zips, one of which holds a tar; a user
may also have an unpacked copy or the LINDAT corpus folders. Walking all of
these as one tree of (path, bytes) lets one importer serve every layout, and
everything is read in memory: no decrypted copy is ever written to disk.
Within the upload limits (corpus.importers.limits): a file read from the disk
is checked for size first, an archive member for its size and ratio before it
is extracted, each named in the refusal.
"""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from corpus.importers.errors import ImportFailure
from corpus.importers.limits import check_file_size, check_member_size, check_zip_member

ARCHIVE_SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz")


@dataclass(frozen=True)
class SourceFile:
    """One file somewhere in the tree.

    `path` is the file's path inside its innermost container, with '/'; it is
    what layouts are recognised by. `origin` says where it lives, for messages:
    `data.zip!data/elitr-bench-qa_dev.json`.
    """

    path: str
    origin: str
    _read: Callable[[], bytes]

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def parent_name(self) -> str:
        parts = self.path.split("/")
        return parts[-2] if len(parts) > 1 else ""

    def read_bytes(self) -> bytes:
        return self._read()

    def read_text(self) -> str:
        data = self.read_bytes()
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise ImportFailure(f"{self.origin}: not UTF-8 text ({error}).") from error


def is_junk(path: str) -> bool:
    """macOS resource forks and folder metadata that archives made on a Mac carry."""
    parts = path.replace("\\", "/").split("/")
    return (
        "__MACOSX" in parts or parts[-1].startswith("._") or parts[-1] in {".DS_Store", "Thumbs.db"}
    )


def is_archive(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def walk(
    root: str | os.PathLike, password: bytes | None, wanted: Callable[[str], bool]
) -> Iterator[SourceFile]:
    """Every file below `root` (a folder or an archive) that `wanted(path)` accepts.

    Archives found on the way are opened and walked too. Files that are not
    wanted are never read, so the minutes and alignment files cost nothing.
    """
    root = Path(root)
    if not root.exists():
        raise ImportFailure(f"{root}: no such file or folder.")
    if root.is_dir():
        for folder, dirnames, filenames in os.walk(root, followlinks=True):
            dirnames.sort()
            for filename in sorted(filenames):
                full = Path(folder) / filename
                relative = full.relative_to(root).as_posix()
                if is_junk(relative):
                    continue
                if is_archive(filename):
                    yield from _walk_archive(_disk_reader(full), str(full), password, wanted)
                elif wanted(relative):
                    yield SourceFile(relative, str(full), _disk_reader(full))
    elif is_archive(root.name):
        yield from _walk_archive(_disk_reader(root), str(root), password, wanted)
    elif wanted(root.name):
        yield SourceFile(root.name, str(root), _disk_reader(root))


def _disk_reader(path: Path) -> Callable[[], bytes]:
    def read() -> bytes:
        check_file_size(path)
        return path.read_bytes()

    return read


def _walk_archive(
    read: Callable[[], bytes], origin: str, password: bytes | None, wanted: Callable[[str], bool]
) -> Iterator[SourceFile]:
    data = read()
    lowered = origin.lower()
    if lowered.endswith(".zip"):
        yield from _walk_zip(data, origin, password, wanted)
    else:
        yield from _walk_tar(data, origin, password, wanted)


def _walk_zip(
    data: bytes, origin: str, password: bytes | None, wanted: Callable[[str], bool]
) -> Iterator[SourceFile]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as error:
        raise ImportFailure(f"{origin}: not a valid zip archive ({error}).") from error
    for info in archive.infolist():
        if info.is_dir() or is_junk(info.filename):
            continue
        member_origin = f"{origin}!{info.filename}"
        reader = _zip_member_reader(archive, info, member_origin, password)
        if is_archive(info.filename):
            yield from _walk_archive(reader, member_origin, password, wanted)
        elif wanted(info.filename):
            yield SourceFile(info.filename, member_origin, reader)


def _zip_member_reader(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, origin: str, password: bytes | None
) -> Callable[[], bytes]:
    def read() -> bytes:
        check_zip_member(info, origin)
        encrypted = bool(info.flag_bits & 0x1)
        if encrypted and not password:
            raise ImportFailure(f"{origin}: the archive is password-protected; pass --password.")
        try:
            return archive.read(info, pwd=password if encrypted else None)
        except RuntimeError as error:  # zipfile says "Bad password for file"
            raise ImportFailure(f"{origin}: wrong password ({error}).") from error
        except (zipfile.BadZipFile, zlib.error, EOFError) as error:
            # A wrong password that passes the 1-byte check shows up here.
            raise ImportFailure(
                f"{origin}: cannot be read: wrong password or damaged archive ({error})."
            ) from error
        except NotImplementedError as error:
            raise ImportFailure(f"{origin}: unsupported compression ({error}).") from error

    return read


def _walk_tar(
    data: bytes, origin: str, password: bytes | None, wanted: Callable[[str], bool]
) -> Iterator[SourceFile]:
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data))  # noqa: SIM115 (read lazily below)
    except tarfile.TarError as error:
        raise ImportFailure(f"{origin}: not a valid tar archive ({error}).") from error
    for member in archive.getmembers():
        if not member.isfile() or is_junk(member.name):
            continue
        member_origin = f"{origin}!{member.name}"

        def read(member: tarfile.TarInfo = member, member_origin: str = member_origin) -> bytes:
            check_member_size(member.size, member_origin)
            handle = archive.extractfile(member)
            if handle is None:
                raise ImportFailure(f"{member_origin}: cannot be read from the tar archive.")
            return handle.read()

        if is_archive(member.name):
            yield from _walk_archive(read, member_origin, password, wanted)
        elif wanted(member.name):
            yield SourceFile(member.name, member_origin, read)
