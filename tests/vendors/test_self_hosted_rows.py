"""Self-hosted servers report as enforced only what each one's JSON-schema compiler holds the model to: vLLM
(xgrammar, falling back to guidance), SGLang (xgrammar alone), llama.cpp's converter (llama-server and Ollama).
The rest is listed as checked by guardrail after parsing."""

from __future__ import annotations

import json
from typing import Annotated, Any

import openai
import pytest
from pydantic import BaseModel, Field

import guardrail
from guardrail.schema.lower import lower
from guardrail.schema.report import CompileReport
from guardrail.testing import Emulator, reply
from guardrail.vendors.profiles import PROFILES, capabilities


class Reading(BaseModel):
    count: int = Field(ge=1, le=9)
    ratio: float = Field(ge=0.5, le=2.5)
    code: Annotated[str, Field(pattern=r"^[A-Z]{3}$", min_length=3, max_length=3)]
    loose: Annotated[str, Field(pattern=r"[a-z]+")]
    name: str = Field(min_length=2, max_length=40)
    step: int = Field(multiple_of=5)
    tags: set[str] = Field(min_length=1, max_length=4)
    email: Annotated[str, Field(json_schema_extra={"format": "email"})]
    day: Annotated[str, Field(json_schema_extra={"format": "date"})]
    pair: tuple[int, str]


def report_for(server: str) -> CompileReport:
    caps = capabilities(server, "any-model")
    return lower(Reading.model_json_schema(), caps.native_dialect).report


def action(report: CompileReport, field: str, keyword: str) -> str:
    path = f"/properties/{field}"
    found = [e.action for e in report.entries if e.keyword == keyword and e.path == path]
    assert len(found) == 1, (field, keyword, report.summary())
    return found[0]


# (field, keyword) -> action, per server
EXPECTED: dict[str, dict[tuple[str, str], str]] = {
    "vllm": {
        ("count", "minimum"): "enforced", ("ratio", "minimum"): "enforced", ("code", "pattern"): "enforced",
        ("code", "minLength"): "enforced", ("loose", "pattern"): "enforced", ("name", "maxLength"): "enforced",
        ("step", "multipleOf"): "enforced", ("tags", "uniqueItems"): "post_validated",
        ("tags", "minItems"): "enforced", ("email", "format"): "enforced", ("day", "format"): "enforced",
        ("pair", "prefixItems"): "enforced",
    },
    "sglang": {
        ("count", "minimum"): "enforced", ("ratio", "minimum"): "enforced", ("code", "pattern"): "enforced",
        ("code", "minLength"): "post_validated", ("loose", "pattern"): "enforced", ("name", "maxLength"): "enforced",
        ("step", "multipleOf"): "post_validated", ("tags", "uniqueItems"): "post_validated",
        ("tags", "minItems"): "enforced", ("email", "format"): "enforced", ("day", "format"): "enforced",
        ("pair", "prefixItems"): "enforced",
    },
    "llamacpp": {
        ("count", "minimum"): "enforced", ("ratio", "minimum"): "post_validated", ("code", "pattern"): "enforced",
        ("code", "minLength"): "enforced", ("loose", "pattern"): "post_validated", ("name", "maxLength"): "enforced",
        ("step", "multipleOf"): "post_validated", ("tags", "uniqueItems"): "post_validated",
        ("tags", "minItems"): "enforced", ("email", "format"): "post_validated", ("day", "format"): "enforced",
        ("pair", "prefixItems"): "post_validated",
    },
}
EXPECTED["ollama"] = EXPECTED["llamacpp"]  # Ollama compiles its format schema with llama.cpp's converter


@pytest.mark.parametrize("server", sorted(EXPECTED))
def test_each_server_reports_what_its_compiler_enforces(server: str) -> None:
    report = report_for(server)
    assert report.ok and report.dialect == capabilities(server, "m").native_dialect
    got = {key: action(report, *key) for key in EXPECTED[server]}
    assert got == EXPECTED[server]


def test_the_servers_do_not_share_one_dialect() -> None:
    dialects = {row.server: row.caps.native_dialect for row in PROFILES if row.server}
    assert dialects == {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llamacpp", "ollama": "llamacpp"}


@pytest.mark.parametrize(("server", "field_in_request"), [("vllm", "structured_outputs"), ("llamacpp", "json_schema")])
def test_a_call_carries_the_servers_compile_report(emu: Emulator, server: str, field_in_request: str) -> None:
    good: dict[str, Any] = {"count": 2, "ratio": 1.0, "code": "ABC", "loose": "ab", "name": "Al", "step": 10,
                            "tags": ["x"], "email": "a@b.co", "day": "2026-01-02", "pair": [1, "a"]}
    emu.script(reply.answer(json.dumps(good)))
    client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="x"), server=server)
    result = client.chat.completions.create_with_result(model="local", messages=[{"role": "user", "content": "go"}],
                                                        response_model=Reading)
    assert result.mode == "native" and result.provider == server
    assert result.compile_report is not None and result.compile_report.dialect == server
    assert result.compile_report.enforced and result.compile_report.post_validated
    assert field_in_request in emu.requests[0].body
