"""Guarded next steps when the cause is not in the text, and the isolation step for a crash
while serving (remedy/guarded.py, remedies.isolate_features).

A failure no rule knew gets the usual change of its best-guess category, worded as a
condition on the guess and always advice (``needs_human``, not ``safe``); a category with no
usual flag change gets none.  The isolation step removes the off-by-default forward-path
switches the launch turned on; unknown settings are not "off".
"""

from __future__ import annotations

import json
import subprocess

from conftest import doctor_cmd

from sglang_doctor.model import Diagnosis, Incident, Launch
from sglang_doctor.remedy import flags, guarded, remedies

V0523 = flags.load_catalog("0.5.23")
V046 = flags.load_catalog("0.4.6")
V059 = flags.load_catalog("0.5.9")


def _fallback(category: str | None, confidence: float = 0.35, server_args: dict | None = None,
              rule: str = "unknown") -> Diagnosis:
    incident = Incident(kind="traceback", first_line=1, last_line=3)
    fallback = {"missing": "the traceback was cut above its last line", "next_step": "sglang-doctor explain LOG",
                "best_guess": {"category": category, "confidence": confidence, "why": "test"}}
    return Diagnosis(incident=incident, rule=rule, category=category or "other", fallback=fallback,
                     launch=Launch(index=0, line=1, server_args=server_args or {}))


def _remediate(d: Diagnosis, catalog=V0523, command=None):
    return remedies.remediate(d, command=command, version=catalog.version, catalog=catalog, hardware=None,
                              model_config=None, warnings=[])


def _all(rem):
    return [rem, *rem.alternatives]


def test_a_cuda_oom_guess_gets_the_fraction_down_as_guarded_advice():
    rem = _remediate(_fallback("memory.cuda_oom", 0.4))
    assert "--mem-fraction-static" in rem.set
    assert "--chunked-prefill-size" in rem.alternatives[0].set
    for option in _all(rem):
        assert option.needs_human and option.safe is False  # never applied by run on its own
        assert option.note.startswith("if this is a CUDA out-of-memory (a best guess, confidence 0.40")


def test_each_guarded_step_is_spelled_for_the_release():
    rem = _remediate(_fallback("cuda_graph"), catalog=V046)
    assert any("--cuda-graph-max-bs" in o.set for o in _all(rem))  # 0.4.6 has no per-phase -decode flag
    assert not any("--cuda-graph-max-bs-decode" in o.set for o in _all(rem))
    assert any(o.set.get("--disable-cuda-graph") is True for o in _all(rem))


def test_a_category_with_no_usual_flag_change_gets_no_step():
    # (no frames: the traceback's sites name nothing either; a taken port's guess has its own
    # step since session 16, tests/remedy/test_site_steps.py)
    for category in ("memory.host_oom", "args.invalid", "other", None):
        assert _remediate(_fallback(category)) is None, category


def test_a_model_that_failed_to_load_gets_the_checkpoints_own_code_as_guarded_advice():
    rem = _remediate(_fallback("model.load"))
    assert rem.set == {"--trust-remote-code": True} and rem.needs_human and not rem.safe
    assert rem.note.startswith("if this is a model that failed to load") and "trust" in rem.tradeoff
    # already on: the gated repository's token is what is left
    left = _remediate(_fallback("model.load"), command=["sglang", "serve", "--model-path", "/m", "--trust-remote-code"])
    assert "--trust-remote-code" not in left.set and left.env and left.alternatives == []


def test_a_rule_that_knew_the_failure_is_not_guarded():
    d = _fallback("memory.cuda_oom", rule="some.rule")  # a rule without remedies stays without
    assert _remediate(d) is None


def test_every_guarded_category_names_a_known_remedy():
    for category, (_words, entries) in guarded.GUARDED.items():
        for entry in entries:
            ((name, _params),) = entry.items()
            assert name in remedies.REGISTRY, (category, name)


# -- isolating a crash while serving --------------------------------------------------------------


def _crash(server_args: dict | None = None) -> Diagnosis:
    return Diagnosis(incident=Incident(kind="traceback", first_line=1, last_line=3), rule="test.rule",
                     category="runtime.crash", remedies=[{"isolate_features": {}}],
                     launch=Launch(index=0, line=1, server_args=server_args or {}))


def test_unknown_settings_name_every_switch_on_its_condition():
    rem = _remediate(_crash())
    assert {"--enable-mixed-chunk", "--enable-dp-attention", "--enable-torch-compile"} <= set(rem.unset)
    assert "--enable-piecewise-cuda-graph" not in rem.unset  # not a flag of 0.5.23
    assert rem.safe is False and "your launch sets" in rem.note and rem.tradeoff


def test_a_dump_names_only_the_switches_that_are_on():
    rem = _remediate(_crash({"model_path": "/m", "enable_dp_attention": True, "enable_mixed_chunk": False}))
    assert rem.unset == ["--enable-dp-attention"] and rem.safe is False
    assert _remediate(_crash({"model_path": "/m", "enable_dp_attention": False, "enable_mixed_chunk": False})) is None


def test_the_users_command_decides():
    cmd = ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--enable-mixed-chunk"]
    assert _remediate(_crash(), command=cmd).unset == ["--enable-mixed-chunk"]
    assert _remediate(_crash(), command=cmd[:-1]) is None


def test_a_scheduler_crash_while_serving_offers_the_isolation_steps_through_the_cli(tmp_path):
    log = tmp_path / "serving.log"
    log.write_text(
        "[2025-09-08 20:08:40] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n"
        "[2025-09-08 20:08:41] The server is fired up and ready to roll!\n"
        "[2025-09-08 20:08:48 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2680, in run_scheduler_process\n'
        "    scheduler.event_loop_overlap()\n"
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 900, in event_loop_overlap\n'
        "    batch_result = self.run_batch(batch)\n"
        "ZeroDivisionError: division by zero\n")
    out = subprocess.run(doctor_cmd("explain", "--format", "json", "--sglang-version", "0.5.9", str(log)),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    (ev,) = [e for e in map(json.loads, out.stdout.splitlines()) if e["event"] == "incident"]
    assert ev["category"] == "runtime.crash"
    rem = ev["remediation"]
    # the rule's advice ("report the traceback") leads the first isolation step's note; that
    # step is the primary change, still advice (run stops for a person, as on the advice)
    assert rem["needs_human"] and rem["safe"] is False
    assert rem["note"].startswith("a bug or a bad request while serving")
    assert "--enable-mixed-chunk" in rem["unset"] and "--enable-dp-attention" in rem["unset"]
    assert rem["alternatives"][0]["set"] == {"--disable-overlap-schedule": True}
    assert not any(a["remedy"] == "needs_human" for a in rem["alternatives"])  # the advice is in the note


# -- turning a feature off when the log names no release ------------------------------------------


def test_an_unnamed_release_gets_the_spelling_every_release_accepts_first():
    d = Diagnosis(incident=Incident(kind="traceback", first_line=1, last_line=3), rule="test.rule",
                  category="cuda_graph", remedies=[{"disable_feature": {"feature": "cuda_graph"}}],
                  launch=Launch(index=0, line=1, server_args={}))
    rem = remedies.remediate(d, command=None, version=V0523.version, catalog=V0523, hardware=None,
                             model_config=None, warnings=[], version_source="newest catalogue")
    assert rem.set == {"--disable-cuda-graph": True} and "every release" in rem.note
    # the newest release's spelling of the same change is named, not offered as a second change
    assert "--cuda-graph-backend-decode disabled" in rem.note
    assert not any("--cuda-graph-backend-decode" in alt.set for alt in rem.alternatives)
    # a log that names 0.5.23: its own spelling only
    named = remedies.remediate(d, command=None, version=V0523.version, catalog=V0523, hardware=None,
                               model_config=None, warnings=[], version_source="log")
    assert named.set == {"--cuda-graph-backend-decode": "disabled", "--cuda-graph-backend-prefill": "disabled"}
    assert not named.alternatives


def test_a_crash_guess_inside_an_attention_backend_offers_the_other_backend_then_isolation():
    from sglang_doctor.model import Frame

    d = _fallback("runtime.crash")
    d.incident.frames = [Frame(file="/x/sglang/srt/layers/attention/flashinfer_backend.py", line=1, function="forward")]
    rem = _remediate(d)
    assert rem.set == {"--attention-backend": "triton"} and rem.needs_human
    assert rem.alternatives[0].remedy == "isolate_features"
    assert _remediate(_fallback("runtime.crash")).remedy == "isolate_features"  # no frames: as before


# -- issue 12: the changes people confirm, first or first alternative ---------------------------


def test_an_attention_kernel_guess_offers_triton_then_flashinfer():
    rem = _remediate(_fallback("kernel.unsupported_hw"))
    assert [o.set for o in _all(rem)] == [{"--attention-backend": "triton"}, {"--attention-backend": "flashinfer"}]
    assert all(o.needs_human and o.safe is False for o in _all(rem))
    # FlashInfer in use: not proposed again; the portable backend stays
    rem = _remediate(_fallback("kernel.unsupported_hw", server_args={"attention_backend": "flashinfer"}))
    assert [o.set for o in _all(rem)] == [{"--attention-backend": "triton"}]


def test_a_model_load_guess_asks_for_the_token_of_a_gated_repo_after_the_remote_code():
    rem = _remediate(_fallback("model.load"))
    assert rem.set == {"--trust-remote-code": True}
    (token,) = rem.alternatives
    assert token.env == {"HF_TOKEN": "<a Hugging Face token of an account that accepted the model's licence>"}
    assert token.needs_human and token.safe is False and "gated" in token.tradeoff


def _advised(entries, server_args=None):
    d = Diagnosis(incident=Incident(kind="traceback", first_line=1, last_line=3), rule="test.rule",
                  category="runtime.crash", remedies=entries,
                  launch=Launch(index=0, line=1, server_args=server_args or {"model_path": "/m"}))
    return _remediate(d, catalog=V059)


def test_a_rules_leading_advice_goes_into_the_first_changes_note():
    rem = _advised([{"needs_human": {"reason": "report the traceback."}},
                    {"disable_feature": {"feature": "overlap_schedule"}},
                    {"disable_feature": {"feature": "cuda_graph"}}])
    assert rem.set == {"--disable-overlap-schedule": True}
    assert rem.note.startswith("report the traceback; the change to try: ")
    assert rem.needs_human and rem.safe is False  # advice still: run stops for a person
    assert [a.set for a in rem.alternatives] == [{"--disable-cuda-graph": True}]


def test_advice_alone_or_after_a_change_stays_where_the_rule_put_it():
    alone = _advised([{"needs_human": {"reason": "free the GPU"}}])
    assert alone.is_empty() and alone.note == "free the GPU" and alone.alternatives == []
    after = _advised([{"disable_feature": {"feature": "cuda_graph"}}, {"needs_human": {"reason": "report it"}}])
    assert after.set == {"--disable-cuda-graph": True} and after.safe is True and not after.needs_human
    assert after.alternatives[0].is_empty() and after.alternatives[0].note == "report it"


def test_an_unproven_change_is_not_promoted_over_the_advice():
    from sglang_doctor.model import Remediation
    advice = Remediation(needs_human=True, safe=False, note="look first", remedy="needs_human")
    doubtful = Remediation(set={"--mem-fraction-static": 0.95}, tradeoff="UNPROVEN: a launch at 0.9 died the same way")
    assert remedies._lead_with_a_change([advice, doubtful]) == [advice, doubtful]
    sure = Remediation(set={"--disable-cuda-graph": True})
    assert remedies._lead_with_a_change([advice, doubtful, sure]) == [sure, doubtful]
    assert sure.note == "look first" and sure.needs_human and sure.safe is False


# -- session 12: the direction of a memory guess by phase, and a cuda_graph guess's fraction ----


def _with_milestones(category, names, server_args=None):
    from sglang_doctor.model import Milestone

    d = _fallback(category, 0.3, server_args=server_args or {"mem_fraction_static": 0.85})
    d.launch.milestones = [Milestone(name=n, line=i + 1) for i, n in enumerate(names)]
    d.incident.first_line = d.incident.last_line = len(names) + 1
    return d


def test_a_pool_guess_after_the_pool_was_allocated_lowers_the_fraction():
    # the launch's lines show the KV pool allocated: whatever ran out of memory after it ran in
    # the headroom, so the fraction goes down (a pool that did not fit never prints the line)
    rem = _remediate(_with_milestones("memory.kv_pool", ["load_weights_end", "kv_cache"]))
    assert rem.set == {"--mem-fraction-static": 0.8} and rem.remedy == "lower_flag"
    assert rem.note.startswith("if this is a memory failure after the KV cache pool was allocated")
    assert any("--cuda-graph-max-bs-decode" in o.set for o in rem.alternatives)
    # before the pool: the pool that did not fit, the fraction up
    before = _remediate(_with_milestones("memory.kv_pool", ["load_weights_end"]))
    assert before.set == {"--mem-fraction-static": 0.88} and before.remedy == "raise_flag"
    assert before.note.startswith("if this is a KV cache pool that did not fit")


def test_a_cuda_graph_guess_follows_sglangs_own_list_for_the_release():
    # every failed decode capture prints SGLang's "Possible solutions"; their order and flags
    # changed twice, and the guess's step follows the list of the release it is spelled for
    # (before: one list, --cuda-graph-max-bs first, whatever the release).  From 0.4.6 the cause
    # line a guess lacks is what picks the item, so the two changes read first cover both kinds
    # of cause (fewer captured sizes, then no graphs) and the headroom, for an OOM only, follows
    args = {"mem_fraction_static": 0.85, "cuda_graph_max_bs": 64}
    rem = _remediate(_fallback("cuda_graph", server_args=args), catalog=V059)  # 0.4.6-0.5.13
    assert rem.set == {"--cuda-graph-max-bs": 32}
    assert rem.alternatives[0].set == {"--disable-cuda-graph": True}
    assert rem.alternatives[-1].set == {"--mem-fraction-static": 0.8}
    old = _remediate(_fallback("cuda_graph", server_args=args), catalog=flags.load_catalog("0.4.3"))  # 0.4.0-0.4.5
    assert old.set == {"--disable-cuda-graph": True}  # graphs off first, as 0.4.3 printed it
    assert old.alternatives[0].set == {"--mem-fraction-static": 0.8}
    assert any(o.set == {"--cuda-graph-max-bs": 32} for o in old.alternatives)
    new = _remediate(_fallback("cuda_graph", server_args={"mem_fraction_static": 0.85,
                                                          "cuda_graph_max_bs_decode": 64}))  # 0.5.23
    assert new.set == {"--cuda-graph-max-bs-decode": 32}
    assert new.alternatives[0].set.get("--cuda-graph-backend-decode") == "disabled"
    assert new.alternatives[1].set == {"--mem-fraction-static": 0.8}
    assert not any("--disable-cuda-graph" in o.set for o in _all(new))
    for rem in (rem, old, new):
        assert all(o.needs_human and o.safe is False for o in _all(rem))


def test_the_guess_lists_are_the_rules_lists_for_each_release():
    # the advice-tail rules (rules/cuda_graph.yaml) hold SGLang's list for the releases their
    # wording dates; the guess takes the same mechanisms in the same order for those releases
    from sglang_doctor.diagnose.rules_engine import RuleSet

    rules = RuleSet.load([])
    kinds = {"lower_flag": lambda p: p["flag"].removesuffix("-decode"),
             "disable_feature": lambda p: f"off:{p['feature']}",
             "set_flag": lambda p: "off:cuda_graph" if p.get("value") in (True, "disabled") else p["flag"]}

    def mechanisms(entries):
        return [kinds[name](params) for e in entries for name, params in e.items()]

    for rule_id, release in (("cuda_graph.possible_solutions_tail_040", "0.4.3"),
                             ("cuda_graph.possible_solutions_tail", "0.5.9"),
                             ("cuda_graph.possible_solutions_tail_0523", "0.5.23")):
        rule = rules.get(rule_id)
        low, high = rule.versions
        assert flags.version_key(low) <= flags.version_key(release) <= flags.version_key(high)
        assert mechanisms(guarded.entries("cuda_graph", version=release)) == mechanisms(rule.remedy), rule_id
    # no release, or one the catalogues cannot read: the 0.4.6-0.5.13 list, as before any dating
    assert guarded.entries("cuda_graph") == guarded.entries("cuda_graph", version="0.5.9")
    assert guarded.entries("cuda_graph", version="not-a-release") == guarded.entries("cuda_graph")
    assert guarded.entries("cuda_graph", version="0.3.6") == guarded.entries("cuda_graph", version="0.4.0")


def test_an_oom_guess_while_the_weights_load_asks_for_more_gpus_not_a_lower_fraction():
    # no pool is sized while the weights load: --mem-fraction-static does not apply yet, so the
    # guess takes what weights that do not fit take (twice the launch's --tp-size, then host
    # offload), never the fraction
    d = _fallback("memory.cuda_oom", 0.4, server_args={"tp_size": 2})
    d.phase = "startup.load_weights"
    rem = _remediate(d)
    assert rem.set == {"--tp-size": 4} and rem.needs_human and rem.safe is False
    assert rem.note.startswith("if this is weights that do not fit in GPU memory")
    assert rem.alternatives[0].set == {"--cpu-offload-gb": 4}
    assert not any("--mem-fraction-static" in o.set for o in _all(rem))
    # the same guess in another phase keeps the headroom change
    assert "--mem-fraction-static" in _remediate(_fallback("memory.cuda_oom", 0.4)).set


def test_an_oom_guess_during_the_capture_takes_sglangs_capture_advice():
    # the text shows the capture under way (phase startup.cuda_graph): SGLang's own advice for a
    # failed capture, more headroom then a smaller largest captured batch, spelled for the
    # release; the prefill chunk (the default guess's second step) does not size the capture
    d = _fallback("memory.cuda_oom", 0.4, server_args={"mem_fraction_static": 0.85, "cuda_graph_max_bs_decode": 64})
    d.phase = "startup.cuda_graph"
    rem = _remediate(d)
    assert rem.set == {"--mem-fraction-static": 0.8}
    assert rem.alternatives[0].set == {"--cuda-graph-max-bs-decode": 32}
    assert rem.note.startswith("if this is a CUDA out-of-memory while the CUDA graphs were captured")
    assert all(o.needs_human and o.safe is False for o in _all(rem))
    old = _fallback("memory.cuda_oom", 0.4, server_args={"mem_fraction_static": 0.85, "cuda_graph_max_bs": 64})
    old.phase = "startup.cuda_graph"
    old_rem = _remediate(old, catalog=V059)
    assert old_rem.alternatives[0].set == {"--cuda-graph-max-bs": 32}
    # a launch with its graphs off captured nothing: the default guess (the prefill chunk second)
    off = _fallback("memory.cuda_oom", 0.4, server_args={"mem_fraction_static": 0.85, "disable_cuda_graph": True})
    off.phase = "startup.cuda_graph"
    off_rem = _remediate(off, catalog=V059)
    assert "--chunked-prefill-size" in off_rem.alternatives[0].set
    assert not any("--cuda-graph-max-bs" in o.set for o in _all(off_rem))


def _through_triton_attention(category: str, server_args: dict | None = None) -> Diagnosis:
    d = _fallback(category, 0.5, server_args)
    from sglang_doctor.model import Frame

    d.incident.frames = [Frame(file="/usr/local/lib/python3.12/dist-packages/sglang/srt/layers/attention/"
                                    "triton_ops/decode_attention.py", line=310, function="decode_attention_fwd")]
    return d


def test_a_guessed_kernel_failure_in_triton_attention_is_not_sent_back_to_triton():
    # the guessed build / GPU failure went through Triton's own attention kernel: the other backend
    for category in ("kernel.build", "kernel.unsupported_hw"):
        rem = _remediate(_through_triton_attention(category), catalog=V059)
        backends = [o.set.get("--attention-backend") for o in _all(rem) if "--attention-backend" in o.set]
        assert backends and "triton" not in backends, category
        assert backends[0] == "flashinfer"


def test_without_a_backend_in_the_text_the_guess_still_offers_triton_first():
    for category in ("kernel.build", "kernel.unsupported_hw"):
        rem = _remediate(_fallback(category, 0.5), catalog=V059)
        backends = [o.set.get("--attention-backend") for o in _all(rem) if "--attention-backend" in o.set]
        assert backends[0] == "triton", category
