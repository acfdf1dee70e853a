"""Capability profiles: what each provider's models support, one row per provider and model family.

A mode is a strategy (:mod:`guardrail.vendors.plans`); a profile says which modes a provider offers and which
schema subset its native mode accepts. Rows are data, built by keyword; a new provider is a new row here (plus
an endpoint and the emulator's wire, see docs/vendors.md). The first row whose provider matches and whose model
pattern matches the model wins, so a provider's catch-all row (``models=r".*"``) comes last.

Self-hosted OpenAI-compatible servers are rows too: ``server`` names the kind ``wrap(client, server=...)``
takes, and :data:`SERVER_KINDS` is read off the rows, so a new server kind is one row (and its request fields
in :func:`guardrail.vendors.openai_chat.native_fields`).

Hosted OpenAI-compatible providers reached with ``openai.OpenAI(base_url=...)`` are picked by the base URL's
host (a row's ``hosts``, :func:`provider_for_host`); a host no row names is :data:`OPENAI_COMPATIBLE`, which
starts at JSON mode, and a 400 for a mode walks down to the next. The cloud platforms serving Anthropic's models
(Amazon Bedrock, Vertex AI) are picked by the client class (:data:`guardrail.vendors.registry.SDKS`). Provider
names are the OpenTelemetry ``gen_ai.provider.name`` values where the conventions list one.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass, field
from typing import Literal, get_args

from guardrail.schema.dialects import LLAMACPP, SGLANG, VLLM
from guardrail.schema.lower import Dialect

__all__ = ["MODES", "OPENAI_COMPATIBLE", "PROFILES", "PROVIDERS", "SERVER_KINDS", "Capabilities", "Mode", "Profile",
           "capabilities", "provider_for_host"]

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
    ``server`` kind the row stands for (``None`` for a hosted vendor), ``hosts``: the base-URL hosts that
    name this provider for an OpenAI-compatible client (``"api.groq.com"``; a leading dot matches any host
    ending so, ``".openai.azure.com"``), and ``source``: where the facts came from."""

    provider: str
    caps: Capabilities
    models: str = r".*"
    server: str | None = None
    hosts: tuple[str, ...] = ()
    source: str = field(default="", compare=False)


_OPENAI_STRICT = Capabilities(native=True, tool=True, strict_tool=True, json_mode=True,
                              native_dialect="openai_strict")
_DOCS_OPENAI = "platform.openai.com/docs/guides/structured-outputs"
_DOCS_ANTHROPIC = "docs.anthropic.com/en/docs/build-with-claude/structured-outputs"
#: Gemini: native JSON Schema output, forced function calling (mode ANY, one allowed function), a JSON mime type;
#: function parameters are not a strict subset, so tool mode is advisory. Gemini 3 models are meant to run at
#: their default temperature (1.0; lower values may loop), so repairs do not lower it.
_GEMINI = Capabilities(native=True, tool=True, json_mode=True, native_dialect="gemini")
_DOCS_GEMINI = ("ai.google.dev/gemini-api/docs/structured-output, /function-calling (mode ANY, "
                "allowed_function_names), /gemini-3 (keep temperature at 1.0)")
_DOCS_VERTEX_GEMINI = ("cloud.google.com/vertex-ai/generative-ai/docs/multimodal/control-generated-output, "
                "/multimodal/function-calling (the same generateContent API as the Gemini API)")

_ANTHROPIC_STRICT = Capabilities(native=True, tool=True, strict_tool=True, native_dialect="anthropic_strict",
                                 temperature=False)
#: Forced tools without strict mode: what Claude offers where structured outputs are not (yet) served.
_ANTHROPIC_TOOL = Capabilities(tool=True, native_dialect="anthropic_strict", temperature=False)
_TOOL_JSON = Capabilities(tool=True, json_mode=True)
#: An OpenAI-style json_schema response format, constrained (no strict tools): OpenAI's subset is what is sent.
_JSON_SCHEMA = Capabilities(native=True, tool=True, json_mode=True, native_dialect="openai_strict")
_DOCS_AZURE = "learn.microsoft.com/azure/ai-foundry/openai/how-to/structured-outputs"
_DOCS_BEDROCK = ("docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-structured-outputs.html (InvokeModel "
                 "on bedrock-runtime: output_config.format and strict tools for Claude Sonnet 4.5, Haiku 4.5, "
                 "Opus 4.5, Opus 4.6; platform.claude.com structured-outputs adds Sonnet 4.6)")
_DOCS_VERTEX = ("docs.cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/structured_outputs "
                "(Opus 4.7, Sonnet 4.6, Opus 4.6; the 4.5 models 'coming soon'; off until the organization policy "
                "vertexai.allowedPartnerModelFeatures allows structured_outputs, then a 400 walks down)")

#: The provider of an OpenAI-compatible base URL no row names: JSON mode first (nothing stronger is assumed).
OPENAI_COMPATIBLE = "openai_compatible"

PROFILES: tuple[Profile, ...] = (
    Profile(provider="openai", models=r"(gpt-3\.5|gpt-4-|gpt-4$|gpt-4-turbo)", source=_DOCS_OPENAI,
            caps=Capabilities(tool=True, json_mode=True, native_dialect="openai_strict")),
    Profile(provider="openai", models=r"(o1|o3|o4|gpt-5)", source=_DOCS_OPENAI,
            caps=Capabilities(native=True, tool=True, strict_tool=True, json_mode=True,
                              native_dialect="openai_strict", temperature=False)),
    Profile(provider="openai", caps=_OPENAI_STRICT, source=_DOCS_OPENAI, hosts=("api.openai.com",)),
    # Azure OpenAI (an openai.AzureOpenAI client, or openai.OpenAI at an Azure host's /openai/v1): deployment
    # names are the customer's; one named like its model gets that model's row, any other the strict one (the
    # same subset as OpenAI's). An api-version older than 2024-08-01-preview refuses json_schema with a 400
    # about response_format, which walks down.
    Profile(provider="azure.ai.openai", models=r"(gpt-35|gpt-3\.5|gpt-4-|gpt-4$|gpt-4-turbo)", source=_DOCS_AZURE,
            caps=Capabilities(tool=True, json_mode=True, native_dialect="openai_strict")),
    Profile(provider="azure.ai.openai", models=r"(o1|o3|o4|gpt-5)", source=_DOCS_AZURE,
            caps=Capabilities(native=True, tool=True, strict_tool=True, json_mode=True,
                              native_dialect="openai_strict", temperature=False)),
    Profile(provider="azure.ai.openai", caps=_OPENAI_STRICT, source=_DOCS_AZURE,
            hosts=(".openai.azure.com", ".services.ai.azure.com", ".cognitiveservices.azure.com")),
    # Hosted OpenAI-compatible providers, chosen by the base URL's host.
    Profile(provider="groq", models=r"openai/gpt-oss", caps=_OPENAI_STRICT,
            source="console.groq.com/docs/structured-outputs (strict: true, constrained decoding, on select "
                   "models: the gpt-oss family)"),
    Profile(provider="groq", caps=_TOOL_JSON, hosts=("api.groq.com",),
            source="console.groq.com/docs/structured-outputs (other models: best-effort json_schema, not "
                   "constrained, so not taken for native), console.groq.com/docs/tool-use"),
    Profile(provider="together", caps=_TOOL_JSON, hosts=("api.together.xyz", "api.together.ai"),
            source="docs.together.ai/docs/json-mode and function-calling (JSON mode and tools on listed models; "
                   "its schema form is not OpenAI's strict one, so no native row)"),
    Profile(provider="fireworks", caps=_JSON_SCHEMA,
            hosts=("api.fireworks.ai",),
            source="docs.fireworks.ai/structured-responses/structured-response-formatting (response_format "
                   "json_schema enforced during generation; json_object)"),
    Profile(provider="deepseek", caps=_TOOL_JSON, hosts=("api.deepseek.com",),
            source="api-docs.deepseek.com/guides/json_mode (json_object only) and guides/function_calling "
                   "(strict tools only on the /beta base URL: not assumed)"),
    Profile(provider="mistral_ai", caps=_JSON_SCHEMA,
            hosts=("api.mistral.ai",),
            source="docs.mistral.ai/capabilities/structured-output/custom_structured_output (json_schema for "
                   "all models since 2025-01-28) and json_mode"),
    Profile(provider="openrouter", models=r"openai/", caps=_OPENAI_STRICT,
            source="openrouter.ai/docs/structured-outputs (json_schema on compatible models; OpenAI's models)"),
    Profile(provider="openrouter", caps=_TOOL_JSON, hosts=("openrouter.ai",),
            source="openrouter.ai/docs/api-reference/overview (json_object and tools, per model: a 400 walks "
                   "down)"),
    Profile(provider="x_ai", caps=_JSON_SCHEMA,
            hosts=("api.x.ai",),
            source="docs.x.ai/docs/guides/structured-outputs (response_format json_schema, grok-2-1212 and later)"),
    Profile(provider=OPENAI_COMPATIBLE, caps=Capabilities(json_mode=True),
            source="an OpenAI-compatible base URL no row names: JSON mode, then the prompt"),
    # anthropic 2.x's messages.create takes no sampling parameters, so repairs cannot lower a temperature.
    Profile(provider="anthropic", models=r"claude-(instant|2|3)", source=_DOCS_ANTHROPIC,
            caps=Capabilities(tool=True, native_dialect="anthropic_strict", temperature=False)),
    Profile(provider="anthropic", source=_DOCS_ANTHROPIC, caps=_ANTHROPIC_STRICT),
    # google-genai: the Gemini API and Vertex AI (a vertexai=True client) serve the same models and request (the
    # Vertex AI Gemini rows come before the Claude-on-Vertex catch-all below).
    # before 2.5: no JSON Schema output documented (forced functions and the JSON mime type only)
    Profile(provider="gcp.gemini", models=r"(models/)?gemini-(1\.|2\.0)", source=_DOCS_GEMINI,
            caps=Capabilities(tool=True, json_mode=True, native_dialect="gemini")),
    Profile(provider="gcp.gemini", models=r"(models/)?gemini-3", source=_DOCS_GEMINI,
            caps=Capabilities(native=True, tool=True, json_mode=True, native_dialect="gemini", temperature=False)),
    Profile(provider="gcp.gemini", models=r"(models/)?gemini-", caps=_GEMINI, source=_DOCS_GEMINI),
    Profile(provider="gcp.vertex_ai", models=r"(.*/)?gemini-(1\.|2\.0)", source=_DOCS_VERTEX_GEMINI,
            caps=Capabilities(tool=True, json_mode=True, native_dialect="gemini")),
    Profile(provider="gcp.vertex_ai", models=r"(.*/)?gemini-3", source=_DOCS_VERTEX_GEMINI,
            caps=Capabilities(native=True, tool=True, json_mode=True, native_dialect="gemini", temperature=False)),
    Profile(provider="gcp.vertex_ai", models=r"(.*/)?gemini-", caps=_GEMINI, source=_DOCS_VERTEX_GEMINI),
    # Claude on Amazon Bedrock (anthropic.AnthropicBedrock: InvokeModel; model ids such as
    # "us.anthropic.claude-sonnet-4-5-20250929-v1:0" or an inference-profile ARN ending so).
    Profile(provider="aws.bedrock", models=r".*anthropic\.claude-(sonnet-4-[56]|opus-4-[56]|haiku-4-5)",
            caps=_ANTHROPIC_STRICT, source=_DOCS_BEDROCK),
    Profile(provider="aws.bedrock", caps=_ANTHROPIC_TOOL, source=_DOCS_BEDROCK + "; other models: forced tools"),
    # Claude on Vertex AI (anthropic.AnthropicVertex: rawPredict; model ids such as "claude-opus-4-6").
    Profile(provider="gcp.vertex_ai", models=r"claude-(opus-4-[67]|sonnet-4-6)", caps=_ANTHROPIC_STRICT,
            source=_DOCS_VERTEX),
    Profile(provider="gcp.vertex_ai", caps=_ANTHROPIC_TOOL, source=_DOCS_VERTEX + "; other models: forced tools"),
    # Self-hosted servers: constrained decoding, each with its own compiler's dialect (guardrail.schema.dialects).
    Profile(provider="vllm", server="vllm", source="docs.vllm.ai: structured outputs; dialect: " + VLLM.source,
            caps=Capabilities(native=True, tool=True, json_mode=True, native_dialect="vllm")),
    Profile(provider="sglang", server="sglang", source="docs.sglang.ai: structured outputs; dialect: " + SGLANG.source,
            caps=Capabilities(native=True, tool=True, json_mode=True, native_dialect="sglang")),
    Profile(provider="llamacpp", server="llamacpp", source="llama.cpp tools/server/README.md; dialect: " +
            LLAMACPP.source, caps=Capabilities(native=True, json_mode=True, native_dialect="llamacpp")),
    Profile(provider="ollama", server="ollama", source="docs.ollama.com: structured outputs (format: a JSON schema, "
            "compiled by llama.cpp's converter); dialect: " + LLAMACPP.source,
            caps=Capabilities(native=True, tool=True, json_mode=True, native_dialect="llamacpp")),
)

#: The self-hosted server kinds ``guardrail.wrap(client, server=...)`` takes, read off the rows.
SERVER_KINDS: tuple[str, ...] = tuple(dict.fromkeys(row.server for row in PROFILES if row.server is not None))
#: Every hosted provider some row names, in row order: what ``guardrail.wrap(client, provider=...)`` takes (a
#: self-hosted server is named with ``server=``, which also sends its own request fields).
PROVIDERS: tuple[str, ...] = tuple(dict.fromkeys(row.provider for row in PROFILES if row.server is None))


@functools.lru_cache(maxsize=256)
def provider_for_host(host: str) -> str | None:
    """The provider an OpenAI-compatible client's base-URL ``host`` names: a row's (``hosts``); ``None`` for a
    loopback host (this machine: the emulator, a local proxy or a server without ``server=``, read as OpenAI as
    before); else :data:`OPENAI_COMPATIBLE`."""
    host = host.lower().rstrip(".")
    for row in PROFILES:
        if any(host == name or (name.startswith(".") and host.endswith(name)) for name in row.hosts):
            return row.provider
    if host == "localhost" or host.endswith(".localhost"):
        return None
    try:
        return None if ipaddress.ip_address(host.strip("[]")).is_loopback else OPENAI_COMPATIBLE
    except ValueError:
        return OPENAI_COMPATIBLE if host else None


@functools.lru_cache(maxsize=1024)
def capabilities(provider: str, model: str) -> Capabilities:
    """The capabilities of ``model`` at ``provider``: its provider's first matching row, else the prompt
    mode only. Cached: it matches the model name against the rows' patterns, and a program uses a few models."""
    for row in PROFILES:
        if row.provider == provider and re.match(row.models, model or ""):
            return row.caps
    return UNKNOWN
