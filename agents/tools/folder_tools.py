"""Tools for finding one's way in a real dataset folder: ``list_dir``, ``tree``, ``find``, ``grep``,
``read_text``.

Real datasets hold tens of thousands of files, and the one file that matters (the label table, the README)
often sorts after thousands of images. So every listing here puts text and table files first, pages with
``offset``/``limit`` and says how many entries remain; ``tree`` condenses a whole tree into counts per
extension and per kind of folder ("1,243 .dcm in 97 folders") and names the text and table files; ``find``
matches names or paths with a glob; ``grep`` searches inside text files; ``read_text`` reads any part of a
text file and says how big it is.

All of them are cheap on huge trees: one ``os.scandir`` per folder, ``stat`` only for the entries shown,
and walks bounded by `SandboxLimits.max_walk_entries` (a walk that hits the bound answers with what it saw
and says so). Symlinked folders are listed but never entered, so a walk cannot leave ``data/``.

Handlers take the sandbox, the task and the parsed arguments and return the text the model sees (like
`agents.tools.review_tools`); a refused path raises `SandboxError`, turned into a tool error by
`agents.tools.tools.ToolBox`.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from agents.base import Task
from agents.tools.sandbox import Sandbox, SandboxError
from agents.tools.tool_args import ToolArgs
from medio.documents import DOCUMENT_SUFFIXES, DocumentError, read_document

__all__ = [
    "FOLDER_TOOLS",
    "TEXT_EXTENSIONS",
    "FindArgs",
    "GrepArgs",
    "ListDirArgs",
    "ReadTextArgs",
    "TreeArgs",
    "extension",
    "folder_page",
    "is_text_name",
]

TEXT_EXTENSIONS = frozenset(
    {".csv", ".tsv", ".json", ".jsonl", ".xlsx", ".xls", ".parquet", ".txt", ".md", ".rst", ".yaml", ".yml"}
    | DOCUMENT_SUFFIXES
)
"""Extensions listed first: where labels, splits and dataset descriptions live (Word and PDF READMEs too)."""

_SEARCHABLE = frozenset({".csv", ".tsv", ".json", ".jsonl", ".txt", ".md", ".rst", ".yaml", ".yml", ".xml"})
"""Extensions ``grep`` reads without being told (binary tables like .xlsx/.parquet excluded)."""

_COMPRESSED = frozenset({".gz", ".bz2", ".xz", ".zst"})
_LINE_CHARS = 240
_TREE_LINES = 40
_GREP_FILE_BYTES = 8 * 1024**2


def extension(name: str) -> str:
    """The extension a folder summary groups a file under (``.nii.gz`` kept whole; ``(none)`` without one).

    Args:
        name: A file name.

    Returns:
        The lower-case extension with its dot.
    """
    lower = name.lower()
    stem, dot, last = lower.rpartition(".")
    if not dot or not stem:
        return "(none)"
    if "." + last in _COMPRESSED:
        inner = stem.rpartition(".")
        if inner[1] and inner[0]:
            return f".{inner[2]}.{last}"
    return "." + last


def is_text_name(name: str, ext: str | None = None) -> bool:
    """Whether a file name looks like a text or table file (README*, or an extension in `TEXT_EXTENSIONS`);
    ``ext`` is its `extension` when the caller has it already (a listing computes it once per entry).
    """
    return (ext if ext is not None else extension(name)) in TEXT_EXTENSIONS or name[:6].lower() == "readme"


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _n(value: int) -> str:
    return f"{value:,}"


class ListDirArgs(ToolArgs):
    """List one folder of the dataset: text and table files first (README, csv, tsv, json, xlsx, parquet,
    txt, md), then folders (ending with /), then the other files, each group by name; pages with offset/limit
    and says how many entries remain."""

    path: str = Field("data", description="Folder relative to the dataset root, e.g. 'data' or 'data/case1'.")
    offset: int = Field(0, ge=0, description="Skip this many entries (for the next page).")
    limit: int = Field(100, ge=1, description="Entries to show (at most the sandbox's listing cap).")


class TreeArgs(ToolArgs):
    """Summarise a whole folder tree in one call: files per extension and in how many folders, the kinds of
    folders (by the extensions they hold), and every text/table file by path (bounded output)."""

    path: str = Field("data", description="Folder relative to the dataset root.")
    max_depth: int | None = Field(None, ge=0, description="Do not descend deeper than this (None: no limit).")


class FindArgs(ToolArgs):
    """Find files or folders whose name (pattern without '/') or path below `path` (pattern with '/') matches
    a glob, case-insensitively, e.g. '*label*', '*.csv', 'case*/mask*'; pages with offset/limit."""

    pattern: str = Field(description="Glob: * ? [..]; '*' also crosses folders in a pattern with '/'.")
    path: str = Field("data", description="Folder to search below.")
    kind: Literal["any", "file", "dir"] = Field("any", description="Only files, only folders, or both.")
    offset: int = Field(0, ge=0, description="Skip this many matches (for the next page).")
    limit: int = Field(100, ge=1, description="Matches to show (at most the sandbox's listing cap).")


class GrepArgs(ToolArgs):
    """Search text files (csv, tsv, json, txt, md, yaml, xml; or the files `glob` names) for a regular
    expression; returns path:line: text for the first matches, and how much was searched."""

    pattern: str = Field(description="A Python regular expression, e.g. 'label|diagnosis' or 'case0*12'.")
    path: str = Field("data", description="Folder (or one file) to search.")
    glob: str | None = Field(None, description="Only files whose name matches this glob, e.g. '*.csv'.")
    ignore_case: bool = Field(True, description="Case-insensitive matching.")
    max_matches: int = Field(50, ge=1, le=500, description="Matching lines to show.")


class ReadTextArgs(ToolArgs):
    """Read part of a text file of the dataset (CSV, TXT, JSON, MD ...; a .docx or PDF as its text): max_bytes
    from offset; says the file's total size and the offset to continue from."""

    path: str = Field(description="File relative to the dataset root, e.g. 'data/labels.csv'.")
    offset: int = Field(0, ge=0, description="Byte offset to start reading at.")
    max_bytes: int = Field(4096, ge=1, description="How many bytes to return.")


@dataclass
class _Walk:
    """What a bounded breadth-first walk saw."""

    folders: list[tuple[str, list[os.DirEntry[str]]]] = field(default_factory=list)
    visited: int = 0
    truncated: bool = False
    links: int = 0


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _walk(top: Path, cap: int, max_depth: int | None = None) -> _Walk:
    """Visit folders breadth-first (names sorted), recording each folder's files, until ``cap`` entries."""
    walk = _Walk()
    queue: deque[tuple[Path, str, int]] = deque([(top, "", 0)])
    while queue:
        folder, rel, depth = queue.popleft()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        files: list[os.DirEntry[str]] = []
        for entry in entries:
            walk.visited += 1
            if walk.visited > cap:
                walk.truncated = True
                walk.folders.append((rel, files))
                return walk
            if _is_dir(entry):
                if max_depth is None or depth < max_depth:
                    queue.append((Path(entry.path), f"{rel}{entry.name}/", depth + 1))
            elif entry.is_symlink() and entry.is_dir():
                walk.links += 1  # a linked folder: named by list_dir, never entered
            else:
                files.append(entry)
        walk.folders.append((rel, files))
    return walk


def _folder(sandbox: Sandbox, path: str) -> Path:
    folder = sandbox.read_path(path)
    if not folder.is_dir():
        raise SandboxError(path, "not a folder" if folder.exists() else "no such folder")
    return folder


def _size(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat().st_size
    except OSError:
        return 0


def folder_page(sandbox: Sandbox, folder: Path, offset: int, limit: int, call: str) -> str:
    """The text of one page of a folder's entries as the model sees them (``list_dir``, ``list_output``):
    ``limit`` entries (capped by ``max_dir_entries``) from ``offset``.

    Text and table files first, then folders (ending with ``/``), then the other files, each group by name; a
    header with the counts per group (and the other files' commonest extensions); sizes for the entries shown
    only; a last line with the number of entries left and ``call`` (the call that lists this folder, without
    its offset, e.g. ``list_dir(path='data')``) for the next page.
    """
    with os.scandir(folder) as it:
        entries = list(it)
    dirs: list[os.DirEntry[str]] = []
    texts: list[os.DirEntry[str]] = []
    others: list[os.DirEntry[str]] = []
    by_ext: Counter[str] = Counter()
    for entry in entries:  # one pass, one extension per entry: this runs over 100,000-entry folders
        if entry.is_dir():  # a link to a folder shows as a folder; listing never enters it
            dirs.append(entry)
            continue
        ext = extension(entry.name)
        if is_text_name(entry.name, ext):
            texts.append(entry)
        else:
            others.append(entry)
            by_ext[ext] += 1
    for group in (texts, dirs, others):
        group.sort(key=_name)
    ordered = [*texts, *dirs, *others]
    page = ordered[offset : offset + min(limit, sandbox.limits.max_dir_entries)]
    kinds = ", ".join(f"{_n(n)} {ext}" for ext, n in by_ext.most_common(6))
    header = (
        f"{sandbox.to_model(folder)}/ ({_n(len(ordered))} entries: {_n(len(texts))} text/table files, "
        f"{_n(len(dirs))} folders, {_n(len(others))} other files{f' ({kinds})' if kinds else ''})"
    )
    lines = [header]
    if offset >= len(ordered) and ordered:
        lines.append(f"offset {offset} is past the last entry ({len(ordered)} entries)")
    shown_dirs = len(texts) + len(dirs)
    for position, entry in enumerate(page, offset):
        lines.append(
            f"{entry.name}/" if len(texts) <= position < shown_dirs else f"{entry.name}\t{_size(entry)}"
        )
    remaining = len(ordered) - offset - len(page)
    if remaining > 0:
        following = offset + len(page)
        lines.append(f"... {_n(remaining)} more entries: {call.removesuffix(')')}, offset={following})")
    return "\n".join(lines)


def _list_dir(sandbox: Sandbox, task: Task, args: ListDirArgs) -> str:
    folder = _folder(sandbox, args.path)
    return folder_page(sandbox, folder, args.offset, args.limit, f"list_dir(path={args.path!r})")


def _tree(sandbox: Sandbox, task: Task, args: TreeArgs) -> str:
    top = _folder(sandbox, args.path)
    shown = sandbox.to_model(top)
    walk = _walk(top, sandbox.limits.max_walk_entries, args.max_depth)
    per_ext: Counter[str] = Counter()
    folders_with: Counter[str] = Counter()
    kinds: dict[tuple[int, tuple[str, ...]], list[tuple[str, Counter[str]]]] = defaultdict(list)
    texts: list[tuple[str, int]] = []
    n_files = 0
    for rel, files in walk.folders:
        counts: Counter[str] = Counter()
        for entry in files:
            ext = extension(entry.name)
            counts[ext] += 1
            if is_text_name(entry.name, ext):
                texts.append((f"{shown}/{rel}{entry.name}", _size(entry)))
        n_files += len(files)
        per_ext.update(counts)
        folders_with.update(counts.keys())
        kinds[(rel.count("/"), tuple(sorted(counts)))].append((rel, counts))
    lines = [
        f"{shown}/: {_n(n_files)} files in {_n(len(walk.folders))} folders"
        + (f" ({walk.links} linked folders not entered)" if walk.links else "")
    ]
    if walk.truncated:
        lines.append(
            f"(stopped after {_n(sandbox.limits.max_walk_entries)} entries: the counts below cover part of "
            "the tree; call tree on a sub-folder or with max_depth)"
        )
    lines.append("Files by extension:")
    for ext, count in per_ext.most_common(15):
        lines.append(f"  {_n(count)} {ext} in {_n(folders_with[ext])} folder{'s' * (folders_with[ext] != 1)}")
    if len(per_ext) > 15:
        rest = sum(c for _, c in per_ext.most_common()[15:])
        lines.append(f"  ... {len(per_ext) - 15} more extensions ({_n(rest)} files)")
    lines.append(f"Text and table files ({_n(len(texts))}):")
    for path, size in texts[:_TREE_LINES]:
        lines.append(f"  {path}\t{size}")
    if len(texts) > _TREE_LINES:
        lines.append(f"  ... {_n(len(texts) - _TREE_LINES)} more: find(pattern='*.csv') etc.")
    lines.append(f"Folders by depth and content ({len(kinds)} kinds):")
    ordered = sorted(kinds.items(), key=lambda kv: (kv[0][0], -len(kv[1])))
    for (depth, exts), members in ordered[:_TREE_LINES]:
        example = f"{shown}/{members[0][0]}"
        if exts:
            ranges = []
            for ext in exts:
                values = [c[ext] for _, c in members]
                low, high = min(values), max(values)
                ranges.append(f"{_n(low) if low == high else f'{_n(low)}-{_n(high)}'} {ext}")
            content = "each " + ", ".join(ranges)
        else:
            content = "no files"
        many = f"{_n(len(members))} folders" if len(members) > 1 else "1 folder"
        lines.append(f"  depth {depth}: {many} ({content}), e.g. {example}")
    if len(ordered) > _TREE_LINES:
        lines.append(f"  ... {len(ordered) - _TREE_LINES} more kinds of folders")
    return "\n".join(lines)


def _glob_matcher(pattern: str) -> Callable[[str, str], bool]:
    """``(name, relpath) -> bool``: a pattern without '/' matches the name, one with '/' the path."""
    lowered = pattern.lower().strip("/")
    if "/" not in lowered:
        return lambda name, rel: fnmatch.fnmatchcase(name.lower(), lowered)
    alone = lowered.removeprefix("**/")
    return lambda name, rel: (
        fnmatch.fnmatchcase(rel.lower(), lowered) or fnmatch.fnmatchcase(rel.lower(), alone)
    )


def _find(sandbox: Sandbox, task: Task, args: FindArgs) -> str:
    top = _folder(sandbox, args.path)
    shown = sandbox.to_model(top)
    pattern = args.pattern
    if pattern.lower().startswith(shown.lower() + "/"):  # 'data/**/*.csv': the model wrote the full path
        pattern = pattern[len(shown) + 1 :]
    matches = _glob_matcher(pattern)
    cap = sandbox.limits.max_walk_entries
    found: list[str] = []
    visited = 0
    truncated = False
    queue: deque[tuple[Path, str]] = deque([(top, "")])
    while queue and not truncated:
        folder, rel = queue.popleft()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            visited += 1
            if visited > cap:
                truncated = True
                break
            is_dir = _is_dir(entry)
            path = f"{rel}{entry.name}"
            if is_dir:
                queue.append((Path(entry.path), path + "/"))
            wanted = args.kind == "any" or (args.kind == "dir") == is_dir
            if wanted and matches(entry.name, path):
                found.append(f"{shown}/{path}/" if is_dir else f"{shown}/{path}")
    limit = min(args.limit, sandbox.limits.max_dir_entries)
    page = found[args.offset : args.offset + limit]
    lines = [f"{_n(len(found))} matches for {args.pattern!r} below {shown}/ ({_n(visited)} entries searched)"]
    if truncated:
        lines.append(f"(stopped after {_n(cap)} entries: search a sub-folder for the rest)")
    lines += page
    remaining = len(found) - args.offset - len(page)
    if remaining > 0:
        lines.append(f"... {_n(remaining)} more: find(..., offset={args.offset + len(page)})")
    return "\n".join(lines)


def _grep_files(
    top: Path, wanted: Callable[[str], bool], cap: int
) -> Iterator[tuple[str, os.DirEntry[str] | Path]]:
    """Files below ``top`` (or ``top`` itself) that ``wanted`` accepts, breadth-first, names sorted."""
    if top.is_file():
        yield top.name, top
        return
    walk = _walk(top, cap)
    for rel, files in walk.folders:
        for entry in files:
            if wanted(entry.name):
                yield rel + entry.name, entry


def _grep(sandbox: Sandbox, task: Task, args: GrepArgs) -> str:
    try:
        regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {args.pattern!r}: {exc}") from None
    top = sandbox.read_path(args.path)
    if not top.exists():
        raise SandboxError(args.path, "no such file or folder")
    shown = sandbox.to_model(top) if top.is_dir() else sandbox.to_model(top.parent)
    name_glob = args.glob.lower() if args.glob else None

    def wanted(name: str) -> bool:
        if name_glob is not None:
            return fnmatch.fnmatchcase(name.lower(), name_glob)
        return extension(name) in _SEARCHABLE or name.lower().startswith("readme")

    budget = sandbox.limits.max_search_bytes
    read = searched = skipped = hits = 0
    shown_lines: list[str] = []
    files_hit = 0
    stopped = False
    real_root = os.path.realpath(sandbox.read_root)
    for rel, entry in _grep_files(top, wanted, sandbox.limits.max_walk_entries):
        if isinstance(entry, os.DirEntry) and entry.is_symlink():
            # A planted link to a file outside data/ must not be read through the walk.
            real = os.path.realpath(entry.path)
            if not real.startswith(real_root + os.sep):
                skipped += 1
                continue
        size = entry.stat().st_size
        if size > _GREP_FILE_BYTES or read + size > budget:
            skipped += 1
            stopped = stopped or read + size > budget
            continue
        data = Path(entry).read_bytes() if isinstance(entry, Path) else Path(entry.path).read_bytes()
        read += len(data)
        if b"\x00" in data[:8192]:
            skipped += 1
            continue
        searched += 1
        found_here = False
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if regex.search(line):
                hits += 1
                found_here = True
                if len(shown_lines) < args.max_matches:
                    text = line if len(line) <= _LINE_CHARS else line[:_LINE_CHARS] + "..."
                    shown_lines.append(f"{shown}/{rel}:{number}: {text}")
        files_hit += found_here
    lines = [
        f"{_n(hits)} matching lines in {_n(files_hit)} files ({_n(searched)} files searched, "
        f"{_n(read)} bytes; {_n(skipped)} skipped as binary or too large)"
    ]
    if stopped:
        lines.append(f"(read budget of {_n(budget)} bytes reached: narrow path or glob)")
    lines += shown_lines
    if hits > len(shown_lines):
        lines.append(f"... {_n(hits - len(shown_lines))} more matching lines not shown")
    return "\n".join(lines)


def _read_text(sandbox: Sandbox, task: Task, args: ReadTextArgs) -> str:
    cap = sandbox.limits.max_text_bytes
    if args.max_bytes > cap:
        raise SandboxError(args.path, f"max_bytes {args.max_bytes} is above the {cap}-byte read cap")
    target = sandbox.read_path(args.path)
    if not target.is_file():
        raise SandboxError(args.path, "not a file" if target.exists() else "no such file")
    if target.suffix.lower() in DOCUMENT_SUFFIXES:
        return _read_document(target, args)
    size = target.stat().st_size
    if args.offset > size:
        raise ValueError(f"offset {args.offset} is past the end of {args.path} ({size} bytes)")
    with target.open("rb") as handle:
        handle.seek(args.offset)
        chunk = handle.read(args.max_bytes)
    if b"\x00" in chunk:
        raise ValueError(f"{args.path} looks binary ({size} bytes); use inspect or table_head instead")
    end = args.offset + len(chunk)
    text = chunk.decode("utf-8", errors="replace")
    if args.offset == 0 and end == size:
        return text
    more = f"; continue with read_text(path={args.path!r}, offset={end})" if end < size else ""
    return f"{text}\n[bytes {args.offset}-{end} of {size}{more}]"


def _read_document(target: Path, args: ReadTextArgs) -> str:
    """A Word or PDF document's text, paged like a text file's bytes (offsets count its characters)."""
    try:
        text = read_document(target, max_chars=args.offset + args.max_bytes + 1)
    except DocumentError as exc:
        raise ValueError(f"{args.path}: {exc.reason}") from exc
    if args.offset and args.offset >= len(text):
        raise ValueError(
            f"offset {args.offset} is past the end of {args.path}'s text ({len(text)} characters)"
        )
    chunk = text[args.offset : args.offset + args.max_bytes]
    end = args.offset + len(chunk)
    more = len(text) > end
    if args.offset == 0 and not more:
        return chunk
    tail = f"; continue with read_text(path={args.path!r}, offset={end})" if more else ""
    return f"{chunk}\n[characters {args.offset}-{end} of the document's text{tail}]"


FOLDER_TOOLS: Mapping[str, tuple[type[ToolArgs], Callable[[Sandbox, Task, Any], str]]] = {
    "list_dir": (ListDirArgs, _list_dir),
    "tree": (TreeArgs, _tree),
    "find": (FindArgs, _find),
    "grep": (GrepArgs, _grep),
    "read_text": (ReadTextArgs, _read_text),
}
"""Tool name → (argument model, handler)."""
