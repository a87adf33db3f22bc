"""Shapes of real pastes incident forming lost (session 28), each with a counter-example:

- a paste cut inside an exception group's sub-traceback (``    |   File ...`` lines) where every
  frame left is the ASGI stack's (uvicorn, starlette, FastAPI, anyio): one HTTP request's
  error under uvicorn's "Exception in ASGI application" (fixtures/healthy/
  asgi_exception_group_one_request_cut.log, sgl-project/sglang#9963, cut as bench/healthy_bait.py
  (e) cuts it).  The same frames without the group's ``|`` stay a fragment of a failure, and a
  group whose frames reach SGLang's scheduler stays an incident.
- a paste that began inside one of NCCL's fallback warnings (``not supported or fails to
  initialize, ignoring NCCL_ALGO=COLLNET``, NVIDIA/nccl-tests#133): the warning's own last words,
  not a refused launch setting.  A cut first line with a refusal's words and no such tail stays one.
- uvicorn's "Shutting down" (uvicorn/server.py Server.shutdown, logged only once SIGINT / SIGTERM
  asked its loop to exit, ``^C`` echoed before it on Ctrl-C): what the ranks print after it is the
  stop's teardown; a failure open above it is still reported (tests/incidents/
  test_sigquit_before_traceback.py), and "Shutting down" in other words is no stop.
"""

from __future__ import annotations

from pathlib import Path

from conftest import incidents_of_lines
from tests.incidents.test_survived_before_ready import _events, _incidents
from tests.incidents.test_survived_while_serving import GOES_ON, SERVING, UP

ROOT = Path(__file__).resolve().parents[2]
ASGI_CUT = (ROOT / "fixtures/healthy/asgi_exception_group_one_request_cut.log").read_text().splitlines()
COLLNET = (ROOT / "fixtures/healthy/collnet_ignored_nccl_algo_setup_goes_on.log").read_text().splitlines()


def _sub_traceback_from(frame_file: str) -> list[str]:
    """The fixture from the line above its first frame in ``frame_file``, that line's head (the
    group's ``|``) cut, as a selection dragged from mid-line leaves it."""
    at = next(i for i, line in enumerate(ASGI_CUT) if frame_file in line)
    return [ASGI_CUT[at - 2].split("|", 1)[1]] + ASGI_CUT[at - 1:]


def test_a_cut_sub_traceback_of_the_asgi_stack_is_one_request(tmp_path):
    lines = _sub_traceback_from("fastapi/applications.py")
    assert lines[2].lstrip().startswith("|   File") and "fastapi/" in lines[2]
    assert incidents_of_lines(tmp_path, lines) == []
    assert incidents_of_lines(tmp_path, lines[2:]) == []  # from the frame itself


def test_the_same_frames_without_the_groups_bars_stay_a_fragment(tmp_path):
    lines = [line.replace("    |", "  ", 1) for line in _sub_traceback_from("fastapi/applications.py")[2:]]
    assert "|" not in lines[0][:8]
    assert len(incidents_of_lines(tmp_path, lines)) == 1


def test_a_group_whose_frames_reach_the_scheduler_stays_an_incident(tmp_path):
    lines = _sub_traceback_from("fastapi/applications.py")[2:] + [
        '    |   File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 900, in '
        "event_loop_overlap",
        "    |     self.process_batch_result(batch, result)"]
    assert len(incidents_of_lines(tmp_path, lines)) == 1


def test_a_paste_that_began_inside_nccls_collnet_fallback_is_no_refused_setting(tmp_path):
    first = COLLNET[0]
    cut = first[first.index("not supported"):]
    assert cut.startswith("not supported or fails to initialize")
    assert incidents_of_lines(tmp_path, [cut] + COLLNET[1:5]) == []


def test_a_cut_refusal_without_a_fallbacks_tail_stays_a_failure(tmp_path):
    # the same words "not supported", in the end of a refusal a rule knows (SGLang's quantization
    # capability check, its head cut) instead of NCCL's "ignoring NCCL_ALGO=COLLNET": still the
    # message of a failure whose type the paste cut
    cut = "ntization method fp8 is not supported for the current GPU. Minimum capability: 89. Current capability: 86."
    incs = incidents_of_lines(tmp_path, [cut] + COLLNET[1:5])
    assert len(incs) == 1 and incs[0].exception is not None


def test_refusal_words_alone_do_not_make_a_cut_message(tmp_path):
    # words no rule's message holds (a negative lookahead's words are what a message must NOT
    # hold: cut_match.literal_words leaves them out) read as nothing
    incs = incidents_of_lines(tmp_path, ["not supported or fails to initialize with --enable-dp-attention"] + COLLNET[1:5])
    assert incs == []


SERVED = UP + SERVING + GOES_ON
NCCL_TEARDOWN = ("node1:2241:2318 [1] NCCL WARN [Service thread] Error encountered progressing operation=Connect, "
                 "res=3, closing connection\n")
DIED = "[2026-05-09 10:09:09] Received sigquit from a child process. It usually means the child failed.\n"
CRASHED = "[2026-05-09 10:09:09] Subprocess scheduler_0 (pid=2241) crashed with exit code -9\n"


def test_what_the_ranks_print_after_uvicorns_shutdown_is_the_stops_teardown(pack):
    for down in ("[2026-05-09 10:09:08] INFO:     Shutting down\n", "^CINFO:     Shutting down\n"):
        assert _incidents(_events(pack, SERVED + down + NCCL_TEARDOWN + CRASHED + DIED)) == [], down


def test_without_the_shutdown_line_the_same_lines_are_a_failure(pack):
    assert [i["category"] for i in _incidents(_events(pack, SERVED + NCCL_TEARDOWN + DIED))] == ["nccl"]


def test_shutting_down_in_other_words_is_no_stop(pack):
    for other in ("[2026-05-09 10:09:08] Shutting down the detokenizer\n",
                  "[2026-05-09 10:09:08] INFO:     Shutting down after 3 retries failed\n"):
        incidents = _incidents(_events(pack, SERVED + other + NCCL_TEARDOWN + DIED))
        assert [i["category"] for i in incidents] == ["nccl"], other


def test_a_failure_open_above_the_shutdown_is_still_reported(pack):
    events = _events(pack, SERVED + NCCL_TEARDOWN + DIED + "[2026-05-09 10:09:10] INFO:     Shutting down\n")
    assert [i["category"] for i in _incidents(events)] == ["nccl"]
