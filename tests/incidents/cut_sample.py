"""What the cut-paste tests share (test_cut_mid_line, test_cut_first_line): SGLang's block-FP8
shard message (srt/layers/quantization/fp8.py), the sigquit line that follows a dead child, and
the incidents' answers of the built-in pack on a whole text."""

from functools import lru_cache

from sglang_doctor.diagnose.rules_engine import RuleSet
from sglang_doctor.pipeline import StreamPipeline

P = "/usr/local/lib/python3.12/dist-packages/sglang/srt"
BLOCK_FP8 = "Weight output_partition_size = 4864 is not divisible by weight quantization block_n = 128."
SIGQUIT = "[2025-12-05 14:10:22] Received sigquit from a child process. It usually means the child failed.\n"


@lru_cache(maxsize=1)
def builtin_rules() -> RuleSet:
    return RuleSet.load(user=False)


def answers(text: str):
    pipe = StreamPipeline(builtin_rules(), whole_log=True)
    events = pipe.feed(text.encode()) + pipe.finish()
    return [e["_diagnosis"] for e in events if e["event"] == "incident"]
