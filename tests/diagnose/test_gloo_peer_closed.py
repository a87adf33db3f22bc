"""A gloo (CPU) collective whose peer closed or reset the connection (gloo/transport/tcp/pair.cc:
"Connection closed by peer", "Read error ...: Connection reset by peer"): the rule names the
transport (rules/nccl.yaml nccl.gloo_transport_error), and its own explanation says this rank only
lost its peer.  So the honest fallback says what is missing -- the rank or node that failed first
-- and the one command greps every node's log, as for torch's TCPStore peer that went away.
A connect timeout is no peer that went away (it may be this node's network): no fallback."""

from pathlib import Path

from sglang_doctor.diagnose import fallback
from sglang_doctor.pipeline import StreamPipeline

ROOT = Path(__file__).resolve().parents[2]
SERVING_RESET = ROOT / "fixtures" / "nccl" / "gloo_tcp_read_error_serving.log"
# a real no-cause fragment: a PP x TP rank's gloo recv lost its peer while serving (the peer ran out of
# GPU memory, in another rank's log)
CASCADE_TAIL = ROOT / "corpus" / "field16" / "013-memory.cuda_oom-dsv4-sm75-tp2pp4-chunk512-long-prefill-only-gloo-cascade-tail.log"

FRAME = ('[2025-06-01 10:00:05 TP1] Scheduler hit an exception: Traceback (most recent call last):\n'
         '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 2826, in run_scheduler_process\n'
         '    scheduler.event_loop_overlap()\n'
         '  File "/usr/lib/python3/dist-packages/sglang/srt/distributed/parallel_state.py", line 900, in broadcast_object\n'
         '    torch.distributed.broadcast_object_list(objs)\n')


def incidents(pack, data: bytes):
    pipe = StreamPipeline(pack, remediate=False)
    events = pipe.feed(data) + pipe.finish()
    return [e for e in events if e["event"] == "incident"]


def test_a_peer_that_reset_the_connection_is_what_is_missing(pack):
    (ev,) = incidents(pack, SERVING_RESET.read_bytes())
    assert ev["_diagnosis"].rule == "nccl.gloo_transport_error"
    fb = ev["fallback"]
    assert fb is not None and fb["missing"].startswith(fallback.PEER_GONE)
    assert "on every node" in fb["next_step"]
    assert fb["best_guess"]["category"] == "nccl"  # the rule's answer, stated as the guess


def test_a_no_cause_cascade_tail_gets_the_fallback(pack):
    evs = incidents(pack, CASCADE_TAIL.read_bytes())
    assert evs and all(ev["fallback"] and ev["fallback"]["missing"].startswith(fallback.PEER_GONE) for ev in evs)


def test_a_connect_timeout_is_not_a_peer_that_went_away(pack):
    text = FRAME + "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:144] Connect timeout [10.0.0.2]:29500\n"
    for ev in incidents(pack, text.encode()):
        assert not (ev.get("fallback") or {}).get("missing", "").startswith(fallback.PEER_GONE)


def test_closed_by_peer_in_a_synthetic_traceback(pack):
    text = FRAME + "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [10.0.0.2]:36913\n"
    (ev,) = incidents(pack, text.encode())
    assert ev["fallback"]["missing"].startswith(fallback.PEER_GONE)
