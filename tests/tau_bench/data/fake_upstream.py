"""Upstream-shaped Python sources generated from the reference data (for offline tests).

The real upstream `.py` files are not available offline, so these helpers write sources of
the same shape (``Task(...)``/``Action(...)`` literals, ``RULES = [...]``, one tool class
per module with a ``get_info`` dict literal, ``ALL_TOOLS = [...]``) from the JSON in the
shared data directory, with ``repr`` of every value.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path, PurePosixPath
from typing import Any

from tau_bench.data.pinned import PinnedFile, PinnedTable, Source


def tasks_source(tasks: list[dict[str, Any]], variable: str) -> str:
    lines = ["from tau_bench.types import Action, Task", "", f"{variable} = ["]
    for i, task in enumerate(tasks):
        lines.append("    Task(")
        lines.append(f"        annotator={task['annotator']!r},")
        lines.append(f"        user_id={task['user_id']!r},")
        lines.append(f"        instruction={task['instruction']!r},")
        lines.append("        actions=[")
        for action in task["actions"]:
            lines.append(
                f"            Action(name={action['name']!r}, kwargs={action['kwargs']!r}),"
            )
        lines.append("        ],")
        # Leave `outputs` out of some tasks with none: the reader must default it to [].
        if task["outputs"] or i % 2 == 0:
            lines.append(f"        outputs={task['outputs']!r},")
        lines.append("    ),")
    lines.append("]")
    return "\n".join(lines) + "\n"


def rules_source(rules: list[str]) -> str:
    body = "".join(f"    {rule!r},\n" for rule in rules)
    return f"# generated for tests\n\nRULES = [\n{body}]\n"


def class_name(tool: str) -> str:
    return "".join(part.capitalize() for part in tool.split("_"))


def tool_source(info: dict[str, Any]) -> str:
    name = info["function"]["name"]
    return (
        "from typing import Any, Dict\n"
        "from tau_bench.envs.tool import Tool\n\n\n"
        f"class {class_name(name)}(Tool):\n"
        "    @staticmethod\n"
        "    def invoke(data: Dict[str, Any], **kwargs: Any) -> str:\n"
        "        return json.dumps({'not': 'a literal'})\n\n"
        "    @staticmethod\n"
        "    def get_info() -> Dict[str, Any]:\n"
        f"        return {info!r}\n"
    )


def tools_init_source(names: list[str]) -> str:
    # Imports in reverse order: the tool order must come from ALL_TOOLS, not the imports.
    imports = "".join(f"from .{n} import {class_name(n)}\n" for n in reversed(names))
    listing = "".join(f"    {class_name(n)},\n" for n in names)
    return f"{imports}\n\nALL_TOOLS = [\n{listing}]\n"


def upstream_files(data_dir: Path, table: PinnedTable) -> dict[str, bytes]:
    """Upstream path → bytes for every source of `table` (verbatim files copied as is)."""
    files: dict[str, bytes] = {}
    for entry in table.files:
        target = data_dir / entry.path
        if entry.kind == "verbatim":
            files[entry.sources[0].path] = target.read_bytes()
        elif entry.kind == "tasks":
            assert entry.variable
            tasks = json.loads(target.read_text())
            files[entry.sources[0].path] = tasks_source(tasks, entry.variable).encode()
        elif entry.kind == "rules":
            files[entry.sources[0].path] = rules_source(json.loads(target.read_text())).encode()
        elif entry.kind == "tools":
            infos = json.loads(target.read_text())
            names = [info["function"]["name"] for info in infos]
            init = entry.sources[0].path
            files[init] = tools_init_source(names).encode()
            package = PurePosixPath(init).parent
            for info in infos:
                path = str(package / f"{info['function']['name']}.py")
                files[path] = tool_source(info).encode()
    return files


def table_for(files: dict[str, bytes], table: PinnedTable) -> PinnedTable:
    """`table` with each source's sha256/size replaced by those of `files`."""

    def source(s: Source) -> Source:
        data = files[s.path]
        return Source(s.path, hashlib.sha256(data).hexdigest(), len(data))

    entries = [
        dataclasses.replace(entry, sources=tuple(source(s) for s in entry.sources))
        for entry in table.files
    ]
    return dataclasses.replace(table, files=tuple(entries))


def single_file_table(entry: PinnedFile, table: PinnedTable) -> PinnedTable:
    return dataclasses.replace(table, files=(entry,))
