"""Failure evidence that is not a Python traceback, and the lines that end a failure.

Each signal has a name, the literals one of which must be in the line (a cheap prefilter
and a trigger for the block scanner), a regex, and a role:

- ``evidence``: a failure line of its own (OOM kill, NCCL WARN, ``Killed``, CUDA error, a C++
  terminate, a faulthandler dump); it starts an incident or joins the open one.
- ``terminal``: the parent's reaction to a failed child (``Received sigquit ...``); it joins
  the open incident and completes it, or is an incident of its own when nothing is open.
- ``stop``: the operator stopped the server on purpose (``SIGTERM received``); what follows
  in that launch (``crashed with exit code -15``, ``SIGQUIT received``) is not an incident.
- ``stop_request``: the HTTP server was asked to exit (uvicorn's ``Shutting down``); a
  failure open above it is reported, what follows in that launch is the stop's teardown.
- ``benign``: looks like a failure but is an operator stop (exit code -15 / -2 / 0).
- ``operator_kill``: the operator's ``kill -9 <pid>``; the shell's ``<pid> Killed`` for one of
  those pids is not an incident.
- ``handled``: a line that holds a failure's words but reports what a healthy server does
  (a client's abort of one request); it starts nothing and the server goes on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Signal:
    name: str
    literals: tuple[str, ...]
    regex: re.Pattern
    role: str
    # a "handled" line that shows the step the launch is in (a kernel being compiled): read
    # as an ordinary line too, so progress.py sees it
    shows_progress: bool = False
    # a "handled" line whose words end the line: a line anywhere in the text that ends inside
    # them (a paste cut at the line's end, a rank's line cut by another's) is read as going on
    # with them, as cut_match.complete_literal reads the input's last line (cut_reading).  Only
    # for handled signals: a cut never makes a failure out of part of its words.
    cut_anywhere: bool = False


def _s(name: str, literals: tuple[str, ...], rx: str, role: str, flags: int = 0, *,
       shows_progress: bool = False, cut_anywhere: bool = False) -> Signal:
    assert not cut_anywhere or role == "handled", name
    return Signal(name, literals, re.compile(rx, flags), role, shows_progress, cut_anywhere)


def _heads(words: str) -> str:
    """A regex for ``words`` or any head of them (a line cut inside them): nested optional groups."""
    out = ""
    for ch in reversed(words):
        out = f"(?:{re.escape(ch)}{out})?"
    return out


# The head of SGLang's line for one PD request whose KV transfer (or its handshake or bootstrap
# before it) ended KVPoll.Failed (disaggregation/decode.py, prefill.py), and the words a paste
# that cut "Decode"/"Prefill" off the line's head keeps.
TRANSFER_HEAD = r"(?:(?:Decode|Prefill) transfer|Decode handshake|Prefill bootstrap) failed for request"
TRANSFER_LITERALS = ("transfer failed for request", "handshake failed for request", "bootstrap failed for request")


# InfiniBand port events NCCL <= 2.18 WARNs about that are not errors (nccl_warn below)
IB_ROUTINE_EVENT = (r"NET/IB ?: (?:\S+:\d+ )?Got async event ?: (?:port active|LID change|P_Key change|SM change|"
                    r"client reregistration|GID table change)\b")


# Order matters: the first signal whose literal and regex match a line wins.
# A shell command's line as ``set -x`` echoes it ("+ kill -9 18229", "++ " in a subshell) or as
# typed after a prompt ("$ ", "# "); the echo also starts after a space inside a line: behind
# the prefix of a wrapper's logger that relayed the script's output line by line ("[time][name]
# [ERROR] - + kill -9 18229", bench/robustness.py logger), or where a browser's copy of the log
# joined runs of lines with two spaces (browser_join), which also ends it where two spaces start
# the next one ("... token/s  + kill -9 18229  >>> killing server ...").
_SHELL_LINE_START = r"^(?:(?:.*?\s)?\++ |.*?[$#] )?"
_SHELL_LINE_END = r"(?: {2}|\s*$)"
# A line that is a shell command itself (``set -x``'s "+ grep -c 'Segmentation fault' LOG", a
# prompt's "$ echo ...", "root@host:~# ..."): a signal's name in it is the command's text, not
# a process's death (the shell's own report of a death starts with the signal's name, the
# script's "line N: PID", or the job's "[N]+").
_NOT_SHELL_COMMAND = r"^(?!\s*(?:\++ |[\w.@:~/-]*[$#] ))"

SIGNALS: tuple[Signal, ...] = (
    _s("operator_stop", ("SIGTERM received", "Received SIGTERM", "Received sigterm"),
       r"SIGTERM received|Received (?:SIGTERM|sigterm)", "stop"),
    # uvicorn's Server.shutdown() (uvicorn/server.py, "Shutting down" with its level prefix): logged
    # only once its main loop was asked to exit -- SIGINT / SIGTERM to the server process (Ctrl-C,
    # docker stop, a pod's termination) -- and never on SGLang's own death, which SIGKILLs its
    # process tree (kill_process_tree) after the parent's sigquit, nor on a start-up that failed
    # (uvicorn returns before its loop).  What the processes print after it is the stop's
    # teardown; a failure already open above it is kept (Assembler._signal).
    _s("uvicorn_shutdown", ("Shutting down",), r"^(?:\^C)?INFO: +Shutting down\s*$", "stop_request"),
    # The operator's (or their script's) own SIGKILL of a process by pid, as a shell echoes it
    # (``set -x``: "+ kill -9 18229") or as typed after a prompt: bash's "<pid> Killed" report for
    # that pid further down is this kill, not the kernel OOM killer; "kill -9 %1" names bash's job 1,
    # whose report is "[1]+  Killed  <command>".
    _s("operator_kill", ("kill -9", "kill -KILL", "kill -SIGKILL", "kill -s KILL", "kill -s 9"),
       _SHELL_LINE_START + r"(?:sudo )?kill +(?:-9|-KILL|-SIGKILL|-s +(?:KILL|9)) +(?P<killed_pids>%?\d+(?: +%?\d+)*)"
       + _SHELL_LINE_END,
       "operator_kill"),
    # The same by name: ``pkill -9 -f PATTERN`` / ``killall -9 NAME`` as a shell echoes or a prompt
    # shows it (notes10/005: "+ pkill -9 -f 'sglang\.launch_server'"): bash's "<pid> Killed
    # <command>" whose command holds that pattern is this kill (operator_kill_matches).
    _s("operator_pkill", ("pkill ", "killall "),
       _SHELL_LINE_START + r"(?:sudo )?(?:pkill|killall)(?P<kill_opts>(?: +(?:-s +\S+|--signal[ =]\S+|-\S+))*)"
       r" +(?P<kill_pattern>'[^']+'|\"[^\"]+\"|[^\s'\"-]\S*)" + _SHELL_LINE_END, "operator_kill"),
    _s("subprocess_exit_benign", ("crashed with exit code", "exit code", "Exit code"),
       r"(?:crashed with exit code|[Ee]xit code:?|exit code) (?:-15|-2|0)(?!\d)", "benign"),
    # A supervisor's report of a container that a stop ended: docker compose "sglang-1 exited with
    # code 143" (128 + SIGTERM: ``docker compose stop`` / ``down``), 130 (SIGINT: Ctrl-C in the
    # attached terminal), 0 (it exited on its own after the stop); any other code is the
    # container's own death (exit_code below: 139 a segfault, 134 an abort, 1 a Python error)
    _s("container_stopped", ("exited with code",), r"\bexited with code (?:0|130|143)(?!\d)", "benign"),
    # The main process's SIGCHLD handler (engine.py ``sigchld_handler``, 0.4.x "Child process
    # unexpectedly failed with an exit code %d. pid=%d", 0.4.6 on "... with exitcode=%s. pid=%s")
    # prints ``os.waitpid``'s STATUS, not an exit code: a child that exited with code N reports
    # N*256 ("exitcode=256" is exit 1), one a signal ended reports the signal's number.  15 and 2
    # are SIGTERM and SIGINT: the child was stopped from outside (SGLang's own teardown kills its
    # children with SIGKILL, kill_process_tree), as a stop of the process group does
    # (ai-dynamo/dynamo#2294: "SIGTERM received ... Draining requests and shutting down..." then
    # "exitcode=15" for each child); 9 (SIGKILL) and the others stay what they are.
    _s("child_stopped", ("unexpectedly failed with",),
       r"Child process unexpectedly failed with (?:exitcode=|an exit code )(?:15|2)\b", "benign"),
    # 0.4.2-0.4.3.x spelled it "from a child proces." (engine.py sigquit_handler), 0.4.4 on "process."
    _s("sigquit_launch", ("Received sigquit",), r"Received sigquit from a child proces(?:s|\.)", "terminal"),
    _s("sigquit_running", ("SIGQUIT received",), r"SIGQUIT received\. signum=.*one child failed", "terminal"),
    _s("subprocess_crashed", ("crashed with exit code",),
       r"Subprocess (?P<process>\S+) \(pid=(?P<pid>\d+)\) crashed with exit code (?P<exit_code>-?\d+)", "evidence"),
    _s("scheduler_died", ("scheduler died during initialization",),
       r"Rank (?P<rank>\d+) scheduler died during initialization \(exit code: (?P<exit_code>-?\d+)\)", "terminal"),
    # (SGLang logs "Rank N scheduler is dead. Please check if there are relevant logs." and the
    # exit code on a line of its own; a wrapper that joins them, "Rank 0 scheduler is dead. Exit
    # code: -6 (SIGABRT)", keeps the code: a kill (-9) or an abort (-6) are different deaths)
    _s("scheduler_dead", ("scheduler is dead",),
       r"Rank (?P<rank>\d+) scheduler is dead(?:\.[^\n]*?\b[Ee]xit code:? (?P<exit_code>-?\d+))?", "evidence"),
    # (not subprocess.CalledProcessError's "returned non-zero exit status N": an exception line)
    # The launcher's SIGCHLD handler (0.4.6-0.4.x engine.py sigchld_handler, and launchers that copy
    # it: "Child process unexpectedly failed with exitcode=%s. pid=%s", earlier "with an exit code
    # %d"): os.waitpid's STATUS, read as the exit status it encodes (_decode_wait_status: the low
    # seven bits a signal's number, else the exit code in the high byte), so "exitcode=9" is a
    # SIGKILL (-9) and "exitcode=256" an exit 1.  Named as the other exit statuses ("exit_code"):
    # the same evidence, another way of printing it; after SGLang's own SIGKILL of its tree or an
    # operator's stop it is that end's aftermath (assemble._AFTERMATH).  (15 / 2: child_stopped)
    _s("exit_code", ("unexpectedly failed with",),
       r"Child process unexpectedly failed with (?:exitcode=|an exit code )(?P<wait_status>\d+)\b", "evidence"),
    # (not a shell command's own text: ``set -x``'s "+ echo 'exit status 137'" or a prompt's
    # "$ grep 'exit code' LOG" is a command, the status is what it prints)
    _s("exit_code", ("Exit code:", "exit code", "exit status", "exited with code", "rc="),
       _NOT_SHELL_COMMAND + r"(?:Exit code: (?P<exit_code>-?\d+)|rc=(?P<rc>\d+)\s*$|.*\b(?<!non-zero )exit(?:ed with)? (?:code|status)[ :=]+(?P<status>-?\d+))",
       "evidence"),
    _s("oom_killer", ("Out of memory", "oom-kill", "oom_reaper", "invoked oom-killer"),
       r"Out of memory: Killed process (?P<pid>\d+)|oom-kill:|oom_reaper:|invoked oom-killer", "evidence"),
    # (bash's report of a job it ran: "<script>: line N: <pid> Killed  python ..."; the pid is kept,
    # also when the line ends after "Killed": its command wrapped onto the next line by a narrow
    # terminal, or cut by the paste; the command's interpreter by name or by its path, as a script
    # runs a venv's "/venv/bin/python -m sglang.launch_server": fixtures/healthy/real_runs/
    # debug_log_shell_killed.log)
    _s("killed", ("Killed",),
       r"^(?:\[(?P<killed_job>\d+)\][+-]?\s+)?Killed\b|\bline \d+: +(?P<killed_pid>\d+) +Killed(?:\s+(?:\S*/)?(?:python|nohup|sglang)|\s*$)|"
       r"\bKilled\s+(?:\S*/)?(?:python|nohup|sglang)",
       "evidence"),
    # (not NCCL 2.4-2.7's "NCCL WARN Failed to open libibverbs.so[.1]": its probe for the IB
    # verbs library on a host without InfiniBand, after which it uses sockets; later releases
    # print it at INFO.  A healthy launch prints it; a real NCCL failure warns on lines of its own)
    # NCCL WARN lines a healthy start prints, which report no failure (a "handled" signal, before
    # nccl_warn and before any rule's "NCCL WARN ..." literal, so neither starts an incident):
    # - RCCL's advice about the host's kernel settings, which its ncclInit (ROCm/rccl src/init.cc)
    #   prints on every start of a host that has them and then goes on initialising: "NUMA auto
    #   balancing enabled which can lead to variability in the RCCL performance! Disable by ..."
    #   and 'Missing "iommu=pt" from kernel command line which can lead to system instablity or
    #   hang!' (ROCm/rccl#2112 drops the latter in VMs, where it is false; RCCL's debugging guide
    #   lists both as tuning steps);
    # - NCCL's report of an InfiniBand port event that is not an error: up to 2.18 its async
    #   thread (src/transport/net_ib.cc ncclIbAsyncThreadMain) WARNs "NET/IB : [dev:port ]Got async
    #   event : <ibv_event_type_str>" for every event but "communication established", the subnet
    #   manager's routine ones included (a port coming up, a LID / P_Key / GID table / SM change, a
    #   client reregistration), and goes on; its error events ("port error", "local catastrophic
    #   error", "CQ error", ...) stay failures.
    _s("nccl_routine_warn", ("NCCL WARN",),
       r"NCCL WARN (?:NUMA auto balancing enabled|Missing \"iommu=pt\" from kernel|" + IB_ROUTINE_EVENT + ")",
       "handled"),
    _s("nccl_warn", ("NCCL WARN",), r"NCCL WARN (?!Failed to open libibverbs\.so)(?P<nccl_message>.*)", "evidence"),
    _s("nccl_error", ("NCCL error", "ncclUnhandled", "ncclSystemError", "ncclInternalError", "ncclInvalidUsage"),
       r"NCCL error|nccl(?:Unhandled\w*|SystemError|InternalError|InvalidUsage)", "evidence"),
    # (flashinfer's FLASHINFER_CUDA_CALL prints "CUDA Error: <what> (<code>) <file>: line N at function ...")
    _s("cuda_error", ("CUDA error:", "CUDA error (", "CUDA Error:"), r"CUDA [Ee]rror(?: \([^)]*\))?: (?P<cuda_message>.*)",
       "evidence"),
    _s("cpp_terminate", ("terminate called",), r"terminate called (?:after throwing an instance of '(?P<cpp_type>[^']+)'|without an active exception)", "evidence"),
    _s("faulthandler", ("Fatal Python error",), r"Fatal Python error: (?P<fatal>.*)", "evidence"),
    # (a line that names SIGSEGV as what it avoids is not a crash report: 0.5.23 logs "Detected
    # GPT-OSS model on Blackwell ..., using triton MOE kernel to avoid triton_kernels SIGSEGV.")
    # (torch's fatal-signal handler, torch/csrc/Module.cpp: "!!!!!!! Segfault encountered !!!!!!!"
    # before the symbolized native stack)
    _s("segfault", ("Caught signal 11", "Segmentation fault", "SIGSEGV", "Segfault encountered"),
       _NOT_SHELL_COMMAND + r"(?:.*?(?:Caught signal (?P<signum>\d+) \((?P<signame>[^:)]+)|Segmentation fault|"
       r"Segfault encountered)|(?!.*\b(?:avoid|avoids|avoiding|prevent|prevents|preventing|work around)\b).*\bSIGSEGV\b)",
       "evidence"),
    # UCX's (and UCX-based transports', ucs/debug/debug.c) fatal-signal handler for the other signals
    # it catches: "[host:pid:tid:N] Caught signal 8 (Floating point exception: integer divide by
    # zero)", 7 (Bus error), 4 (Illegal instruction), 6 (Aborted); 11 is the segfault signal's.  The
    # process's own native code raised it, as a shell's report of that death says (PROCESS_DEATHS'
    # signal_death).
    _s("signal_death", ("] Caught signal ",),
       r"\] Caught signal (?!11\b)(?P<signum>\d+) \((?P<signame>[^:)]+)", "evidence"),
    _s("nccl_watchdog", ("detected by watchdog", "Watchdog caught collective operation timeout"),
       r"Exception \(either an error or timeout\) detected by watchdog|Watchdog caught collective operation timeout",
       "evidence"),
    _s("c10d_peer_gone", ("sendBytes failed", "recvValue failed", "recvBytes failed"),
       r"\[c10d\] (?:sendBytes|recvValue|recvBytes) failed.*(?:Broken pipe|Connection reset|closed)", "evidence"),
    # SIGABRT as the shell reports it ("Aborted (core dumped)", "bash: line 1: 123 Aborted
    # (core dumped) python ..."): a C++ assertion or an uncaught C++ exception (torch, NCCL, a
    # CUDA library) ended the process; not SGLang's "Aborted by AbortReq." of a request
    _s("aborted", ("Aborted (core dumped)", " Aborted  "), r"(?:^|\d )Aborted +\(core dumped\)", "evidence"),
    # glibc's own abort on a corrupted heap or stack (malloc/malloc.c malloc_printerr, the stack
    # protector's __stack_chk_fail, _FORTIFY_SOURCE's __chk_fail): it prints one line and raises
    # SIGABRT, so "Aborted (core dumped)" follows when the shell's report was pasted too.  A native
    # extension (a kernel library, a tokenizer, NCCL) wrote out of bounds.  glibc < 2.26 wraps the
    # message: "*** Error in `python': double free or corruption (!prev): 0x... ***".
    _s("glibc_abort", ("double free or corruption", "free(): ", "munmap_chunk(): ", "realloc(): ", "malloc(): ",
                       "malloc_consolidate(): ", "corrupted size vs. prev_size", "corrupted double-linked list",
                       "stack smashing detected", "buffer overflow detected"),
       r"^(?:\*\*\* Error in `[^`]*': )?(?P<glibc_message>double free or corruption \([!\w]+\)|"
       r"(?:free|realloc|malloc|munmap_chunk|malloc_consolidate)\(\): (?:invalid|corrupted|double free|unaligned|"
       r"memory corruption)[\w .()]*?|corrupted size vs\. prev_size|corrupted double-linked list(?: \(not small\))?)"
       r"(?:: 0x[0-9a-f]+ \*\*\*)?\s*$|^\*\*\* (?P<glibc_check>stack smashing|buffer overflow) detected \*\*\*",
       "evidence"),
    _s("bus_error", ("Bus error",), r"^(?:\S+: line \d+: +\d+ )?Bus error\b|\bBus error \(core dumped\)", "evidence"),
    _s("device_assert", ("Assertion `",), r"Assertion `(?P<assertion>.+)` failed", "evidence"),
    _s("pool_profiled_negative", ("is larger than the profiled value -",),
       r"max_total_tokens=(?P<max_total_tokens>\d+) is larger than the profiled value (?P<profiled>-\d+)", "evidence"),
    # http_server.py generate_request (0.4.10 through 0.5.23): a ValueError of one request (its
    # input plus max_new_tokens over the context, bad sampling parameters) is logged
    # "[http_server] Error: <e>" and answered with a 400 (or an error event on the stream); the
    # server goes on (CONTRACT: not an incident).  Before uvicorn_error, whose "ERROR:    " the
    # line carries when SGLang logs in uvicorn's format.
    _s("http_request_error", ("[http_server] Error: ",), r"\[http_server\] Error: ", "handled"),
    _s("uvicorn_error", ("ERROR:",), r"^ERROR: {1,6}(?P<uvicorn_message>.*(?:Errno|error|Error).*)", "evidence"),
    _s("watchdog_timeout", ("watchdog timeout",), r"Scheduler watchdog timeout", "evidence"),
    _s("health_check_failed", ("Health check failed",), r"Health check failed", "evidence"),
    _s("init_failed", ("Initialization failed",), r"Initialization failed\.", "evidence"),
    # Triton < 3.2's software pipeliner prints the MLIR diagnostic "loc(...): error: operation
    # scheduled before its operands" and compiles the kernel anyway: SGLang 0.4.1-0.4.6.post5 log
    # "The following error message 'operation scheduled before its operands' can be ignored."
    # before their decode-attention kernel compiles ("This issue will not affect performance and
    # accuracy", srt/layers/attention/triton_ops/decode_attention.py); ranks' lines may interleave, so
    # the location's tail ('.py":L:C): error: ') is enough.  Before kernel_compile_error
    # and the rule pack's ": error: " literal, which would read it as a compile failure.  A paste
    # cut at the line's tail keeps "operation scheduled before" and a head of " its operands";
    # one cut before "before", anywhere in the text, keeps a head of the literal (cut_anywhere).
    _s("triton_ignorable_diagnostic", ("operation scheduled before",),
       r"\.py\"(?::\d+)*\): error: operation scheduled before" + _heads(" its operands") + r"\s*$", "handled",
       shows_progress=True, cut_anywhere=True),
    _s("kernel_compile_error", (": error: ",),
       r"^(?:loc\(\".*?\"(?::\d+)*\)|\S+\.py:\d+:\d+): error: (?P<compile_error>.+)$", "evidence"),
    # A line that says it will try again is not a failure, whatever error it quotes: urllib3's
    # connectionpool logs "Retrying (Retry(total=N, ...)) after connection broken by
    # 'NewConnectionError(... Failed to establish a new connection ...)': /path" and retries (if
    # every retry fails, the caller's exception -- MaxRetryError, "Max retries exceeded" -- is the
    # failure); SGLang 0.5.23's prefill logs "Prefill register attempt N/M failed: <cause>" for
    # each failed attempt to register with its bootstrap server and tries again after a back-off
    # (disaggregation/common/conn.py ``_register_topology_row``; only after the last one, N == M,
    # it logs "Prefill instance failed to register to bootstrap server after M retries"), and
    # MooncakeStore's warm-up "Warmup put failed (attempt N/M), ret=..., retrying in Ns..."
    # (mem_cache/storage/mooncake_store/mooncake_store.py; after the last it raises).  The last
    # attempt (N == M) is not a retry and stays whatever it is.  Before transfer_error, whose
    # "Failed to establish a new connection" such a line quotes.
    _s("connection_retry", ("Retrying (Retry(", "attempt "),
       r"\bRetrying \(Retry\(total=\d+.*\bafter (?:connection broken by|\w+ response)|"
       r"\battempt (?P<attempt>\d+)/(?!(?P=attempt)\b)\d+\b(?: failed\b|\),? .*\bretrying\b)", "handled"),
    # (a KVTransferError of one request is not here: a client abort raises it on a healthy server)
    # (Mooncake's transfer engine logs through glog from its transport sources: rdma_transport.cpp,
    # rdma_context.cpp, rdma_endpoint.cpp, transfer_engine.cpp, tcp_transport.cpp; its store client's
    # transfer tasks from transfer_task.cpp: "Failed to complete transfers after 60 seconds for batch
    # N".  Not transfer_metadata.cpp: its E "Local segment descriptor not found" is logged at every
    # start of a client that mounts no segment of its own, a healthy state)
    # (NVSHMEM's "<file>:<line>: non-zero status: <status> <message>": its bootstrap's statuses are
    # negative, "non-zero status: -3 allgather of ipc handles failed", sgl-project/sglang#5376)
    _s("transfer_error", ("rdma_transport", "rdma_context", "rdma_endpoint", "transfer_engine", "tcp_transport",
                          "transfer_task", "non-zero status:",
                          "NVSHMEM ERROR", "Failed to establish a new connection"),
       r"^E\d{4} [\d:.]+ +\d+ \w+\.cpp:\d+\] (?P<transfer_message>.+)|non-zero status: -?\d+ (?P<nvshmem_message>.+)|"
       r"NVSHMEM ERROR|Failed to establish a new connection", "evidence"),
    # disaggregation/decode.py, prefill.py: "Decode transfer failed for request rank=N ... with
    # exception KVTransferError(bootstrap_room=N): <reason>" -- the KV transport between the
    # prefill and decode servers broke (a client's abort, "Aborted by AbortReq.", is not a failure)
    # a client that aborts a PD request: KVSender/KVReceiver.abort record "Aborted by AbortReq."
    # and the transfer ends failed with that reason (0.5.23 disaggregation/common/conn.py); the
    # server keeps serving, and no rule's literal ("transfer failed for request") makes it one
    # (the same per-request handling logs a request's failed handshake on the decode side and its
    # failed bootstrap on the prefill side: 0.5.9 decode.py:452 "Decode handshake failed for
    # request ...", prefill.py:288 / 0.5.23 prefill.py:1355 "Prefill bootstrap failed for request
    # ...": logged, the request aborted with a 500, the loop goes on)
    _s("kv_transfer_aborted", TRANSFER_LITERALS,
       TRANSFER_HEAD + r" .*? with exception \w+\([^)]*\): Aborted by AbortReq", "handled"),
    _s("kv_transfer_failed", TRANSFER_LITERALS,
       TRANSFER_HEAD + r" .*? with exception (?P<transfer_exc>\w+)\([^)]*\): "
       r"(?!Aborted by AbortReq)(?P<transfer_message>[^\"]+)", "evidence"),
    # torch's caching allocator, just before it raises torch.OutOfMemoryError (its W-level c10
    # line survives when the traceback that follows was cut)
    _s("cuda_alloc_oom", ("allocation failed with OOM",),
       r"memory allocation failed with OOM on device (?P<device>\d+) while trying to allocate (?P<alloc_bytes>\d+) bytes",
       "evidence"),
    # A component with a logging format of its own (sglang-router's Python launcher, its Rust
    # gateway, a C++ library's glog) that says it could not start: an ERROR/CRITICAL/FATAL line
    # (or glog's E/F level) whose message is "Error starting X: ..." / "Failed to start X ...",
    # and a Rust panic.  Errors it logs while it retries (a worker not up yet) are not these,
    # nor "Failed to start <name> operation": one request of a running client failed (Mooncake's
    # store client, client.cpp: "Failed to start put operation: NO_AVAILABLE_HANDLE" when the store
    # has no room; SGLang's HiCache storage backend gets the error code back and drops the write).
    _s("component_failed", ("Error starting", "Failed to start", "Failed to initiali", "Failed to launch", "panicked at"),
       r"(?:\b(?:ERROR|CRITICAL|FATAL)\b.*?|^[EF]\d{4} [^\]]*\] ?)(?P<component_message>(?:Error starting|Failed to "
       r"(?:start(?! \w+ operation\b)|initiali[sz]e|launch))\b.*)|^thread '(?P<panic_thread>[^']+)' panicked at (?P<panic_at>.*)",
       "evidence"),
    # A program that runs SGLang (a model runner, an orchestrator) says in its own format that
    # it could not run it: logfmt's ``level=error msg="..."`` or a Go-style error chain
    # (``unable to load runner: ...: failed to get SGLang arguments: ...``) whose message names
    # SGLang and a failure.  A wrapper's line that names SGLang without a failure is not one.
    _s("wrapper_failed", ("level=error", "level=fatal", "level=warning", "level=warn", "SGLang", "sglang"),
       r"\blevel=(?:error|fatal|warning|warn) msg=\"(?P<wrapper_message>[^\"]*\bsglang\b[^\"]*\b(?:not found|failed|"
       r"error|required|cannot|unable)\b[^\"]*)\"|^(?P<wrapper_chain>(?:unable|failed|error) to [\w ]+: (?:[^:]+: )*"
       r"[^:]*\bsglang\b[^:]*(?:: .*)?\b(?:required|failed|not found|not supported|cannot|unable)\b.*)$",
       "evidence", re.IGNORECASE),
    _s("argparse_error", (": error: ",),
       r"^(?P<prog>[\w./-]+(?: serve)?): error: (?P<argparse_message>.+)$", "evidence"),
    _s("port_in_use", ("Port is already in use", "is already in use", "is not available in"),
       r"Port is already in use|is already in use\. When running|is not available in \d+ seconds", "evidence"),
)

LITERALS: tuple[str, ...] = tuple(sorted({lit for s in SIGNALS for lit in s.literals}))

# Deaths the text reports in words only, a tuple apart from SIGNALS as session 24 added them: the
# assembler reads them with SIGNALS (assemble.Assembler._signals, TRIGGER_LITERALS); classify() and
# LITERALS do not.  They make an incident of their own, like a traceback, when nothing else is open.
# - A shell's report of a process that a fatal signal ended, for the signals the built-ins do not
#   name (SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGQUIT): bash's strsignal text, alone ("Illegal
#   instruction (core dumped)"), as its job report ("run.sh: line 3: 123 Floating point exception
#   (core dumped) python ...", "[1]+  Illegal instruction  (core dumped) python ...") or zsh's
#   ("zsh: illegal hardware instruction  python ...").  SIGILL is most often code built for
#   another CPU or GPU architecture than the one it runs on; SIGFPE an integer division by zero
#   in native code.  "Quit" only with "(core dumped)": the bare word is any text's.
# - SGLang's launcher on a node that runs only schedulers (0.5.x engine.py
#   block_until_scheduler_exits, node_rank > 0): "Scheduler or DataParallelController PID
#   terminated with CODE" once the process it waited on exited; 0, -2 and -15 are a stop.
# - SIGABRT and SIGSEGV where the shell's report has no "(core dumped)" (a core size limit of 0,
#   the default in most containers): bash's "Aborted" alone or as its job report ("run.sh: line 3:
#   4242 Aborted                 python ...", "[1]+  Aborted  python ..."), zsh's "zsh: abort
#   python ..." / "zsh: segmentation fault  python ..." (its own signal names, lower case, the
#   command after two spaces); and the abort of a glog / abseil CHECK in a native library
#   (glog's LogMessageFatal: "F1207 10:11:12.123456 12345 file.cc:88] Check failed: ...", then
#   "*** Check failure stack trace: ***" and abort()).  Named as the built-ins name these deaths
#   ("aborted", "segfault"): the same death, another way of printing it.  (bash's "Segmentation
#   fault" without a core dump is the built-in segfault's; "Bus error" the host_shm class rule's.)
PROCESS_DEATHS: tuple[Signal, ...] = (
    Signal(
        "aborted", ("Aborted", "zsh: abort", "Check failed: ", "Check failure stack trace"),
        re.compile(r"^(?:\S+: line \d+: +(?P<pid>\d+) +|\[\d+\][+-]? +)?Aborted(?:\s*$|  +\S.*$)"
                   r"|^zsh: abort(?: \(core dumped\))?  +\S"
                   r"|^F\d{4} [\d:.]+ +\d+ [\w./+-]+:\d+\] Check failed: |^\*\*\* Check failure stack trace: \*\*\*"),
        "evidence"),
    Signal(
        "segfault", ("zsh: segmentation fault",),
        re.compile(r"^zsh: segmentation fault(?: \(core dumped\))?  +\S"),
        "evidence"),
    Signal(
        "signal_death",
        ("Illegal instruction", "Floating point exception", "Trace/breakpoint trap", "Bad system call",
         "Quit (core dumped)", "illegal hardware instruction", "floating point exception", "zsh: trace trap",
         "zsh: bus error"),
        re.compile(r"^(?:\S+: line \d+: +(?P<pid>\d+) +|\[\d+\][+-]? +)?(?P<signame>Illegal instruction|"
                   r"Floating point exception|Trace/breakpoint trap|Bad system call|Quit(?= +\(core dumped\)))"
                   r"(?:\s*$| +\(core dumped\)(?:\s.*)?$|  +\S.*$)"
                   r"|^zsh: (?P<zsh_signame>illegal hardware instruction|floating point exception|trace trap|bus error)"
                   r"(?: \(core dumped\))? +\S"),
        "evidence"),
    Signal(
        "scheduler_terminated", ("terminated with",),
        re.compile(r"Scheduler or DataParallelController (?P<pid>\d+) terminated with (?!(?:0|-2|-15)\b)"
                   r"(?P<exit_code>-?\d+)\b"),
        "evidence"),
)
PROCESS_DEATH_LITERALS: tuple[str, ...] = tuple(sorted({lit for sig in PROCESS_DEATHS for lit in sig.literals}))


def decode_wait_status(captures: dict[str, str]) -> dict[str, str]:
    """``captures`` with the exit status a SIGCHLD handler's ``os.waitpid`` STATUS (``wait_status``)
    encodes, as multiprocessing spells an exit code (``exit_code``: -N for a death by signal N, the
    code itself for an exit): the low seven bits are the signal's number (0x80 the core-dump
    flag), else the high byte is the exit code."""
    raw = captures.get("wait_status")
    if raw is None or "exit_code" in captures:
        return captures
    status = int(raw)
    signum = status & 0x7F
    if signum == 0x7F:  # a stopped (not ended) child: no exit status
        return captures
    return {**captures, "exit_code": f"-{signum}" if signum else str((status >> 8) & 0xFF)}


def classify(message: str) -> tuple[Signal, dict[str, str]] | None:
    """The signal a record's message is, with its named captures, or None."""
    for sig in SIGNALS:
        for lit in sig.literals:
            if lit in message:
                break
        else:
            if sig.cut_anywhere and (found := cut_reading(sig, message)) is not None:
                return found
            continue
        m = sig.regex.search(message)
        if m:
            return sig, decode_wait_status({k: v for k, v in m.groupdict().items() if v is not None})
    return None


def cut_heads(sig: Signal) -> tuple[str, ...]:
    """The shortest heads of a cut_anywhere signal's literals that a line cut inside them must
    keep (as many words as cut_match.complete_literal asks of the last line); () for the others."""
    if not sig.cut_anywhere:
        return ()
    import math

    from sglang_doctor.incidents import cut_match

    return tuple(lit[:max(cut_match.MIN_LITERAL_CHARS, math.ceil(len(lit) * cut_match.MIN_LITERAL_SHARE))]
                 for lit in sig.literals)


def cut_reading(sig: Signal, message: str) -> tuple[Signal, dict[str, str]] | None:
    """``sig`` (cut_anywhere) read from a message that ends inside one of its literals."""
    from sglang_doctor.incidents import cut_match

    text = message.rstrip()
    if not any(head in text for head in cut_heads(sig)):  # the cheap test first
        return None
    found = cut_match.complete_literal(text, (sig,))
    return (found[0], found[1]) if found is not None else None


# A line SGLang itself calls a warning ("... To silence this warning, specify
# --disable-custom-all-reduce explicitly.") reports something it worked around: it does not
# start an incident through a rule's literal (it still counts inside an incident).  NCCL's own
# INFO level ("host:pid:tid [dev] NCCL INFO ...", NCCL_DEBUG=INFO chatter) is informational in
# the same way: its probe for an optional network plugin prints "NET/Plugin: Plugin load returned
# 2 : libnccl-net.so: cannot open shared object file ..." on every healthy launch; NCCL's
# failures are WARN lines (the nccl_warn signal) and error returns (``-> N``).
_WARNING_LINE = r"(?!.*(?:To silence this warning|\bWarning: |\bWARNING\b|\bNCCL INFO ))"
# The same test for the block scanner, over a message's raw bytes: a message it calls a
# warning is one _WARNING_LINE calls a warning too (its word boundaries are ASCII
# punctuation, spaces or the ends, which are word boundaries in the decoded text as well).
# Lazy ``.*?``: a warning says so near its start, and the test stops there.
WARNING_LINE_BYTES = (r"(?!.*?(?:To silence this warning|(?<![\w\x80-\xff])Warning: |"
                      r"(?<![\w\x80-\xff])WARNING(?![\w\x80-\xff])|(?<![\w\x80-\xff])NCCL INFO ))")


# A compiler's own diagnostic (nvcc's and ptxas's ``nvcc fatal   : ...``, ``ptxas error   :
# ...``, a C++ runtime's ``terminate called after throwing ...``) written onto the line of a
# warning that ended without a newline: DeepGEMM's JIT prints "Warning: please use at least
# NVCC 12.9 for the best DeepGEMM performance" with no line end, and its "NVCC compilation
# failed: nvcc fatal   : Unsupported gpu architecture 'sm_100f'" follows on the same line.
# The warning does not make the diagnostic a warning: the line is read as the two lines it is
# (Assembler._feed_line), the diagnostic from its tool's head.
_GLUED_DIAGNOSTIC = re.compile(r"\b(?:nvcc|ptxas|cicc|nvlink|fatbinary) (?:fatal|error) *: |terminate called after throwing ")


def split_after_warning(text: str) -> list[str] | None:
    """``text`` as [the warning, the diagnostic glued after it] (above), or None."""
    at = text.find("arning")  # Warning, warning (the caller's cheap test)
    if at < 0:
        return None
    m = _GLUED_DIAGNOSTIC.search(text, at + 6)
    if m is None:
        return None
    return [text[:m.start()], text[m.start():]]


class LazyPattern:
    """A ``re`` pattern compiled on first use: the rule pack gives ~95 extra signals, compiled
    at every start (about 8 ms at load 10, before the first block), of which a run tries the
    few whose literal a line holds."""

    __slots__ = ("pattern", "_rx")

    def __init__(self, pattern: str):
        self.pattern = pattern
        self._rx: re.Pattern | None = None

    def compiled(self) -> re.Pattern:
        if self._rx is None:
            self._rx = re.compile(self.pattern)
        return self._rx

    def search(self, *args):
        return self.compiled().search(*args)

    def __getattr__(self, name: str):  # match, fullmatch, flags, groupindex, ...
        return getattr(self.compiled(), name)


def extra_signal(name: str, literals: tuple[str, ...], regex: str) -> Signal:
    """A signal contributed by a rule's ``line``/``literal`` match (see rules_engine); its
    regex compiled on first use.  Neither a warning (_WARNING_LINE) nor a shell command's own
    text (_NOT_SHELL_COMMAND: ``set -x``'s "+ echo 'exit status 137'", a prompt's "$ grep ...")
    is a failure line: what the command printed is."""
    return Signal(name, literals, LazyPattern(f"{_NOT_SHELL_COMMAND}{_WARNING_LINE}.*?(?:{regex})"), "evidence")


# -- the operator's kill by name --------------------------------------------------------------

_SIGKILL_OPTION = re.compile(r"(?:^|\s)(?:-(?:9|KILL|SIGKILL)|-s +(?:9|KILL|SIGKILL)|--signal[ =](?:9|KILL|SIGKILL))(?=\s|$)")
# what a kill pattern may hold to be read as the text it matches: words, paths, dots (a regex's
# escaped "\." too), "::" of SGLang's process titles; any other regex syntax is not read (the
# log is untrusted input: its text is never compiled as a pattern)
_LITERAL_PATTERN = re.compile(r"[\w./:@-]+")
_KILLED_COMMAND = re.compile(r"\bKilled\s+(?P<command>\S.*)$")


def kill_pattern(captures: dict[str, str]) -> str | None:
    """The text an operator_pkill line's SIGKILL matched processes by, as a literal, or None
    when it sent another signal or its pattern is more than a literal (see _LITERAL_PATTERN)."""
    if not _SIGKILL_OPTION.search(captures.get("kill_opts", "")):
        return None
    pattern = captures.get("kill_pattern", "").strip("'\"").replace("\\.", ".")
    return pattern if _LITERAL_PATTERN.fullmatch(pattern) else None


def killed_by_pattern(killed_line: str, patterns: set[str]) -> bool:
    """Whether bash's "Killed <command>" report names a command one of the operator's
    ``pkill -9`` / ``killall -9`` patterns matched (a bare "Killed" names none)."""
    m = _KILLED_COMMAND.search(killed_line)
    return m is not None and any(p in m.group("command") for p in patterns)
