"""Issue 11 item 13: two ranks' tracebacks 3,000 lines apart are two incidents, while ranks
failing together (a surviving rank's records between them) are still one."""

from __future__ import annotations

from sglang_doctor.pipeline import StreamPipeline

P = "/env/lib/python3.12/site-packages/sglang/srt"


def traceback(rank: str, what: str) -> list[str]:
    return [f"[2026-12-02 15:54:37 {rank}] Scheduler hit an exception: Traceback (most recent call last):",
            f'  File "{P}/managers/scheduler.py", line 10, in run',
            "    self.step()",
            f"RuntimeError: {what}"]


def decode(rank: str, i: int) -> str:
    return f"[2026-12-02 15:54:38 {rank}] Decode batch, #running-req: {i % 40}, #token: 37, cuda graph: True"


def incidents(lines: list[str]) -> list[tuple[int, int, list[str]]]:
    pipe = StreamPipeline()
    events = pipe.feed(("\n".join(lines) + "\n").encode()) + pipe.finish()
    return [(e["lines"][0], e["lines"][1], e["ranks"]) for e in events if e["event"] == "incident"]


def test_tracebacks_of_two_ranks_3000_lines_apart_are_two_incidents():
    lines = traceback("TP0", "first failure") + [decode("TP1", i) for i in range(3000)] + traceback("TP1", "later")
    got = incidents(lines)
    assert [r for _, _, r in got] == [["TP0"], ["TP1"]], got
    assert got[0][1] == 4 and got[1][0] == 3005


def test_ranks_failing_together_are_still_one_incident():
    lines = (traceback("TP0", "oom") + [decode("TP1", i) for i in range(5)] + traceback("TP1", "oom")
             + ["[2026-12-02 15:54:39] Received sigquit from a child process. It usually means the child failed."])
    got = incidents(lines)
    assert len(got) == 1 and sorted(got[0][2]) == ["TP0", "TP1"], got
