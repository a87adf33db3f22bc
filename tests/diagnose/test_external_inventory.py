"""The shipped inventory of the libraries' failure sites (data/inventory/external-*) and the rule
pack agree.

scripts/inventory_external.py reads pinned releases of the libraries SGLang launches die in
(vLLM, FlashInfer, sgl-kernel, Triton, transformers, xgrammar) and gives every failure site of
the modules an SGLang launch reaches a disposition: the specific rule that names it, the class
rule that covers it, or a waiver (external-dispositions.yaml).  These tests read only the shipped
json (no wheel, no network): every site is accounted for, every disposition names a rule, class
or waiver that exists, the dispositions still follow from the rule pack and the dispositions
file (on a deterministic sample), and the engine's right-category figure on a sample is at or
above the recorded one (external-measured.json).
"""

from __future__ import annotations

import pytest
import yaml

from conftest import ROOT, script_module
from sglang_doctor.diagnose.rules_engine import RuleSet

INVENTORY = ROOT / "data" / "inventory"

ext = script_module(ROOT / "scripts" / "inventory_external.py", "inventory_external")
invf = ext.invf

PACKAGES = {pkg.key: pkg for pkg in ext.PACKAGES}


def _load(key: str) -> dict:
    return ext.load(ext.inventory_path(PACKAGES[key]))


def _disp():
    return invf.Dispositions.load(ext.DISPOSITIONS)


def test_every_package_is_shipped():
    shipped = {p.name for p in INVENTORY.glob("external-*.json")} - {ext.MEASURED.name}
    assert shipped == {ext.inventory_path(pkg).name for pkg in ext.PACKAGES}


@pytest.mark.parametrize("key", sorted(PACKAGES))
def test_every_site_is_accounted_for(key):
    inv = _load(key)
    sites = list(ext.iter_sites(inv))
    assert inv["sites"] == len(sites) > 0
    assert not [s for s in sites if s["disposition"] == "unaccounted"]
    assert inv["package"] == PACKAGES[key].name and inv["version"] == PACKAGES[key].version


@pytest.mark.parametrize("key", sorted(PACKAGES))
def test_dispositions_name_what_exists(key):
    ids = {r.id for r in RuleSet.load(builtin=True, user=False).rules}
    classes = set(invf.class_categories())
    waivers = set(_disp().waivers)
    for site in ext.iter_sites(_load(key)):
        kind, _, name = site["disposition"].partition(":")
        assert (kind == "rule" and name in ids) or (kind == "class" and name in classes) or \
            (kind == "waiver" and name in waivers), site


def test_every_waiver_has_a_right_answer():
    disp = _disp()
    assert set(disp.waivers) == set(disp.right)
    data = yaml.safe_load(ext.DISPOSITIONS.read_text(encoding="utf-8"))
    for pattern in data["patterns"]:
        assert pattern["disposition"].split(":")[0] in ("class", "waiver")


@pytest.mark.parametrize("key", sorted(PACKAGES))
def test_dispositions_follow_from_the_pack(key):
    """A sample of sites, disposed again with today's rules and dispositions file, gets the
    shipped disposition (a rule that starts or stops naming a site shows here: regenerate)."""
    disp, rules = _disp(), invf.RuleMatcher()
    for i, site in enumerate(ext.iter_sites(_load(key))):
        if i % ext.SAMPLE_EVERY == 0:
            assert invf.dispose(site, disp, rules) == site["disposition"], invf.site_key(site)


@pytest.mark.parametrize("key", sorted(PACKAGES))
def test_right_category_holds(key):
    recorded = ext.load(ext.MEASURED)[key]["sample"]
    result = ext.measure(_load(key), PACKAGES[key], _disp(), every=ext.SAMPLE_EVERY)
    for form in ("traceback", "bare"):
        assert result[form]["sites"] == recorded[form]["sites"]
        assert result[form]["right"] >= recorded[form]["right"], (form, result)


def test_a_library_frame_under_sglang_is_what_the_measure_reads():
    """The measure's log: SGLang's scheduler, the SGLang module that calls the library, the
    library's site last (so a class rule that reads the deepest frame sees the library)."""
    pkg = PACKAGES["vllm-0.6.4.post1"]
    site = {"file": "vllm/model_executor/layers/quantization/awq.py", "line": 50, "function": "AWQConfig.__init__",
            "kind": "raise", "exception": "ValueError"}
    text = ext.traceback_log(site, pkg, "Currently, only 4-bit weight quantization is supported for AWQ, but got 3 bits.",
                             "startup.load_weights")
    frames = [line for line in text.splitlines() if line.startswith('  File "')]
    assert "sglang/srt/model_loader/loader.py" in frames[-2]
    assert frames[-1].startswith(f'  File "{ext.LIB_PREFIX}vllm/model_executor/layers/quantization/awq.py"')
    assert text.rstrip().endswith("ValueError: Currently, only 4-bit weight quantization is supported for AWQ, but got 3 bits.")


def _incidents(text: str) -> list[tuple[str, str]]:
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(RuleSet.load(builtin=True, user=False), remediate=False)
    events = pipe.feed(text.encode()) + pipe.finish()
    return [(ev["rule"], ev["category"]) for ev in events if ev["event"] == "incident"]


def test_flashinfer_refusing_sglangs_tensors_is_not_a_refused_flag():
    """A FlashInfer GEMM wrapper's check on the tensors SGLang's quantization method passes
    (flashinfer-python 0.7.2 gemm_base.py) is the library's API contract: other, not the
    quantization method refusing a flag (args.invalid)."""
    pkg = PACKAGES["flashinfer-python-0.7.2"]
    site = {"file": "flashinfer/gemm/gemm_base.py", "line": 10702, "kind": "raise", "exception": "ValueError",
            "function": "_check_group_gemm_nvfp4_nt_groupwise_problem_size"}
    text = ext.traceback_log(site, pkg, "b must be a uint8 tensor, but got torch.bfloat16", "unknown")
    assert _incidents(text) == [("class.library.flashinfer_call_refused", "other")]


def test_flashinfer_refusing_the_models_head_shape_is_the_kernel_not_a_flag():
    """FlashInfer's MLA wrapper refusing the model's MLA dimensions (mla/_core.py) names the
    kernel's head shapes: kernel.unsupported_hw, as the C++ dispatch's "Unsupported head_dim"."""
    pkg = PACKAGES["flashinfer-python-0.7.2"]
    site = {"file": "flashinfer/mla/_core.py", "line": 799, "kind": "raise", "exception": "ValueError",
            "function": "_check_trtllm_gen_mla_shape"}
    text = ext.traceback_log(site, pkg, "Unsupported MLA dimensions, got kv_lora_rank=384 and qk_rope_head_dim=32, "
                             "supported dimensions are: [...]", "unknown")
    assert _incidents(text) == [("kernel.unsupported_hw.flashinfer_attention_shape", "kernel.unsupported_hw")]


def test_vllm_refusing_a_checkpoint_scheme_by_assert_is_the_model_not_its_files():
    """vLLM's compressed-tensors MoE method asserting a symmetric scheme (SGLang 0.4.x builds the
    model with it): the checkpoint's quantization is not supported (model.unsupported), its
    files load (not model.load)."""
    pkg = PACKAGES["vllm-0.7.2"]
    site = {"file": "vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors_moe.py",
            "line": 263, "kind": "assert", "exception": "", "function": "CompressedTensorsWNA16MoEMethod.__init__"}
    text = ext.traceback_log(site, pkg, "Only symmetric quantization is supported for MoE", "startup.load_weights")
    assert _incidents(text) == [("model.unsupported.vllm_quant_scheme", "model.unsupported")]
