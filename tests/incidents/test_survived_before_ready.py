"""An incident before ready whose launch then prints its ready line is a warning the server
survived, not the launch's cause (incidents/survived.py); without the ready line, or when the
ready line is a relaunch's, nothing changes.

The logs are 0.5.23-shaped tp=2 launches written from SGLang's source: the milestones of
sglang-notes 1.3, ``The server is fired up and ready to roll!`` (entrypoints/http_server.py
``_wait_and_warmup``, printed only after every scheduler rank sent ``ready`` and the warm-up
succeeded), and a caught CUDA OOM as srt/layers/flashinfer_comm_fusion.py
``_preflight_check_workspace_memory`` logs it: ``logger.warning("FlashInfer workspace preflight
probe failed (%s). Skipping allreduce fusion.", e)``.  Read in process as explain reads a file
(whole log, remedies on); the exit status and the text through the real CLI are tested with the
warning while serving's (test_survived_while_serving.py)."""

from __future__ import annotations


def _tp(stamp: str, text: str) -> str:
    return f"[2026-01-01 00:{stamp} TP0] {text}\n[2026-01-01 00:{stamp} TP1] {text}\n"


DUMP = ("[2026-01-01 00:00:01] server_args={'model_path': 'meta-llama/Llama-3.1-8B-Instruct', 'host': '127.0.0.1', "
        "'port': 30000, 'tp_size': 2, 'mem_fraction_static': 0.88, 'sglang_version': '0.5.23'}\n")
START = (_tp("00:02", "Init parallel begin.") + _tp("00:03", "Init parallel ends. elapsed=0.31 s")
         + _tp("00:04", "Load weight begin. avail mem=78.50 GB")
         + _tp("00:40", "Load weight end. elapsed=38.12 s, type=LlamaForCausalLM, avail mem=62.31 GB, mem usage=16.19 GB.")
         + _tp("00:44", "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 420000, K size: 24.00 GB, V size: 24.00 GB")
         + _tp("00:45", "Memory pool end. avail mem=13.20 GB")
         + _tp("00:46", "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=13.10 GB"))
CAUGHT_OOM = _tp("00:50", "FlashInfer workspace preflight probe failed (CUDA out of memory. Tried to allocate 2.00 GiB. "
                          "GPU 0 has a total capacity of 79.19 GiB of which 1.50 GiB is free. Including non-PyTorch "
                          "memory, this process has 77.68 GiB memory in use.). Skipping allreduce fusion.")
CAPTURED = _tp("01:07", "Capture target decode CUDA graph end. bs=[1, 2, 4, 8], elapsed=21.40 s, mem usage=0.52 GB, "
                        "avail mem=12.58 GB.")
SCHEDULER_UP = ("[2026-01-01 00:01:08 TP0] max_total_num_tokens=420000, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                "max_running_requests=2048, context_len=131072, available_gpu_mem=12.58 GB\n")
UVICORN = ("[2026-01-01 00:01:09] INFO:     Started server process [10649]\n"
           "[2026-01-01 00:01:09] INFO:     Waiting for application startup.\n"
           "[2026-01-01 00:01:09] INFO:     Application startup complete.\n"
           "[2026-01-01 00:01:09] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)\n")
WARMUP = ('[2026-01-01 00:01:10] INFO:     127.0.0.1:33788 - "GET /model_info HTTP/1.1" 200 OK\n'
          "[2026-01-01 00:01:10 TP0] Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
          "#running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 4.44\n"
          '[2026-01-01 00:01:11] INFO:     127.0.0.1:33792 - "POST /generate HTTP/1.1" 200 OK\n')
READY = "[2026-01-01 00:01:11] The server is fired up and ready to roll!\n"
HEALTHY_WITH_CAUGHT_OOM = DUMP + START + CAUGHT_OOM + CAPTURED + SCHEDULER_UP + UVICORN + WARMUP + READY
# run_scheduler_process's handler (managers/scheduler.py): the scheduler dies, the parent gets SIGQUIT
SCHEDULER_DIED = (
    "[2026-01-01 00:00:41 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 3118, in run_scheduler_process\n'
    "    scheduler = Scheduler(\n"
    '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/model_executor/model_runner.py", line 495, in initialize\n'
    "    self.init_memory_pool()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 1 has a total capacity of 79.19 GiB "
    "of which 512.00 MiB is free.\n"
    "[2026-01-01 00:00:41] Received sigquit from a child process. It usually means the child failed.\n")


def _events(pack, text: str) -> list[dict]:
    from sglang_doctor.pipeline import StreamPipeline

    pipe = StreamPipeline(pack, whole_log=True)  # as explain reads a finished file
    return pipe.feed(text.encode()) + pipe.finish() + [pipe.summary()]


def _incidents(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "incident"]


def _survived(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "warning" and e.get("kind") == "survived_before_ready"]


def test_a_caught_oom_before_ready_of_a_launch_that_comes_up_is_a_warning(pack):
    events = _events(pack, HEALTHY_WITH_CAUGHT_OOM)
    assert _incidents(events) == []
    (warning,) = _survived(events)
    assert warning["category"] == "memory.cuda_oom" and warning["launch"] == 0
    assert warning["lines"][0] == HEALTHY_WITH_CAUGHT_OOM.splitlines().index(CAUGHT_OOM.splitlines()[0]) + 1
    assert warning["ready_line"] == len(HEALTHY_WITH_CAUGHT_OOM.splitlines())
    ready = next(i for i, e in enumerate(events) if e["event"] == "ready")
    assert events.index(warning) < ready  # in its place among the events
    assert events[-1]["incidents"] == 0 and events[-1]["survived"] == 1


def test_without_the_ready_line_the_caught_oom_stays_an_incident(pack):
    """Unknown stays unknown: a log that ends before ready does not say the launch came up."""
    text = DUMP + START + CAUGHT_OOM + CAPTURED + SCHEDULER_UP + UVICORN
    (inc,) = _incidents(_events(pack, text))
    assert inc["category"] == "memory.cuda_oom"
    assert inc["remediation"] is not None  # remedied as before
    assert _survived(_events(pack, text)) == []


def test_a_launch_that_came_up_and_died_while_serving_keeps_its_crash(pack):
    serving_oom = (
        "[2026-01-01 00:05:00 TP0] Decode batch, #running-req: 40, #token: 401000, token usage: 0.95, cuda graph: True, "
        "gen throughput (token/s): 342.88, #queue-req: 12\n" + SCHEDULER_DIED.replace("00:00:41", "00:05:01")
        .replace("scheduler = Scheduler(", "scheduler.event_loop_overlap()"))
    events = _events(pack, HEALTHY_WITH_CAUGHT_OOM + serving_oom)
    (inc,) = _incidents(events)
    assert inc["lines"][0] > len(HEALTHY_WITH_CAUGHT_OOM.splitlines())  # the crash after ready, not the warning
    assert len(_survived(events)) == 1


def test_an_earlier_launch_that_died_keeps_its_incident_when_a_later_one_comes_up(pack):
    """An accumulated log: launch 1 died of the OOM, launch 2 (its own dump) came up."""
    first = DUMP + START[: START.index("[2026-01-01 00:00:44")] + SCHEDULER_DIED
    events = _events(pack, first + HEALTHY_WITH_CAUGHT_OOM)
    (inc,) = _incidents(events)
    assert inc["launch"] == 0 and inc["category"] == "memory.cuda_oom"
    (warning,) = _survived(events)
    assert warning["launch"] == 1


def test_a_death_between_the_warning_and_a_dumpless_relaunchs_ready_line_keeps_both(pack):
    """The relaunch's dump is missing from the paste: the scheduler that died before the ready
    line says the ready line is another start's, so neither incident is lowered."""
    text = DUMP + START + CAUGHT_OOM + CAPTURED + SCHEDULER_DIED + START + CAPTURED + SCHEDULER_UP + UVICORN + WARMUP + READY
    events = _events(pack, text)
    assert [i["category"] for i in _incidents(events)] == ["memory.cuda_oom", "memory.cuda_oom"]
    assert _survived(events) == []


def test_a_start_up_printed_again_before_the_ready_line_keeps_the_incident(pack):
    """No death line, but the scheduler's once-per-launch summary and uvicorn came twice: the
    start-up began again (a lost dump), the ready line may be the second start's."""
    text = DUMP + START + CAPTURED + SCHEDULER_UP + UVICORN + CAUGHT_OOM + SCHEDULER_UP + UVICORN + WARMUP + READY
    events = _events(pack, text)
    assert len(_incidents(events)) == 1
    assert _survived(events) == []


def test_a_rank_that_died_is_never_a_warning_even_with_a_ready_line_after_it(pack):
    """SGLang prints the ready line only after every rank reported ready: a rank's fatal
    handler before it means the ready line is not this start's."""
    text = DUMP + START + SCHEDULER_DIED + CAPTURED + SCHEDULER_UP + UVICORN + WARMUP + READY
    events = _events(pack, text)
    assert len(_incidents(events)) == 1
    assert _survived(events) == []


def test_a_failure_before_the_launchs_dump_is_not_lowered(pack):
    """A dump-less first attempt failed; the dump that follows takes over the launch record."""
    failed = ("Traceback (most recent call last):\n"
              '  File "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", line 11, in <module>\n'
              "    server_args = prepare_server_args(sys.argv[1:])\n"
              "ValueError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    events = _events(pack, failed + HEALTHY_WITH_CAUGHT_OOM)
    assert [i["lines"][0] for i in _incidents(events)] == [1]
    assert len(_survived(events)) == 1


def test_a_warning_of_the_argument_resolution_before_the_dump_is_survived(pack):
    """0.5.23 arg_groups/serving_hook.py logs while it resolves the arguments, before the dump:
    logger.warning(f"Failed to create CUDA coredump directory {coredump_dir}: {e}; coredumps may
    fail to write.")"""
    warning = ("[2026-01-01 00:00:00] Failed to create CUDA coredump directory /tmp/sglang_cuda_coredumps: CUDA out of "
               "memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.19 GiB; coredumps may fail to write.\n")
    events = _events(pack, warning + HEALTHY_WITH_CAUGHT_OOM)
    assert _incidents(events) == [] and [w["lines"][0] for w in _survived(events)][0] == 1


def test_a_kv_transport_error_before_ready_stays_an_incident(pack):
    """PD warm-up goes to a fake bootstrap host: the ready line proves nothing of Mooncake."""
    mooncake = ("E0101 00:00:50.337682 3833148 rdma_context.cpp:265] Failed to register memory 0x7f9568000000: "
                "Bad address [14]\n"
                "E0101 00:00:50.337708 3833148 rdma_transport.cpp:256] Failed to register memory region with context 0\n")
    text = DUMP + START + mooncake + CAPTURED + SCHEDULER_UP + UVICORN + WARMUP + READY
    events = _events(pack, text)
    assert len(_incidents(events)) == 1
    assert _survived(events) == []


# 0.4.6.post5 engine.py sigchld_handler: logger.warning("Child process unexpectedly failed with an
# exit code %d. pid=%d", exitcode, pid) -- the main process reports a child's exit and goes on
CHILD_REPORT = "[2026-01-01 00:00:50] Child process unexpectedly failed with an exit code 256. pid=32885\n"


def test_a_childs_exit_reported_by_the_parent_before_ready_is_survived(pack):
    text = DUMP + START + CHILD_REPORT + CAPTURED + SCHEDULER_UP + UVICORN + WARMUP + READY
    events = _events(pack, text)
    assert _incidents(events) == [] and len(_survived(events)) == 1


def test_a_schedulers_own_exit_status_before_ready_is_a_death(pack):
    """0.5.9 engine.py: "Rank 0 scheduler is dead. Please check if there are relevant logs." and
    "Exit code: -9": the launch ended; a ready line after it is another start's."""
    dead = ("[2026-01-01 00:00:50] Rank 0 scheduler is dead. Please check if there are relevant logs.\n"
            "[2026-01-01 00:00:50] Exit code: -9\n")
    text = DUMP + START + CHILD_REPORT + dead + CAPTURED + SCHEDULER_UP + UVICORN + WARMUP + READY
    events = _events(pack, text)
    assert len(_incidents(events)) == 1
    assert _survived(events) == []
