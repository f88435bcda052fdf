"""`tau data pull --suite tau3` against a fake upstream (respx; never the network)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import httpx
import pytest
import respx

from tau_bench.data.errors import ChecksumError
from tau_bench.data.tau3_pull import (
    Tau3Manifest,
    missing_derived,
    pull_tau3,
    verify_tau3_files,
)

COMMIT = "a" * 40
SOURCE = (
    'AGENT_INSTRUCTION = """\n  be kind\n""".strip()\n'
    'SYSTEM_PROMPT = """<i>{agent_instruction}</i><p>{domain_policy}</p>"""\n'
)
FILES = {"data/tau2/domains/mock/policy.md": b"policy text\n"}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _manifest(prompt_sha: str | None = None) -> Tau3Manifest:
    files = tuple(
        {"path": p, "upstream_path": p, "sha256": _sha(d), "size": len(d)} for p, d in FILES.items()
    )
    src = SOURCE.encode()
    prompts = (
        {
            "name": "agent_instruction",
            "path": "prompts/agent_instruction.txt",
            "upstream_path": "src/tau2/agent/llm_agent.py",
            "source_sha256": _sha(src),
            "sha256": prompt_sha or _sha(b"be kind"),
        },
        {
            "name": "agent_system_prompt",
            "path": "prompts/agent_system_prompt.txt",
            "upstream_path": "src/tau2/agent/llm_agent.py",
            "source_sha256": _sha(src),
            "sha256": _sha(b"<i>{agent_instruction}</i><p>{domain_policy}</p>"),
        },
    )
    return Tau3Manifest("up/tau2", COMMIT, files, (), prompts)


def _serve(router: respx.MockRouter) -> None:
    base = f"https://raw.githubusercontent.com/up/tau2/{COMMIT}/"
    for path, data in FILES.items():
        router.get(base + path).mock(return_value=httpx.Response(200, content=data))
    router.get(base + "src/tau2/agent/llm_agent.py").mock(
        return_value=httpx.Response(200, content=SOURCE.encode())
    )


def test_pull_writes_verified_files_and_extracted_prompts(tmp_path: Path) -> None:
    dest = tmp_path / "cache"
    with respx.mock(assert_all_mocked=True) as router:
        _serve(router)
        pull_tau3(dest, progress=False, manifest=_manifest())
    assert (dest / "data/tau2/domains/mock/policy.md").read_bytes() == b"policy text\n"
    assert (dest / "prompts/agent_instruction.txt").read_text() == "be kind"
    assert all(c.ok for c in verify_tau3_files(dest, _manifest()))


def test_a_wrong_prompt_checksum_writes_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "cache"
    with respx.mock(assert_all_mocked=True) as router, pytest.raises(ChecksumError):
        _serve(router)
        pull_tau3(dest, progress=False, manifest=_manifest(prompt_sha="0" * 64))
    assert not dest.exists() and list(tmp_path.iterdir()) == []


def test_shipped_manifest_matches_the_offline_copy(data_root: Path) -> None:
    from tau_bench.data.tau3_pull import load_manifest

    manifest = load_manifest()
    assert manifest.commit == "a2c024725189473d2d7cea3a5cfdbcc67478e41f"
    checks = [
        c for c in verify_tau3_files(data_root, manifest) if not c.path.startswith("prompts/")
    ]
    assert checks and all(c.ok for c in checks)


TOOLKIT = {
    "src/tau2/environment/toolkit.py": b"class ToolKitBase:\n    pass\n",
    "src/tau2/demo/tools.py": (
        b"from tau2.environment.toolkit import ToolKitBase, is_tool\n\n\n"
        b"class DemoTools(ToolKitBase):\n"
        b"    @is_tool()\n"
        b"    def greet(self, name: str, times: int = 1) -> str:\n"
        b'        """Greet someone.\n\n        Args:\n            name: Who.\n        """\n'
    ),
}
SCHEMA = [
    {
        "type": "function",
        "function": {
            "name": "greet",
            "description": "Greet someone.",
            "parameters": {
                "properties": {
                    "name": {"description": "Who.", "title": "Name", "type": "string"},
                    "times": {"default": 1, "title": "Times", "type": "integer"},
                },
                "required": ["name"],
                "title": "parameters",
                "type": "object",
            },
        },
    }
]


def _tool_manifest(schema_sha: str) -> Tau3Manifest:
    base = _manifest()
    derived = (
        {
            "path": "demo/tools.json",
            "sha256": schema_sha,
            "module": "tau2.demo.tools",
            "class": "DemoTools",
        },
    )
    sources = tuple(
        {"upstream_path": p, "sha256": _sha(d), "size": len(d)} for p, d in TOOLKIT.items()
    )
    return Tau3Manifest(base.repo, base.commit, base.files, derived, base.prompts, sources)


def _serve_toolkit(router: respx.MockRouter) -> None:
    _serve(router)
    base = f"https://raw.githubusercontent.com/up/tau2/{COMMIT}/"
    for path, data in TOOLKIT.items():
        router.get(base + path).mock(return_value=httpx.Response(200, content=data))


def test_pull_builds_the_tool_schemas_from_the_toolkit_source(tmp_path: Path) -> None:
    expected = (json.dumps(SCHEMA, indent=2) + "\n").encode()
    dest = tmp_path / "cache"
    with respx.mock(assert_all_mocked=True) as router:
        _serve_toolkit(router)
        pull_tau3(dest, progress=False, manifest=_tool_manifest(_sha(expected)))
    assert (dest / "demo/tools.json").read_bytes() == expected
    assert missing_derived(dest, _tool_manifest(_sha(expected))) == []
    assert not (dest / "src").exists()  # upstream source is read, never stored


def test_a_tool_schema_mismatch_names_the_file_and_writes_nothing(tmp_path: Path) -> None:
    dest = tmp_path / "cache"
    with (
        respx.mock(assert_all_mocked=True) as router,
        pytest.raises(ChecksumError, match=re.escape("demo/tools.json")),
    ):
        _serve_toolkit(router)
        pull_tau3(dest, progress=False, manifest=_tool_manifest("0" * 64))
    assert list(tmp_path.iterdir()) == []


def test_shipped_manifest_lists_every_schema_with_its_toolkit_and_sources() -> None:
    from tau_bench.data.tau3_pull import load_manifest

    manifest = load_manifest()
    assert {e["path"] for e in manifest.derived} == {
        f"{d}/tools.json" for d in ("airline", "retail", "telecom", "mock")
    } | {"telecom/user_tools.json", "mock/user_tools.json"}
    assert all(e["module"] and e["class"] for e in manifest.derived)
    paths = {e["upstream_path"] for e in manifest.tool_sources}
    assert {f"src/{e['module'].replace('.', '/')}.py" for e in manifest.derived} <= paths
