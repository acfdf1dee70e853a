"""google-genai's errors (``code`` and ``details`` where the other SDKs have ``status_code`` and ``body``) are
sorted like the others': the SDK's own exception objects, built from the error JSON the API sends."""

from __future__ import annotations

from google.genai import errors

from guardrail.vendors.failures import classify


def _error(status: int, message: str, details: list[dict[str, str]] | None = None) -> errors.APIError:
    body = {"error": {"code": status, "message": message, "status": "X", **({"details": details} if details else {})}}
    cls = errors.ClientError if status < 500 else errors.ServerError
    return cls(status, body)


def test_a_rate_limit_is_retryable_after_the_retry_info_wait() -> None:
    failure = classify(_error(429, "Resource has been exhausted (e.g. check quota).",
                              [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}]))
    assert failure is not None and failure.kind == "retryable" and failure.status == 429
    assert failure.retry_after == 7.0


def test_server_errors_are_retryable_and_client_errors_are_not() -> None:
    for status in (500, 503, 504):
        found = classify(_error(status, "The model is overloaded."))
        assert found is not None and found.kind == "retryable"
    for status in (400, 401, 403, 404):
        found = classify(_error(status, "Permission denied."))
        assert found is not None and found.kind == "fatal" and found.status == status


def test_a_400_about_the_response_schema_moves_to_the_next_mode() -> None:
    for message in ("* GenerateContentRequest.generation_config.response_json_schema: 'pattern' is not supported",
                    'Invalid JSON payload received. Unknown name "responseJsonSchema" at \'generation_config\'',
                    "* GenerateContentRequest.tools[0].function_declarations[0].parameters_json_schema: bad"):
        found = classify(_error(400, message))
        assert found is not None and found.kind == "schema_rejected", message
    plain = classify(_error(400, "Request contains an invalid argument."))
    assert plain is not None and plain.kind == "fatal"
