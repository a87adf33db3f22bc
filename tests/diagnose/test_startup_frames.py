"""A fragment with no ready line and no milestones, whose traceback runs through a start-up
constructor (Scheduler / TpModelWorker / ModelRunner __init__), failed before the server was
ready: it is never named a crash while serving (class.runtime.after_ready), and an unknown
exception there gets the honest fallback.  A traceback through the event loop still may be."""

from __future__ import annotations

import json
import subprocess

from conftest import doctor_cmd

PKG = "/usr/local/lib/python3.10/dist-packages/sglang/srt"

STARTUP = f"""\
Traceback (most recent call last):
  File "{PKG}/managers/scheduler.py", line 2310, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)
  File "{PKG}/managers/scheduler.py", line 286, in __init__
    self.tp_worker = TpWorkerClass(
  File "{PKG}/managers/tp_worker.py", line 81, in __init__
    self.model_runner = ModelRunner(
  File "{PKG}/model_executor/model_runner.py", line 229, in __init__
    self.initialize(min_per_gpu_memory)
  File "/usr/local/lib/python3.10/dist-packages/foo/bar.py", line 12, in setup
    self.x = compute()
ZeroDivisionError: division by zero
"""

SERVING = f"""\
Traceback (most recent call last):
  File "{PKG}/managers/scheduler.py", line 2330, in run_scheduler_process
    scheduler.event_loop_normal()
  File "{PKG}/managers/scheduler.py", line 812, in event_loop_normal
    result = self.run_batch(batch)
  File "/usr/local/lib/python3.10/dist-packages/foo/bar.py", line 12, in setup
    self.x = compute()
ZeroDivisionError: division by zero
"""


def _incident(tmp_path, text):
    log = tmp_path / "fragment.log"
    log.write_text(text, encoding="utf-8")
    r = subprocess.run(doctor_cmd("explain", "--format", "json", str(log)), capture_output=True, text=True, timeout=120)
    incidents = [e for e in map(json.loads, r.stdout.splitlines()) if e["event"] == "incident"]
    assert len(incidents) == 1, r.stdout + r.stderr
    return incidents[0]


def test_a_start_up_constructor_in_the_frames_is_not_a_serving_crash(tmp_path):
    inc = _incident(tmp_path, STARTUP)
    assert inc["rule"] != "class.runtime.after_ready"
    assert inc["category"] != "runtime.crash" and inc["phase"] != "serving"


def test_the_event_loop_in_the_frames_may_still_be_a_serving_crash(tmp_path):
    inc = _incident(tmp_path, SERVING)
    assert inc["category"] == "runtime.crash"


# a launcher waiting for the server to come up: SGLang's own wait (http_server._wait_and_warmup,
# 0.4.x to 0.5.2x) and the same wait in a program that launches SGLang (slime's
# SGLangEngine._wait_server_healthy): the server died before it was ready
WRAPPER_WAIT = """\
ray::SGLangEngine.init()
...
File "/opt/rl/backends/sglang_utils/sglang_engine.py", line 95, in _wait_server_healthy
    raise Exception("Server process terminated unexpectedly.")
Exception: Server process terminated unexpectedly.
"""

SGLANG_WAIT = f"""\
Traceback (most recent call last):
  File "{PKG}/entrypoints/http_server.py", line 1250, in _wait_and_warmup
    res = requests.post(url + request_name, json=json_data, headers=headers, timeout=600)
  File "/usr/local/lib/python3.10/dist-packages/foo/bar.py", line 12, in post
    self.x = compute()
ZeroDivisionError: division by zero
"""

# a queue's wait, not a launch's: the context stays unknown
QUEUE_WAIT = f"""\
Traceback (most recent call last):
  File "{PKG}/distributed/device_communicators/shm_broadcast.py", line 315, in wait_until_ready
    self.x = compute()
ZeroDivisionError: division by zero
"""


def test_a_launcher_waiting_for_the_server_to_come_up_is_not_a_serving_crash(tmp_path):
    for text in (WRAPPER_WAIT, SGLANG_WAIT):
        inc = _incident(tmp_path, text)
        assert inc["rule"] != "class.runtime.after_ready", inc["rule"]
        assert inc["category"] != "runtime.crash" and inc["phase"] != "serving"
        assert "waits for the server to come up" in inc["explanation"]
        assert "Assumed (the log does not say): the server had been ready" not in inc["explanation"]


def test_a_queue_s_wait_is_no_launch(tmp_path):
    inc = _incident(tmp_path, QUEUE_WAIT)
    assert "waits for the server to come up" not in inc["explanation"]
