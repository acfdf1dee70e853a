"""Tiny local models for tests and benchmarks, built offline in seconds (nothing is downloaded).

:func:`train_tokenizer` trains a byte-level BPE tokenizer with ``tokenizers`` on generated text (JSON in
several layouts, English and Korean), so tokens cross JSON punctuation and split multi-byte characters, the
way real tokenizers do. :func:`tiny_model` builds a randomly initialised causal LM over it. Random weights
make the model adversarial for constrained decoding: whatever it "wants", only the grammar mask keeps the
output valid. Requires the ``local`` extra.
"""

from __future__ import annotations

import json
import random
from typing import Any

__all__ = ["corpus", "tiny_local_model", "tiny_model", "train_tokenizer"]


_SYLLABLES = [a + b for a in "bcdfghjklmnprstvwz" for b in "aeiou"] + list("가나다라마바사아자차카타파하배송결제")


def corpus(size: int = 300, *, seed: int = 0, lines_of_words: int = 0) -> list[str]:
    """Generated training text: JSON objects compact and indented, English and Korean prose, and optionally
    ``lines_of_words`` lines of random pseudo-words (enough distinct strings for a large vocabulary)."""
    rng = random.Random(seed)
    out = [" ".join("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(200))
           for _ in range(lines_of_words)]
    for i in range(size):
        obj = {"name": f"item {i}", "count": i, "ok": i % 2 == 0, "tags": ["red", "blue"][: i % 3],
               "설명": "배송이 늦어요 " * (i % 3), "nested": {"x": rng.random(), "children": []}}
        out += [json.dumps(obj), json.dumps(obj, indent=2, ensure_ascii=False), "The quick brown fox. 안녕하세요."]
    return out


def train_tokenizer(vocab_size: int = 600) -> Any:
    """A ``PreTrainedTokenizerFast`` (byte-level BPE, ``<eos>`` special token) trained on :func:`corpus`.

    Above 1,000 ids the corpus gets pseudo-words so the vocabulary fills up (32,000 ids: about 10 s), which
    gives benchmarks a realistic mask size."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<eos>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    words = 0 if vocab_size <= 1000 else max(200, vocab_size // 8)
    tokenizer.train_from_iterator(corpus(lines_of_words=words), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<eos>")  # type: ignore[no-untyped-call]


def tiny_model(tokenizer: Any, *, extra_vocab: int = 40, layers: int = 1, width: int = 32, seed: int = 0,
               context: int = 4096) -> Any:
    """A random GPT-2 over ``tokenizer``; its output layer is ``extra_vocab`` ids larger than the tokenizer
    (as with real models padded to a multiple of 64), so padding ids must never be sampled."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tokenizer) + extra_vocab, n_positions=context, n_embd=width,
                        n_layer=layers, n_head=2, eos_token_id=tokenizer.eos_token_id,
                        bos_token_id=tokenizer.eos_token_id)
    return GPT2LMHeadModel(config)


def tiny_local_model(*, device: str | None = "cpu", **options: Any) -> Any:
    """A :class:`guardrail.local.LocalModel` over a fresh tokenizer and random model (see :func:`tiny_model`)."""
    from guardrail.local import LocalModel

    tokenizer = train_tokenizer()
    return LocalModel(tiny_model(tokenizer, **options), tokenizer, device=device)
