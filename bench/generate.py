"""A deterministic generator of realistic SGLang server logs, with crashes planted at known lines.

The benchmark needs multi-GB logs that look like a week of a real server: each launch's long
``server_args`` dump and start-up milestones, then millions of ``Decode batch`` / ``Prefill
batch`` / uvicorn access lines, the odd warning, ANSI colour codes and invalid bytes; and
here and there a crash that ends the launch and is followed by a relaunch.  The formats are
SGLang's own (0.5.9 and 0.5.23 styles; see /work/shared/sglang-notes.md section 1).

Every planted incident is written to a manifest (``<log>.manifest.json``) with the line span
the doctor must report, its ranks, its root exception type and the exact text of every line
that belongs to it, so the benchmark can check that a fast answer is also a right one.

Same seed and size, same bytes: ``python bench/generate.py OUT --size 100M --seed 1``.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED_LOG = ROOT / "fixtures" / "seed" / "seed_full.log"
SITE = "/usr/local/lib/python3.11/site-packages"
SG = f"{SITE}/sglang/srt"

# -- the server_args dump ----------------------------------------------------------------


def _seed_fields() -> dict:
    """The 0.5.9 dump of the seed scenario (a real dump), as a dict of its fields."""
    for line in SEED_LOG.read_text(encoding="utf-8").splitlines():
        if "server_args=ServerArgs(" in line:
            call = ast.parse(line.split("server_args=", 1)[1], mode="eval").body
            return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    raise RuntimeError(f"{SEED_LOG}: no server_args dump")


def dump_line(fields: dict, style: str) -> str:
    """``server_args=ServerArgs(k=v, ...)`` (0.5.9) or ``server_args={'k': v, ...}`` (0.5.23)."""
    if style == "0.5.9":
        return "server_args=ServerArgs(" + ", ".join(f"{k}={v!r}" for k, v in fields.items()) + ")"
    return "server_args=" + repr(fields)


# -- the generator -----------------------------------------------------------------------


class LogWriter:
    """Accumulates lines, numbers them, timestamps them, and writes them in big chunks."""

    def __init__(self, fh, rng: random.Random, variety: str = "v2"):
        self.fh = fh
        self.rng = rng
        self.variety = variety
        self.lines = 0  # lines written so far (the number of the last line)
        self.bytes = 0
        self.t = 1_778_400_000.0  # 2026-05-10, UTC
        self._buf: list[bytes] = []
        self._buf_bytes = 0
        self._stamp_sec = -1
        self._stamp = ""

    def stamp(self) -> str:
        sec = int(self.t)
        if sec != self._stamp_sec:
            self._stamp_sec = sec
            self._stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(sec))
        return self._stamp

    def tick(self, seconds: float) -> None:
        self.t += seconds

    def raw(self, line: str | bytes) -> int:
        """Write one line (no newline in it); returns its line number."""
        data = line if isinstance(line, bytes) else line.encode("utf-8")
        self._buf.append(data + b"\n")
        self._buf_bytes += len(data) + 1
        self.bytes += len(data) + 1
        self.lines += 1
        if self._buf_bytes >= 1 << 20:
            self.flush()
        return self.lines

    def rec(self, message: str, rank: str = "") -> int:
        """One SGLang record line: ``[ts{ rank}] message``."""
        return self.raw(f"[{self.stamp()}{' ' + rank if rank else ''}] {message}")

    def flush(self) -> None:
        self.fh.write(b"".join(self._buf))
        self._buf = []
        self._buf_bytes = 0


class Launch:
    """One launch's shape: version style, tensor parallelism, whether the model is hybrid."""

    def __init__(self, rng: random.Random, fields: dict, index: int):
        self.style = rng.choice(("0.5.9", "0.5.23"))
        self.tp = rng.choice((1, 2, 2, 4))
        self.hybrid = rng.random() < 0.3
        self.graph = "cuda graph"
        self.ranks = [f"TP{i}" for i in range(self.tp)] if self.tp > 1 else [""]
        self.port = 30000 + index % 50
        f = dict(fields)
        f["tp_size"] = self.tp
        f["port"] = self.port
        f["mem_fraction_static"] = round(rng.uniform(0.6, 0.92), 3)
        f["random_seed"] = rng.randrange(1 << 30)
        self.fields = f


def start_up(w: LogWriter, launch: Launch) -> None:
    """Warnings, the dump, and every milestone up to 'ready' (sglang-notes 1.3)."""
    rng = w.rng
    w.rec("WARNING server_args.py:2365: Max running requests is reset to 48 for speculative decoding. "
          "You can override this by explicitly setting --max-running-requests.")
    w.rec(dump_line(launch.fields, launch.style))
    w.tick(7)
    w.rec("Using default HuggingFace chat template with detected content format: openai")
    w.tick(7)
    for r in launch.ranks:
        w.rec("Init torch distributed begin." if launch.style == "0.5.9" else "Init parallel begin.", r)
    w.tick(1)
    for r in launch.ranks:
        if launch.style == "0.5.9":
            w.rec("Init torch distributed ends. elapsed=1.02 s, mem usage=0.63 GB", r)
        else:
            w.rec("Init parallel ends. elapsed=0.31 s", r)
            w.rec("Memory baseline taken. mem usage=0.00 GB", r)
    for r in launch.ranks:
        w.rec("Load weight begin. avail mem=46.79 GB", r)
    shards = rng.randint(2, 15)
    bar = "".join(
        f"Loading safetensors checkpoint shards: {100 * i // shards:3d}% Completed | {i}/{shards} "
        f"[00:{3 * i:02d}<00:{3 * (shards - i):02d},  3.01s/it]\r" for i in range(shards + 1)
    )
    w.raw(bar.rstrip("\r"))
    w.tick(40)
    dtype = ", dtype=torch.bfloat16" if launch.style == "0.5.9" else ""
    for r in launch.ranks:
        w.rec(f"Load weight end. elapsed=54.88 s, type=Qwen3ForCausalLM{dtype}, avail mem=20.57 GB, "
              f"mem usage=26.22 GB.", r)
    for r in launch.ranks:
        if launch.hybrid:
            w.rec("Mamba Cache is allocated. max_mamba_cache_size: 48, conv_state size: 0.07GB, ssm_state size: 3.38GB ", r)
        kv_dtype = "" if launch.style == "0.5.9" else "dtype: torch.bfloat16, "
        w.rec(f"KV Cache is allocated. {kv_dtype}#tokens: 412345, K size: 6.29 GB, V size: 6.29 GB", r)
        w.rec("Memory pool end. avail mem=7.12 GB", r)
    for r in launch.ranks:
        if launch.style == "0.5.9":
            w.rec("Capture cuda graph begin. This can take up to several minutes. avail mem=7.10 GB", r)
        else:
            w.rec("Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=7.10 GB", r)
    # tqdm's capture bar: UTF-8 block characters and \r rewrites
    w.raw("\r".join(f"Capturing batches (bs={bs} avail_mem=6.{bs:02d} GB): {p:3d}%|{'█' * (p // 10):<10}| "
                    f"{i}/12 [00:0{i // 3}<00:04,  2.16it/s]" for i, (bs, p) in
                    enumerate(zip((48, 40, 32, 24, 16, 12, 8, 4, 2, 1), range(0, 101, 10)))))
    w.tick(6)
    for r in launch.ranks:
        if launch.style == "0.5.9":
            w.rec("Capture cuda graph end. Time elapsed: 5.61 s. mem usage=0.52 GB. avail mem=6.58 GB.", r)
        else:
            w.rec("Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 12, 16, 24, 32, 40, 48], elapsed=5.61 s, "
                  "mem usage=0.52 GB, avail mem=6.58 GB.", r)
    w.rec("max_total_num_tokens=412345, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=48, "
          "context_len=65536, available_gpu_mem=6.58 GB", launch.ranks[0])
    if launch.style == "0.5.23":
        w.rec("Engine startup timings (s): load_weight=54.88, kv_cache_allocation=2.07, scheduler_e2e=71.60, "
              "cuda_graph={prefill=0.00, decode=5.61, target_verify=0.00, draft_prefill=0.00, draft_decode=0.00, "
              "draft_extend=0.00}, tokenizer_e2e=80.23")
    w.rec("INFO:     Started server process [%d]" % rng.randint(1000, 99999))
    w.rec("INFO:     Waiting for application startup.")
    w.rec("INFO:     Application startup complete.")
    w.rec(f"INFO:     Uvicorn running on http://127.0.0.1:{launch.port} (Press CTRL+C to quit)")
    w.rec(f'INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "GET /model_info HTTP/1.1" 200 OK')
    w.rec(prefill_line(rng, launch), launch.ranks[0])
    w.rec(f'INFO:     127.0.0.1:{rng.randint(30000, 60000)} - "POST /generate HTTP/1.1" 200 OK')
    w.tick(1)
    w.rec("The server is fired up and ready to roll!")


def usage(rng: random.Random, launch: Launch) -> str:
    u = rng.random() * 0.9
    if launch.hybrid:
        return f"full token usage: {u:.2f}, mamba usage: {u * 0.8:.2f}, "
    return f"token usage: {u:.2f}, "


def decode_line(rng: random.Random, launch: Launch) -> str:
    """``Decode batch`` as 0.5.9 or 0.5.23 print it (sglang-notes 1.5)."""
    running = rng.randint(1, 48)
    tokens = running * rng.randint(100, 3000)
    if launch.hybrid:
        head = f"Decode batch, #running-req: {running}, #full token: {tokens}, "
        use = usage(rng, launch).replace(", mamba", f", mamba num: {running}, mamba")
    else:
        head = f"Decode batch, #running-req: {running}, #token: {tokens}, "
        use = usage(rng, launch)
    gen = f"gen throughput (token/s): {rng.uniform(20, 2500):.2f}, #queue-req: {rng.randint(0, 9)}"
    return f"{head}{use}{launch.graph}: True, {gen}"


def prefill_line(rng: random.Random, launch: Launch) -> str:
    new = rng.randint(1, 8192)
    head = (f"Prefill batch, #new-seq: {rng.randint(1, 8)}, #new-token: {new}, #cached-token: {rng.randint(0, new)}, "
            f"{usage(rng, launch)}#running-req: {rng.randint(0, 47)}, #queue-req: {rng.randint(0, 9)}, ")
    thr = f"input throughput (token/s): {rng.uniform(100, 40000):.2f}"
    if launch.style == "0.5.9":
        return f"{head}{thr}, {launch.graph}: False"
    return f"{head}#pending-token: 0, {launch.graph}: False, {thr}"


ROUTES = ("POST /v1/chat/completions", "POST /v1/chat/completions", "POST /generate", "POST /v1/completions",
          "GET /health", "GET /v1/models", "GET /metrics")


def serving(w: LogWriter, launch: Launch, until_bytes: int) -> None:
    """Boring serving lines until the file reaches ``until_bytes``."""
    if w.variety == "v2":
        serving_v2(w, launch, until_bytes)
        return
    rng = w.rng
    r0 = launch.ranks[0]
    rand = rng.random
    while w.bytes < until_bytes:
        x = rand()
        w.tick(rand() * 0.05)
        if x < 0.52:
            w.rec(decode_line(rng, launch), r0)
        elif x < 0.67:
            w.rec(prefill_line(rng, launch), r0)
        elif x < 0.9995:
            route = ROUTES[int(rand() * len(ROUTES))]
            w.rec(f'INFO:     127.0.0.1:{rng.randint(30000, 60999)} - "{route} HTTP/1.1" 200 OK')
        else:
            rare_line(w, launch)


# -- the v2 variety (issue 13): what a busy server with --log-requests writes -------------------

# warnings that hold the trigger words a scanner looks for, and are not failures
TRIGGER_WARNINGS = (
    "WARNING serving_chat.py:381: Tool call parsing failed for request {rid}, Error: Expecting value: line 1 "
    "column 1 (char 0); returning the text as content.",
    "WARNING tokenizer_manager.py:1502: Request {rid} aborted by the client; ValueError: connection closed "
    "before the response finished.",
    "WARNING: Validation Error: the 'max_tokens' of request {rid} is larger than the context allows; it is "
    "clamped to 4096.",
    "WARNING grammar_manager.py:212: Grammar compilation for request {rid} failed, Exception: json schema "
    "too deep; decoding without a grammar.",
    "WARNING io_struct.py:644: tokenizer: error: special token '<|im_end|>' listed twice in request {rid}; "
    "keeping the first.",
    "WARNING scheduler.py:2211: Request {rid} aborted after the client went away (Exception: ClientDisconnect).",
    "WARNING: detokenizer saw KeyError: 'a{rid}' for a finished request; ignored.",
)
FUTURE_WARNINGS = (
    "/usr/local/lib/python3.11/site-packages/torch/cuda/__init__.py:61: FutureWarning: The pynvml package is "
    "deprecated. Please install nvidia-ml-py instead.",
    "/usr/local/lib/python3.11/site-packages/transformers/generation/configuration_utils.py:631: UserWarning: "
    "`do_sample` is set to `False`. However, `temperature` is set to `0.6`.",
)
WORDS = ("the", "model", "error", "fix", "python", "value", "list", "return", "function", "please", "why", "does",
         "my", "code", "fail", "when", "loop", "file", "path", "import", "class", "memory", "GPU", "batch")
USER_SNIPPETS = (
    "I get Error: division by zero when I run it",
    'it says File "main.py", line 3 and then nothing',
    "the Exception: timeout shows up after a minute",
    "what does RuntimeError: expected scalar type mean",
)


def user_text(rng: random.Random, n_words: int) -> str:
    words = [WORDS[int(rng.random() * len(WORDS))] for _ in range(n_words)]
    if rng.random() < 0.08:  # users paste error messages into their prompts
        words.insert(int(rng.random() * len(words)), USER_SNIPPETS[int(rng.random() * len(USER_SNIPPETS))])
    return " ".join(words)


def request_line(rng: random.Random, long: bool) -> str:
    """``--log-requests``: the request object as SGLang logs it (repr, one line), or its finish."""
    rid = "%032x" % rng.getrandbits(128)
    text = user_text(rng, rng.randint(600, 2500) if long else rng.randint(5, 60))
    if rng.random() < 0.5:
        return (f"Receive: obj=GenerateReqInput(text={text!r}, sampling_params={{'max_new_tokens': "
                f"{rng.randint(16, 4096)}, 'temperature': 0.6}}, rid={rid!r}, stream=True, log_metrics=True)")
    return (f"Finish: obj=GenerateReqInput(rid={rid!r}), out={{'text': {text!r}, 'meta_info': {{'id': {rid!r}, "
            f"'finish_reason': {{'type': 'stop'}}, 'prompt_tokens': {rng.randint(5, 4000)}, "
            f"'completion_tokens': {rng.randint(1, 4000)}}}}}")


def nccl_chatter(w: LogWriter, launch: Launch) -> None:
    """A burst of NCCL INFO lines (NCCL_DEBUG=INFO): bare, many, and never a failure."""
    rng = w.rng
    host = f"gpu-node-{rng.randint(1, 9)}"
    for _ in range(rng.randint(8, 40)):
        i = rng.randrange(max(1, len(launch.ranks)))
        k = rng.randrange(4)
        if k == 0:
            msg = f"Channel {rng.randint(0, 31):02d}/32 : {i} {1 - i if i < 2 else 0} [send] via NET/IB/{i}/GDRDMA"
        elif k == 1:
            msg = f"comm 0x{rng.getrandbits(40):x} rank {i} nRanks {len(launch.ranks)} nNodes 1 localRanks " \
                  f"{len(launch.ranks)} localRank {i} MNNVL 0"
        elif k == 2:
            msg = f"Connected all rings, use ring PXN 0 GDR 1"
        else:
            msg = f"NET/IB : Using [0]mlx5_{i}:1/IB [RO]; OOB eth0:10.0.0.{rng.randint(2, 250)}<0>"
        w.raw(f"{host}:{4100 + i}:{4200 + i} [{i}] NCCL INFO {msg}")


def tqdm_bar(w: LogWriter) -> None:
    """A tqdm bar redrawn with \r, flushed as one line (e.g. a batch job's progress)."""
    n = w.rng.randint(5, 40)
    w.raw("\r".join(f"Processing requests: {100 * i // n:3d}%|{'#' * (10 * i // n):<10}| {i}/{n} "
                     f"[00:{i:02d}<00:{n - i:02d}, 1.02it/s]" for i in range(n + 1)))


def serving_v2(w: LogWriter, launch: Launch, until_bytes: int) -> None:
    rng = w.rng
    r0 = launch.ranks[0]
    rand = rng.random
    while w.bytes < until_bytes:
        x = rand()
        w.tick(rand() * 0.05)
        if x < 0.44:
            w.rec(decode_line(rng, launch), r0)
        elif x < 0.56:
            w.rec(prefill_line(rng, launch), r0)
        elif x < 0.80:
            route = ROUTES[int(rand() * len(ROUTES))]
            w.rec(f'INFO:     127.0.0.1:{rng.randint(30000, 60999)} - "{route} HTTP/1.1" 200 OK')
        elif x < 0.94:
            w.rec(request_line(rng, long=rand() < 0.03))
        elif x < 0.985:
            w.rec(TRIGGER_WARNINGS[int(rand() * len(TRIGGER_WARNINGS))].format(rid="%08x" % rng.getrandbits(32)),
                  r0 if rand() < 0.5 else "")
        elif x < 0.99:
            w.raw(FUTURE_WARNINGS[int(rand() * len(FUTURE_WARNINGS))])
        elif x < 0.9985:
            if rand() < 0.05:
                nccl_chatter(w, launch)
            else:
                w.rec(decode_line(rng, launch), r0)
        elif x < 0.999:
            tqdm_bar(w)
        else:
            rare_line(w, launch)


def rare_line(w: LogWriter, launch: Launch) -> None:
    """Warnings, ANSI colour, invalid bytes and near misses: what keeps a scanner honest."""
    rng = w.rng
    k = rng.randrange(7)
    if k == 0:
        w.rec(f"KV cache pool is full. Retract requests. #retracted_reqs: {rng.randint(1, 4)}, "
              f"#new_tokens_gained: {rng.randint(50, 900)}, #new_token_ratio: 0.4000 -> 0.6500", launch.ranks[0])
    elif k == 1:  # an ANSI-coloured uvicorn line
        w.rec(f'\x1b[32mINFO\x1b[0m:     127.0.0.1:{rng.randint(30000, 60999)} - '
              f'"POST /v1/chat/completions HTTP/1.1" \x1b[32m200 OK\x1b[0m')
    elif k == 2:  # invalid UTF-8 in a request path
        w.raw(f"[{w.stamp()}] INFO:     127.0.0.1:{rng.randint(30000, 60999)} - \"GET /v1/models?q=".encode()
              + bytes([0xFF, 0xC3, 0x28]) + b' HTTP/1.1" 404 Not Found')
    elif k == 3:  # a rejected request: "Error: " in a line that is not an incident
        w.rec("[http_server] Error: The input (70000 tokens) is longer than the model's context length "
              "(65536 tokens).")
    elif k == 4:
        w.rec(f"Input length ({rng.randint(65537, 99999)} tokens) exceeds the maximum allowed length (65536 tokens). "
              f"Use a shorter input or enable --allow-auto-truncate.", launch.ranks[0])
    elif k == 5:
        w.rec(f'INFO:     127.0.0.1:{rng.randint(30000, 60999)} - "POST /v1/chat/completions HTTP/1.1" '
              f'400 Bad Request')
    else:
        w.rec("WARNING serving_chat.py:214: Unexpected stream chunk after finish; ignoring it.")


# -- planted incidents -------------------------------------------------------------------


def frames(*calls: tuple[str, int, str, str]) -> list[str]:
    out = []
    for file, line, func, src in calls:
        out.append(f'  File "{file}", line {line}, in {func}')
        out.append(f"    {src}")
    return out


SCHED_HEAD = [(f"{SG}/managers/scheduler.py", 3170, "run_scheduler_process", "scheduler.event_loop_overlap()"),
              (f"{SITE}/torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
              (f"{SG}/managers/scheduler.py", 1083, "event_loop_overlap", "batch_result = self.run_batch(batch)")]


class Planted:
    """Collects one incident's lines as they are written, and what the doctor must say of it."""

    def __init__(self, w: LogWriter, kind: str, variant: str):
        self.w = w
        self.record = {"variant": variant, "kind": kind, "ranks": [], "lines": [0, 0], "exception": None,
                       "text": []}

    def line(self, number: int) -> None:
        if not self.record["lines"][0]:
            self.record["lines"][0] = number
        self.record["lines"][1] = number
        self.record["text"].append(number)

    def rec(self, message: str, rank: str = "") -> None:
        self.line(self.w.rec(message, rank))
        if rank and rank not in self.record["ranks"]:
            self.record["ranks"].append(rank)

    def raw(self, text: str) -> None:
        self.line(self.w.raw(text))

    def traceback(self, rank: str, first: str, body: list[str], exception: str) -> None:
        self.rec(first, rank)
        for text in body:
            self.raw(text)
        self.record["exception"] = exception


def crash_kv_pool(w: LogWriter, launch: Launch) -> dict:
    """Start-up: every rank's 'Not enough memory' traceback, then the parent's sigquit."""
    p = Planted(w, "traceback", "kv_pool_all_ranks")
    body = frames((f"{SG}/managers/scheduler.py", 3130, "run_scheduler_process", "scheduler = Scheduler("),
                  (f"{SG}/managers/scheduler.py", 368, "__init__", "self.init_model_worker()"),
                  (f"{SG}/model_executor/model_runner.py", 590, "initialize",
                   "self.init_memory_pool(min_per_gpu_memory)"),
                  (f"{SG}/model_executor/model_runner_kv_cache_mixin.py", 416, "init_memory_pool",
                   "raise RuntimeError("))
    msg = (f"RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
           f"self.server_args.mem_fraction_static={launch.fields['mem_fraction_static']}")
    for r in launch.ranks:
        p.traceback(r, "Scheduler hit an exception: Traceback (most recent call last):", body + [msg], "RuntimeError")
    p.rec("Received sigquit from a child process. It usually means the child failed.")
    w.rec("kill_process_tree called: parent_pid=17908, include_parent=True, pid=17908")
    return p.record


def crash_cuda_oom_interleaved(w: LogWriter, launch: Launch) -> dict:
    """Serving: ranks' CUDA OOM tracebacks in shuffled order, a surviving rank's record between."""
    p = Planted(w, "traceback", "cuda_oom_interleaved_ranks")
    ranks = list(launch.ranks)
    w.rng.shuffle(ranks)
    body = frames(*SCHED_HEAD, (f"{SG}/layers/logits_processor.py", 600, "forward",
                                "logits = torch.matmul(hidden_states, lm_head.weight.T)"))
    for i, r in enumerate(ranks):
        gpu = r[2:] or "0"
        p.traceback(r, "Scheduler hit an exception: Traceback (most recent call last):", body + [
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.64 GiB. GPU {gpu} has a total capacity "
            f"of 47.53 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process has 46.50 GiB memory "
            f"in use. Of the allocated memory 44.10 GiB is allocated by PyTorch, and 1.21 GiB is reserved by PyTorch "
            f"but unallocated."], "torch.OutOfMemoryError")
        if i + 1 < len(ranks):  # a rank that has not failed yet still logs
            w.rec(decode_line(w.rng, launch), ranks[-1])
    p.rec("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")
    return p.record


def crash_chained(w: LogWriter, launch: Launch) -> dict:
    """Serving: a chained traceback (KeyError during handling, then a direct cause)."""
    p = Planted(w, "traceback", "chained_exceptions")
    r = launch.ranks[0]
    first = frames(*SCHED_HEAD[:1], (f"{SG}/managers/scheduler.py", 1501, "process_input_requests",
                                     "output = self._request_dispatcher(recv_req)"),
                   (f"{SG}/managers/schedule_batch.py", 842, "get_req", "return self.reqs[rid]"))
    second = frames((f"{SG}/managers/scheduler.py", 1503, "process_input_requests",
                     "raise RuntimeError(f\"unknown request {rid}\") from e"))
    third = frames(*SCHED_HEAD)
    body = (first + ["KeyError: 'a1b2c3d4e5f6'", "",
                     "The above exception was the direct cause of the following exception:", "",
                     "Traceback (most recent call last):"] + second
            + ["RuntimeError: unknown request a1b2c3d4e5f6", "",
               "During handling of the above exception, another exception occurred:", "",
               "Traceback (most recent call last):"] + third
            + ["ValueError: scheduler state is inconsistent after a failed request",
               "(the batch that held it was already freed)"])
    p.traceback(r, "Scheduler hit an exception: Traceback (most recent call last):", body, "ValueError")
    p.rec("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")
    return p.record


def crash_nccl(w: LogWriter, launch: Launch) -> dict:
    """Start-up: NCCL WARN lines of the transport, then DistBackendError tracebacks."""
    p = Planted(w, "traceback", "nccl_p2p")
    host = "gpu-node-7"
    for i, r in enumerate(launch.ranks):
        w.raw(f"{host}:{4100 + i}:{4200 + i} [{i}] NCCL INFO Channel 00/02 : 0 1")
    for i, r in enumerate(launch.ranks):
        p.raw(f"{host}:{4100 + i}:{4300 + i} [{i}] transport/p2p.cc:275 NCCL WARN Cuda failure 'peer access is "
              f"not supported between these two devices'")
    body = frames((f"{SG}/managers/scheduler.py", 3130, "run_scheduler_process", "scheduler = Scheduler("),
                  (f"{SG}/distributed/parallel_state.py", 1216, "init_distributed_environment",
                   "torch.distributed.barrier(group=_WORLD.cpu_group)"),
                  (f"{SITE}/torch/distributed/distributed_c10d.py", 4551, "barrier",
                   "work = group.barrier(opts=opts)"))
    exc = ["torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
           "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
           "ncclUnhandledCudaError: Call to CUDA function failed.",
           "Last error:",
           "Cuda failure 'peer access is not supported between these two devices'"]
    for r in launch.ranks:
        p.traceback(r, "Scheduler hit an exception: Traceback (most recent call last):", body + exc,
                    "torch.distributed.DistBackendError")
    p.rec("Received sigquit from a child process. It usually means the child failed.")
    return p.record


def crash_oom_killer_0523(w: LogWriter, launch: Launch) -> dict:
    """Start-up, 0.5.23: the OS OOM killer took a scheduler; no traceback, one line."""
    p = Planted(w, "signal", "oom_killer_0523")
    rank = len(launch.ranks) - 1
    p.rec(f"Rank {rank} scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a "
          f"common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.")
    w.rec("kill_process_tree called: parent_pid=21011, include_parent=True, pid=21011")
    return p.record


def crash_oom_killer_059(w: LogWriter, launch: Launch) -> dict:
    """Start-up, 0.5.9: 'scheduler is dead', its exit code, and the EOFError it re-raises
    (entrypoints/engine.py:893-901) as a bare traceback."""
    p = Planted(w, "traceback", "oom_killer_059")
    p.rec("Rank 0 scheduler is dead. Please check if there are relevant logs.")
    p.rec("Exit code: -9")
    p.raw("Traceback (most recent call last):")
    for text in frames((f"{SG}/../launch_server.py", 32, "<module>", "server.launch_server(server_args)"),
                       (f"{SG}/entrypoints/http_server.py", 1636, "launch_server",
                        "tokenizer_manager, template_manager, scheduler_info, port_args = _launch_subprocesses("),
                       (f"{SG}/entrypoints/engine.py", 894, "_launch_subprocesses",
                        "data = scheduler_pipe_readers[i].recv()"),
                       ("/usr/local/lib/python3.11/multiprocessing/connection.py", 250, "recv",
                        "buf = self._recv_bytes()"),
                       ("/usr/local/lib/python3.11/multiprocessing/connection.py", 434, "_recv",
                        "raise EOFError")) + ["EOFError"]:
        p.raw(text)
    p.record["exception"] = "EOFError"
    return p.record


CRASHES = {
    "kv_pool_all_ranks": (crash_kv_pool, "startup"),
    "cuda_oom_interleaved_ranks": (crash_cuda_oom_interleaved, "serving"),
    "chained_exceptions": (crash_chained, "serving"),
    "nccl_p2p": (crash_nccl, "startup"),
    "oom_killer_0523": (crash_oom_killer_0523, "startup"),
    "oom_killer_059": (crash_oom_killer_059, "startup"),
}


VARIETIES = ("v1", "v2")


def generate(out: Path, size: int, *, seed: int = 1, incidents: int = 20, variety: str = "v2") -> dict:
    """Write a log of about ``size`` bytes with ``incidents`` crashes; return the manifest.

    ``variety``: "v1" is the first generator (decode/prefill/access lines and a few rare
    ones, 0.05%); "v2" (issue 13) adds what a busy server writes: ``--log-requests`` request
    logs (some 5-20 KB long, some quoting error messages users pasted), warnings that hold
    trigger words (``Error: ``, ``Exception: ``, ``: error: ``), FutureWarnings,
    tqdm ``\r`` bars and bursts of NCCL INFO chatter."""
    if variety not in VARIETIES:
        raise ValueError(f"variety must be one of {VARIETIES}")
    rng = random.Random(seed)
    fields = _seed_fields()
    planted: list[dict] = []
    names = list(CRASHES)
    with open(out, "wb") as fh:
        w = LogWriter(fh, rng, variety)
        launch_no = 0
        for i in range(incidents + 1):
            launch = Launch(rng, fields, launch_no)
            launch_no += 1
            if i == incidents:  # the last launch serves to the end of the file
                start_up(w, launch)
                serving(w, launch, size)
                break
            name = names[i % len(names)]
            crash, phase = CRASHES[name]
            if name == "oom_killer_059":
                launch.style = "0.5.9"
            if name == "oom_killer_0523":
                launch.style = "0.5.23"
            target = size * (i + 1) // (incidents + 1)
            if phase == "startup":
                # a healthy launch serves until shortly before the target, then is relaunched
                # and that relaunch dies during start-up
                start_up(w, launch)
                serving(w, launch, target)
                w.rec("SIGTERM received. signum=None frame=None. Draining requests and shutting down...")
                w.rec("INFO:     Shutting down")
                w.tick(30)
                launch = Launch(rng, fields, launch_no)
                launch_no += 1
                if name == "oom_killer_059":
                    launch.style = "0.5.9"
                if name == "oom_killer_0523":
                    launch.style = "0.5.23"
                start_up_until_failure(w, launch)
            else:
                start_up(w, launch)
                serving(w, launch, target)
            w.tick(0.5)
            record = crash(w, launch)
            record["phase"] = phase
            planted.append(record)
            w.tick(60)
        w.flush()
    manifest = {"seed": seed, "size": size, "variety": variety, "bytes": out.stat().st_size, "lines": w.lines, "incidents": planted}
    _resolve_texts(out, manifest)
    Path(str(out) + ".manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def start_up_until_failure(w: LogWriter, launch: Launch) -> None:
    """The first milestones of a launch that will fail while sizing its memory."""
    w.rec(dump_line(launch.fields, launch.style))
    w.tick(7)
    for r in launch.ranks:
        w.rec("Init torch distributed begin." if launch.style == "0.5.9" else "Init parallel begin.", r)
    for r in launch.ranks:
        w.rec("Load weight begin. avail mem=46.79 GB", r)
    w.tick(30)
    for r in launch.ranks:
        w.rec("Load weight end. elapsed=30.10 s, type=LlamaForCausalLM, avail mem=8.12 GB, mem usage=38.90 GB.", r)


def _resolve_texts(path: Path, manifest: dict) -> None:
    """Replace each incident's line numbers by the lines' decoded text (one pass over the file)."""
    wanted: dict[int, list] = {}
    for inc in manifest["incidents"]:
        for n in inc["text"]:
            wanted.setdefault(n, []).append(inc)
        inc["text"] = []
    with open(path, "rb") as fh:
        for n, raw in enumerate(fh, 1):
            if n in wanted:
                text = raw.rstrip(b"\n").decode("utf-8", "replace")
                for inc in wanted[n]:
                    inc["text"].append(text)


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("IB").removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--size", default="100M", help="approximate size: 100M, 1G, 4G ...")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--incidents", type=int, default=20)
    ap.add_argument("--variety", choices=VARIETIES, default="v2", help="v1: the first generator; v2: issue 13's mix")
    args = ap.parse_args()
    m = generate(args.out, parse_size(args.size), seed=args.seed, incidents=args.incidents, variety=args.variety)
    print(f"{args.out}: {m['bytes']} bytes, {m['lines']} lines, {len(m['incidents'])} incidents")


if __name__ == "__main__":
    main()
