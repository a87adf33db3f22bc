"""The release range a dumpless fragment's traceback frames fit (remedy/frame_releases.py), and
the flags spelled for it: one change under one name, different mechanisms in the alternatives.

Files: a 0.4.x frames-only fragment of the tuned corpus (labelled 0.4.4) and a 0.5.23 fixture
with its ServerArgs dump line removed (what a paste without the start-up lines looks like)."""

from __future__ import annotations

import subprocess

from conftest import FIXTURES, ROOT, doctor_cmd, explain_one_incident

from sglang_doctor.remedy import flags, frame_releases

FRAGMENT_044 = ROOT / "corpus" / "dev" / "003-cuda_graph-qwen72b-dp-frames-only.log"  # labelled 0.4.4
OOM_0523 = FIXTURES / "memory" / "cuda_oom_graph_capture_cuda_error_0523.log"


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def _without_dump(path, tmp_path):
    """The fixture as a paste that starts after SGLang's start-up lines (no server_args dump)."""
    out = tmp_path / path.name
    out.write_text("".join(line + "\n" for line in _lines(path) if "server_args=" not in line))
    return out


def _incident(path, *extra):
    return explain_one_incident(path, *extra)


def _changes(rem):
    return [rem, *rem.get("alternatives", [])]


def _all_flags(rem):
    return [flag for c in _changes(rem) for flag in [*c["set"], *c["unset"]]]


def test_the_shipped_index_covers_the_shipped_catalogues():
    assert frame_releases._index()["releases"] == list(flags.KNOWN_VERSIONS)


def test_a_04x_fragment_fits_a_range_that_holds_its_release():
    found = frame_releases.frame_range(_lines(FRAGMENT_044))
    assert found is not None and "0.4.4" in found.releases
    assert flags.version_key(found.newest) < flags.version_key("0.5.4")  # the overlap worker's module went away
    assert "srt/managers/tp_worker_overlap_thread.py" in found.paths


def test_a_0523_traceback_fits_only_recent_releases():
    found = frame_releases.frame_range(_lines(OOM_0523))
    assert found is not None and found.newest == "0.5.23"
    assert "0.5.9" not in found.releases  # runner/decode_cuda_graph_runner.py is newer


def test_unknown_paths_are_no_evidence_and_conflicting_frames_give_unknown():
    fork = '  File "/opt/fork/python/sglang/srt/our_private_patch.py", line 12, in run\n'
    assert frame_releases.frame_range([fork]) is None
    old = frame_releases.frame_range(_lines(FRAGMENT_044))
    assert frame_releases.frame_range([fork, *_lines(FRAGMENT_044)]) == old
    # a 0.4.x tree's frames and a 0.5.23 tree's frames: no release has both -> unknown, no error
    assert frame_releases.frame_range(_lines(FRAGMENT_044) + _lines(OOM_0523)) is None
    assert frame_releases.frame_range(["no frames here"]) is None


def test_a_04x_fragment_gets_its_ranges_spelling_once_and_another_mechanism_next():
    # before: 0.5.23's --cuda-graph-max-bs-decode as the fix and --cuda-graph-max-bs (the same
    # change renamed) as the first alternative, pushing --disable-cuda-graph out of reach
    inc = _incident(FRAGMENT_044)
    rem = inc["remediation"]
    target = rem["target"]
    assert target["version_source"] == "frame paths"
    assert target["inferred_range"]["from"] == "frame paths" and "0.4.4" in target["inferred_range"]["spec"]
    assert "--cuda-graph-max-bs" in rem["set"]
    assert "--cuda-graph-max-bs-decode" not in _all_flags(rem)
    assert _all_flags(rem).count("--cuda-graph-max-bs") == 1
    # SGLang's own "Possible solutions" of the release the flags are for (0.5.3, the range's
    # newest: the 0.4.6-0.5.13 list; session 14: the guess follows the release's list), the
    # cause line missing (session 24): smaller captured batches, then no CUDA graphs, then more
    # headroom (a lower fraction, for an out-of-memory capture only)
    assert rem["alternatives"][0]["set"] == {"--disable-cuda-graph": True}
    assert list(rem["alternatives"][1]["set"]) == ["--mem-fraction-static"]


def test_a_0523_fragment_keeps_0523_names(tmp_path):
    inc = _incident(_without_dump(OOM_0523, tmp_path))
    rem = inc["remediation"]
    assert rem["target"]["version_source"] == "frame paths" and rem["target"]["sglang_version"] == "0.5.23"
    names = _all_flags(rem)
    assert "--cuda-graph-max-bs-decode" in names and "--cuda-graph-max-bs" not in names
    graph = next(c for c in _changes(rem) if "--cuda-graph-max-bs-decode" in c["set"])
    assert "0.5.16 to 0.5.19 spell it --cuda-graph-max-bs" in graph["note"]  # the range's older name, named once


def test_a_named_release_or_a_dump_wins_over_the_frames():
    inc = _incident(OOM_0523)  # the dump is there: its fields decide
    assert inc["remediation"]["target"]["version_source"] == "dump fields"
    assert "inferred_range" not in inc["remediation"]["target"]
    inc = _incident(FRAGMENT_044, "--sglang-version", "0.5.23")
    assert inc["remediation"]["target"]["version_source"] == "option"


def test_the_text_report_says_the_release_was_inferred_and_from_what():
    r = subprocess.run(doctor_cmd("explain", "--format", "text", str(FRAGMENT_044)),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    line = next(l for l in r.stdout.splitlines() if "inferred" in l and "flags for SGLang" in l)
    assert "tp_worker_overlap_thread.py" in line and ">=0.4.4" in line


LATE_060 = next((ROOT / "corpus" / "late").glob("060-*.log"))  # frames only, no cause line: a guarded step


def test_a_guarded_step_on_a_renamed_flag_takes_the_spelling_most_of_the_range_takes():
    # the fallback's advice on a cuda_graph guess lowers the decode graph's max batch size; the
    # frames fit 0.5.8 to 0.5.23, and more of those releases take --cuda-graph-max-bs (0.5.8 to
    # 0.5.19, a deprecated alias from 0.5.14) than 0.5.14's new --cuda-graph-max-bs-decode
    # (0.5.14 on): the step is spelled the first way and its note names the newer spelling
    # (before session 27: 0.5.23's spelling, which 0.5.8 to 0.5.13 refuse)
    inc = _incident(LATE_060)
    rem = inc["remediation"]  # the guarded advice on the best guess
    assert rem["needs_human"] and inc["fallback"]["best_guess"]["category"] == "cuda_graph"
    graph = next(c for c in _changes(rem) if "--cuda-graph-max-bs" in c.get("set", {}))
    assert "--cuda-graph-max-bs-decode" not in graph.get("set", {})
    assert "0.5.8 to 0.5.19 take it" in graph["note"] and "spell it --cuda-graph-max-bs-decode" in graph["note"]
