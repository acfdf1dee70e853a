"""A puppet causal LM for local decoding tests: it aims greedy decoding at one precise target text, so a test
can drive the grammar-masked loop into a chosen (valid or invalid) output and see what the mask lets through."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import torch

import guardrail
from guardrail.local import LocalModel

__all__ = ["Puppet", "steer"]


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, reversed: the character a token string uses for each byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    cs = bs[:]
    extra = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(bs, cs, strict=True)}


class Puppet(torch.nn.Module):  # type: ignore[misc]
    """A causal LM whose next-token logits favour continuing ``targets[row]`` (the full text, prompt included).

    Tokens whose bytes continue the target score ``10 * len(bytes)`` (greedy takes the longest), EOS scores high
    once the target is complete, everything else -1000. ``special_text``: special tokens count as their literal
    text (a naive model that would like to write ``<|im_end|>`` as that token)."""

    def __init__(self, tokenizer: Any, targets: str | list[str], *, extra_vocab: int = 8,
                 special_text: bool = False) -> None:
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        decoder = _byte_decoder()
        vocab = len(tokenizer) + extra_vocab
        self.config = SimpleNamespace(vocab_size=vocab, n_positions=4096)
        special = set(tokenizer.all_special_ids)
        self.pieces: list[bytes | None] = []
        for i in range(vocab):
            if i >= len(tokenizer):
                self.pieces.append(None)
            elif i in special:
                self.pieces.append(tokenizer.convert_ids_to_tokens(i).encode() if special_text else b"")
            else:
                self.pieces.append(bytes(decoder[c] for c in tokenizer.convert_ids_to_tokens(i)))
        self.eos = tokenizer.eos_token_id
        self.targets = [t.encode() for t in ([targets] if isinstance(targets, str) else targets)]
        self.seen: list[list[int]] = []

    def _scores(self, row: int, history: list[int]) -> Any:
        target = self.targets[min(row, len(self.targets) - 1)]
        done = b"".join(self.pieces[t] or b"" for t in history)
        out = torch.full((len(self.pieces),), -1000.0)
        if target.startswith(done):
            rest = target[len(done):]
            for i, piece in enumerate(self.pieces):
                if piece and rest.startswith(piece):
                    out[i] = 10.0 * len(piece)
            if not rest and self.eos is not None:
                out[self.eos] = 500.0
        return out

    def forward(self, input_ids: Any, attention_mask: Any = None, cache: Any = None, logits_to_keep: Any = None,
                **_: Any) -> Any:
        ids = input_ids.tolist()
        width = len(ids[0])
        if logits_to_keep is None:  # a full-sequence pass (choose): logits at every position
            rows = [torch.stack([self._scores(b, row[: j + 1]) for j in range(width)]) for b, row in enumerate(ids)]
            return SimpleNamespace(logits=torch.stack(rows), cache=None)
        keep = attention_mask[:, -width:].tolist()
        if cache is None:
            self.seen = [[] for _ in ids]
        for b, row in enumerate(ids):
            self.seen[b] += [t for t, k in zip(row, keep[b], strict=True) if k]
        rows = [self._scores(b, self.seen[b]).expand(len(logits_to_keep), -1) for b in range(len(ids))]
        return SimpleNamespace(logits=torch.stack(rows), cache=object())


def steer(tokenizer: Any, output_type: Any, text: str, *, prompt: str = "P:", max_new_tokens: int = 200,
          **options: Any) -> Any:
    """Greedy generation by a puppet aiming at ``text``: the value (or the typed error), and the trace text.
    ``options`` go to ``generate_with_trace`` (``enums=...``)."""
    model = LocalModel(Puppet(tokenizer, prompt + text), tokenizer, device="cpu")
    try:
        value, trace = model.generate_with_trace(prompt, output_type, temperature=0, max_new_tokens=max_new_tokens,
                                                 **options)
    except guardrail.GuardrailError as error:
        return error, getattr(error, "text", None)
    return value, trace.text
