"""Lines of a serving launch for the reader's feeding tests (test_mapped.py, test_feeding.py):
batch lines, failures SGLang may survive, a request's handled error, a traceback, a death, a NUL
and a ``\\r`` rewrite, repeated so a held incident's evidence falls anywhere in a block."""

LINES = [
    "[2026-12-02 15:56:05 TP0] Decode batch, #running-req: 1, #token: 90, token usage: 0.00, gen throughput (token/s): 5.0",
    "[2026-12-02 15:56:05 TP0] WARNING serving_chat.py:381: Tool call failed, Error: Expecting value",
    "[2026-12-02 15:56:05] WARNING io_struct.py:644: tokenizer: error: special token listed twice",
    '[2026-12-02 15:56:05,7] Receive: obj=GenerateReqInput(text=\'File "main.py", line 3\')',
    "[2026-12-02 15:56:05 TP1] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/x/sglang/srt/managers/scheduler.py", line 3, in f',
    "    raise ValueError('x')",
    "ValueError: Not enough memory. Please try to increase --mem-fraction-static.",
    "",
    "[2026-12-02 15:56:06] Received sigquit from a child process. It usually means the child failed.",
    "caf\xe9 \x00 Error: x",
    "bar 50%\r bar 100%",
]
