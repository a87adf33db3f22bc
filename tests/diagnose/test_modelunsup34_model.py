"""Session 34 (modelunsup34): "this release can't run this model" from SGLang's and transformers'
sources: a transformers model package the installed release lacks, and a bare exception line whose
words name the checkpoint's config.  Each test runs the real CLI on a shipped fixture or on a log
written to tmp_path from the source's own message; the negative cases are the neighbours each rule
must leave alone."""

from __future__ import annotations

from conftest import ROOT, explain_incidents, primary_incident as primary, write_log as write

MODEL = ROOT / "fixtures/model"


def test_a_missing_transformers_model_package_is_the_model_not_a_package_to_install():
    inc = primary(MODEL / "transformers_models_module_missing_0523.log")
    assert inc["rule"] == "model.unsupported.transformers_models_module_missing"
    assert "glm_ocr" in inc["title"]
    one = primary(MODEL / "transformers_models_module_missing_compose_one_line.log")
    assert one["category"] == "model.unsupported"
    assert "qwen3_moe" in one["title"]


def test_other_missing_modules_stay_missing_packages(tmp_path):
    for module in ("transformers", "vllm", "transformers_modules.foo", "transformers.models"):
        inc = primary(write(tmp_path, f"ModuleNotFoundError: No module named '{module}'\n", "m.log"))
        assert inc["rule"] != "model.unsupported.transformers_models_module_missing", module


def test_the_registrys_ignored_import_warning_is_not_an_incident():
    assert explain_incidents(MODEL / "transformers_models_module_missing_ignored_warning.log") == []


def test_a_bare_line_naming_the_checkpoints_config_is_model_unsupported():
    for name in ("config_words_bare_activation.log", "config_words_bare_config_class.log"):
        inc = primary(MODEL / name)
        assert inc["rule"] == "class.model.config_words_bare", name
        assert inc["category"] == "model.unsupported"


def test_config_words_leave_flags_serving_crashes_and_other_words_alone(tmp_path):
    flag = write(tmp_path, "ValueError: --enable-lora is not supported for Qwen3NextConfig models; unset enable_lora\n", "f.log")
    assert primary(flag)["category"] == "args.invalid"
    served = write(tmp_path, "[2026-03-02 09:00:01] The server is fired up and ready to roll!\n"
                             "[2026-03-02 09:12:40 TP0] ValueError: Unknown projector type: mlp2x_gelu\n", "s.log")
    assert primary(served)["category"] == "runtime.crash"
    for line in ("ValueError: LoadConfig got an unknown load format",
                 "ValueError: Unsupported activation for the weights of layer 3",
                 "AssertionError: rope_scaling requires a CUDA device"):
        rules = {i["rule"] for i in explain_incidents(write(tmp_path, line + "\n", "c.log"))}
        assert "class.model.config_words_bare" not in rules, line
