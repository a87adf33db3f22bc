"""The fallback's best guess from named, weighted evidence (diagnose/evidence.py), with the
shipped rule pack on fragments whose cause line is missing."""


from conftest import only_incident
from sglang_doctor.diagnose import evidence, phase_prior
from sglang_doctor.diagnose.evidence import Evidence
from sglang_doctor.model import Incident, Line

P = "/sgl-workspace/sglang/python/sglang/srt"
SCHED = (f"[2025-02-09 22:50:08 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
         f'  File "{P}/managers/scheduler.py", line 1787, in run_scheduler_process\n'
         "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n")


def guess_of(pack, text):
    ev = only_incident(pack, text)
    return ev, ev["fallback"]["best_guess"]


def names(guess):
    return [e["name"] for e in guess["evidence"]]


def test_a_source_line_cut_inside_the_call_names_it(pack):
    text = (SCHED + f'  File "{P}/model_executor/model_runner.py", line 207, in initialize\n'
            "    self.init_cu")
    ev, guess = guess_of(pack, text)
    assert guess["category"] == "cuda_graph" and "cut_call" in names(guess)
    assert "init_cuda_graphs" in guess["why"]
    assert ev["category"] == "cuda_graph"  # the cause line is missing: the guess is the category


def test_a_step_line_cut_before_its_call_names_the_step(pack):
    # ModelRunner's "min_per_gpu_memory = self.init_torch_distributed()" cut inside "self"
    text = (SCHED + f'  File "{P}/model_executor/model_runner.py", line 178, in __init__\n'
            "    min_per_gpu_memory = s")
    _, guess = guess_of(pack, text)
    assert guess["category"] == "nccl" and "cut_call" in names(guess)
    assert "init_torch_distributed" in guess["why"]


def test_a_step_line_cut_too_short_or_outside_the_model_runner_is_no_evidence(pack):
    # "self.init_" begins two step lines (the memory pool, the CUDA graphs); "min_" is too short to name one
    for source in ("self.init_", "min_"):
        text = SCHED + f'  File "{P}/model_executor/model_runner.py", line 178, in __init__\n    {source}'
        _, guess = guess_of(pack, text)
        assert "cut_call" not in names(guess), source
    # the same words in another module are not ModelRunner's step
    text = SCHED + f'  File "{P}/managers/tp_worker.py", line 90, in __init__\n    min_per_gpu_memory = s'
    _, guess = guess_of(pack, text)
    assert "cut_call" not in names(guess)
    assert evidence._step_call("min_per_gpu_memory = self.init_torch_distributed()") is None  # complete: not cut


def test_a_cut_name_that_fits_several_places_is_no_evidence(pack):
    text = SCHED + f'  File "{P}/model_executor/model_runner.py", line 207, in initialize\n    self.in'
    _, guess = guess_of(pack, text)
    assert "cut_call" not in names(guess)


def test_the_progress_line_before_a_cut_traceback_is_the_phase(pack):
    text = "Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]\n" + SCHED
    ev, guess = guess_of(pack, text)
    # read through what usually fails while loading weights (diagnose/phase_prior.py)
    # (the shard bar also says the architecture had been looked up: evidence.past_architecture)
    assert guess["category"] == next(c for c in phase_prior.shares("startup.load_weights") if c != "model.unsupported")
    assert set(names(guess)) == {"prior:startup.load_weights", "weights_reading"}
    assert "line 1" in guess["why"] and "startup.load_weights" in guess["why"]
    # a start-up progress line says the server was not ready: context known, no lowering
    assert "does not say whether the server had been ready" not in guess["why"]


def test_a_milestone_after_the_progress_line_replaces_it(pack):
    text = ("Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:10<00:00, 2.5s/it]\n"
            "[2025-02-09 22:50:07 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=30.00 GB, "
            "mem usage=14.00 GB.\n" + SCHED)
    _, guess = guess_of(pack, text)
    assert set(names(guess)) == {"prior:startup.memory_pool"} and "load_weights_end" in guess["why"]
    assert guess["category"] == next(iter(phase_prior.shares("startup.memory_pool")))


def test_the_running_phase_sigquit_handler_means_the_launch_had_finished(pack):
    line = "[2025-10-29 11:26:03] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n"
    _, guess = guess_of(pack, line)
    assert guess["category"] == "runtime.crash" and "sigquit:running" in names(guess)


def test_the_launch_phase_sigquit_handler_argues_against_a_serving_crash():
    against = Evidence("sigquit:launch", "runtime.crash", -0.2, "still starting")
    frame = Evidence("deepest_frame", "runtime.crash", 0.4, "serving loop")
    ready = evidence.weigh([frame], context_known=True)
    lowered = evidence.weigh([frame, against], context_known=True)
    assert ready["category"] == lowered["category"] == "runtime.crash"  # lowers, never vetoes
    assert evidence.weigh([against], context_known=True) is None


def test_weights_add_up_and_conflict_lowers_confidence():
    a = Evidence("deepest_frame", "model.load", 0.4, "x")
    b = Evidence("progress", "model.load", 0.3, "y")
    c = Evidence("signal:cuda_error", "runtime.crash", 0.35, "z")
    alone = evidence.weigh([a], context_known=True)
    agreeing = evidence.weigh([a, b], context_known=True)
    conflicting = evidence.weigh([a, c], context_known=True)
    assert alone["category"] == agreeing["category"] == conflicting["category"] == "model.load"
    assert agreeing["confidence"] > alone["confidence"] > conflicting["confidence"]
    assert "against it: signal:cuda_error for runtime.crash" in conflicting["why"]
    assert evidence.weigh([a], context_known=False)["confidence"] < alone["confidence"]
    assert all(g["confidence"] <= evidence.MAX_CONFIDENCE for g in (alone, agreeing, conflicting))


def test_a_strong_failure_line_outweighs_where_the_frames_were():
    frames = Evidence("deepest_frame", "model.load", 0.4, "x")
    ctx = Evidence("milestone", "model.load", 0.25, "y")
    nccl = Evidence("signal:nccl_warn", "nccl", 0.5, "NCCL WARN")
    assert evidence.weigh([frames, ctx, nccl], context_known=True)["category"] == "nccl"


def test_a_wrapper_that_says_it_killed_the_worker_for_memory_is_host_memory():
    text = ("(raylet) A worker died or was killed while executing a task by an unexpected system error. "
            "Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2.")
    inc = Incident(kind="signal", first_line=1, last_line=1, lines=[Line(1, text, text.encode())])
    (ev,) = evidence.from_signals(inc)
    assert (ev.name, ev.category) == ("wrapper", "memory.host_oom") and ev.weight < 0.3
    quiet = Incident(kind="signal", first_line=1, last_line=1, lines=[Line(1, "(raylet) started", b"")])
    assert evidence.from_signals(quiet) == []


def test_the_explanation_names_the_evidence_it_used(pack):
    text = "Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]\n" + SCHED
    ev, _ = guess_of(pack, text)
    assert "(evidence: prior:startup.load_weights)" in ev["explanation"]


def test_a_library_below_sglangs_frames_is_where_it_failed(pack):
    text = (SCHED + f'  File "{P}/model_executor/model_runner.py", line 253, in init_torch_distributed\n'
            "    initialize_model_parallel(tensor_model_parallel_size=self.tp_size)\n"
            '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 4001, in new_group\n'
            "    return _new_group_with_tag(\n")
    _, guess = guess_of(pack, text)
    assert guess["category"] == "nccl"
    assert {"deepest_frame", "library_frame"} <= set(names(guess))
    assert "distributed_c10d.py" in guess["why"]


def test_a_library_frame_above_sglangs_frames_says_nothing():
    from sglang_doctor.model import Frame
    inc = Incident(kind="traceback", first_line=1, last_line=3, frames=[
        Frame("/usr/local/lib/python3.10/dist-packages/transformers/utils/hub.py", 10, "cached_file"),
        Frame(f"{P}/managers/scheduler.py", 1787, "run_scheduler_process")])
    assert evidence.from_library_frames(inc) == []


def test_a_frame_line_cut_inside_its_function_name(pack):
    text = ("[2025-05-06 06:19:33] TpModelWorkerClient hit an exception: Traceback (most recent call last):\n"
            f'  File "{P}/managers/tp_worker_overlap_thread.py", line 118, in forward_t')
    _, guess = guess_of(pack, text)
    assert "cut_call" in names(guess) and guess["category"] == "runtime.crash"
    assert "forward_thread_func" in guess["why"]


def test_an_exit_status_of_its_own_is_no_host_oom_evidence():
    line = Line(1, "Exit code: 1", b"Exit code: 1")
    inc = Incident(kind="signal", first_line=1, last_line=1, lines=[line], signals=[line],
                   signal_names=["exit_code"], captures={"exit_code": "1"})
    assert evidence.from_signals(inc) == [] and evidence.from_exit_status(inc) == []
    inc.captures = {"exit_code": "-9"}
    assert [e.category for e in evidence.from_signals(inc) + evidence.from_exit_status(inc)] == \
        ["memory.host_oom", "memory.host_oom"]


def test_calledprocesserror_is_an_exception_not_an_exit_status(pack):
    text = "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.\n"
    ev = only_incident(pack, text)
    assert ev["exception"]["type"] == "subprocess.CalledProcessError"
    assert ev["category"] == "kernel.build"


def test_the_process_that_logged_it_is_evidence(pack):
    text = ("[2025-05-06 06:19:33] DetokenizerManager hit an exception: Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/pickle.py", line 1')
    _, guess = guess_of(pack, text)
    assert "header" in names(guess) and guess["category"] == "runtime.crash"
    _, guess = guess_of(pack, SCHED)  # the scheduler also fails at start-up: no evidence
    assert "header" not in names(guess)


def test_start_up_constructor_frames_say_the_server_was_not_ready(pack):
    text = (SCHED + f'  File "{P}/model_executor/model_runner.py", line 207, in initialize\n'
            "    self.init_cu")
    _, guess = guess_of(pack, text)
    assert "does not say whether the server had been ready" not in guess["why"]


def test_a_traceback_cut_building_the_expert_location_table_is_the_architecture_lookup(pack):
    # 0.4.6+: ModelRunner resolves the architecture for the expert location table before load_model
    text = (SCHED + f'  File "{P}/model_executor/model_runner.py", line 231, in __init__\n'
            "    self.initialize(min_per_gpu_memory)\n"
            f'  File "{P}/model_executor/model_runner.py", line 246, in initialize\n'
            "    compute_initial_expert_location_metadata(server_args, self.model_config)\n"
            f'  File "{P}/managers/expert_location.py", line 367, in compute_initial_expert_location_metadata\n'
            "    return ExpertLocationMetadata.init")
    _, guess = guess_of(pack, text)
    assert guess["category"] == "model.unsupported"
    assert "compute_initial_expert_location_metadata" in guess["why"]



def test_a_traceback_cut_in_0514_capture_frames_is_the_capture_step():
    # from 0.5.14 capture is in model_executor/runner/decode_cuda_graph_runner.py and the graph
    # back ends of runner_backend/ (before: model_executor/cuda_graph_runner.py): the same step
    from sglang_doctor.model import Frame

    sched = Frame(f"{P}/managers/scheduler.py", 1787, "run_scheduler_process")
    for capture in (Frame(f"{P}/model_executor/runner/decode_cuda_graph_runner.py", 702, "_capture"),
                    Frame(f"{P}/model_executor/runner_backend/full_cuda_graph_backend.py", 90, "capture_one"),
                    Frame(f"{P}/model_executor/cuda_graph_runner.py", 402, "capture_one_batch_size")):
        inc = Incident(kind="traceback", first_line=1, last_line=4, truncated=True, frames=[sched, capture])
        assert evidence.frame_phase(inc)[0] == "startup.cuda_graph", capture.file
        assert evidence.from_frames(inc) == []  # (a phase, read through the prior; not a category)
        # a kernel place that this capture called: the capture step, not "no code for this GPU"
        kernel = Frame(f"{P}/layers/attention/flashinfer_backend.py", 300, "forward_decode")
        inc = Incident(kind="traceback", first_line=1, last_line=5, truncated=True, frames=[sched, capture, kernel])
        assert evidence.frame_phase(inc)[0] == "startup.cuda_graph", capture.file
    # a runner module of 0.5.14+ that does not capture (the eager runner) is no capture frame
    eager = Frame(f"{P}/model_executor/runner/eager_runner.py", 40, "forward")
    inc = Incident(kind="traceback", first_line=1, last_line=4, truncated=True, frames=[sched, eager])
    assert evidence.frame_phase(inc) is None


def test_the_hubs_names_count_only_in_the_failures_own_message():
    # a launch script's HF_HUB_OFFLINE=1 echo or a model path's config.json are printed by healthy
    # launches too: no hub word from the lines around a failure or at the end of a text
    around = ["export HF_HUB_OFFLINE=1", "model path /models/qwen/config.json found"]
    assert not any(ev.name == "words:hub" for ev in evidence.from_text(around))
    inc = Incident(kind="traceback", first_line=1, last_line=3,
                   lines=[Line(1, "Traceback (most recent call last):"), Line(2, "HF_HUB_OFFLINE=1 is set")])
    assert not any(ev.name == "words:hub" for ev in evidence.from_words(inc))
    # the failure's own message naming the hub still counts (full weight)
    own = evidence._words("OSError: We couldn't connect to 'https://huggingface.co'", 1.0, "the failure's message")
    assert [ev.weight for ev in own if ev.name == "words:hub"] == [0.3]
    # the other words keep their half weight in the lines around
    assert any(ev.name == "words:nccl" and ev.weight == 0.15 for ev in evidence.from_text(["NCCL INFO Bootstrap"]))
