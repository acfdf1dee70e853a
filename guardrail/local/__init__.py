"""Local constrained decoding: a transformers model whose logits are masked by a grammar compiled from the
contract, so an output that breaks the contract's JSON Schema cannot be sampled (see :mod:`.model`)."""

from guardrail.local.choose import Choice, Uncertain, choose
from guardrail.local.grammar import GrammarError
from guardrail.local.model import BatchFailed, DeadEnd, LocalModel, Trace

__all__ = ["BatchFailed", "Choice", "DeadEnd", "GrammarError", "LocalModel", "Trace", "Uncertain", "choose"]
