from sglang_doctor.pipeline import StreamPipeline, read_incidents
from conftest import streamed_incidents

P = "/usr/lib/python3.12/site-packages/sglang/srt"


incidents_of = streamed_incidents


def test_seed_two_launches_each_one_incident_with_both_ranks(seed_full):
    launches, incs = read_incidents(seed_full)
    assert [l.line for l in launches] == [4, 70]
    assert len(incs) == 2
    for inc, mfs, launch in zip(incs, ("0.85", "0.88"), (0, 1)):
        assert inc.ranks == ["TP0", "TP1"]
        assert inc.launch_index == launch
        assert inc.exception.type == "RuntimeError"
        assert inc.exception.message.endswith(f"mem_fraction_static={mfs}")
        assert inc.traceback.count("Traceback (most recent call last):") == 2
        assert inc.lines[-1].text.endswith("It usually means the child failed.")
        assert [f.function for f in inc.frames][-3:] == ["__init__", "initialize", "init_memory_pool"]
        assert not inc.truncated and not inc.truncated_top
    # every line of launch 2's traceback, the final RuntimeError line included
    text = seed_full.read_bytes().decode().split("\n")
    assert incs[1].traceback.splitlines() == text[85:132]


def test_tail20_fragment_is_a_truncated_incident(seed_tail):
    _, (inc,) = read_incidents(seed_tail)
    assert inc.truncated and inc.truncated_top
    assert [f.function for f in inc.frames] == ["init_model_worker", "init_tp_model_worker", "__init__", "_init_model_runner"]
    assert inc.exception is None


def test_chained_exceptions_are_one_incident():
    log = f"""[2026-05-09 09:17:36] Scheduler hit an exception: Traceback (most recent call last):
  File "{P}/a.py", line 1, in f
    g()
KeyError: 'x'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "{P}/b.py", line 2, in h
    raise ValueError("bad")
ValueError: bad

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "{P}/c.py", line 3, in k
    raise RuntimeError("outer") from e
RuntimeError: outer
[2026-05-09 09:17:36] Received sigquit from a child process. It usually means the child failed.
"""
    (inc,), _ = incidents_of(log)
    assert [e.type for e in inc.chain] == ["KeyError", "ValueError", "RuntimeError"]
    assert inc.exception.type == "RuntimeError"
    assert inc.last_line == 19 and inc.first_line == 1


def test_multiline_message_and_repeated_frames():
    log = f"""Traceback (most recent call last):
  File "{P}/x.py", line 5, in f
    f()
  [Previous line repeated 996 more times]
RuntimeError: Capture cuda graph failed: boom
Possible solutions:
1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)
[2026-05-09 09:17:36] Received sigquit from a child process. It usually means the child failed.
"""
    (inc,), _ = incidents_of(log)
    assert inc.exception.message.splitlines() == [
        "Capture cuda graph failed: boom", "Possible solutions:",
        "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)"]


def test_frames_without_indentation():
    log = f"""Traceback (most recent call last):
File "{P}/x.py", line 5, in f
self.init_memory_pool()
File "{P}/y.py", line 9, in init_memory_pool
raise RuntimeError(
RuntimeError: Not enough memory.
"""
    (inc,), _ = incidents_of(log)
    assert [f.function for f in inc.frames] == ["f", "init_memory_pool"]
    assert inc.exception.type == "RuntimeError" and not inc.truncated


def test_exception_group():
    log = """  + Exception Group Traceback (most recent call last):
  |   File "/x/main.py", line 3, in <module>
  |     raise ExceptionGroup("many", [ValueError(1), TypeError(2)])
  | ExceptionGroup: many (2 sub-exceptions)
  +-+---------------- 1 ----------------
    | ValueError: 1
    +---------------- 2 ----------------
    | TypeError: 2
    +------------------------------------
[2026-05-09 09:17:36] next record
"""
    (inc,), _ = incidents_of(log)
    assert inc.first_line == 1 and inc.last_line == 9


def test_non_traceback_signals():
    log = """[2026-05-09 09:17:36] Load weight begin. avail mem=46.79 GB
[2026-05-09 09:17:40] Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.
[2026-05-09 09:18:00] Load weight begin. avail mem=46.79 GB
Out of memory: Killed process 4242 (python3) total-vm:100kB
"""
    incs, _ = incidents_of(log)
    assert [i.kind for i in incs] == ["signal", "signal"]
    assert incs[0].signal_names == ["scheduler_died"] and incs[0].captures["exit_code"] == "-9"
    assert incs[1].signal_names == ["oom_killer"]


def test_operator_stop_is_not_an_incident():
    log = """[2026-12-02 15:14:19] The server is fired up and ready to roll!
[2026-12-02 15:56:10] SIGTERM received. signum=None frame=None. Draining requests and shutting down...
[2026-12-02 15:56:11] Subprocess scheduler_0 (pid=18459) crashed with exit code -15. Triggering SIGQUIT for cleanup...
[2026-12-02 15:56:11] SIGQUIT received. signum=None, frame=None. It usually means one child failed.
"""
    incs, pipe = incidents_of(log)
    assert incs == []
    assert pipe.launches[0].ready_line == 1


def test_crash_after_ready_is_marked():
    log = f"""[2026-12-02 15:14:19] The server is fired up and ready to roll!
[2026-12-02 15:20:00] Scheduler hit an exception: Traceback (most recent call last):
  File "{P}/managers/scheduler.py", line 1, in event_loop
    x()
RuntimeError: CUDA error: an illegal memory access was encountered
[2026-12-02 15:20:00] SIGQUIT received. signum=None, frame=None. It usually means one child failed.
"""
    (inc,), _ = incidents_of(log)
    assert inc.after_ready


def test_interleaved_ranks_with_normal_records_between():
    tb = lambda r: (f"[2026-05-09 09:17:36 {r}] Scheduler hit an exception: Traceback (most recent call last):\n"
                    f'  File "{P}/m.py", line 1, in f\n    f()\nRuntimeError: boom\n')
    log = (tb("TP0") + "[2026-05-09 09:17:36 TP1] Load weight end. elapsed=1.00 s, type=X, avail mem=1.00 GB, mem usage=1.00 GB.\n"
           + tb("TP1") + "[2026-05-09 09:17:37] Received sigquit from a child process. It usually means the child failed.\n")
    (inc,), _ = incidents_of(log)
    assert inc.ranks == ["TP0", "TP1"]


def test_milestones_and_launch_events(seed_full):
    pipe = StreamPipeline()
    events = pipe.feed(seed_full.read_bytes()) + pipe.finish()
    kinds = [e["event"] for e in events]
    assert kinds.count("launch") == 2 and kinds.count("incident") == 2
    loads = [e for e in events if e["event"] == "milestone" and e["name"] == "load_weights_end"]
    assert loads[0]["mem_usage_gb"] == 26.22 and loads[0]["rank"] == "TP0"


def test_killed_after_sglangs_own_sigquit_is_not_a_second_incident():
    text = (
        "[2026-05-09 09:16:24] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/x/sglang/srt/a.py", line 1, in f\n    g()\n'
        "RuntimeError: boom\n"
        "[2026-05-09 09:16:25] Received sigquit from a child process. It usually means the child failed.\n"
        "Killed\nrc=137\n"
    )
    incs, _ = incidents_of(text)
    assert [(i.first_line, i.last_line) for i in incs] == [(1, 5)]
    # without the sigquit, "Killed" is evidence of its own
    alone, _ = incidents_of("[2026-05-09 09:16:24] Load weight begin. avail mem=1 GB\nKilled\n")
    assert [i.kind for i in alone] == ["signal"]
