"""A traceback whose own record says the code went on after it is a warning, not a failure
(session 33, benign33; incidents/survived.py ``handled_record``, assemble.py ``_logged_by``).

SGLang logs caught exceptions with their traceback and goes on (``exc_info=True``,
``logger.exception``): 0.5.23 metadata_glue_graph.py "... capture failed for key %s; falling back
to eager metadata prep permanently.", kimi_k3_vit_cuda_graph_runner.py "... capture failed for
key=%s; using eager fallback" (fixtures/healthy/handled_*.log).  A fragment that ends right after
one is no failure: the record's words say so.  What stays an incident: the same record and
traceback with a death after it, a record without such words, and a traceback that starts at the
program's entry (nobody caught it) below an unrelated warning that mentions a fallback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_doctor.incidents import survived
from tests.incidents.test_survived_before_ready import _events, _incidents

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = ROOT / "fixtures" / "healthy"
SIGQUIT = "[2026-01-01 00:00:09] Received sigquit from a child process. It usually means the child failed.\n"
CAPTURE = (HEALTHY / "handled_capture_fallback_traceback_end.log").read_text()


def _goes_on(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "warning" and e.get("kind") == "nonfatal_warning"]


@pytest.mark.parametrize("name", ["handled_capture_fallback_traceback_end.log",
                                  "handled_vit_graph_eager_fallback_bare.log"])
def test_a_traceback_its_record_says_was_handled_is_a_warning(pack, name: str):
    events = _events(pack, (HEALTHY / name).read_text())
    assert _incidents(events) == []
    (warning,) = _goes_on(events)
    assert "went on" in warning["message"]


def test_a_death_after_it_keeps_the_incident(pack):
    events = _events(pack, CAPTURE + SIGQUIT)
    assert _incidents(events) and _goes_on(events) == []


def test_a_record_without_going_on_words_keeps_the_incident(pack):
    text = CAPTURE.replace("; falling back to eager metadata prep permanently.", ".")
    events = _events(pack, text)
    assert _incidents(events)


def test_an_uncaught_traceback_below_a_fallback_warning_stays(pack):
    # the launching process's own exception, its first frame runpy's: the warning above it (a
    # logger.warning without exc_info) did not log it
    text = ("[2026-01-01 00:00:01] Failed to get GPU memory capacity from nvidia-smi. Falling back to "
            "torch.cuda.mem_get_info().\n"
            "Traceback (most recent call last):\n"
            '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", line 66, in <module>\n'
            "    server_args = prepare_server_args(sys.argv[1:])\n"
            '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/server_args.py", line 819, in __post_init__\n'
            "    self._handle_attention_backend()\n"
            "ValueError: this attention backend needs --kv-cache-dtype auto\n")
    events = _events(pack, text)
    assert _incidents(events) and _goes_on(events) == []


@pytest.mark.parametrize("header, handled", [
    ("Metadata glue-graph capture failed for key 3; falling back to eager metadata prep permanently.", True),
    ("NVIDIA KDA prefill failed (T=8); restored states and fell back to Triton for this batch", True),
    ("Mori transfer drainer failed for room 7; retrying", True),
    ("Detection rule 'x' for y raised an exception: boom. Skipping.", True),
    ("fused_hy4_ihc_pre failed, disabling fused path", True),
    ("Failed to set up metrics: boom. Continuing without metrics.", True),
    ("DSpark sampling-accept graph capture failed for 4; sampling steps take the eager accept from now on.", True),
    ("Capture cuda graph failed: boom", False),
    ("Failed to load plugin x from group y", False),
    ("Please use --disable-cuda-graph to disable it", False),
])
def test_the_words(header: str, handled: bool):
    assert (survived.HANDLED_WORDS.search(header) is not None) is handled


def test_inventoried_sites_that_end_the_process_carry_none_of_the_words():
    import json

    for version in ("0.5.9", "0.5.23"):
        data = json.loads((ROOT / "data" / "inventory" / f"handled-{version}.json").read_text())
        assert data["ends_with_words"] == 0
        ends = [s for sites in data["files"].values() for s in sites if s[6] == "ends"]
        assert all(not survived.HANDLED_WORDS.search(s[5]) for s in ends)



@pytest.mark.slow  # (reads every source file of two wheels: about a minute)
@pytest.mark.parametrize("version", ["0.5.23", "0.5.9"])
def test_the_shipped_inventory_is_what_the_script_reads_from_the_wheel(version: str):
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    import inventory_failures as invf
    import inventory_handled as invh

    found = sorted(invf.default_wheel_dir().glob(f"sglang-{version}-*.whl"))
    if not found:
        pytest.skip(f"no sglang {version} wheel in {invf.default_wheel_dir()} (scripts/inventory_handled.py fetches it)")
    shipped = (ROOT / "data" / "inventory" / f"handled-{version}.json").read_text(encoding="utf-8")
    assert invf.dumps(invh.inventory(version, found[0], invf.Dispositions.load())) == shipped
