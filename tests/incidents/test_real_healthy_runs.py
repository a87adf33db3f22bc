"""Real healthy SGLang 0.5.23 runs (fixtures/healthy/real-0.5.23/, scripts/record_healthy_runs.py)
and the third-party lines people paste around SGLang (fixtures/healthy/noise/pieces.txt): no
incident in any run, whole (through ``explain`` as a user runs it) or with the noise interleaved
(bench/healthy_bait.py measure (f) ``noise``).  The runs hold what a healthy server answers and
goes on after: 400s for malformed JSON, an unknown model, prompts and max_tokens beyond the
context, bad sampling parameters, an invalid regex / json_schema, an unknown LoRA adapter; 404 /
405; client disconnects mid-stream; aborts; a cache flush; a burst; then a SIGTERM or SIGINT stop.
Session 30 added /metrics scrapes, wrong and missing API keys (401), HEAD / OPTIONS, a bad
logprob token id, a batch with one bad item, embeddings on a generation model, a client killed
with SIGKILL mid-stream, ``--log-requests``, bytes that are not HTTP, a websocket upgrade, a body
cut short, and SIGTERM / SIGINT with generations in flight."""

import sys
from pathlib import Path

from conftest import explain_incidents

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "scripts"))

import healthy_bait  # noqa: E402

RUNS = sorted((ROOT / "fixtures" / "healthy" / "real-0.5.23").glob("*.log"))


def test_the_recorded_runs_are_there_and_hold_what_they_were_recorded_for():
    names = {p.stem for p in RUNS}
    assert {"session_sigterm", "session_sigint"} <= names, names
    sigterm = (ROOT / "fixtures/healthy/real-0.5.23/session_sigterm.log").read_text()
    # request-level errors the server answered and lived through
    assert '"POST /generate HTTP/1.1" 400 Bad Request' in sigterm
    assert "longer than the model's context length" in sigterm
    assert "Failed to compile regex grammar" in sigterm
    assert "SIGTERM received" in sigterm


def test_the_session_30_runs_hold_their_probes_and_in_flight_stops():
    names = {p.stem for p in RUNS}
    assert {"probes_sigterm_in_flight", "sigint_in_flight"} <= names, names
    probes = (ROOT / "fixtures/healthy/real-0.5.23/probes_sigterm_in_flight.log").read_text()
    assert '"GET /metrics HTTP/1.1" 200 OK' in probes
    assert '"POST /generate HTTP/1.1" 401 Unauthorized' in probes
    assert '"OPTIONS /generate HTTP/1.1" 405 Method Not Allowed' in probes
    assert "out-of-vocabulary token id" in probes
    assert '"POST /v1/embeddings HTTP/1.1" 400 Bad Request' in probes
    assert "Gracefully exiting... Remaining number of requests 3" in probes
    sigint = (ROOT / "fixtures/healthy/real-0.5.23/sigint_in_flight.log").read_text()
    assert "Waiting for connections to close. (CTRL+C to force quit)" in sigint
    raw = (ROOT / "fixtures/healthy/real-0.5.23/raw_http_sigterm.log").read_text()
    assert "WARNING:  Invalid HTTP request received." in raw
    assert "WARNING:  Unsupported upgrade request." in raw


def test_the_session_32_runs_hold_warnings_probes_parse_failures_and_double_stops():
    names = {p.stem for p in RUNS}
    assert {"warnings_probes_ctrl_c_twice", "tool_parser_sigterm_twice"} <= names, names
    warned = (ROOT / "fixtures/healthy/real-0.5.23/warnings_probes_ctrl_c_twice.log").read_text()
    # PYTHONWARNINGS=default: the warnings with their source lines, before SGLang's dump
    assert "UserWarning: Only CUDA, HIP and XPU support AWQ currently." in warned
    assert "DeprecationWarning" in warned and "\n  warnings.warn(\n" in warned
    # /health polled while the server was loading
    assert '"GET /health HTTP/1.1" 503 Service Unavailable' in warned
    # the tool-call parser given a malformed call, an unknown parser answered with a 500
    assert "Failed to parse JSON part" in warned
    assert "ERROR:    Exception in ASGI application" in warned
    assert "ValueError: Unsupported tool_call_parser: no-such-parser" in warned
    assert "Failed to get model loader" in warned  # /update_weights_from_disk from a missing path
    assert warned.count("\nKeyboardInterrupt\n") >= 2  # Ctrl-C to the group, twice
    twice = (ROOT / "fixtures/healthy/real-0.5.23/tool_parser_sigterm_twice.log").read_text()
    assert twice.count("SIGTERM received") >= 2
    assert "Gracefully exiting... Remaining number of requests 2" in twice


def test_every_recorded_run_is_quiet_whole():
    for path in RUNS:
        assert explain_incidents(path) == [], path.name


def test_every_noise_piece_names_where_its_shape_comes_from():
    pieces = healthy_bait.noise_pieces()
    assert len(pieces) >= 10
    headers = [line for line in healthy_bait.NOISE.read_text().splitlines() if line.startswith("### ")]
    assert len(headers) == len(pieces)
    for header in headers:
        name, _, source = header[4:].partition("|")
        assert name.strip() and source.strip(), header
    assert all(lines for _name, lines in pieces)


def test_the_runs_with_third_party_noise_raise_no_incident():
    engine = healthy_bait.Engine()
    alarms = {name for group, name, text in healthy_bait.noise_texts()
              if group in ("whole", "piece", "all") and engine.incidents(text)}
    assert alarms == set()


def test_a_wrapped_nccl_plugin_probe_is_no_missing_header(tmp_path):
    # NCCL's INFO on the net plugin it looked for, wrapped by a terminal: its tail reads
    # "...: No such file or directory"; kernel.build.cuda_header_missing wants nvcc's
    # "fatal error: <cuda header>: No such file or directory" and only that starts an incident
    log = tmp_path / "wrapped.log"
    log.write_text("node-1:1234:1234 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: "
                   "cannot open shared object fi\nle: No such file or directory : when loading libnccl-net.so\n")
    assert explain_incidents(log) == []
    header = tmp_path / "header.log"
    header.write_text("/usr/local/lib/python3.10/dist-packages/flashinfer/data/include/flashinfer/vec_dtypes.cuh:"
                      "23:10: fatal error: cuda_fp8.h: No such file or directory\n")
    assert [i["rule"] for i in explain_incidents(header)] == ["kernel.build.cuda_header_missing"]
