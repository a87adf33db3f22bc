"""Session 32 (modelunsup32): how a model is refused or fails to load, from the sources of SGLang
0.4.3-0.5.23, transformers, huggingface_hub and torch, in the shapes people paste them (a bare
exception line, a traceback cut above its end, the second paragraph of a message split by a blank
line).  Each test runs the real CLI on a shipped fixture or on a log written to tmp_path from the
library's own message; the negative cases are the neighbours each rule must leave alone."""

from __future__ import annotations

from conftest import ROOT, explain_incidents, primary_incident as primary, write_log as write

MODEL = ROOT / "fixtures/model"


def test_the_second_paragraph_of_the_model_type_refusal_alone_is_model_unsupported():
    inc = primary(MODEL / "transformers_model_type_tail_only.log")
    assert inc["rule"] == "model.unsupported.transformers_model_type_tail"
    assert inc["category"] == "model.unsupported"


def test_the_whole_model_type_refusal_keeps_its_own_rule_and_model_type():
    inc = primary(MODEL / "transformers_unknown_model_type.log")
    assert inc["rule"] == "model.unsupported.transformers_model_type"


def test_a_bare_keyerror_of_a_model_type_is_model_unsupported():
    inc = primary(MODEL / "model_type_keyerror_bare.log")
    assert inc["rule"] == "model.unsupported.model_type_keyerror_bare"
    assert "qwen3_next" in inc["title"]


def test_a_keyerror_after_an_elided_get_config_traceback_names_the_model_type():
    inc = primary(MODEL / "model_type_keyerror_scheduler_cut.log")
    assert inc["category"] == "model.unsupported"
    assert "qwen3_moe" in inc["title"]


def test_a_bare_keyerror_of_a_config_field_or_a_weight_is_not_a_model_type(tmp_path):
    for key in ("type", "rope_type", "hidden_size", "input_ids"):
        rules = {i["rule"] for i in explain_incidents(write(tmp_path, f"KeyError: '{key}'\n", f"{key}.log"))}
        assert "model.unsupported.model_type_keyerror_bare" not in rules, key
    weight = primary(MODEL / "weight_name_keyerror_059.log")
    assert weight["category"] == "model.load"


def test_old_transformers_refusing_llama31_rope_scaling_with_either_wording(tmp_path):
    inc = primary(MODEL / "rope_scaling_old_transformers.log")
    assert inc["rule"] == "model.unsupported.rope_scaling_old_transformers"
    one = write(tmp_path, "ValueError: `rope_scaling` must be a dictionary with two fields, `type` and `factor`, "
                          "got {'factor': 32.0, 'rope_type': 'yarn', 'original_max_position_embeddings': 4096}\n")
    assert primary(one)["rule"] == "model.unsupported.rope_scaling_old_transformers_cut"
    assert primary(MODEL / "rope_scaling_old_transformers_one_line.log")["category"] == "model.unsupported"


def test_a_whole_traceback_through_sglangs_own_internlm2_config_is_left_to_the_class_layer(tmp_path):
    log = write(tmp_path, (
        "[2025-05-01 10:00:00] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/configs/internvl.py", line 104, in __init__\n'
        "    self._rope_scaling_validation()\n"
        '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/configs/internvl.py", line 142, in _rope_scaling_validation\n'
        "    raise ValueError(\n"
        "ValueError: `rope_scaling` must be a dictionary with with two fields, `type` and `factor`, got "
        "{'type': 'dynamic', 'factor': 2.0, 'original_max_position_embeddings': 4096}\n"))
    rules = {i["rule"] for i in explain_incidents(log)}
    assert not rules & {"model.unsupported.rope_scaling_old_transformers", "model.unsupported.rope_scaling_old_transformers_cut"}


def test_a_truncated_torch_checkpoint_is_model_load_with_or_without_frames():
    for name in ("torch_checkpoint_truncated.log", "torch_checkpoint_truncated_one_line.log"):
        inc = primary(MODEL / name)
        assert inc["rule"] == "model.load.torch_checkpoint_truncated", name
        assert inc["category"] == "model.load"


def test_weights_only_refusal_is_model_load():
    inc = primary(MODEL / "weights_only_unpickling.log")
    assert inc["rule"] == "model.load.weights_only_unpickling"


def test_weight_shape_mismatch_names_both_shapes():
    inc = primary(MODEL / "weight_shape_mismatch_one_line.log")
    assert inc["rule"] == "model.load.weight_shape_mismatch"
    assert "152064" in inc["title"] and "151936" in inc["title"]
    assert primary(MODEL / "weight_shape_mismatch_default_loader.log")["rule"] == "model.load.weight_shape_mismatch"


def test_a_bare_shape_assert_in_a_weight_loader_is_model_load_but_another_assert_there_is_not(tmp_path):
    inc = primary(MODEL / "weight_shape_mismatch_bare_assert.log")
    assert inc["rule"] == "model.load.weight_shape_assert"
    assert inc["category"] == "model.load"
    other = write(tmp_path, (
        '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/layers/linear.py", line 712, in weight_loader\n'
        "    assert self.output_dim is not None\n"
        "AssertionError\n"))
    assert "model.load.weight_shape_assert" not in {i["rule"] for i in explain_incidents(other)}


def test_hub_401_asks_for_a_token_and_leaves_a_missing_repository_to_its_rule():
    for name in ("hub_unauthorized_401.log", "hub_invalid_credentials.log"):
        inc = primary(MODEL / name)
        assert inc["rule"] == "model.load.hub_unauthorized", name
        assert "HF_TOKEN" in inc["remediation"]["env"]
    assert primary(MODEL / "repo_not_found_401.log")["rule"] == "model.load.repo_not_found"


def test_hub_429_is_a_rate_limit_but_another_service_429_is_not(tmp_path):
    inc = primary(MODEL / "hub_rate_limited_429.log")
    assert inc["rule"] == "model.load.hub_rate_limited"
    other = write(tmp_path, "requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: "
                            "https://api.example.com/v1/chat/completions\n")
    assert "model.load.hub_rate_limited" not in {i["rule"] for i in explain_incidents(other)}


def test_a_missing_revision_is_named_by_type_or_by_transformers_words():
    assert primary(MODEL / "hub_revision_not_found.log")["rule"] == "model.load.hub_revision_not_found"
    assert primary(MODEL / "hub_revision_not_valid_git_identifier.log")["rule"] == \
        "model.load.hub_revision_not_found_message"


def test_config_not_json_and_missing_tokenizer_and_processor_files_are_model_load():
    assert primary(MODEL / "config_not_json.log")["rule"] == "model.load.config_not_json"
    tok = primary(MODEL / "tokenizer_files_missing.log")
    assert tok["rule"] == "model.load.tokenizer_files_missing"
    assert tok["remediation"]["needs_human"]
    assert primary(MODEL / "processing_class_missing.log")["rule"] == "model.load.processing_class_missing"


def test_sglang_custom_tokenizer_message_sets_trust_remote_code():
    inc = primary(MODEL / "tokenizer_custom_needs_remote_code.log")
    assert inc["rule"] == "model.load.tokenizer_custom_needs_remote_code"
    assert inc["remediation"]["set"] == {"--trust-remote-code": True}


def test_sglang_tokenizer_typeerror_message_is_advice_not_a_flag():
    inc = primary(MODEL / "tokenizer_llama_v1_typeerror.log")
    assert inc["rule"] == "model.load.tokenizer_typeerror"
    assert inc["remediation"]["set"] == {}


def test_sentencepiece_not_a_string_needs_its_frames(tmp_path):
    assert primary(MODEL / "sentencepiece_vocab_missing.log")["rule"] == "model.load.sentencepiece_vocab_missing"
    bare = write(tmp_path, "TypeError: not a string\n")
    assert "model.load.sentencepiece_vocab_missing" not in {i["rule"] for i in explain_incidents(bare)}


def test_a_model_class_missing_from_transformers_is_model_unsupported_a_helper_is_not(tmp_path):
    inc = primary(MODEL / "transformers_model_class_missing.log")
    assert inc["rule"] == "model.unsupported.transformers_model_class_missing"
    assert "Qwen2_5_VLForConditionalGeneration" in inc["title"]
    helper = write(tmp_path, "ImportError: cannot import name 'is_valid_list_of_images' from "
                             "'transformers.models.mllama.image_processing_mllama' (/x/image_processing_mllama.py)\n")
    assert primary(helper)["category"] != "model.unsupported"
    auto = write(tmp_path, "ImportError: cannot import name 'AutoModelForVision2Seq' from 'transformers' "
                           "(/x/transformers/__init__.py)\n", "auto.log")
    assert "model.unsupported.transformers_model_class_missing" not in {i["rule"] for i in explain_incidents(auto)}


def test_sglang_059_transformers_version_check_is_model_unsupported():
    inc = primary(MODEL / "transformers_version_for_model_059.log")
    assert inc["rule"] == "model.unsupported.transformers_version_for_model"
    assert "4.57.1" in inc["title"]


def test_automodel_without_a_class_for_the_config_is_model_unsupported():
    inc = primary(MODEL / "automodel_unrecognized_config.log")
    assert inc["rule"] == "model.unsupported.automodel_unrecognized_config"
    assert "AutoModel" in inc["title"]


def test_missing_shards_and_model_files_are_model_load_but_another_missing_file_is_not(tmp_path):
    assert primary(MODEL / "index_shards_missing_0523.log")["rule"] == "model.load.index_shards_missing"
    inc = primary(MODEL / "model_file_not_found_shard.log")
    assert inc["rule"] == "model.load.model_file_not_found"
    assert "model-00003-of-00008.safetensors" in inc["title"]
    other = write(tmp_path, "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/sglang/server.json'\n")
    assert "model.load.model_file_not_found" not in {i["rule"] for i in explain_incidents(other)}


def test_hub_entry_not_found_and_unreachable_hub_are_model_load(tmp_path):
    assert primary(MODEL / "hub_entry_not_found.log")["rule"] == "model.load.hub_entry_not_found"
    for name in ("hub_unreachable_max_retries.log", "hub_read_timeout.log"):
        inc = primary(MODEL / name)
        assert inc["rule"] == "model.load.hub_unreachable", name
    other = write(tmp_path, "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='pypi.org', port=443): "
                            "Max retries exceeded with url: /simple/ (Caused by NewConnectionError('x'))\n")
    assert "model.load.hub_unreachable" not in {i["rule"] for i in explain_incidents(other)}


def test_bitsandbytes_and_gguf_refusals_are_model_unsupported(tmp_path):
    inc = primary(MODEL / "bitsandbytes_model_unsupported.log")
    assert inc["rule"] == "model.unsupported.bitsandbytes_model"
    assert "Gemma3ForConditionalGeneration" in inc["title"]
    assert primary(MODEL / "gguf_model_type_unknown.log")["rule"] == "model.unsupported.gguf_model_type"
    config = write(tmp_path, "RuntimeError: Can't get gguf config for mllama.\n")
    inc = primary(config)
    assert inc["rule"] == "model.unsupported.gguf_model_type" and "mllama" in inc["title"]


def test_image_processor_files_missing_is_model_load():
    inc = primary(MODEL / "image_processor_missing.log")
    assert inc["rule"] == "model.load.processing_class_missing"
    assert "llava-onevision" in inc["title"] or "llava-onevision" in inc["explanation"]


def test_a_config_without_model_type_is_model_unsupported():
    inc = primary(MODEL / "config_without_model_type.log")
    assert inc["rule"] == "model.unsupported.config_without_model_type"
    assert inc["category"] == "model.unsupported"


def test_a_keyerror_of_a_config_class_from_an_auto_mapping_is_model_unsupported(tmp_path):
    for name in ("auto_mapping_config_class_name.log", "auto_mapping_config_class_type.log"):
        inc = primary(MODEL / name)
        assert inc["rule"] == "model.unsupported.auto_mapping_config_class", name
    assert "LlavaQwenConfig" in primary(MODEL / "auto_mapping_config_class_name.log")["title"]
    other = write(tmp_path, "KeyError: 'Config'\n")
    assert "model.unsupported.auto_mapping_config_class" not in {i["rule"] for i in explain_incidents(other)}
