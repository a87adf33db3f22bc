"""An incident before ready that the launch survived: a warning, not the launch's cause.

SGLang prints its ready line (``The server is fired up and ready to roll!``,
entrypoints/http_server.py ``_wait_and_warmup``) in the main process only after every
scheduler rank of the node sent ``status: ready`` through its pipe (engine.py
``_wait_for_scheduler_ready``: a rank that died or reported anything else raises
"Rank N scheduler died during initialization" / "Initialization failed" instead) and after the
warm-up request succeeded (else "Initialization failed. warmup error: ..." and
``kill_process_tree``).  So when the SAME launch prints that line after an incident, every
process of that launch lived through what the incident shows: a caught ``CUDA out of memory``
printed in a warning, a fallback's logged traceback.  It is reported as a warning the server
survived (pipeline.py), never as the launch's cause.

Unknown stays unknown: without the ready line nothing changes.  What would make the ready line
another launch's (a relaunch whose ``server_args`` dump the paste lost) keeps the incident:

- the incident itself shows a process ending (a parent's sigquit, "Killed", an exit status, a
  segfault, a scheduler that died, "Scheduler hit an exception", "Initialization failed", ...):
  its launch cannot have come up after it, so the ready line belongs to a relaunch;
- such a death incident, or a start-up line printed once per launch that the launch had
  already printed (the scheduler's ``max_total_num_tokens=`` summary, uvicorn's "Uvicorn
  running on", the start-up timings), between the incident and the ready line: the start-up
  began again;
- the incident is a KV transport's (Mooncake / NIXL / NVSHMEM errors, a failed KV transfer): in
  PD disaggregation the warm-up request goes to a fake bootstrap host (http_server.py
  ``FAKE_BOOTSTRAP_HOST``), so no KV crosses the transport before the ready line and it proves
  nothing about it (a decode server whose RDMA registration failed comes up, then every
  transfer fails);
- the incident is a traceback before the launch's dump: SGLang logs warnings while it resolves
  the arguments, before the dump (those are lowered like any other), but a traceback there is
  the launching process's own exception (``__post_init__``, the argument parser): an earlier,
  dump-less attempt that failed, whose launch record the dump then took over.
"""

from __future__ import annotations

import re

from sglang_doctor.incidents import signals
from sglang_doctor.incidents.serving import timestamp
from sglang_doctor.model import Incident, Launch

# signals (incidents/signals.py names) that say a process ended
DEATH_SIGNALS = frozenset({
    "sigquit_launch", "sigquit_running", "subprocess_crashed", "scheduler_died", "scheduler_dead", "exit_code",
    "oom_killer", "killed", "faulthandler", "segfault", "cpp_terminate", "aborted", "bus_error", "init_failed",
    "watchdog_timeout", "argparse_error", "port_in_use", "uvicorn_error", "glibc_abort",
    # incidents/signals.py PROCESS_DEATHS: a shell's report of a death by signal, a scheduler-only
    # node's "Scheduler or DataParallelController PID terminated with CODE" (not 0 / -2 / -15)
    "signal_death", "scheduler_terminated",
})
# 0.4.x engine.py ``sigchld_handler``: the main process reports that one of its children exited
# with a non-zero status (``os.waitpid(0, WNOHANG)``: any child, a helper subprocess too) and
# goes on.  A scheduler that dies before ready also ends the launch ("Rank N scheduler is dead",
# its own signals), so this line alone, followed by the same launch's ready line, was a child
# the server did not need: not a death of the launch.
CHILD_REPORT = "Child process unexpectedly failed with an exit code"
# words of SGLang's own fatal handlers, in the incident's text: the process that printed them
# sends SIGQUIT to its parent and the launch ends (scheduler.py, data_parallel_controller.py,
# detokenizer_manager.py, tokenizer_manager.py: "... hit an exception: <traceback>")
DEATH_WORDS = ("hit an exception", "Initialization failed", "scheduler died during initialization",
               "scheduler is dead", "Received sigquit", "SIGQUIT received")
# signals of the KV transport between PD instances, which the warm-up does not exercise
NOT_PROVED_BY_READY = frozenset({"transfer_error", "kv_transfer_failed"})
# ... and their words, when a rule's literal took the line first ("Prefill transfer failed for
# request ... with exception <a text that is not KVTransferError(...)'s>")
# (and a PD prefill's failed registration with its bootstrap server, whatever its cause said:
# decode instances look it up there for real requests only, never for the warm-up; rules/nccl.yaml
# nccl.pd_bootstrap_register_failed)
TRANSPORT_LITERALS = (tuple(lit for sig in signals.SIGNALS if sig.name in NOT_PROVED_BY_READY for lit in sig.literals)
                      + ("failed to register to bootstrap server", "failed to connect to bootstrap server"))
# start-up milestones (incidents/milestones.py) a launch prints once: seen again after the
# incident, the start-up began again (a draft model repeats the weight and graph lines, not these)
ONCE_PER_LAUNCH = frozenset({"max_total_num_tokens", "http_server_up", "startup_timings"})


# The transfer_error signal also takes urllib3's "Failed to establish a new connection" (a PD
# decode fetching the prefill's parallel info from its bootstrap server, tuned dev/086), which any
# HTTP client prints: a script polling the server's /health while it loads, a router, a
# benchmark.  Only a line that names the PD side of it (the bootstrap server, prefill / decode,
# the disaggregation code) is the KV transport's; the others are some client's connection that
# the ready line can show was only too early.
_HTTP_CONNECT = "Failed to establish a new connection"
_PD_WORDS = re.compile(r"bootstrap|prefill|decode|disaggregation|mooncake|nixl|kv ?transfer|kvcache", re.I)


def client_connect_only(text: str) -> bool:
    """The line is some HTTP client's failed connection, not the PD side's (above)."""
    if _HTTP_CONNECT not in text or _PD_WORDS.search(text):
        return False
    found = signals.classify(text)
    if found is None or found[0].name != "transfer_error":
        return True
    m = found[0].regex.search(text)
    return m is not None and m.group(0) == _HTTP_CONNECT  # (a Mooncake glog line that quotes it stays)


# -- the operator's Ctrl-C ------------------------------------------------------------------
#
# SGLang never raises KeyboardInterrupt itself: it is SIGINT, the operator's (or a supervisor's)
# stop.  What 0.5.23 prints on Ctrl-C (launch_server.py ``try: run_server(...) finally:
# kill_process_tree(os.getpid(), include_parent=False)``; recorded in fixtures/healthy/
# real-0.5.23/session_sigint.log): uvicorn's "Shutting down" / "Finished server process", the
# kill of the children ("Subprocess scheduler_0 (pid=N) crashed with exit code -9", the
# parent's watchdog seeing its own SIGKILL), then the main process's traceback: uvicorn re-raises
# the SIGINT it captured once it has shut down, asyncio's runner cancels the serving task
# (``asyncio.exceptions.CancelledError``, "During handling of the above exception ...") and
# raises ``KeyboardInterrupt()`` (asyncio/runners.py), through uvicorn's ``Server.run`` /
# ``uvicorn.run`` (0.4.x's launch_server calls ``uvicorn.run`` the same way).  The HTTP server
# runs only after every scheduler reported ready (engine.py ``_wait_for_scheduler_ready``), so a
# Ctrl-C that surfaces through its loop came after the start-up the failures are in; a start-up
# interrupted before that raises in the launch's own waits (engine.py), not through uvicorn.
STOP_CHAIN = frozenset({"KeyboardInterrupt", "CancelledError"})
HTTP_LOOP_FRAME = re.compile(r"(?:^|/)uvicorn/[\w/]+\.py$|(?:^|/)asyncio/runners\.py$|^uvloop/")


def operator_interrupt(chains: list[list]) -> bool:
    """Every chain (a traceback's exceptions, in order) ends in KeyboardInterrupt with nothing but
    the interrupt and the cancellations it causes in it: an error the interrupt came on top of
    is still that error."""
    return bool(chains) and all(
        chain and chain[-1].type.rsplit(".", 1)[-1] == "KeyboardInterrupt"
        and all(e.type.rsplit(".", 1)[-1] in STOP_CHAIN for e in chain) for chain in chains)


def through_http_loop(frames: list) -> bool:
    """The traceback passes through the HTTP server's event loop (uvicorn, asyncio's runner)."""
    return any(HTTP_LOOP_FRAME.search(f.file or "") for f in frames)


# The record right above an interrupt's traceback, when it is uvicorn's access line of a request
# the server answered: the HTTP server was up and answering, and SGLang starts it only once every
# scheduler rank reported ready (0.4.x launch_server / 0.5.x engine.py ``_wait_for_scheduler_ready``
# before ``uvicorn.run``), as through_http_loop's frames say.  On a Ctrl-C to the process group
# (a terminal's) the children print their KeyboardInterrupt tracebacks first, each under
# multiprocessing's "Process Process-N:" (fixtures/healthy/real-0.5.23/warnings_probes_ctrl_c_twice.log:
# the scheduler's and the detokenizer's, right below the last "GET /health" 200): no uvicorn frame
# in them, but the line above shows the server serving.  Only an answer that needed the
# schedulers: a 2xx for any path but the warm-up's first probe (http_server.py
# ``_execute_server_warmup`` polls ``/model_info``, 0.4.x ``/get_model_info``, before its
# generate; a warm-up that hangs after that probe is a start-up that did not finish).  ``/health``
# answers 200 only once the warm-up passed (0.5.x ``ServerStatus.Starting`` -> 503) or, in 0.4.x,
# once the HTTP server runs at all.
_ANSWERED = re.compile(r'"(?:GET|POST|PUT|DELETE|PATCH|HEAD) (?P<path>/[^\s?"]*)\S* HTTP/[\d.]+" 2\d\d\b')
WARMUP_PROBES = frozenset({"/model_info", "/get_model_info"})


def answered_request(record: str | None) -> bool:
    """``record`` (the text of the record above a traceback) is uvicorn's access line of a
    request the server answered with a 2xx, other than the warm-up's probe (above)."""
    if not record or "HTTP/" not in record:
        return False
    found = _ANSWERED.search(record)
    return found is not None and found.group("path").rstrip("/") not in WARMUP_PROBES


# The stop's own kill of the children, as the launcher reports it: 0.5.23 launch_server.py runs
# the server in ``try: ... finally: kill_process_tree(os.getpid(), include_parent=False)``, so on
# Ctrl-C, once uvicorn has shut down, the launcher SIGKILLs its children before the interrupt's
# traceback is printed; its SubprocessWatchdog thread (srt/utils/watchdog.py
# ``_check_processes``), still polling, sees the scheduler gone and logs "Subprocess scheduler_0
# (pid=N) crashed with exit code -9. Triggering SIGQUIT for cleanup..." right above that traceback
# (fixtures/healthy/real-0.5.23/session_sigint.log).  Next to an operator's interrupt through the
# HTTP loop it is that stop's teardown; alone, exit -9 stays what it reads as (a kill).
STOP_KILL_REPORT = re.compile(r"Subprocess \S+ \(pid=\d+\) crashed with exit code -9(?!\d)")


def stop_lines_only(texts: list[str]) -> bool:
    """Every line is some HTTP client's failed connection (``client_connect_only``) or the
    launcher's report of a child its own stop killed (STOP_KILL_REPORT): nothing of a failure
    of the server's own beside an operator's interrupt."""
    return all(client_connect_only(t) or STOP_KILL_REPORT.search(t) is not None for t in texts)


# bash's report of the job the operator's own kill -9 ended (assemble.py waives it), whose command
# is SGLang's server: "./bench.sh: line 41: 51277 Killed  python3 -m sglang.launch_server ..."
# (fixtures/healthy/bash_killed_after_own_kill9.log), "bash: line 1: 29489 Killed
# /venv/bin/python -m sglang.launch_server ..." (fixtures/healthy/real_runs/
# debug_log_shell_killed.log).  That kill stopped the launch; what the script prints of its end
# after it ("exit status 137") is the stop's, as after a logged SIGTERM.
_SERVER_COMMAND = re.compile(r"\bKilled\s+.*\bsglang(?:\.launch_server|\s+serve)\b")


def operator_killed_server(text: str) -> bool:
    """The shell's Killed report names SGLang's server as the job (_SERVER_COMMAND)."""
    return _SERVER_COMMAND.search(text) is not None


def client_lines_only(texts: list[str]) -> bool:
    """Every line is some HTTP client's failed connection (``client_connect_only``): a script
    polling the server prints it, not the server."""
    return all(client_connect_only(t) for t in texts)


# -- a Python warning whose header the paste cut -----------------------------------------------
#
# ``warnings.warn`` prints (warnings.py ``formatwarning``) ``FILE:LINE: CATEGORY: message``, the
# message's further lines as they are, then the source line of the call, stripped and indented by
# two spaces.  SGLang and its libraries warn with ``stacklevel=1`` from a call written over several
# lines, so that source line is ``  warnings.warn(`` (0.5.23 launch_server.py: "'python -m
# sglang.launch_server' is still supported, but 'sglang serve' is the recommended entrypoint.",
# then "  Example: sglang serve --model-path <model> [options]", then "  warnings.warn(").  A
# paste that begins inside the header has lost ``CATEGORY:``; what is left reads as an exception
# whose type was cut, its message naming a flag.  With the call's own source line below it, it is
# the warning's text, not an exception (a raised exception prints no source line after its
# message).
WARN_CALL_SOURCE = re.compile(r"^\s{2}(?:warnings\.)?warn(?:_explicit)?\((?:.*\))?\s*$")


def warning_text(chain: list, cut_mark: str) -> bool:
    """The chain is one exception whose type the paste cut entirely (``cut_mark``) and whose
    message holds the source line of a ``warnings.warn(`` call: a warning's text (above)."""
    if len(chain) != 1 or chain[0].type != cut_mark:
        return False
    return any(WARN_CALL_SOURCE.match(line) for line in (chain[0].message or "").splitlines()[1:])


def is_transport(incident: Incident) -> bool:
    """The incident is the KV transport's between PD instances (NOT_PROVED_BY_READY)."""
    for name, line in zip(incident.signal_names, incident.signals):
        if client_connect_only(line.text):
            continue
        if name in NOT_PROVED_BY_READY or any(lit in line.text for lit in TRANSPORT_LITERALS):
            return True
    return False


def is_death(incident: Incident) -> bool:
    """The incident shows a process of its launch ending."""
    names = set(DEATH_SIGNALS.intersection(incident.signal_names))
    if "exit_code" in names and all(CHILD_REPORT in line.text for line in incident.signals
                                    if (found := signals.classify(line.text)) and found[0].name == "exit_code"):
        names.discard("exit_code")  # only the parent's report of a child's exit status
    if names:
        return True
    return any(word in line.text for line in incident.lines for word in DEATH_WORDS)


def restart_lines(launch: Launch, before: int) -> list[int]:
    """Lines (before ``before``) where ``launch``'s start-up began again: a once-per-launch
    milestone of a rank that had already printed it."""
    seen: set[tuple[str, str | None]] = set()
    out = []
    for ms in launch.milestones:
        if ms.line >= before:
            break
        if ms.name not in ONCE_PER_LAUNCH:
            continue
        key = (ms.name, ms.rank)
        if key in seen:
            out.append(ms.line)
        seen.add(key)
    return out


def may_survive_startup(incident: Incident, launch: Launch | None) -> bool:
    """An incident before ready that the launch's ready line, if it comes, can show it lived
    through (what ``survived`` checks before the ready line is known)."""
    if launch is None or incident.after_ready or incident.launch_index != launch.index:
        return False
    if launch.ready_line is not None and incident.first_line >= launch.ready_line:
        return False
    if launch.line is not None and incident.first_line <= launch.line and incident.kind != "signal":
        return False
    return not is_death(incident) and not is_transport(incident)


def survived(incident: Incident, launch: Launch | None, deaths: list[int] = ()) -> bool:
    """Whether ``incident`` came before ``launch``'s ready line and the launch came up after it.

    ``deaths``: the first lines of the launch's incidents that showed a process ending."""
    if launch is None or launch.ready_line is None or incident.launch_index != launch.index:
        return False
    ready = launch.ready_line
    if incident.after_ready or incident.last_line >= ready or incident.first_line >= ready:
        return False
    if launch.line is not None and incident.first_line <= launch.line and incident.kind != "signal":
        return False
    if is_death(incident) or is_transport(incident):
        return False
    barriers = list(deaths) + restart_lines(launch, ready)
    return not any(incident.first_line < b < ready for b in barriers)



# -- warnings the process that printed them goes on after ------------------------------------
#
# Some lines carry a failure's words but are printed by a thread that logs them and goes on;
# the process is not ending and the launch's cause, if it failed, is reported elsewhere (its
# own exception, NCCL's error return, a death).  Made of nothing else, an incident of them is a
# warning, whatever the text shows around it -- a cut fragment with only such lines is not a
# failure (pipeline.py ``_release_before_ready``) -- unless a death of the launch follows it (a
# held incident meets the death first and stands).  Two families, read in their sources:
#
# - NCCL's WARN lines whose code path goes on (NVIDIA/nccl src/, 2.18-2.28): the proxy service
#   thread's reports of a connection it closes ("[Service thread] Error encountered progressing
#   operation=Connect, res=3, closing connection", "[Service thread] Could not receive type from
#   localRank N, res=.., closed=..", proxy.cc: it closes that peer's socket and serves the others;
#   the rank that asked reports its own failure), "[Proxy Service N] Failed to execute operation
#   Close ..." and the teardown's "[Proxy Service] proxyDestroy failed", "[Service thread] shm close
#   failed", "ncclProxyStop: comm .. destroys proxy resource error", "commReclaim: ...", "Legacy IPC
#   cleanup callback failed" (init.cc ncclCommDestroy / commReclaim: logged, destroy goes on);
#   since session 34 from scripts/inventory_nccl.py (every WARN site of 2.18 / 2.21 / 2.27 / 2.28
#   with the code after it; data/inventory/nccl-sites.json ``survived``): the service thread's
#   "Accept failed" and "Unknown command N from localRank R" (that connection dropped, the loop
#   goes on), the proxy threads' "Failed to set CUDA device N" and "Failed to create CUDA context
#   on device N" (createThreadContext = 0, the thread goes on), commDestroySync's stream
#   synchronisation errors at destroy, 2.20's tuner-plugin close ("Tuner plugin refcount is 0, yet
#   tunerPluginLib ptr is NULL": the close resets its state and returns ncclSuccess), the proxy-state dump's "Inactive op has next set!" / "List
#   loop at element", xml.cc "Unable to open F, not dumping topology" (returns ncclSuccess),
#   socket.cc "No interface found in the same subnet as remote address" (returns 0 interfaces;
#   the caller's own error, if any, is a line of its own), 2.28 gin "NCCL_GIN_*_POOL_SIZE has
#   invalid value" (the default is set), net_ib "Unable to query port N" (continue: the next port).
#   Not "P2P is disabled between NVLINK connected GPUs" (graph/paths.cc returns
#   ncclUnhandledCudaError in every release read: a failure, rules/nccl34_p2p.yaml).
#   CUDA's "driver shutting down" (CUDACHECK's "Cuda failure 'driver shutting down'"), which only a
#   process past its exit prints; and the settings NCCL corrects and goes on with
#   ("NCCL_WORK_FIFO_BYTES=.. is being ignored", "NCCL_NET_MERGE_POLICY: unknown value '..',
#   defaulting to ALL", NET/Socket's thread and socket counts "greater than the maximum allowed,
#   setting ...", "Ignoring SHM locality", "Could not find real path of ..", "P2P is disabled
#   between NVLINK connected GPUs", NET/IB's "Got non-fatal async event" and "GID table changed",
#   net_ib/common.cc's async thread, which names its fatal events "async fatal event"); and, in
#   2.21's sources (the NCCL of torch 2.5-2.6 images), the set-up's fallbacks that log and go on:
#   "No NVML device handle. Skipping nvlink detection.", "Could not open XML topology file ..."
#   (xml.cc returns success), "Could not find a path for pattern N, falling back to simple order",
#   "CollNet currently only supports up to N GPUs per node, disabling CollNet", the CTA / channel
#   clamps, "Unable to create thread context due to old driver, disabling.", NET/IB's ignored
#   address or mask and the devices it skips ("Unable to open device", "Unable to query
#   port_num": the next device, or sockets, are used), "unlink shared memory .. failed"; and CollNet
#   that cannot be used: graph/tuning.cc (2.12-2.19) "CollNet is not supported or fails to
#   initialize, ignoring NCCL_ALGO=COLLNET" turns ring and tree back on and goes on (the lines
#   after it in NVIDIA/nccl-tests#133: thresholds, channels, "Connected all rings"); transport.cc
#   "Cannot initialize CollNet, using point-to-point network instead" returns an error that
#   init.cc's ``ncclCollNetSetup(comm, parent, graphs)`` call ignores (CollNet is freed and
#   disabled, the communicator comes up); net_ib's connect.cc "Warning: remote FLID configured as
#   zero even when endpoints are on different subnets, using dlid as fallback" sets the dlid and
#   connects.  (Each of the three is the only WARN site with its head words, so the head alone
#   is matched: a paste that wraps or cuts the line after them keeps it a fallback.)
#   Read in 2.21 and 2.27 (session 32), the set-up's other clamps and the teardown's cleanup:
#   graph/tuning.cc ``getNthreads`` "Invalid NCCL_NTHREADS N (must be a multiple of 32)" /
#   "(maximum N)." / "(minimum N)." sets the bound and goes on; init.cc "splitShare N is not a
#   valid value 0/1, set it to 0"; 2.21 misc/socket.cc ``socketFinalizeAccept`` "wrong magic
#   X != Y" closes a spurious connection (a port scanner, a health probe that hit NCCL's port)
#   and accepts again; 2.27 plugin/profiler.cc "Profiler init failed with error (N). Continue
#   without profiler."; 2.21 net_ib.cc "Local mergedDev=.. has a different number of devices"
#   (an INFO line in 2.27) connects with the devices both sides have; 2.27 net_ib.cc's async
#   thread "unknown event type (N)" breaks out of its switch and polls on; 2.27
#   register/register.cc ``regCleanup`` "rank N deregister <NET|NVLS|COLLNET|IPC> buffer ..
#   failed" at a communicator's destroy, which goes on freeing the rest.
# - torch's ProcessGroupNCCL heartbeat monitor (torch 2.4-2.9, ProcessGroupNCCL.cpp
#   ``HeartbeatMonitor::runLoop`` / ``heartbeatMonitor``): it polls the TCPStore for the "should
#   dump" flag; when the store's host (rank 0's process, the launcher) has exited, TCPStore's
#   client logs "[c10d] recvValue failed on SocketImpl(...): Connection reset by peer" (or
#   sendBytes, "Failed to recv, got 0 bytes") with the C++ frames of ``TCPStore::check`` and the
#   monitor catches it and warns "Failed to check the \"should dump\" flag on TCPStore, (maybe
#   TCPStore server has shut down too early), with error: ..." (W level), and keeps polling.  Every
#   rank prints them while the processes of a finished or stopped server exit one after another
#   (the lines as pasted: MiniMax-AI/MiniMax-M1#14, ome-projects/ome#312); a failure that killed
#   the store's host has its own lines.  TCPStore's client logs the same c10d line (W level)
#   before it throws in any store operation; when the caller is the main thread (a rendezvous, a
#   barrier) the exception it raises (DistNetworkError, RuntimeError, a Python traceback) is in
#   the incident and it stays the store's failure.  So the c10d lines count here when the
#   incident shows the monitor (its frames or its "should dump" line) or holds nothing but them
#   and their C++ frames: no exception raised from them is in the text.
# - CUDA's "driver shutting down" (cudaErrorCudartUnloading), which only a process whose CUDA
#   runtime is being unloaded at its exit gets: torch's NCCL watchdog logs it at INFO ("main
#   process destroyed cuda before watchdog loop exited, terminating watchdog. (Watchdog caught
#   exception: CUDA error: driver shutting down", ProcessGroupNCCL.cpp, NVIDIA/Fuser#2497) and
#   NCCL's CUDACHECK as "Cuda failure 'driver shutting down'" (NVIDIA/nccl#1485): the process
#   is already ending, whatever ended it has its own lines.
NONFATAL_NCCL_WARN = re.compile(
    r"NCCL WARN (?:\[Service thread\] (?:Error encountered progressing operation=\w+, res=\d+, closing connection|"
    r"Could not receive type from localRank|shm close failed|proxy ops shm unlink failed|Accept failed\b|"
    r"Unknown command \d+ from localRank)|"
    r"\[Proxy Service(?: \d+)?\] (?:proxyDestroy failed|Failed to execute operation Close\b)|"
    r"\[Proxy (?:Progress|Service(?: UDS)?)\] Failed to set CUDA device \d+|Failed to create CUDA context on device \d+|"
    r"ncclProxyStop: comm |commReclaim: |commDestroySync: comm |Legacy IPC cleanup callback failed|"
    r"Tuner plugin refcount is 0, yet tunerPluginLib ptr is NULL|"
    r"NCCL_GIN_(?:SIGNAL|COUNTER)_POOL_SIZE has invalid value|Unable to open \S+, not dumping topology|"
    r"Net : No interface found in the same subnet as remote address|Inactive op has next set!|"
    r"List loop at element \d+-\d+|"
    r"Cuda failure (?:\d+ )?'driver shutting down'|"
    r"NCCL_\w+=\S* is being ignored|NCCL_\w+: unknown value '[^']*', defaulting to|"
    r"NET/Socket : (?:NCCL_SOCKET_NTHREADS|the total number of sockets) is greater than the maximum allowed|"
    r"Ignoring SHM locality|Could not find real path of |"
    r"NET/IB ?: \S+:\d+ (?:Got non-fatal async event|GID table changed)|"
    r"No NVML device handle\. Skipping nvlink detection|Could not open XML topology file |"
    r"Could not find a path for pattern \d+, falling back to simple order|"
    r"CollNet currently only supports up to \d+ GPUs per node, disabling CollNet|"
    r"NCCL_CGA_CLUSTER_SIZE value \d+ is too big\. Limiting value to|(?:min|max)CTAs \d+ is larger than |"
    r"User asked for a (?:minimum|maximum) of \d+ channels|Unable to create thread context due to old driver, disabling|"
    r"NET/IB: Ip address (?:mask )?'[^']*' is invalid for family \S+, ignoring|unlink shared memory \S+ failed|"
    r"NET/IB : Unable to (?:open device|query port(?:_num)?) |"
    r"CollNet is not supported or fails to\b|Cannot initialize CollNet\b|"
    r"Warning: remote FLID configured as zero\b|"
    r"Invalid \S+ -?\d+ \((?:must be a multiple of \d+|maximum \d+|minimum \d+)\)|"
    r"splitShare -?\d+ is not a valid value 0/1, set it to 0|socketFinalizeAccept(?: from \S+)?: wrong magic |"
    r"Profiler init failed with error \(-?\d+\)\. Continue without profiler|"
    r"NET/IB ?: Local mergedDev[= ]\S+ has a different number of devices|NET/IB ?: \S+:\d+ unknown event type \(|"
    r"rank \d+ deregister (?:NET|NVLS|COLLNET|IPC) buffer .* failed)")
# The same warnings' own last words, for a paste that began inside the line (a search excerpt, a
# selection dragged from mid-line): the NCCL prefix and the head words lost, ``not supported or
# fails to initialize, ignoring NCCL_ALGO=COLLNET`` is still the CollNet fallback, and its "not
# supported" is no refusal of a launch setting (Assembler._cut_first_line).  Only the sites above
# whose message ends in words of its own (not a value, a path or a number).
NONFATAL_NCCL_TAIL = re.compile(
    r"(?:Skipping nvlink detection|falling back to simple order|GPUs per node, disabling CollNet|"
    r"due to old driver, disabling|is invalid for family \S+, ignoring|ignoring NCCL_ALGO=COLLNET|"
    r"using point-to-point network instead|using dlid as fallback|Continue without profiler|"
    # NCCL's INFO lines of its network / tuner plugin probe, which quote dlopen's error and then
    # use the internal plugin (src/plugin/net.cc, tuner.cc: 2.19-2.22 "NET/Plugin: Plugin load
    # returned N : <dlerror> : when loading libnccl-net.so", 2.10-2.18 "NET/Plugin : dlerror=<dlerror>
    # No plugin found (libnccl-net.so), using internal implementation"): not a WARN, a probe
    r" : when loading lib[\w.-]+\.so[\w.]*|No plugin found \([\w.-]+\), using internal implementation)\.?\s*$")
# the C++ trace c10::Error prints under the c10d line ("Exception raised from recvBytes at ...",
# "frame #N: ...")
_CPP_TRACE = re.compile(r"\s*(?:Exception raised from \w+ at |frame #\d+: )")
# the rest of such a frame line that a paste hard-wrapped ("... (0x7f4d1b3a8afe in /opt/venv/lib/python"
# then "3.12/site-packages/torch/lib/libtorch_cpu.so)"): the tail of its "(ADDRESS in PATH)", no
# space in it, right after a frame line
_CPP_FRAME_REST = re.compile(r"\s*[^\s()]*\)\s*$")
# what a paste puts around a log (a markdown fence, an HTML <details> block) or a blank line
_DECORATION = re.compile(r"\s*(?:(?:```|~~~).*|</?(?:details|summary|pre|code)\b.*)?\s*$")
HEARTBEAT_CHECK = re.compile(r'Failed to check the "should dump" flag on TCPStore')
_HEARTBEAT_FRAMES = re.compile(r"HeartbeatMonitor::runLoop|ProcessGroupNCCL::heartbeatMonitor|c10d::TCPStore::check\(")
_C10D_LINE = re.compile(r"\[c10d\] (?:sendBytes|recvValue|recvBytes) failed")
# CUDA's error string for cudaErrorCudartUnloading, as torch and NCCL print it
DRIVER_SHUTTING_DOWN = re.compile(r"(?:CUDA error|Cuda failure(?: \d+)?):? '?driver shutting down")


def _frame_rest(lines: list, i: int) -> bool:
    """``lines[i]`` is the wrapped rest of the C++ frame line right above it (_CPP_FRAME_REST)."""
    return (i > 0 and lines[i - 1].number == lines[i].number - 1 and _CPP_TRACE.match(lines[i - 1].text) is not None
            and _CPP_FRAME_REST.fullmatch(lines[i].text) is not None)


def goes_on_after(incident: Incident) -> str | None:
    """What printed ``incident`` when every failure line of it is a warning of a thread that
    goes on ("NCCL's proxy / teardown", "torch's heartbeat monitor"), with no exception and
    nothing of a death in it; else None (above).  Also some HTTP client's refused connection
    (``client_connect_only``: a script polling ``/health``, a benchmark, a router; never the PD
    bootstrap's): another process's line, printed while the server was not listening (loading,
    or already stopped) and retried; it is no failure of the server, whose own lines (its death,
    its exception) are what says it failed."""
    if (header := handled_record(incident)) is not None:
        return f"the code that logged it, whose record says it went on (\"{header[:120]}\")"
    if incident.exception is not None or incident.chain or not incident.signals or is_death(incident):
        return None
    heartbeat = any(HEARTBEAT_CHECK.search(line.text) or _HEARTBEAT_FRAMES.search(line.text)
                    for line in incident.lines)
    only_store = all(_C10D_LINE.search(line.text) or HEARTBEAT_CHECK.search(line.text) or _CPP_TRACE.match(line.text)
                     or _DECORATION.fullmatch(line.text) or _frame_rest(incident.lines, i)
                     for i, line in enumerate(incident.lines))
    kinds = set()
    for line in incident.signals:
        if DRIVER_SHUTTING_DOWN.search(line.text):
            kinds.add("a process whose CUDA runtime was unloading at its exit")
        elif NONFATAL_NCCL_WARN.search(line.text):
            kinds.add("NCCL's proxy thread or teardown")
        elif client_connect_only(line.text):
            kinds.add("an HTTP client whose connection was refused (it retries; the server's own lines say "
                      "whether it was up)")
        elif (heartbeat or only_store) and (_C10D_LINE.search(line.text) or HEARTBEAT_CHECK.search(line.text)):
            kinds.add("torch's TCPStore client (the store's host had gone)")
        else:
            return None
    return " and ".join(sorted(kinds))

# -- while serving ----------------------------------------------------------------------------
#
# After the ready line SGLang logs many handled failures with the exception's own text and goes
# on (0.5.23 has ~41 such ``logger.warning`` sites while serving: a tool-call parser's "Failed
# to parse JSON part: ..., JSON parse error: {e}", llava's "RuntimeError in image encoding:
# {e}", a HiCache prefetch "failed ...; falling back", the ollama router's "... failed: {e},
# falling back"); ``{e}`` may be any text, a caught "CUDA out of memory" too.  A failure that
# ends the launch while serving stops the scheduler: the scheduler's batch lines (logged by its
# stats rank once per prefill batch and every ``--decode-log-interval`` decode steps) stop, and
# SGLang's fatal handlers print a death ("Scheduler hit an exception", SIGQUIT, the NCCL or
# scheduler watchdog, "Killed").  So an incident after ready that shows no death itself, followed
# by SERVING_PROOF batch lines of the same launch before any death of it, was lived through: the
# scheduler went round its loop and ran batches after it.  Two, not one: the stats rank logs a
# prefill batch before running it, and with the overlap scheduler the batch running when the
# incident was printed finishes only after the next one is launched; the second batch line
# after the incident needs the loop to have come back after that forward finished.
# Unknown stays unknown: a fragment that ends before them keeps the incident.
SERVING_PROOF = 2
# signals that end the launch in practice even when a line or two of batches still follows:
# the NCCL watchdog aborts the process, a peer of a collective is gone, a device-side assert
# leaves the CUDA context unusable (every later kernel fails)
NOT_PROVED_BY_SERVING = frozenset({"nccl_watchdog", "c10d_peer_gone", "device_assert", "health_check_failed"})


# -- one request's KV transfer in PD disaggregation ------------------------------------------
#
# disaggregation/decode.py and prefill.py (0.5.9, 0.5.23): a request whose KV transfer ends
# KVPoll.Failed is logged ("Decode transfer failed for request rank=N ... bootstrap_room=R with
# exception KVTransferError(bootstrap_room=R): <reason>"; each TP rank of the request prints its
# own line), aborted with a 500 (``prepare_abort(..., INTERNAL_SERVER_ERROR)``, streamed out,
# its KV cache released) and the scheduler's loop goes on with the next request: the server
# keeps serving.  Such an incident is judged like any request's handled error while serving
# (survived_serving: the launch's batch lines after it take it back; a death first keeps it;
# a log that ends before either keeps it with lowered confidence).  The warm-up request goes
# to a fake bootstrap host (http_server.py FAKE_BOOTSTRAP_HOST), so a real request's transfer,
# and this line, only happens while serving: the line itself says the launch was serving.
#
# The same handling logs a request whose handshake failed on the decode side (0.5.9 decode.py:452
# "Decode handshake failed for request ...") or whose bootstrap failed on the prefill side (0.5.9
# prefill.py:288, 0.5.23 prefill.py:1355 "Prefill bootstrap failed for request ...", mostly a
# request that timed out in KVPoll.Bootstrapping waiting for the decode's KV indices, which a
# loaded PD pair logs while it serves): they are judged as the transfer's line (TRANSFER_LINE).
# A decode told by the prefill that its bootstrap of the request failed ("Prefill bootstrap
# failed", 0.5.23 common/conn.py's status message) reports that request's own reason.
#
# Which request's failure it is, the reason says (KVTransferError's ``failure_reason``, the
# ``record_failure`` sites of disaggregation/common/conn.py and mooncake/conn.py).  Only the
# reasons that are about this request alone make it one request's error (ONE_REQUEST): it timed
# out waiting in KVPoll.Bootstrapping / WaitingForInput ("Request R timed out after Ns in ...",
# "Timed out waiting for prefill completion"), its bootstrap room was a duplicate or cancelled,
# it was dispatched to another DP rank than its room implies (follow_bootstrap_room conflict),
# the other side aborted it (NIXL's "Aborted by decode-side abort notification."), its client
# did (KVSender/KVReceiver.abort's "Aborted by AbortReq.", mostly the "handled" signal's).  Every
# other reason stays the transport's failure, never taken back: the peer is gone ("Lost /
# Losing connection with prefill instance" from the heartbeat checker, "Failed to get kvcache
# from prefill instance, it might be dead", "Prefill server ... is healthy before, but now it is
# down", "Decode instance could be dead", "Could not fetch prefill parallel info / bootstrap
# info", "{operation} to prefill {ip}:{port} failed"), the engine's transfer failed ("Failed to
# send kv chunk of ..."), the instances disagree on the KV layout, a reason from another rank,
# or an exception that is not KVTransferError: every later request to that peer fails the same
# way.  So does one that holds more than one request (bootstrap rooms), anything else than the
# transfer-failed lines (a Mooncake / NVSHMEM error line: is_transport), or that follows the
# transport's own error in the same launch (pipeline.py ``_note_transport``: TRANSFER_REPEAT).
#
# None of these is a death, whatever the reason (session 22, re-read in 0.5.9 decode.py:839 /
# prefill.py:588 and 0.5.23 decode.py:2864 / prefill.py:1287): every KVPoll.Failed is logged,
# that request alone is aborted with a 500 and the loop goes on; no code of disaggregation/
# (common/, mooncake/, nixl/ conn.py and their record_failure sites) ends the process over a
# failed transfer.  A real paste shows it (sgl-project/sglang#10560, tuned fresh/014: "Failed due
# to an unknown reason from another rank" on two ranks, then the same decode server's 200 OK
# answers for minutes).  What the kept cases say is not that the server died but that the KV
# transport between the instances is failing -- every later request through that peer is aborted
# the same way -- a serving failure of the PD pair the user has to act on (CONTRACT's ``nccl``;
# the tuned labels of fresh/014 and dev/086 say so with "the servers keep running").  So a
# transport reason stays an incident even when batch lines follow; a death after it is the
# death's own failure (the transfer line is not what ended the process, the death confirms the
# held line only because the launch did not go on).  A failure for a reason of that request
# alone is, by the code, a handler that answered one request and went on (CONTRACT: not an
# incident): batch lines after it take it back, and so does the end of the input (session 23,
# "one request's handled failure" below: a request-level warning naming the request and its
# reason).  Another request's failure for a reason of its own is that request's (each a
# warning), unless they say every request fails (EVERY_REQUEST, LONG_SPAN below); the
# transport's own error in the launch makes them all the transport's (pipeline.py
# ``_note_transport``).
TRANSFER_LINE = ("Decode transfer failed for request", "Prefill transfer failed for request",
                 "Decode handshake failed for request", "Prefill bootstrap failed for request")
_REASON = re.compile(r" with exception (?P<reason>.+)")
ONE_REQUEST = re.compile(
    r"KVTransferError\(bootstrap_room=\d+\): (?:Request \d+ timed out after [\d.]+s|Timed out waiting for prefill "
    r"completion|Duplicate (?:or cancelled |decode )?bootstrap room|follow_bootstrap_room conflict|"
    r"Aborted by decode-side abort notification|Aborted by AbortReq|Prefill bootstrap failed$)")
_ROOM = re.compile(r"bootstrap_room=(\d+)")
# A rank whose own transfer of the request did not fail raises this when the request's poll
# status, all-reduced over the TP ranks, says another rank's did (0.5.23 common/conn.py
# ``failure_exception``: the failure record is that other rank's): the request's reason is the
# other rank's line's.  With a line of the same room that gives a reason of that request alone
# it is that request's failure; on its own (fresh/014) what failed is not said, and it stays the
# transport's.
OTHER_RANK = re.compile(r"KVTransferError\(bootstrap_room=\d+\): Failed due to an unknown reason from another rank")
TRANSFER_WORDS = signals.TRANSFER_LITERALS
# the transport's own error and another failed transfer in the same launch (pipeline.py
# ``_note_transport``; requests failing one by one for reasons of their own: EVERY_REQUEST)
TRANSFER_REPEAT = 2


def request_transfer(incident: Incident) -> frozenset[str] | None:
    """The bootstrap rooms (empty when the lines were cut before them) of an incident made of
    failed KV transfers of requests, each for a reason of that request alone (ONE_REQUEST; a
    line that gives no reason, or whose reason the paste cut, says nothing against it:
    transfer_reason), nothing else; None for any other incident.  Several rooms: requests that timed out in one poll of
    the queue (sgl-project/sglang#11648), each its own."""
    literals = {"kv_transfer_failed", *(f"rule_literal:{t}" for t in TRANSFER_LINE)}
    if not incident.signals or any(name not in literals for name in incident.signal_names):
        return None
    own: set[str] = set()  # rooms a line gives a reason of that request alone for
    from_sibling: set[str] = set()  # rooms a line says failed on another rank
    for line in incident.signals:
        if not any(words in line.text for words in TRANSFER_WORDS):  # (a paste may cut "Decode"/"Prefill" off)
            return None
        reason = transfer_reason(line.text)
        rooms = set(_ROOM.findall(line.text))
        if reason is None or ONE_REQUEST.match(reason):
            own |= rooms if reason is not None else set()
        elif OTHER_RANK.match(reason) and rooms:
            from_sibling |= rooms
        else:
            return None  # the reason is the peer's or the transport's
    if not from_sibling <= own:
        return None  # no rank of the request says why: the failure the siblings echo is unknown
    return frozenset(m.group(1) for line in incident.signals for m in _ROOM.finditer(line.text))


# what is left of a reason the paste cut: KVTransferError's head and its room, nothing after
_REASON_CUT = re.compile(r"K(?:V(?:T(?:r(?:a(?:n(?:s(?:f(?:e(?:r(?:E(?:r(?:r(?:o(?:r)?)?)?)?)?)?)?)?)?)?)?)?)?)?"
                         r"(?:\((?:b(?:o(?:o(?:t(?:s(?:t(?:r(?:a(?:p(?:_(?:r(?:o(?:o(?:m(?:=\d*\)?:?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?)?\s*")


def transfer_reason(text: str) -> str | None:
    """The reason a transfer-failed line gives (KVTransferError's text), or None when the line
    gives none: 0.5.9 prints no " with exception ..." when the receiver recorded no exception,
    and a paste may cut the line before or inside it (``... with exception KVTransferError(bo``).
    A line whose reason is lost is judged with the others (request_transfer: one request's
    failure unless a line says the transport's; the warning says the reason was cut)."""
    found = _REASON.search(text)
    if found is None or _REASON_CUT.fullmatch(found.group("reason").strip()):
        return None
    return found.group("reason").strip()


# The frames of an HTTP request's dispatch: uvicorn's protocol running the ASGI app for one
# connection, starlette's routing and middleware, fastapi's endpoint call.  An exception raised
# under them is one request's: Starlette's ServerErrorMiddleware answers it with a 500, uvicorn
# logs "Exception in ASGI application" with the traceback and serves the next request
# (uvicorn/protocols/http/*_impl.py ``run_asgi``).  A paste that cut the header keeps these
# frames.  Before ready too: SGLang 0.5.x serves its own warm-up request over HTTP, and a warm-up
# that failed this way ends the launch with lines of its own ("Initialization failed. warmup
# error", kill_process_tree), which are a death after it; batch lines after it instead show the
# server went on (survived_serving).
REQUEST_DISPATCH_FRAME = re.compile(
    r"(?:^|/)(?:uvicorn/protocols/http/\w+|starlette/(?:routing|_exception_handler|middleware/\w+)|fastapi/routing)\.py$")


def through_request_dispatch(incident: Incident) -> bool:
    """The incident's traceback runs under an HTTP request's dispatch (REQUEST_DISPATCH_FRAME)."""
    return any(REQUEST_DISPATCH_FRAME.search(f.file or "") for f in incident.frames)


def may_survive_serving(incident: Incident) -> bool:
    """An incident after ready (or under an HTTP request's dispatch) that the launch's later batch
    lines can show it lived through."""
    if is_death(incident):
        return False
    if request_transfer(incident) is not None:
        return True  # printed only while serving (above), whatever the fragment showed before it
    if not incident.after_ready and not through_request_dispatch(incident):
        return False
    if goes_on_after(incident) is not None:
        return True  # a thread's warning (above), even with a peer-loss signal's words
    return not is_transport(incident) and not set(incident.signal_names) & NOT_PROVED_BY_SERVING


def survived_serving(incident: Incident, launch: Launch | None, deaths: list[int] = ()) -> bool | None:
    """Whether the launch went on serving after ``incident`` (True), did not (False: a death of
    the launch came first, or another launch began), or the log has not said yet (None).

    ``deaths``: the first lines of the launch's incidents that showed a process ending."""
    if launch is None or incident.launch_index != launch.index or not may_survive_serving(incident):
        return False
    after = [n for n in launch.batch_lines if n > incident.last_line]
    if len(after) < SERVING_PROOF:
        return False if any(d > incident.last_line for d in deaths) else None
    proof = after[SERVING_PROOF - 1]
    return not any(incident.last_line < d < proof for d in deaths)


# A serving incident that may be survived (may_survive_serving) whose log ends before the
# launch's SERVING_PROOF batch lines and before any death of it: SGLang logs many handled
# failures of one request this way and goes on (request_errors.py lists the ones whose own
# code path shows it), and a crash whose death lines the paste lost looks the same.  Unknown
# stays unknown: explain keeps it an incident (never a warning the server survived) but not
# a high-confidence crash either: its confidence is at most this, and the assumption is said.
UNPROVED_CONFIDENCE = 0.6
UNPROVED_ASSUMPTION = ("the log ends before it shows whether the server went on serving after this "
                       "(no later batch line, no death of the launch): taken as a failure, which is an "
                       "assumption; SGLang also logs one request's handled error this way and keeps serving")


def unproved(confidence: float) -> float:
    """The confidence of an incident whose survival the log does not show either way."""
    return min(confidence, UNPROVED_CONFIDENCE)


# -- one request's handled failure, with nothing after it ------------------------------------
#
# A failure SGLang's own code handles for one request -- it logs it, aborts or answers that
# request with an error and its loop goes on -- ends nothing by itself, and a paste that ends
# right after it shows no death: what happens next is what the code does, not what the text
# lost.  So when the input ends before the launch's batch lines or a death after such a failure
# it is a request-level event (a warning naming the request and its reason), not an incident.
# It stays an incident only on positive evidence of a death after it (a held incident meets the
# death first: pipeline.py ``_decide_while_serving``), or when every request fails the same way
# for a long span (EVERY_REQUEST, LONG_SPAN below).  Two such failures are recognised here:
#
# - ONE request's failed KV transfer for a reason of its own (request_transfer above):
#   disaggregation/decode.py (0.5.9 :839, 0.5.23 :2861) and prefill.py (0.5.9 :587, 0.5.23
#   :1236 ``handle_inflight_transfer_failure``) log it, ``prepare_abort(req, ..., 500)``, stream
#   the abort, release its KV and ``continue``; no code of disaggregation/ ends the process over
#   a failed transfer (the only ``os._exit`` there, 0.5.23 pp_consensus_store.py, is a crashed
#   PP replication thread, a "PPConsensusStore background thread crashed" line of its own).
# - an exception line answered to its client with a client error: the next line is uvicorn's
#   access line with a 4xx status.  SGLang answers 4xx only from a request handler's ``except``
#   (entrypoints/openai/serving_base.py ``handle_request``: ``HTTPException`` with its status,
#   ``ValueError`` and ``DS32EncodingError`` with 400; http_server.py ``generate_request`` /
#   ``encode_request``: ``ValueError`` with 400, ``_create_error_response``), in the main
#   process, and goes on.  Only the exception types those handlers answer with a 4xx
#   (CLIENT_ERROR_TYPES): a RuntimeError there is answered with a 500 and logged with "Error in
#   request: " (request_errors.py), so a 400 after one ties nothing.  ``except ValueError``
#   answers SGLang's own subclasses of it too (0.5.23, raised while one request is checked):
#   WatermarkConfigError (sampling/watermarking/config.py, a request's watermark settings),
#   ResponseToolChoiceError (entrypoints/openai/responses_tools/beam.py),
#   UnsupportedJSONSchemaFeature (constrained/json_schema_validation.py), json's JSONDecodeError;
#   and the EPD encoder server answers its BadRequestError (disaggregation/encoder/server.py,
#   an MMError whose code is 400) with that code (encoder/http_server.py ``except MMError``:
#   ``status_code=int(e.code)``).
#
# What a transport reason says (the peer gone or unreachable, the engine's transfer failing) is
# not taken back here: the tuned labels of such pastes (dev/085, dev/086, fresh/013, fresh/014)
# name the KV transport's failure between the instances an incident the user has to act on
# ("the servers keep running"), and it stays one (at UNPROVED_CONFIDENCE when nothing follows).
CLIENT_ERROR_TYPES = frozenset({"ValueError", "HTTPException", "DS32EncodingError", "JSONDecodeError",
                                "ValidationError", "RequestValidationError", "WatermarkConfigError",
                                "ResponseToolChoiceError", "UnsupportedJSONSchemaFeature", "BadRequestError"})
_ACCESS = re.compile(r'"(?:GET|POST|PUT|DELETE|PATCH) (?P<path>/\S*) HTTP/[\d.]+" (?P<status>[1-5]\d\d)\b')
_RID = re.compile(r"\brid=['\"]?(?P<rid>[\w\-.:]+)")
# Every request failing the same way: the last EVERY_REQUEST failed transfers, each another
# request's (bootstrap room), with no batch line of the launch between the first and the last
# of them and at least LONG_SPAN seconds between their time stamps.  A decode server logs a
# decode batch every --decode-log-interval (40) steps while any request runs, well under a
# second at serving speed, so a minute of requests arriving (three failed) without one batch
# says no request got through: the PD pair is not serving, whatever each line's reason.  Three,
# not two: requests sent together time out together (one poll of the bootstrap queue aborts
# all that waited past SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT), and their stamps share a
# second, so the span, not the count, is what says "every request".  Without time stamps the
# span is unknown and the failures stay request-level.  A prefill server logs a prefill batch
# for each request before its transfer, so its failing requests show batch lines between them:
# there this never fires, and a death after them is what confirms them.
EVERY_REQUEST = 3
LONG_SPAN = 60.0


def client_error_answer(incident: Incident, after: list[str]) -> str | None:
    """The access line that answered ``incident``'s exception with a client error (4xx), when
    ``after`` (the input's lines right after the incident, in order) starts with one, the
    exception is of a type SGLang's request handlers answer so (CLIENT_ERROR_TYPES) and nothing
    of a death is in the incident; else None."""
    exc = incident.exception
    if exc is None or exc.type.rsplit(".", 1)[-1] not in CLIENT_ERROR_TYPES or is_death(incident):
        return None
    for text in after:
        if not text.strip():
            continue
        found = _ACCESS.search(text)
        return text[found.start():].strip() if found and found.group("status").startswith("4") else None
    return None


def request_event(incident: Incident) -> dict | None:
    """What a request-level failure says of its requests: ``{"id": the first rid or None,
    "ids": every rid (in order), "reason": the first reason}`` for failed KV transfers of
    requests for reasons of their own (request_transfer), else None."""
    if request_transfer(incident) is None:
        return None
    ids: list[str] = []
    reason = None
    for line in incident.signals:
        m = _RID.search(line.text)
        if m and m.group("rid") not in ids and _ROOM.search(line.text):
            ids.append(m.group("rid"))  # a line the paste cut inside its rid names no request
        found = transfer_reason(line.text)
        if reason is None or (found is not None and OTHER_RANK.match(reason) and not OTHER_RANK.match(found)):
            reason = found  # (the rank that says why, over its siblings' echo)
    return {"id": ids[0] if ids else None, "ids": ids, "reason": reason}


def every_request_failed(failures: list[tuple[frozenset[str], int, str]], batch_lines: list[int]) -> bool:
    """``failures``: a launch's failed transfers of one request each, in order, as (rooms, first
    line, first line's text).  Whether the last EVERY_REQUEST of them (distinct requests) say every
    request failed for LONG_SPAN seconds with no batch line between (above)."""
    last: list[tuple[frozenset[str], int, str]] = []
    for item in reversed(failures):
        if not any(item[0] == seen[0] for seen in last):
            last.insert(0, item)
        if len(last) == EVERY_REQUEST:
            break
    if len(last) < EVERY_REQUEST:
        return False
    first, final = last[0], last[-1]
    if any(first[1] < n < final[1] for n in batch_lines):
        return False
    began, ended = timestamp(first[2]), timestamp(final[2])
    return began is not None and ended is not None and (ended - began).total_seconds() >= LONG_SPAN


# -- a traceback its own record says the code went on after -----------------------------------
#
# SGLang (and the libraries under it) log many caught exceptions WITH their traceback and go on:
# ``logger.warning("... capture failed for key %s; falling back to eager ...", exc_info=True)``
# (0.5.23 model_executor/runner/metadata_glue_graph.py), ``logger.exception(...)`` in a loop that
# continues, ``traceback.print_exc()`` before a fallback.  The traceback is printed right below
# the record that carries it (logging's formatter appends it to the record's message), so that
# record -- the line right above "Traceback (most recent call last):" -- is the code's own account
# of what it does next.  When its words say the code goes on (HANDLED_WORDS: it falls back, it
# will retry, it skips or ignores the item, it continues, the feature is disabled), the traceback
# is a handled one: evidence in the text, not an assumption.  scripts/inventory_handled.py lists
# every traceback-printing site of each release (data/inventory/handled-*.json): of 0.5.23's
# sites a raise or an exit follows, none carries these words.
#
# Such an incident is judged like the threads' warnings above (``goes_on_after``): a warning when
# its launch or the input ends with no death of the launch after it; a death after it keeps it
# (the held incident meets the death first and stands: the fallback may be what failed).  Never
# when the incident holds a death itself (SGLang's fatal handlers, "Scheduler hit an exception:
# Traceback ...", carry the traceback in the same record) or a failure signal's line.
HANDLED_WORDS = re.compile(
    r"\b(?:fall(?:ing|s)? ?back\b|fell back\b|will (?:retry|try again|be retried|continue|skip|ignore)\b|"
    r"re-?trying\b|skipp(?:ing|ed)\b|ignor(?:ed|ing)\b|continu(?:ing|e without|e with)\b|(?<=[;,.] )continue\b|"
    r"disabl(?:ed|ing)\b|using \S+(?: \S+)? instead\b|from now on\b|starting fresh\b|"
    r"this is (?:normal|expected)\b|(?:can|may) (?:safely )?be ignored\b|safe to ignore\b)", re.I)


# The first frame of a traceback nobody caught: Python's default hook prints the frames from the
# program's entry (runpy's ``_run_module_as_main``, a script's ``<module>``) or a process's or
# thread's bootstrap (multiprocessing/process.py, threading.py ``_bootstrap*``) down.  A logged
# one starts at the function whose ``except`` caught it.  So a traceback that starts there was
# not logged by the record above it, whatever that record says (a warning that happened to be
# the line before the launching process's uncaught exception: tuned notes10/001, sealed10/025).
ENTRY_FRAME = re.compile(r"(?:^|/)runpy(?:\.py)?>?$|^<frozen runpy>$|(?:^|/)multiprocessing/process\.py$|"
                         r"(?:^|/)threading\.py$")


def handled_record(incident: Incident) -> str | None:
    """The record that logged ``incident``'s traceback when its words say the code went on after
    it (HANDLED_WORDS), nothing of a death and no failure signal being in the incident, and its
    first frame no entry's (ENTRY_FRAME); else None."""
    header = incident.captures.get(HANDLED_CAPTURE)
    if not header or incident.kind != "traceback" or incident.signals or is_death(incident):
        return None
    first = incident.frames[0] if incident.frames else None
    if first is not None and (ENTRY_FRAME.search(first.file or "") or first.function == "<module>"):
        return None
    return header if HANDLED_WORDS.search(header) else None


# the incident's captures key of the record right above its first "Traceback" line
# (assemble.py ``_start_traceback``)
HANDLED_CAPTURE = "logged_by"
