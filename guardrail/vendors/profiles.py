"""Capability profiles: what each provider's models support, one row per provider and model family.

A mode is a strategy (:mod:`guardrail.vendors.plans`); a profile says which modes a provider offers and which
schema subset its native mode accepts. Rows are data, built by keyword; a new provider is a new row here (plus
an endpoint and the emulator's wire, see docs/vendors.md). The first row whose provider matches and whose model
pattern matches the model wins, so a provider's catch-all row (``models=r".*"``) comes last.

Self-hosted OpenAI-compatible servers are rows too: ``server`` names the kind ``wrap(client, server=...)``
takes, and :data:`SERVER_KINDS` is read off the rows, so a new server kind is one row (and its request fields
in :func:`guardrail.vendors.openai_chat.native_fields`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Literal, get_args

from guardrail.schema.lower import Dialect

__all__ = ["MODES", "PROFILES", "SERVER_KINDS", "Capabilities", "Mode", "Profile", "capabilities"]

#: How the output format is enforced, strongest first (see :mod:`guardrail.vendors.plans`).
Mode = Literal["native", "tool", "json", "prompt"]
MODES: tuple[Mode, ...] = get_args(Mode)


@dataclass(frozen=True, slots=True, kw_only=True)
class Capabilities:
    """What one provider's model family supports.

    Attributes:
        native: a strict JSON-schema output mode of the vendor's own.
        tool: tools can be forced with ``tool_choice`` (the output-tool mode).
        strict_tool: tools take ``strict: true`` (the same schema subset as the native mode).
        json_mode: a JSON mode (JSON guaranteed, the schema only in the prompt).
        native_dialect: the schema subset the native mode (and strict tools) accept.
        temperature: whether the model takes a temperature at all (reasoning models do not, so repair
            attempts cannot lower it).
    """

    native: bool = False
    tool: bool = False
    strict_tool: bool = False
    json_mode: bool = False
    native_dialect: Dialect = "advisory"
    temperature: bool = True


#: What a model no row knows gets: the prompt mode only.
UNKNOWN = Capabilities()


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """One row: ``provider`` (the ``gen_ai.provider.name`` an endpoint reports, or a server kind) and the
    ``models`` pattern (``re.match`` against the model name) it covers, their ``caps``, the self-hosted
    ``server`` kind the row stands for (``None`` for a hosted vendor), and ``source``: where the facts came
    from."""

    provider: str
    caps: Capabilities
    models: str = r".*"
    server: str | None = None
    source: str = field(default="", compare=False)


_OPENAI_STRICT = Capabilities(native=True, tool=True, strict_tool=True, json_mode=True,
                              native_dialect="openai_strict")
_GRAMMAR = Capabilities(native=True, tool=True, json_mode=True, native_dialect="grammar")
_DOCS_OPENAI = "platform.openai.com/docs/guides/structured-outputs"
_DOCS_ANTHROPIC = "docs.anthropic.com/en/docs/build-with-claude/structured-outputs"
#: Gemini: native JSON Schema output, forced function calling (mode ANY, one allowed function), a JSON mime type;
#: function parameters are not a strict subset, so tool mode is advisory. Gemini 3 models are meant to run at
#: their default temperature (1.0; lower values may loop), so repairs do not lower it.
_GEMINI = Capabilities(native=True, tool=True, json_mode=True, native_dialect="gemini")
_DOCS_GEMINI = ("ai.google.dev/gemini-api/docs/structured-output, /function-calling (mode ANY, "
                "allowed_function_names), /gemini-3 (keep temperature at 1.0)")
_DOCS_VERTEX = ("cloud.google.com/vertex-ai/generative-ai/docs/multimodal/control-generated-output, "
                "/multimodal/function-calling (the same generateContent API as the Gemini API)")

PROFILES: tuple[Profile, ...] = (
    Profile(provider="openai", models=r"(gpt-3\.5|gpt-4-|gpt-4$|gpt-4-turbo)", source=_DOCS_OPENAI,
            caps=Capabilities(tool=True, json_mode=True, native_dialect="openai_strict")),
    Profile(provider="openai", models=r"(o1|o3|o4|gpt-5)", source=_DOCS_OPENAI,
            caps=Capabilities(native=True, tool=True, strict_tool=True, json_mode=True,
                              native_dialect="openai_strict", temperature=False)),
    Profile(provider="openai", caps=_OPENAI_STRICT, source=_DOCS_OPENAI),
    # anthropic 2.x's messages.create takes no sampling parameters, so repairs cannot lower a temperature.
    Profile(provider="anthropic", models=r"claude-(instant|2|3)", source=_DOCS_ANTHROPIC,
            caps=Capabilities(tool=True, native_dialect="anthropic_strict", temperature=False)),
    Profile(provider="anthropic", source=_DOCS_ANTHROPIC,
            caps=Capabilities(native=True, tool=True, strict_tool=True, native_dialect="anthropic_strict",
                              temperature=False)),
    # google-genai: the Gemini API and Vertex AI (a vertexai=True client) serve the same models and request.
    # before 2.5: no JSON Schema output documented (forced functions and the JSON mime type only)
    Profile(provider="gcp.gemini", models=r"(models/)?gemini-(1\.|2\.0)", source=_DOCS_GEMINI,
            caps=Capabilities(tool=True, json_mode=True, native_dialect="gemini")),
    Profile(provider="gcp.gemini", models=r"(models/)?gemini-3", source=_DOCS_GEMINI,
            caps=Capabilities(native=True, tool=True, json_mode=True, native_dialect="gemini", temperature=False)),
    Profile(provider="gcp.gemini", models=r"(models/)?gemini-", caps=_GEMINI, source=_DOCS_GEMINI),
    Profile(provider="gcp.vertex_ai", models=r"(.*/)?gemini-(1\.|2\.0)", source=_DOCS_VERTEX,
            caps=Capabilities(tool=True, json_mode=True, native_dialect="gemini")),
    Profile(provider="gcp.vertex_ai", models=r"(.*/)?gemini-3", source=_DOCS_VERTEX,
            caps=Capabilities(native=True, tool=True, json_mode=True, native_dialect="gemini", temperature=False)),
    Profile(provider="gcp.vertex_ai", models=r"(.*/)?gemini-", caps=_GEMINI, source=_DOCS_VERTEX),
    # Self-hosted servers: constrained decoding compiled from (nearly) full JSON Schema.
    Profile(provider="vllm", server="vllm", caps=_GRAMMAR, source="docs.vllm.ai: structured outputs"),
    Profile(provider="sglang", server="sglang", caps=_GRAMMAR, source="docs.sglang.ai: structured outputs"),
    Profile(provider="llamacpp", server="llamacpp", source="llama.cpp tools/server/README.md",
            caps=Capabilities(native=True, json_mode=True, native_dialect="grammar")),
    Profile(provider="ollama", server="ollama", caps=_GRAMMAR, source="docs.ollama.com: structured outputs"),
)

#: The self-hosted server kinds ``guardrail.wrap(client, server=...)`` takes, read off the rows.
SERVER_KINDS: tuple[str, ...] = tuple(dict.fromkeys(row.server for row in PROFILES if row.server is not None))


@functools.lru_cache(maxsize=1024)
def capabilities(provider: str, model: str) -> Capabilities:
    """The capabilities of ``model`` at ``provider``: its provider's first matching row, else the prompt
    mode only. Cached: it matches the model name against the rows' patterns, and a program uses a few models."""
    for row in PROFILES:
        if row.provider == provider and re.match(row.models, model or ""):
            return row.caps
    return UNKNOWN
