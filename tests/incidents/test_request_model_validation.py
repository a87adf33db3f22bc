"""A client's request body refused by one of SGLang's pydantic request models
("N validation errors for ChatCompletionRequest") is one request's error, not an incident
(incidents/request_errors.py ``is_request_model_validation``); a ValidationError of a model
that is not a request's stays a failure.  Real CLI runs on real files."""

from pathlib import Path

from conftest import explain_incidents

ROOT = Path(__file__).resolve().parents[2]


def test_a_pasted_request_validation_error_alone_is_not_an_incident():
    # tuned corpus: one chat request's tool-call message refused, the paste holds nothing else
    (path,) = sorted((ROOT / "corpus/field28").glob("012-*.log"))
    assert explain_incidents(path) == []


def test_a_request_validation_error_between_served_requests_is_not_an_incident():
    assert explain_incidents(ROOT / "fixtures/healthy/request_body_validation_error_0446.log") == []


def test_another_models_validation_error_stays_a_failure(tmp_path):
    log = tmp_path / "config_validation.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/server_args.py", line 200, in __post_init__\n'
        "    ServerConfig(**cfg)\n"
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ServerConfig\n"
        "port\n"
        '  Input should be a valid integer [type=int_type, input_value="x", input_type=str]\n')
    (inc,) = explain_incidents(log)
    assert "ValidationError" in inc["title"]
