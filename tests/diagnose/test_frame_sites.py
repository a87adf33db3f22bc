"""What SGLang's source can fail with under a cut traceback's deepest frame (diagnose/frame_sites.py,
scripts/frame_sites.py): the static call graph, the reading, and the support piece of the best guess."""

from __future__ import annotations

import json
import zipfile

import pytest

from conftest import ROOT, only_incident, script_module
from sglang_doctor.diagnose import evidence, frame_sites
from sglang_doctor.model import Frame, Incident

gen = script_module(ROOT / "scripts" / "frame_sites.py", "frame_sites_script")
P = "/sgl-workspace/sglang/python/sglang/srt"


def frame(path: str, function: str, source: str | None = None) -> Frame:
    return Frame(file=f"{P}/{path}", line=1, function=function, source=source)


def test_a_frames_path_is_read_as_the_package_path():
    assert frame_sites.relative(f"{P}/managers/scheduler.py") == "srt/managers/scheduler.py"
    assert frame_sites.relative("/usr/lib/python3/site-packages/sglang/srt/server_args.py") == "srt/server_args.py"
    assert frame_sites.relative("sglang/srt/utils.py") == "srt/utils.py"
    assert frame_sites.relative("/usr/lib/python3/site-packages/torch/cuda/memory.py") is None
    assert frame_sites.relative("/home/me/sglang/python/sglang/lang/ir.py") is None  # not srt


def test_the_call_graph_follows_own_methods_module_functions_and_imports(tmp_path):
    wheel = tmp_path / "sglang-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("sglang/srt/a.py", "from sglang.srt.b import helper\n"
                                       "from .b import Built as B\n"
                                       "class Runner:\n"
                                       "    def start(self):\n"
                                       "        self.step()\n"
                                       "        other.step()\n"
                                       "    def step(self):\n"
                                       "        helper()\n"
                                       "        B()\n"
                                       "def local():\n"
                                       "    return Runner()\n")
        zf.writestr("sglang/srt/b.py", "def helper():\n    deeper()\n"
                                       "def deeper():\n    raise ValueError('x')\n"
                                       "class Built:\n    def __init__(self):\n        pass\n")
    graph = gen.call_graph(wheel)
    assert graph[("srt/a.py", "Runner.start")] == {("srt/a.py", "Runner.step")}  # other.step(): not followed
    assert graph[("srt/a.py", "Runner.step")] == {("srt/b.py", "helper"), ("srt/b.py", "Built.__init__")}
    assert graph[("srt/b.py", "helper")] == {("srt/b.py", "deeper")}
    assert gen.reachable(graph, ("srt/a.py", "Runner.start")) == {
        ("srt/a.py", "Runner.start"), ("srt/a.py", "Runner.step"), ("srt/b.py", "helper"), ("srt/b.py", "Built.__init__")}
    assert ("srt/b.py", "deeper") in gen.reachable(graph, ("srt/a.py", "Runner.start"), depth=3)


def test_the_shipped_table_is_small_and_per_release():
    data = json.loads(frame_sites.DATA.read_text(encoding="utf-8"))
    assert data["depth"] == gen.DEPTH
    shipped = sorted(p.stem.split("-", 1)[1] for p in (ROOT / "data" / "inventory").glob("sglang-*.json"))
    assert sorted(data["releases"]) == shipped
    assert frame_sites.DATA.stat().st_size < 1_000_000
    for release in data["releases"].values():
        assert release["totals"] and all(k > 0 for k in release["totals"].values())


def test_a_step_whose_sites_are_one_category_reads_it():
    # ModelRunner.init_memory_pool raises the pool's "Not enough memory" / "max_total_num_tokens" checks
    found = frame_sites.reading([frame("managers/scheduler.py", "__init__"),
                                 frame("model_executor/model_runner.py", "init_memory_pool")])
    assert found is not None and found[0] == "memory.kv_pool"
    found = frame_sites.reading([frame("model_executor/model_runner.py", "init_cuda_graphs")])
    assert found is not None and found[0] == "cuda_graph"


def test_a_constructor_that_reaches_every_kind_of_check_reads_nothing():
    # the scheduler's and the TP worker's constructors reach argument, pool, hardware and loading checks
    assert frame_sites.reading([frame("managers/scheduler.py", "__init__")]) is None
    assert frame_sites.reading([frame("managers/tp_worker.py", "__init__")]) is None
    assert frame_sites.reading([Frame(file="/x/site-packages/torch/nn/modules/module.py", line=1,
                                      function="convert", source=None)]) is None


def test_a_category_with_too_few_sites_is_never_read(monkeypatch):
    # one logged CUDA OOM site in a release says nothing of where OOMs happen (torch raises them)
    table = {"9.9": {"totals": {"memory.cuda_oom": 1, "args.invalid": 50, "other": 750},
                     "functions": {"srt/x.py": {"f": {"memory.cuda_oom": 1, "args.invalid": 2}},
                                   "srt/y.py": {"g": {"memory.cuda_oom": 1, "other": 2}},
                                   "srt/z.py": {"h": {"args.invalid": 1, "other": 3}}}}}
    monkeypatch.setattr(frame_sites, "table", lambda: table)
    monkeypatch.setattr(frame_sites, "readable", lambda: frozenset({"args.invalid", "other"}))
    found = frame_sites.reading([frame("x.py", "f")])
    assert found is not None and found[0] == "args.invalid"
    # and "other", counted, is never named: it is the answer when nothing is known
    assert frame_sites.reading([frame("y.py", "g")]) is None
    # one reachable site of a category is no density of it (MIN_REACHED)
    assert frame_sites.reading([frame("z.py", "h")]) is None


def test_the_rate_in_practice_weighs_the_sites(monkeypatch):
    # the same share of sites: the category that fails more often in practice is read
    shares = {"args.invalid": 0.5, "nccl": 0.5}
    base = {"args.invalid": 0.5, "nccl": 0.5}
    monkeypatch.setattr(frame_sites, "readable", lambda: frozenset(shares))
    post = frame_sites.posterior(shares, base, {"args.invalid": 0.1, "nccl": 0.3})
    assert post["nccl"] == pytest.approx(0.75)


def test_the_piece_is_support_and_never_outweighs_the_text():
    sched = frame("managers/scheduler.py", "__init__", "self.init_memory_pool()")
    pool = frame("model_executor/model_runner.py", "init_memory_pool")
    inc = Incident(kind="traceback", first_line=1, last_line=3, truncated=True, frames=[sched, pool])
    pieces = evidence.from_frame_sites(inc)
    assert [(p.name, p.category, p.support) for p in pieces] == [("frame_sites", "memory.kv_pool", True)]
    named = [evidence.Evidence("deepest_frame", "nccl", 0.4, "a frame")]
    assert evidence.weigh(named + pieces, True)["category"] == "nccl"
    assert evidence.weigh(pieces, True)["category"] == "memory.kv_pool"


HEAD = ("[2025-02-09 22:50:08 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        f'  File "{P}/managers/scheduler.py", line 1787, in run_scheduler_process\n'
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n")


def evidence_names(pack, text):
    ev = only_incident(pack, text)
    return [e["name"] for e in ev["fallback"]["best_guess"]["evidence"]]


def test_a_cut_traceback_in_a_step_no_place_names_is_read_from_its_sites(pack):
    # a model's constructor (Qwen3MoeForCausalLM.__init__): its checks of the config's variant
    text = HEAD + (f'  File "{P}/models/qwen3_moe.py", line 740, in __init__\n'
                   "    self.model = Qwen3MoeModel(\n"
                   f'  File "{P}/models/qwen3_moe.py", line 612, in __init__\n'
                   "    self.layers = make_la")
    ev = only_incident(pack, text)
    guess = ev["fallback"]["best_guess"]
    assert "frame_sites" in [e["name"] for e in guess["evidence"]]
    assert guess["category"] == "model.unsupported" and "reachable failure sites" in guess["rests_on"]


def test_a_frame_placed_by_where_is_not_read_again(pack):
    # ModelRunner.init_memory_pool is a place of WHERE (memory.kv_pool): one place, one reading
    text = HEAD + (f'  File "{P}/model_executor/model_runner.py", line 212, in init_memory_pool\n'
                   "    self.max_total_num_tokens = self.profile_")
    names = evidence_names(pack, text)
    assert "deepest_frame" in names and "frame_sites" not in names


@pytest.mark.slow
def test_the_shipped_table_is_what_the_script_makes():
    """Regenerate from the wheels (the inventory's cache) and compare bytes: ``scripts/frame_sites.py --check``."""
    versions = [p.stem.split("-", 1)[1] for p in sorted((ROOT / "data" / "inventory").glob("sglang-*.json"))]
    text = gen.dumps(gen.build(versions, gen.inv.default_wheel_dir()))
    assert text == frame_sites.DATA.read_text(encoding="utf-8"), "frame_sites.json is stale: rerun scripts/frame_sites.py"
