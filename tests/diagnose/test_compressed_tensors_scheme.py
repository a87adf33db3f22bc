"""SGLang's compressed-tensors scheme refusal (field32): _get_scheme_from_parts raises an
ImportError whose text ("Other method (CompressedTensorsW4A16Sparse24) is not supported now",
"CompressedTensors24 is not supported now") refuses the checkpoint's quantization format; it is
not a package missing from the environment (sglang#31248, corpus/field32/003's failure):

- read as model.unsupported with advice about the checkpoint's format, not as an import error;
- a real missing-package ImportError keeps its own reading.
Real ``sglang-doctor explain`` subprocesses on fixture files (or files derived from them)."""

from pathlib import Path

from conftest import explain_incidents

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FIXTURE = FIXTURES / "model" / "compressed_tensors_w4a16_sparse24_refused_0523.log"


def _only(path):
    incidents = explain_incidents(path)
    assert len(incidents) == 1, [i["rule"] for i in incidents]
    return incidents[0]


def test_the_sparse24_refusal_is_the_checkpoint_format_not_a_missing_package():
    inc = _only(FIXTURE)
    assert (inc["rule"], inc["category"]) == ("model.unsupported.compressed_tensors_scheme", "model.unsupported")
    assert inc["remediation"]["set"] == {}
    assert inc["remediation"]["needs_human"]


def test_the_2_4_sparse_refusal_is_read_the_same_way(tmp_path):
    log = tmp_path / "ct24.log"
    log.write_text(FIXTURE.read_text().replace(
        "Other method (CompressedTensorsW4A16Sparse24) is not supported now", "CompressedTensors24 is not supported now"))
    assert _only(log)["rule"] == "model.unsupported.compressed_tensors_scheme"


def test_a_missing_package_keeps_its_reading():
    inc = _only(FIXTURES / "classes" / "import_error_missing_package.log")
    assert inc["rule"] != "model.unsupported.compressed_tensors_scheme"
