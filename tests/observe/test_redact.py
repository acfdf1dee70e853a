"""Redaction by key name: exact secret names, and the *suffix* rule (``db_password``, ``stripe_api_key``), in every
spelling a payload uses (snake, camel, kebab, upper); and names that merely contain a secret word stay visible."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from guardrail.observe.redact import REDACTED, redact, redact_processor

SUFFIXED = ["db_password", "stripe_api_key", "github_token", "aws_secret", "service_private_key", "s3_access_key",
            "user_credentials", "browser_session_id", "smtp_passwd", "vendor_apikey", "gcp_credential"]
SPELLINGS = [str, lambda name: name.upper(), lambda name: name.replace("_", "-"),
             lambda name: name.split("_")[0] + "".join(part.title() for part in name.split("_")[1:])]
NOT_SECRET = ["max_tokens", "token_count", "password_policy", "secretary", "tokenizer", "api_key_id", "keyboard",
              "passwords_reset_at", "db_host"]


@pytest.mark.parametrize("name", SUFFIXED)
@pytest.mark.parametrize("spell", SPELLINGS, ids=["snake", "upper", "kebab", "camel"])
def test_keys_ending_in_a_secret_name_are_redacted(name: str, spell: object) -> None:
    key = spell(name)  # type: ignore[operator]
    assert redact({key: "plain-looking value", "visible": 1}) == {key: REDACTED, "visible": 1}
    assert redact([{"nested": {key: "v"}}]) == [{"nested": {key: REDACTED}}]
    assert redact_processor(None, "info", {"event": "e", key: "v"})[key] == REDACTED


@pytest.mark.parametrize("name", NOT_SECRET)
def test_names_that_only_contain_a_secret_word_are_kept(name: str) -> None:
    assert redact({name: "value"}) == {name: "value"}


@given(st.text(alphabet=string.ascii_lowercase + "_", min_size=1, max_size=12),
       st.sampled_from(["_password", "_api_key", "_token", "_secret", "_private_key", "_credentials"]))
def test_any_prefix_with_a_secret_suffix_is_redacted(prefix: str, suffix: str) -> None:
    key = prefix + suffix
    assert redact({key: "hunter2"}) == {key: REDACTED}
