"""Session 17 (issue 12, fixes that generalise): changes for failure sites and class rules
that had none.

- transformers' fast image processor in the traceback -> the base processor, spelled for the
  release (--disable-fast-image-processor 0.4.5.post1-0.5.17, --image-processor-backend pil
  0.5.18+, nothing before 0.4.5.post1);
- the model.unsupported class rules whose message names no flag (the native implementation
  refused this checkpoint's variant) -> the model's transformers implementation, --model-impl
  transformers, where the release has it;
- a PD disaggregation refusal whose words name the transfer backend -> the other backend;
- a non-CUDA platform backend's refusal -> the flag its message names, or the optional feature
  whose package the traceback passes, off;
- constrained decoding's disk cache / jump-forward (0.1.x-0.4.x) in the frames -> their switch,
  spelled as the releases that had it when the log names none.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from sglang_doctor.model import Diagnosis, ExceptionInfo, Frame, Incident, Launch, Line
from sglang_doctor.remedy import flags, guarded, remedies

ROOT = Path(__file__).resolve().parents[2]
CLASSES = {r["id"]: r for r in yaml.safe_load((ROOT / "rules" / "classes.yaml").read_text())["rules"]}

FAST = "/usr/local/lib/python3.11/site-packages/transformers/models/qwen2_vl/image_processing_qwen2_vl_fast.py"
UTILS_FAST = "/usr/local/lib/python3.11/site-packages/transformers/image_processing_utils_fast.py"
SLOW = "/usr/local/lib/python3.11/site-packages/transformers/models/qwen2_vl/image_processing_qwen2_vl.py"
MM = "/sgl-workspace/sglang/python/sglang/srt/multimodal/processors/base_processor.py"


def _diagnosis(remedy, frames=(), text="", category="args.invalid", server_args=None):
    inc = Incident(kind="traceback", first_line=1, last_line=1,
                   frames=[Frame(file=f, line=1, function="f") for f in frames],
                   lines=[Line(number=1, text=text)] if text else [],
                   exception=ExceptionInfo(*text.split(": ", 1)) if ": " in text else None,
                   chain=[ExceptionInfo(*text.split(": ", 1))] if ": " in text else [])
    return Diagnosis(incident=inc, rule="class.test", category=category, remedies=remedy,
                     launch=Launch(index=0, line=1, server_args=server_args or {"model_path": "m"}))


def _remediate(d, version):
    cat = flags.load_catalog(version)
    return remedies.remediate(d, command=None, version=cat.version, catalog=cat, hardware=None, model_config=None)


def _changes(rem):
    out = []
    for r in [rem, *(rem.alternatives or [])] if rem else []:
        out.append(dict(r.set or {}))
    return out


FAST_STEP = [{"disable_in_frames": {"features": ["fast_image_processor"]}}]


def test_a_failure_in_the_fast_image_processor_takes_the_base_one_spelled_for_the_release():
    for frame in (FAST, UTILS_FAST):
        rem = _remediate(_diagnosis(FAST_STEP, frames=[MM, frame]), "0.5.9")
        assert rem.set == {"--disable-fast-image-processor": True}
        assert "fast image processor" in rem.note and rem.safe is False
    assert _remediate(_diagnosis(FAST_STEP, frames=[MM, FAST]), "0.5.23").set == {"--image-processor-backend": "pil"}


def test_no_base_processor_change_without_its_frames_or_the_flag():
    assert _remediate(_diagnosis(FAST_STEP, frames=[MM, SLOW]), "0.5.9") is None
    # 0.4.0 has neither switch: nothing is proposed rather than a flag the release refuses
    assert _remediate(_diagnosis(FAST_STEP, frames=[MM, FAST]), "0.4.0") is None


def test_the_site_steps_of_a_guess_include_the_fast_image_processor():
    entries = guarded.entries("other")  # no usual change for the category: the site steps
    rem = _remediate(_diagnosis(entries, frames=[MM, FAST], category="other"), "0.5.9")
    assert {"--disable-fast-image-processor": True} in _changes(rem)


def test_crash_and_multimodal_classes_use_the_fast_image_processor_site():
    for rid in ("class.feature.multimodal", "class.runtime.after_ready", "class.internal.check",
                "class.internal.state", "class.internal.value"):
        rem = _remediate(_diagnosis(CLASSES[rid]["remedy"], frames=[MM, FAST], text="RuntimeError: x"), "0.5.9")
        assert {"--disable-fast-image-processor": True} in _changes(rem), rid


def test_a_model_implementation_refusing_the_checkpoint_offers_the_transformers_implementation():
    for rid in ("class.model.config_refused", "class.model.constructor_check", "class.model.config_value"):
        d = _diagnosis(CLASSES[rid]["remedy"], frames=["/x/sglang/srt/models/llama.py"],
                       text="ValueError: Unsupported activation: gelu_new", category="model.unsupported")
        rem = _remediate(d, "0.5.9")
        assert {"--model-impl": "transformers"} in _changes(rem), rid
        assert rem.safe is False
        # 0.4.0 has no --model-impl: the rule's advice only, no flag the release refuses
        assert {"--model-impl": "transformers"} not in _changes(_remediate(d, "0.4.0")), rid


def test_a_disaggregation_refusal_naming_its_transfer_backend_takes_the_other_one():
    rule = CLASSES["class.feature.disaggregation"]["remedy"]
    d = _diagnosis(rule, frames=["/x/sglang/srt/disaggregation/mooncake/conn.py"],
                   text="ValueError: mooncake transfer backend does not support this page layout")
    assert {"--disaggregation-transfer-backend": "nixl"} in _changes(_remediate(d, "0.5.9"))
    d = _diagnosis(rule, frames=["/x/sglang/srt/disaggregation/utils.py"],
                   text="ValueError: prefill and decode must use the same page size")
    assert all("--disaggregation-transfer-backend" not in c for c in _changes(_remediate(d, "0.5.9")))


# -- features SGLang dropped: constrained decoding's disk cache and jump-forward (0.1.x-0.4.x)

OLD = "/home/u/sglang/python/sglang/srt/"
SITE = [{"disable_in_frames": {"features": ["disk_cache", "jump_forward"]}}]


def _guessed(d, version_source="newest catalogue", version_range=None):
    cat = flags.load_catalog("0.5.23")
    return remedies.remediate(d, command=None, version=cat.version, catalog=cat, hardware=None, model_config=None,
                              version_source=version_source, version_range=version_range)


def test_a_failure_in_the_disk_cache_of_an_unnamed_release_is_spelled_as_the_releases_that_had_it():
    d = _diagnosis(SITE, frames=[OLD + "managers/router/model_rpc.py", OLD + "constrained/disk_cache.py",
                                 "/env/lib/python3.11/site-packages/diskcache/core.py"])
    rem = _guessed(d)
    assert rem.set == {"--disable-disk-cache": True}
    assert "0.4.0 to 0.4.1.post1" in rem.note and rem.safe is False
    # a named release without the switch: nothing, not another release's flag
    assert _remediate(d, "0.5.9") is None
    # a named release with it: its own flag
    assert _remediate(d, "0.4.0").set == {"--disable-disk-cache": True}


def test_a_crash_where_the_scheduler_calls_jump_forward_turns_it_off():
    inc_frames = [OLD + "managers/controller/tp_worker.py", OLD + "managers/controller/tp_worker.py"]
    d = _diagnosis(SITE, frames=inc_frames)
    d.incident.frames[-1].source = "jump_forward_reqs = batch.check_for_jump_forward(self.model_runner)"
    rem = _guessed(d)
    assert rem.set == {"--disable-jump-forward": True} and "0.4.3.post2" in rem.note
    # one change; the releases before 0.4.0's spelling is named in the note, not proposed twice
    assert "0.1.12 to 0.3.5 spell it --disable-regex-jump-forward" in rem.note and not rem.alternatives
    d.incident.frames[-1].source = "self.forward_decode_batch(self.running_batch)"
    assert _guessed(d) is None


def test_a_platform_backend_refusal_names_its_flag_or_drops_the_feature_it_is_in():
    rule = CLASSES["class.feature.platform"]["remedy"]
    npu = "/usr/local/lib/python3.11/site-packages/sglang/srt/hardware_backend/npu/"
    d = _diagnosis(rule, frames=[npu + "attention/ascend_backend.py"], category="kernel.unsupported_hw",
                   text="ValueError: --enable-two-batch-overlap is not supported on Ascend NPU")
    rem = _remediate(d, "0.5.23")
    assert any("--enable-two-batch-overlap" in (r.unset or []) or "--enable-two-batch-overlap" in (r.set or {})
               for r in [rem, *rem.alternatives])
    d = _diagnosis(rule, frames=["/x/sglang/srt/speculative/eagle_worker.py", npu + "graph_runner/npu_graph_runner.py"],
                   category="kernel.unsupported_hw", text="ValueError: Atlas A2 requires a 1-D table",
                   server_args={"model_path": "m", "speculative_algorithm": "EAGLE"})
    rem = _remediate(d, "0.5.23")
    assert any("--speculative-algorithm" in (r.unset or []) for r in [rem, *rem.alternatives])
