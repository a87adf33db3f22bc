"""A stand-in for ``python -m sglang.launch_server`` for fast tests of ``run``'s loop.

It writes what SGLang 0.5.23 writes (the formatter's ``[YYYY-MM-DD HH:MM:SS]`` prefix, the
``server_args={...}`` dump, the start-up milestones, the scheduler's traceback and the
parent's sigquit line — copied from real CPU runs, see fixtures/ and sglang-notes §6), starts
a "scheduler" child in its own process group like SGLang's spawn children, serves
``/health`` on ``--port`` once ready, and exits the way SGLang exits.  What goes wrong is
chosen by real flags where SGLang would react to them, and by STANDIN_* variables otherwise:

- ``--mem-fraction-static`` below ``STANDIN_MIN_MFS``: the 0.5.23 "Loaded weights leave no
  GPU memory for the KV cache" ValueError in the scheduler, the parent's sigquit, exit 137.
- ``--port`` already bound: uvicorn's ``[Errno 98]`` line, then a hang until SIGTERM (as the
  real server does).
- ``STANDIN_REPLAY=file``: after the dump, replay that log's lines, exit ``STANDIN_EXIT``.
- ``STANDIN_LINGER=1``: the scheduler child ignores SIGTERM and outlives its parent.
- ``STANDIN_START_DELAY=s``: seconds of "loading" before the memory pools.
- ``STANDIN_CRASH_AFTER_READY=s``: a CUDA illegal-memory-access crash that long after ready.
- ``STANDIN_HEALTH_STATUS=code``: what /health answers once ready (default 200).
- ``STANDIN_AFTER_READY=file``: once ready, write that file's lines (e.g. logged requests) and
  keep serving.
- ``STANDIN_DUMP_HOST=text``: the ``host`` field of the dump (what a hostile log could say).
- ``STANDIN_STARTUP_WARNING=text``: after the weights load, log that line (a failure SGLang
  handles and goes on from, e.g. a caught CUDA OOM), then wait ``STANDIN_WARNING_DELAY`` seconds
  (default 0) before going on to come up.
- ``STANDIN_SIGTERM_EXIT=n``: the exit status after a SIGTERM (default 0; SGLang often exits
  with another, e.g. -15 or 1, when stopped).
"""

from __future__ import annotations

import argparse
import http.server
import os
import signal
import socketserver
import subprocess
import sys
import threading
import time

SITE = "/usr/local/lib/python3.11/site-packages/sglang/srt"


def log(message: str, rank: str | None = None) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    prefix = f"[{stamp} {rank}]" if rank else f"[{stamp}]"
    sys.stdout.write(f"{prefix} {message}\n")
    sys.stdout.flush()


def scheduler_child(parent: int) -> None:
    """Sleeps like a scheduler; exits when its parent dies unless told to linger.

    ``parent`` comes from the command line: a child that starts after its parent already
    died must still notice (reading getppid() at start would give the reaper's pid).
    """
    linger = os.environ.get("STANDIN_LINGER") == "1"
    if linger:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        if not linger and os.getppid() != parent:
            os._exit(0)  # SGLang's kill_itself_when_parent_died
        time.sleep(0.1)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="launch_server.py")
    parser.add_argument("--model-path", "--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--mem-fraction-static", type=float, default=None)
    parser.add_argument("--tp-size", "--tensor-parallel-size", type=int, default=1)
    parser.add_argument("--context-length", type=int, default=None)
    parser.add_argument("--device", default=None)
    parser.add_argument("--load-format", default="auto")
    args, _unknown = parser.parse_known_args(argv)  # the real parser knows hundreds more
    return args


class Health(http.server.BaseHTTPRequestHandler):
    status = 503

    def do_GET(self):  # noqa: N802 - http.server's naming
        code = Health.status if self.path.startswith("/health") else 404
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()
        log(f'INFO:     127.0.0.1:{self.client_address[1]} - "GET {self.path} HTTP/1.1" {code}')

    def log_message(self, *args):
        pass


def weights_leave_no_memory(mfs: float, minimum: float) -> None:
    log("Scheduler hit an exception: Traceback (most recent call last):")
    print(f'  File "{SITE}/managers/scheduler.py", line 6362, in run_scheduler_process\n'
          f'    scheduler = Scheduler(\n'
          f'                ^^^^^^^^^^\n'
          f'  File "{SITE}/managers/scheduler.py", line 512, in __init__\n'
          f'    self.init_model_worker()\n'
          f'  File "{SITE}/model_executor/model_runner.py", line 1510, in init_memory_pool\n'
          f'    self.kv_cache_configurator.configure()\n'
          f'  File "{SITE}/mem_cache/kv_cache_configurator.py", line 3050, in _profile_available_bytes\n'
          f'    raise ValueError(\n'
          f'ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static={mfs}. '
          f'Raise --mem-fraction-static above {minimum + 0.001:.3f} (minimum viable = 1 - available/pre = '
          f'{minimum:.4f}). If using speculative decoding, draft weights are now counted.', flush=True)
    log("Received sigquit from a child process. It usually means the child failed.")
    log(f"kill_process_tree called: parent_pid={os.getpid()}, include_parent=True, pid={os.getpid()}")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--standin-role=scheduler"]:
        scheduler_child(int(argv[1]))
        return 0
    args = parse_args(argv)
    mfs = args.mem_fraction_static if args.mem_fraction_static is not None else 0.716
    dump = {"model_path": args.model_path, "tokenizer_path": args.model_path, "load_format": args.load_format,
            "host": os.environ.get("STANDIN_DUMP_HOST", args.host), "port": args.port, "mem_fraction_static": mfs, "tp_size": args.tp_size,
            "context_length": args.context_length, "device": args.device or "cuda"}
    log(f"server_args={dump!r}")
    scheduler = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--standin-role=scheduler",
                                  str(os.getpid())])
    stopping = threading.Event()

    def on_sigterm(signum, frame):
        # Event.set() takes the event's (non-reentrant) lock, which the main thread holds for a
        # moment on its way into and out of stopping.wait(): a SIGTERM handled in that moment (run
        # sends two, through its wrapper and by pid) would deadlock the main thread, which then
        # never logs its SIGTERM line and is SIGKILLed after the grace.  So another thread sets it.
        if not stopping.is_set():
            threading.Thread(target=stopping.set, daemon=True).start()

    signal.signal(signal.SIGTERM, on_sigterm)

    replay = os.environ.get("STANDIN_REPLAY")
    if replay:
        with open(replay, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if "server_args=" not in line:
                    sys.stdout.write(line)
        sys.stdout.flush()
        return int(os.environ.get("STANDIN_EXIT", "137"))

    log("Init parallel begin.")
    log("Init parallel ends. elapsed=0.02 s")
    log("Memory baseline taken. mem usage=0.00 GB")
    log("Load weight begin. avail mem=21.67 GB")
    if stopping.wait(float(os.environ.get("STANDIN_START_DELAY", "0"))):
        return 0
    log("Load weight end. elapsed=0.21 s, type=LlamaForCausalLM, avail mem=17.24 GB, mem usage=4.43 GB.")
    minimum = float(os.environ.get("STANDIN_MIN_MFS", "0"))
    if mfs < minimum:
        weights_leave_no_memory(mfs, minimum)
        scheduler.kill()
        return 137
    warning = os.environ.get("STANDIN_STARTUP_WARNING")
    if warning:
        log(warning)
        if stopping.wait(float(os.environ.get("STANDIN_WARNING_DELAY", "0"))):
            return 0
    log("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 20000, K size: 0.00 GB, V size: 0.00 GB")
    log("Memory pool end. avail mem=5.60 GB")
    log("max_total_num_tokens=20000, chunked_prefill_size=4096, max_prefill_tokens=16384, "
        "max_running_requests=4096, context_len=2048, available_cpu_mem=2.60 GB")
    log(f"INFO:     Started server process [{os.getpid()}]")
    log("INFO:     Waiting for application startup.")
    log("INFO:     Application startup complete.")
    try:
        server = socketserver.ThreadingTCPServer((args.host, args.port), Health, bind_and_activate=False)
        server.allow_reuse_address = True
        server.daemon_threads = True
        server.server_bind()
        server.server_activate()
    except OSError:
        log(f"ERROR:    [Errno 98] error while attempting to bind on address ('{args.host}', {args.port}): "
            "address already in use")
        log("INFO:     Waiting for application shutdown.")
        log("INFO:     Application shutdown complete.")
        stopping.wait()  # the real server hangs here until it is killed
        return 0
    threading.Thread(target=server.serve_forever, daemon=True).start()
    log(f"INFO:     Uvicorn running on http://{args.host}:{args.port} (Press CTRL+C to quit)")
    Health.status = int(os.environ.get("STANDIN_HEALTH_STATUS", "200"))
    log("The server is fired up and ready to roll!")
    after_ready = os.environ.get("STANDIN_AFTER_READY")
    if after_ready:
        with open(after_ready, encoding="utf-8", errors="replace") as fh:
            sys.stdout.write(fh.read())
        sys.stdout.flush()
    crash_after = os.environ.get("STANDIN_CRASH_AFTER_READY")
    if crash_after and not stopping.wait(float(crash_after)):
        log("Scheduler hit an exception: Traceback (most recent call last):")
        print(f'  File "{SITE}/managers/scheduler.py", line 1210, in event_loop_overlap\n'
              f'    batch_result = self.run_batch(batch)\n'
              f'  File "{SITE}/model_executor/model_runner.py", line 2210, in forward\n'
              f'    return self.forward_decode(forward_batch)\n'
              f'RuntimeError: CUDA error: an illegal memory access was encountered\n'
              f'CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace '
              f'below might be incorrect.', flush=True)
        log("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")
        scheduler.kill()
        return 137
    stopping.wait()
    log("SIGTERM received. signum=None frame=None. Draining requests and shutting down...")
    log("Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[].")
    server.shutdown()
    if os.environ.get("STANDIN_LINGER") != "1":
        scheduler.terminate()
        scheduler.wait()
    log(f"INFO:     Finished server process [{os.getpid()}]")
    return int(os.environ.get("STANDIN_SIGTERM_EXIT", "0"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
