"""Session 24: a launch over several nodes in the best guess.

A text that holds no failure of its own, of a launch over several nodes (the dump's ``nnodes``, or a
rank past one node's GPUs in SGLang's log prefix), gets a support piece for nccl (``evidence.multi_node``):
every start-up step after "Init torch distributed" waits on the network between the nodes.  A launch on
one node gets none, and the piece only supports: a failure's own evidence still names its category."""

from sglang_doctor.diagnose import evidence
from sglang_doctor.pipeline import StreamPipeline


def run(pack, text: str):
    pipe = StreamPipeline(pack, remediate=False, whole_log=True)
    events = pipe.feed(text.encode()) + pipe.finish()
    return pipe, [e["_diagnosis"] for e in events if e["event"] == "incident"]


def summary_guess(pack, text: str) -> dict:
    pipe, diagnoses = run(pack, text)
    assert not diagnoses
    return pipe.summary()["fallback"]["best_guess"]


def names(guess: dict) -> list[str]:
    return [ev["name"] for ev in guess["evidence"]]


def weights_loaded(ranks) -> str:
    return "".join(f"[2026-01-01 00:02:00 TP{r}] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, "
                   "avail mem=37.21 GB, mem usage=40.00 GB.\n" for r in ranks)


def test_a_text_of_ranks_past_one_node_that_stops_after_the_weights_guesses_nccl(pack):
    guess = summary_guess(pack, weights_loaded([8, 13, 15, 9]))
    assert guess["category"] == "nccl"
    assert "multi_node" in names(guess)
    assert guess["grounds"] != "text"  # a support piece: nothing of the failure itself


def test_the_same_text_on_one_node_is_read_by_its_phase_alone(pack):
    guess = summary_guess(pack, weights_loaded([0, 3, 5, 1]))
    assert "multi_node" not in names(guess)
    assert guess["category"] != "nccl"


def test_the_dumps_nnodes_shows_several_nodes():
    assert "nnodes=2" in evidence.nodes_shown({"nnodes": "2"}, [])
    assert evidence.nodes_shown({"nnodes": 1}, ["[2026-01-01 00:02:00 TP7] Load weight end."]) is None
    assert "rank 12" in evidence.nodes_shown({}, ["[2026-01-01 00:02:00 DP1 TP12 EP12] Load weight end."])
    # a rank number outside SGLang's prefix (a request id, a line of the model's config) is no rank
    assert evidence.nodes_shown({}, ["TP15 is mentioned in a message", "rank=31 finished"]) is None


def test_a_failures_own_evidence_outweighs_the_nodes(pack):
    text = weights_loaded([8, 9]) + (
        "[2026-01-01 00:02:01 TP9] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/managers/scheduler.py", line 1, in run_scheduler_process\n'
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n"
        '  File "/usr/local/lib/python3.10/dist-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 2, in capture\n'
        "    self.capture_one_batch_size(bs, forward)\n")
    _, diagnoses = run(pack, text)
    assert diagnoses
    guess = diagnoses[0].fallback["best_guess"]
    assert guess["category"] != "nccl"
