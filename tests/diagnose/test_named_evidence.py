"""The layered diagnosis on fragments from the wild: words of the failure as named evidence,
no serving crash on an assumption the failure's own text argues against, a flag named only
when it is SGLang's, and the best guess of a fragment with no failure in it."""

import json
import subprocess


from conftest import doctor_cmd
from sglang_doctor.diagnose import evidence
from sglang_doctor.diagnose.rules_engine import RuleSet, is_sglang_flag
from sglang_doctor.pipeline import StreamPipeline

P = "/usr/local/lib/python3.12/dist-packages/sglang/srt"


def diagnose(ruleset, text):
    pipe = StreamPipeline(ruleset=ruleset)
    events = pipe.feed(text.encode()) + pipe.finish()
    return [e for e in events if e["event"] == "incident"]


def summary_of(tmp_path, text):
    log = tmp_path / "frag.log"
    log.write_text(text)
    out = subprocess.run(doctor_cmd("explain", "--format", "json", str(log)), capture_output=True, text=True)
    assert out.returncode in (0, 1), out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_words_of_the_failure_are_named_evidence():
    found = {ev.name: ev for ev in evidence._words("NCCL error: unhandled system error, mooncake transfer engine", 1.0, "x")}
    assert found["words:nccl"].category == "nccl" and found["words:transport"].category == "nccl"
    assert "'mooncake'" in found["words:transport"].why
    assert evidence._words("the weather is fine", 1.0, "x") == []
    (build,) = evidence._words("cpp_extension.py:2425] TORCH_CUDA_ARCH_LIST is not set, all archs are included", 1.0, "x")
    assert build.name == "words:build" and build.category == "kernel.build"


def test_hardware_words_are_no_crash_while_serving(pack):
    # FlashInfer's architecture check in the shape it prints ("Error in function '<runner>' at <file>:
    # Unsupported architecture"), for a runner no specific rule names (TllmGen's has one since session 22:
    # kernel.unsupported_hw.trtllm_gen_arch), so the words of the message are what name it
    line = ("RuntimeError: Error in function 'XqaDispatcher' at /x/flashinfer/xqa/xqa_runner.cuh:30: "
            "Unsupported architecture\n")
    (ev,) = diagnose(pack, line)
    assert ev["rule"] != "class.runtime.after_ready"
    assert ev["category"] == "kernel.unsupported_hw"  # named by its own words, with no rule for it
    assert "words:hardware" in ev["explanation"] and "named by the words of its own message" in ev["explanation"]
    assert ev["fallback"]["missing"] is None


def test_an_exception_with_no_start_up_words_is_still_assumed_a_crash_while_serving(pack):
    (ev,) = diagnose(pack, "ZeroDivisionError: division by zero\n")
    assert ev["rule"] == "class.runtime.after_ready"
    assert ev["assumed"] == ["the server had been ready before it failed"]


def test_import_time_frames_are_no_crash_while_serving(pack):
    log = ('File "sglang/srt/speculative/multi_layer_eagle_worker.py", line 236,\n  in MultiLayerEagleWorker\n'
           "    def mtp_model_runner(self, layer_id: int) -> ModelRunner:\nNameError: name 'ModelRunner' is not defined\n")
    (ev,) = diagnose(pack, log)
    assert ev["category"] != "runtime.crash" and ev["rule"] != "class.runtime.after_ready"


def test_a_flag_is_named_only_when_it_is_sglangs(pack):
    assert is_sglang_flag("--mem-fraction-static") and not is_sglang_flag("--no-such-flag-at-all")
    assert is_sglang_flag("tp_size") and not is_sglang_flag("--force-reinstall")
    log = (f'Traceback (most recent call last):\n  File "{P}/utils.py", line 3, in f\n    g()\n'
           "RuntimeError: please run pip install --force-reinstall sgl-kernel\n")
    (ev,) = diagnose(pack, log)
    assert ev["rule"] != "class.args.flag_named"
    # (a message that also says "pip install" is a missing package's: class.kernel.package_missing)
    (ev,) = diagnose(pack, "ValueError: --force-reinstall is not the way; set --speculative-eagle-topk to 1.\n")
    assert ev["rule"] == "class.args.flag_named" and "--speculative-eagle-topk" in ev["title"]


def test_a_router_that_could_not_start_is_named_by_the_argument_it_names(pack):
    (ev,) = diagnose(pack, "[Router (Python)] 2025-01-09 00:28:10 - ERROR - Error starting router: argument "
                           "'worker_urls': 'NoneType' object cannot be converted to 'Sequence'\n")
    assert ev["category"] == "args.invalid"


def test_kv_transfer_failure_is_a_transport_failure(pack):
    (ev,) = diagnose(pack, "[2025-09-17 16:23:13 TP1] Decode transfer failed for request rank=1 "
                           "decode_req.req.rid='3c' decode_req.req.bootstrap_room=16 with exception "
                           "KVTransferError(bootstrap_room=16): Failed due to an unknown reason from another rank\n")
    assert ev["category"] == "nccl"


def test_the_kv_transport_is_named_by_who_prints_it():
    """SGLang's PD-disaggregation classes (disaggregation/*/conn.py ``<Backend>KVSender`` ...) and the
    glog prefix of Mooncake's transfer-engine sources name the KV transport even when no word of it
    (mooncake, rdma, transfer engine) is in the line; other C++ sources and KV-cache classes do not."""
    for line in ("[2026-01-02 10:00:00 TP3] NixlKVReceiver poll: bootstrap info not ready",
                 "[2026-01-02 10:00:00 TP0] FakeKVSender send with kv_indices: [4, 5",
                 "E0102 10:00:00.123456  4242 transfer_metadata.cpp:612] Failed to retrieve the segment descriptor",
                 "W0102 10:00:00.123456  4242 rdma_transport.cpp:88] Worker: retry the slice"):
        names = {ev.name: ev for ev in evidence._words(line, 0.5, "x")}
        assert names["words:transport"].category == "nccl", line
    for line in ("[rank8]:[W516 12:46:57.4995 ProcessGroupNCCL.cpp:1826] [PG ID 0] Failed to check the flag",
                 "[2026-01-02 10:00:00 TP0] DecodeKVCacheOffloadManager started", "kv_manager = None"):
        assert "words:transport" not in {ev.name for ev in evidence._words(line, 0.5, "x")}, line


def test_a_fragment_of_transfer_engine_lines_guesses_the_transport():
    """A text with no failure that ends in the KV transfer engine's own glog lines: if the server
    failed, the transport is the best guess (it was 'other', nothing in the text, before)."""
    from sglang_doctor.diagnose.rules_engine import RuleSet

    text = ("E0102 10:00:00.123456  4242 transfer_metadata.cpp:612] Failed to retrieve the segment descriptor\n"
            "I0102 10:00:01.000001  4243 transfer_metadata_dump.cpp:51] Dump of segment 10.0.0.2:16917\n")
    pipe = StreamPipeline(RuleSet.load([]), remediate=False, whole_log=True)
    events = pipe.feed(text.encode()) + pipe.finish()
    assert not [e for e in events if e.get("event") == "incident"]
    guess = pipe.summary()["fallback"]["best_guess"]
    assert guess["category"] == "nccl" and guess["cue"] == "words:transport->nccl"
    assert "prefill AND the decode server" in pipe.summary()["fallback"]["next_step"]


def test_a_cut_oom_traceback_is_named_by_the_allocators_line(pack):
    log = ("[rank1]:[W906 07:46:05.008634648 CUDACachingAllocator.cpp:3933] memory allocation failed with OOM on "
           "device 1 while trying to allocate 4334813184 bytes (free: 3779919872, total: 287431131136).\n"
           "[2026-09-06 07:46:05 DP1 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
           f'  File "{P}/managers/scheduler.py", line 5156, in run_scheduler_process\n    scheduler = Scheduler(\n')
    (ev,) = diagnose(pack, log)
    assert ev["category"] == "memory.cuda_oom"
    assert ev["fallback"]["best_guess"]["category"] == "memory.cuda_oom"


def test_a_fragment_that_stops_in_nccl_set_up_guesses_nccl(tmp_path):
    text = "".join(f"[2025-02-06 21:35:22 TP{i}] Found nccl from library libnccl.so.2\n"
                   f"[2025-02-06 21:35:22 TP{i}] sglang is using nccl==2.21.5\n" for i in range(4))
    text += "[2025-02-06 21:35:32 TP3] Custom allreduce is disabled because this process group spans across nodes.\n"
    summary = summary_of(tmp_path, text)[-1]
    guess = summary["fallback"]["best_guess"]
    assert guess["category"] == "nccl"
    assert "words:nccl" in guess["why"] and guess["strength"] <= 0.5 and guess["confidence"] <= 0.9
    # a launch that stops in NCCL set-up with no error waits on a rank or node that failed: its log
    assert "every node" in summary["fallback"]["next_step"] and "NCCL WARN" in summary["fallback"]["next_step"]


def test_a_server_args_dump_is_no_evidence(tmp_path):
    text = ("[2025-02-18 09:33:55] server_args=ServerArgs(model_path='m', tp_size=2, quantization='fp8', "
            "disable_cuda_graph=False, mem_fraction_static=0.88, attention_backend='flashinfer')\n")
    guess = summary_of(tmp_path, text)[-1]["fallback"]["best_guess"]
    # its words (fp8, cuda graph, the memory fraction) name nothing; since session 22 the text is
    # placed by where it stops (after the server_args line: evidence.AFTER_HEADER), not by them
    assert not any(ev["name"].startswith("words:") for ev in guess["evidence"])
    assert guess["category"] == "model.unsupported" and guess["cue"] == "after_header->model.unsupported"


def test_a_serving_crash_on_an_assumed_context_gets_the_honest_fallback(pack):
    """A bare exception nothing else knows is named a crash while serving only on an
    assumption (no ready line, milestone or header): the fallback block says so, with the
    command that gets the rest; with a ready line before it, no fallback is attached."""
    (ev,) = diagnose(pack, "ZeroDivisionError: division by zero\n")
    assert ev["rule"] == "class.runtime.after_ready"
    assert "assumption" in ev["fallback"]["missing"] and ev["fallback"]["next_step"]
    assert ev["fallback"]["best_guess"]["category"] == "runtime.crash"
    ready = ("[2026-01-01 10:00:00] The server is fired up and ready to roll!\n"
             f'Traceback (most recent call last):\n  File "{P}/managers/scheduler.py", line 9, in event_loop_normal\n'
             "    x()\nZeroDivisionError: division by zero\n")
    (ev,) = diagnose(pack, ready)
    assert ev["category"] == "runtime.crash" and not ev.get("fallback")

