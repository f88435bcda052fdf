"""`tau data pull --suite tau3` against a fake upstream (respx; never the network)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import httpx
import pytest
import respx

from tau_bench.data.pull import ChecksumError
from tau_bench.data.tau3_pull import Tau3Manifest, pull_tau3, verify_tau3_files

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
