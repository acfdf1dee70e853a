"""Loading a :class:`~guardrail.local.LocalModel` by name: a transformers checkpoint directory or a Hub id.

``guardrail eval --modes local --local-model PATH_OR_ID`` loads its model this way; in code,
``guardrail.local.load_local_model("./my-model")`` is ``LocalModel(AutoModelForCausalLM.from_pretrained(...),
AutoTokenizer.from_pretrained(...))``.
"""

from __future__ import annotations

from typing import Any

from guardrail._optional import require
from guardrail.errors import ConfigError

__all__ = ["load_local_model"]


def load_local_model(name_or_path: str, *, device: str | None = None) -> Any:
    """A :class:`~guardrail.local.LocalModel` over the causal LM and fast tokenizer at ``name_or_path``: a
    directory written by ``save_pretrained`` (model and tokenizer together), or a Hugging Face Hub id, which
    transformers downloads into its cache (none with ``HF_HUB_OFFLINE=1``). ``device``: as for ``LocalModel``
    (default: CUDA when available). A checkpoint that cannot be loaded is a :class:`ConfigError` naming it."""
    transformers = require("transformers", "local", "guardrail.local.load_local_model")
    from guardrail.local.model import LocalModel

    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(name_or_path)
        model = transformers.AutoModelForCausalLM.from_pretrained(name_or_path)
    except (OSError, ValueError, KeyError) as error:  # no such directory or id, no weights, an unknown model type
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ConfigError(f"cannot load the local model {name_or_path!r}: {first}") from None
    if not getattr(tokenizer, "is_fast", False):
        raise ConfigError(f"the local model {name_or_path!r} has no fast tokenizer (tokenizer.json), which "
                          "constrained decoding needs")
    return LocalModel(model, tokenizer, device=device)
