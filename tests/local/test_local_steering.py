"""The local tier steered: repetition control in sampling (a repeating model provoked on purpose), and a dead end
provoked on purpose, raised as a typed error that says where the parser stood."""

from __future__ import annotations

import re
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("llguidance")

from guardrail.errors import BatchFailed, ConfigError, DeadEnd  # noqa: E402
from guardrail.local import Grammar, LocalModel, Regex  # noqa: E402
from guardrail.local.decode import ban_repeats, banned_next, penalise_repeats  # noqa: E402
from guardrail.testing.tiny import tiny_model  # noqa: E402

LETTERS = Regex(r"[a-z ]{80}")


def repeated_ngrams(ids: list[int], n: int) -> int:
    grams = [tuple(ids[i:i + n]) for i in range(len(ids) - n + 1)]
    return len(grams) - len(set(grams))


def greedy(model: LocalModel, **options: Any) -> tuple[str, list[int], Any]:
    """Greedy letters with every token sampled (no jump-forward), so every token is the model's choice."""
    text, trace = model.generate_with_trace("Write:", LETTERS, temperature=0, max_new_tokens=100,
                                            jump_forward=False, **options)
    eos = model.tokenizer.eos_token_id
    return text, [t for t in trace.tokens if t != eos], trace


def test_the_tiny_model_left_alone_repeats_itself(tiny: LocalModel) -> None:
    text, ids, _ = greedy(tiny)
    assert re.fullmatch(r"[a-z ]{80}", text)
    assert repeated_ngrams(ids, 3) > 5  # the premise of the next tests: greedy decoding loops


def test_no_repeat_ngram_size_forbids_any_repeated_ngram(tiny: LocalModel) -> None:
    for size in (2, 3, 4):
        text, ids, trace = greedy(tiny, no_repeat_ngram_size=size)
        assert re.fullmatch(r"[a-z ]{80}", text)
        assert trace.ngram_bans_lifted == 0 and repeated_ngrams(ids, size) == 0, (size, text)


def test_a_strong_repetition_penalty_spreads_the_tokens(tiny: LocalModel) -> None:
    _, plain, _ = greedy(tiny)
    text, penalised, _ = greedy(tiny, repetition_penalty=3.0)
    assert re.fullmatch(r"[a-z ]{80}", text)
    assert len(set(penalised)) / len(penalised) > len(set(plain)) / len(plain)


def test_the_grammar_wins_over_the_ban(tiny: LocalModel) -> None:
    text, trace = tiny.generate_with_trace("x", Regex("(?:ab){6}"), temperature=0, jump_forward=False,
                                           no_repeat_ngram_size=2)
    assert text == "ab" * 6 and trace.ngram_bans_lifted > 0  # lifted where repeating was the only way on


def test_penalty_arithmetic_follows_ctrl() -> None:
    logits = torch.tensor([[2.0, -2.0, 1.0, 0.5], [1.0, 1.0, 1.0, 1.0]])
    penalise_repeats(logits, [(0, [0, 1, 1, 9])], 2.0)  # 9 is beyond the logits: ignored; 1 counted once
    assert logits.tolist() == [[1.0, -4.0, 1.0, 0.5], [1.0, 1.0, 1.0, 1.0]]


def test_banned_next_and_the_lifted_ban() -> None:
    assert banned_next([1, 2, 3, 1, 2], 3) == {3}
    assert banned_next([1, 2, 1], 2) == {2}
    assert banned_next([5], 1) == {5} and banned_next([], 3) == set()
    logits = torch.tensor([[0.0, float("-inf"), 3.0], [float("-inf"), float("-inf"), 1.0]])
    lifted = ban_repeats(logits, [(0, [2, 2]), (1, [2, 2])], 2)
    assert lifted == [1]  # row 1's only allowed token was banned: the ban yields to the grammar
    assert logits[0, 2] == float("-inf") and logits[1, 2] == 1.0


@pytest.mark.parametrize("options", [{"repetition_penalty": 0.5}, {"repetition_penalty": float("nan")},
                                     {"no_repeat_ngram_size": -1}, {"no_repeat_ngram_size": 1.5}])
def test_bad_repetition_options_are_refused(tiny: LocalModel, options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        tiny.generate("x", LETTERS, **options)


# ----------------------------------------------------------------------------------------------- a dead end

@pytest.fixture(scope="module")
def ascii_only() -> LocalModel:
    """A tiny model over a byte-level BPE tokenizer trained on ASCII without the full byte alphabet: no token
    can write ``é``, so a grammar that requires it corners the model."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<eos>"], show_progress=False)
    tokenizer.train_from_iterator(["abc def ghi jkl mno pqr stu vwx yz {} [] \" : , 0123456789"] * 50, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<eos>")  # type: ignore[no-untyped-call]
    assert "é" not in fast.decode(list(range(len(fast))))
    return LocalModel(tiny_model(fast), fast, device="cpu")


def test_a_dead_end_says_where_the_parser_stood(ascii_only: LocalModel) -> None:
    with pytest.raises(DeadEnd) as caught:
        ascii_only.generate("x", Regex("abé+"), seed=0)
    dead = caught.value
    assert dead.text == "ab" and dead.position == 2 and dead.tokens >= 1
    assert dead.expected == "é"                      # what the grammar needed next
    assert dead.reason == "NoExtensionBias"          # llguidance: no token extends the text
    assert "Tokens:" in dead.state                   # the engine's parser state dump
    assert "'ab'" in str(dead) and "'é'" in str(dead)


def test_a_dead_end_between_choices_has_no_single_expected_text(ascii_only: LocalModel) -> None:
    with pytest.raises(DeadEnd) as caught:
        ascii_only.generate("x", Grammar('start: "ab" ("é" | "ü")'), seed=0)
    assert caught.value.text == "ab" and caught.value.expected in (None, "\\xc3")  # both start with byte C3


def test_a_dead_end_in_a_batch_is_that_rows_error(ascii_only: LocalModel) -> None:
    with pytest.raises(BatchFailed) as caught:
        ascii_only.generate_batch(["x", "y"], output_types=[Regex("abé"), Regex("[a-c]{2}")], seed=0)
    errors = caught.value.errors
    assert list(errors) == [0] and isinstance(errors[0], DeadEnd)
    assert re.fullmatch("[a-c]{2}", caught.value.results[1])
