"""One configuration object shared by the three entry points (wrapper, decorator, command).

``guardrail.configure(...)`` sets the process-wide defaults once; a decorator's keywords override them per
function. Without ``configure``, the defaults come from the environment (:meth:`Config.from_env`):

======================  =====================================================================================
``GUARDRAIL_VENDOR``    ``openai``, ``anthropic`` or ``gemini`` (default: whichever of ``OPENAI_API_KEY`` /
                        ``ANTHROPIC_API_KEY`` / ``GEMINI_API_KEY`` is set, in that order; Gemini's key may be
                        ``GOOGLE_API_KEY`` too)
``GUARDRAIL_MODEL``     the model name (default: ``gpt-4o-mini`` / ``claude-haiku-4-5`` / ``gemini-2.5-flash``)
``GUARDRAIL_BASE_URL``  an OpenAI-compatible server or a proxy (the SDK's own ``*_BASE_URL`` also works)
``GUARDRAIL_SERVER``    the self-hosted server kind: ``vllm``, ``sglang``, ``llamacpp``, ``ollama``
``GUARDRAIL_MAX_ATTEMPTS``, ``GUARDRAIL_MAX_TOKENS``  integers
======================  =====================================================================================
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from guardrail._optional import require
from guardrail.call.options import RetryPolicy, Settings
from guardrail.errors import ConfigError
from guardrail.outcome import Budget
from guardrail.vendors.profiles import Mode

Api = Literal["chat", "responses", "messages", "gemini"]
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5", "gemini": "gemini-2.5-flash"}


@dataclass(frozen=True, slots=True)
class Config:
    """Which vendor client and model to call, and how (every field optional; ``None`` means "not set here").

    Attributes:
        client: a sync ``openai``/``anthropic`` client (raw or already wrapped) for plain functions.
        async_client: an async client for ``async def`` functions.
        model: the model name sent with each request.
        api: ``"chat"`` (default for OpenAI), ``"responses"``, or ``"messages"`` (Anthropic).
        server: the self-hosted server kind for an OpenAI-compatible client.
        max_tokens: the output-token limit per request (Anthropic requires one; 1024 when unset).
        aliases, max_attempts, budget, mode: as for ``create(response_model=...)``.
        settings, retry: the attempt-loop and transport policies used when wrapping a raw client.
        store: the :class:`~guardrail.store.Store` for idempotency, quotas and approvals (in-memory if unset).
        policies: the directory of per-tool policy files (``policies`` if unset).
        chain: a :class:`~guardrail.chain.tiers.Chain` that decorated functions use instead of a single client.
        cache: a response cache (:class:`~guardrail.call.cache.Cache`) decorated functions' calls go through.
        record: where decorated functions' calls are recorded for replay: a JSONL file path or a
            :class:`~guardrail.replay.Recorder` (:mod:`guardrail.replay`); off when unset.
    """

    client: Any = None
    async_client: Any = None
    model: str | None = None
    api: Api | None = None
    server: str | None = None
    max_tokens: int | None = None
    aliases: Mapping[str, str] | None = None
    max_attempts: int | None = None
    budget: Budget | None = None
    mode: Mode | None = None
    settings: Settings | None = None
    retry: RetryPolicy | None = None
    store: Any = None
    policies: str | None = None
    chain: Any = None
    cache: Any = None
    record: Any = None

    def merge(self, **overrides: Any) -> Config:
        """A copy with every override that is not ``None`` applied."""
        given = {key: value for key, value in overrides.items() if value is not None}
        return dataclasses.replace(self, **given) if given else self

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Config:
        """Defaults read from the environment (see the module docstring); clients are created only if a vendor is."""
        env = os.environ if environ is None else environ
        vendor = env.get("GUARDRAIL_VENDOR") or ("openai" if env.get("OPENAI_API_KEY") else
                                                 "anthropic" if env.get("ANTHROPIC_API_KEY") else
                                                 "gemini" if env.get("GEMINI_API_KEY") else None)
        base_url = env.get("GUARDRAIL_BASE_URL") or None
        config = cls(model=env.get("GUARDRAIL_MODEL") or DEFAULT_MODELS.get(vendor or ""),
                     server=env.get("GUARDRAIL_SERVER") or None,
                     max_attempts=_int(env, "GUARDRAIL_MAX_ATTEMPTS"), max_tokens=_int(env, "GUARDRAIL_MAX_TOKENS"))
        if vendor == "openai":
            openai = require("openai", "openai", "GUARDRAIL_VENDOR=openai")
            key = env.get("OPENAI_API_KEY")
            return config.merge(client=openai.OpenAI(api_key=key, base_url=base_url),
                                async_client=openai.AsyncOpenAI(api_key=key, base_url=base_url))
        if vendor == "anthropic":
            anthropic = require("anthropic", "anthropic", "GUARDRAIL_VENDOR=anthropic")
            key = env.get("ANTHROPIC_API_KEY")
            return config.merge(client=anthropic.Anthropic(api_key=key, base_url=base_url),
                                async_client=anthropic.AsyncAnthropic(api_key=key, base_url=base_url))
        if vendor == "gemini":  # the async client is the sync one's client.aio
            genai = require("google.genai", "gemini", "GUARDRAIL_VENDOR=gemini")
            key = env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY")
            client = genai.Client(api_key=key, http_options={"base_url": base_url} if base_url else None)
            return config.merge(client=client, async_client=client.aio)
        if vendor is not None:
            raise ConfigError(f"GUARDRAIL_VENDOR must be 'openai', 'anthropic' or 'gemini', not {vendor!r}")
        return config


def _int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name)
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, not {raw!r}") from None


_configured: Config | None = None


def configure(config: Config | None = None, **fields: Any) -> Config:
    """Set the process-wide defaults: a whole :class:`Config`, and/or fields on top of the current one."""
    global _configured
    base = config if config is not None else (_configured or Config())
    _configured = base.merge(**fields)
    return _configured


def get_config() -> Config:
    """The process-wide defaults: what :func:`configure` set, else :meth:`Config.from_env` (read once)."""
    global _configured
    if _configured is None:
        _configured = Config.from_env()
    return _configured


def reset_config() -> None:
    """Forget what :func:`configure` set (tests); the next :func:`get_config` reads the environment again."""
    global _configured
    _configured = None
