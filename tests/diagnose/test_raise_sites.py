"""Session 36 (guess36): a traceback cut just above its exception line whose deepest frame is SGLang's own
``raise X(`` / ``assert`` is read through the failure sites of that function (diagnose/raise_sites.py,
raise_sites.json from the five inventories by scripts/gen_raise_sites.py): what most of them fail as is
what the line was doing.  The fragments are real runs of SGLang 0.5.23 (fixtures/real) cut above the
line that names their cause, as bench/guess_cv.py --cut-check cuts them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import only_incident

from sglang_doctor.diagnose import raise_sites
from sglang_doctor.model import Frame

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / "fixtures" / "real"


def _cut_above(name: str, words: str) -> str:
    lines = (REAL / name).read_text(encoding="utf-8").splitlines(keepends=True)
    i = next(i for i, line in enumerate(lines) if words in line and not line.startswith(" "))
    return "".join(lines[:i])


def _pieces(guess: dict, name: str) -> list[dict]:
    return [ev for ev in guess.get("evidence", ()) if ev["name"] == name]


def test_a_cut_raise_of_a_check_reads_as_its_sites(pack):
    # ModelConfig._derive_context_length's `raise ValueError(` (--context-length above the model's):
    # the module (srt/configs/) alone said model.load
    ev = only_incident(pack, _cut_above("context_length_too_long_0523.log", "ValueError: Warning: User-specified"))
    fb = ev["fallback"]
    assert fb["missing"] and fb["next_step"]          # still the honest fallback, with its command
    guess = fb["best_guess"]
    assert guess["category"] == "args.invalid"
    (piece,) = _pieces(guess, "raise_site")
    assert "_derive_context_length" in piece["why"] and "raise ValueError" in piece["why"]


def test_a_check_that_asks_the_machine_is_read_by_its_own_condition(pack):
    # mamba_hook.validate_mamba_extra_buffer's `assert _platform_supports_mamba_cache_extra_buffer(), (`: the
    # function's other asserts are argument checks, but this line asks what the platform is
    ev = only_incident(pack, _cut_above("hybrid_extra_buffer_unsupported_0523.log", "AssertionError: extra_buffer"))
    guess = ev["fallback"]["best_guess"]
    assert guess["category"] == "kernel.unsupported_hw"
    assert not _pieces(guess, "raise_site")


def test_no_reading_when_the_exception_line_is_there(pack):
    text = (REAL / "context_length_too_long_0523.log").read_text(encoding="utf-8")
    ev = only_incident(pack, text)
    assert ev["category"] == "args.invalid" and ev.get("fallback") is None


P = "/usr/local/lib/python3.12/dist-packages/sglang/"


def test_the_message_start_on_the_line_chooses_among_the_sites():
    # overrides.py's _mla_kv_cache_dtype_checks raises two ValueErrors: a kv-cache dtype the backend does
    # not take (args.invalid), and a GPU that is not Blackwell (kernel.unsupported_hw)
    f = "srt/arg_groups/overrides.py"
    both = raise_sites.sites_at(Frame(file=P + f, line=1, function="_mla_kv_cache_dtype_checks",
                                      source="raise ValueError("))
    assert both is not None and {r[2] for r in both[1]} == {"args.invalid", "kernel.unsupported_hw"}
    hw = raise_sites.reading(Frame(file=P + f, line=1, function="_mla_kv_cache_dtype_checks",
                                   source='raise ValueError("TRTLLM MLA backend is only supported on Blackwell GPUs."'))
    assert hw is not None and hw.category == "kernel.unsupported_hw" and hw.narrowed and hw.share == 1.0


def test_lines_that_are_no_raise_of_a_known_function_read_nothing():
    f = P + "srt/arg_groups/overrides.py"
    assert raise_sites.reading(Frame(file=f, line=1, function="_mla_kv_cache_dtype_checks", source="x = y(")) is None
    assert raise_sites.reading(Frame(file=P + "srt/no_such_module.py", line=1, function="f",
                                     source="raise ValueError(")) is None
    assert raise_sites.reading(Frame(file="/usr/lib/python3/x.py", line=1, function="f", source="raise ValueError(")) is None
    # a bare re-raise names no site
    assert raise_sites.reading(Frame(file=f, line=1, function="_mla_kv_cache_dtype_checks", source="raise")) is None


def test_a_checkout_path_is_the_same_module():
    assert raise_sites.module_key("/mnt/x/sglang/python/sglang/srt/server_args.py") == "srt/server_args.py"
    assert raise_sites.module_key("/usr/lib/python3.11/site-packages/sglang/srt/layers/linear.py") == "srt/layers/linear.py"
    # a library under SGLang: its path inside the wheel (the table holds the inventoried libraries' only)
    assert raise_sites.module_key("/usr/lib/python3.11/site-packages/flashinfer/jit/core.py") == "flashinfer/jit/core.py"
    assert raise_sites.module_key("/home/u/train.py") is None


def test_the_table_names_categories_only():
    from sglang_doctor.model import CATEGORIES

    table = json.loads((ROOT / "sglang_doctor" / "diagnose" / "raise_sites.json").read_text(encoding="utf-8"))
    assert table["releases"] == ["0.4.3.post2", "0.4.6.post5", "0.5.4", "0.5.9", "0.5.23"]
    cats = {r[2] for rows in table["functions"].values() for r in rows}
    assert cats - set(CATEGORIES) <= set(raise_sites.NO_CATEGORY)


@pytest.mark.slow  # (reads five inventories and the rule pack: half a minute)
def test_the_table_is_made_from_the_inventories():
    sys.path.insert(0, str(ROOT / "scripts"))
    import gen_raise_sites as gen

    shipped = (ROOT / "sglang_doctor" / "diagnose" / "raise_sites.json").read_text(encoding="utf-8")
    assert gen.dumps(gen.build()) == shipped, "raise_sites.json is stale: run scripts/gen_raise_sites.py"


def _guess_cv():
    import importlib.util

    spec = importlib.util.spec_from_file_location("guess_cv_raise_sites", ROOT / "bench" / "guess_cv.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_synthetic_halves_are_fixed_and_a_rendered_site_is_read(pack):
    cv = _guess_cv()
    # a fixed hash of the name: the same half every run, and both halves occur
    assert cv.half_of("srt/a.py::f::msg") == cv.half_of("srt/a.py::f::msg")
    assert {cv.half_of(f"srt/a.py::f::{i}") for i in range(20)} == {"tune", "held"}
    case = {"file": "srt/configs/model_config.py", "function": "_derive_context_length", "line": 1314,
            "source": "raise ValueError("}
    text = cv.render_raise_site(case)
    assert "ValueError:" not in text  # the exception line is cut
    guess = only_incident(pack, text)["fallback"]["best_guess"]
    assert guess["category"] == "args.invalid" and _pieces(guess, "raise_site")


def test_a_function_the_releases_do_not_have_is_read_through_its_module():
    # a later release's function in an inventoried module: the module's sites of the line's kind
    found = raise_sites.reading(Frame(file=P + "srt/configs/model_config.py", line=1, function="no_such_function",
                                      source="raise ValueError("))
    assert found is not None and found.module and found.sites > 1
    own = raise_sites.reading(Frame(file=P + "srt/configs/model_config.py", line=1,
                                    function="_derive_context_length", source="raise ValueError("))
    assert own is not None and not own.module
