"""The shipped inventory of SGLang's failure sites (data/inventory/) and the rule pack agree.

scripts/inventory_failures.py reads each release's wheel and gives every failure site under
sglang/srt a disposition: the specific rule that names it, the class rule that covers it, or
a waiver.  The everyday tests check the shipped files' structure and that every rule, class
and waiver they name exists, and run the engine on a deterministic sample of 0.5.23's sites
(every 40th: ~240 synthetic logs, a few seconds; the full run takes minutes) to hold the
right-category share recorded in data/inventory/measured.json; the slow test regenerates the
inventories from the wheels (downloaded into a cache directory) and compares them byte for
byte.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, script_module
from sglang_doctor.diagnose.rules_engine import RuleSet

INVENTORY = ROOT / "data" / "inventory"
SHIPPED = sorted(INVENTORY.glob("sglang-*.json"))
NEWEST = INVENTORY / "sglang-0.5.23.json"
# 0.4.x, the release line many pasted logs still come from (issue #12): its module layout and
# wordings differ (srt/openai_api, srt/managers/multimodal_processors, srt/hf_transformers_utils.py,
# ValueError where 0.5 raises RuntimeError), so its inventory is checked like the newest one's
OLDER = INVENTORY / "sglang-0.4.6.post5.json"


def _script():
    return script_module(ROOT / "scripts" / "inventory_failures.py", "inventory_failures")


inv = _script()


def _load(path: Path) -> dict:
    return inv.load_inventory(path)  # with printed-VERSION.json: the constants a message names


def _class_ids() -> set[str]:
    """The class ids of rules/classes.yaml when it is there, else issue #12's list."""
    path = ROOT / "rules" / "classes.yaml"
    if path.is_file():
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return {r["id"] for r in data.get("rules", []) if isinstance(r, dict) and "id" in r}
    return set(inv.CLASS_CATEGORIES)


def test_the_supported_versions_are_shipped():
    names = {p.name for p in SHIPPED}
    assert {"sglang-0.4.6.post5.json", "sglang-0.5.9.json", "sglang-0.5.23.json"} <= names
    # (session 28) the most-pasted releases of the tuned corpus labels the three do not stand for
    assert {"sglang-0.4.3.post2.json", "sglang-0.5.4.json"} <= names
    assert set(inv.DEFAULT_VERSIONS) == {p.stem.split("-", 1)[1] for p in SHIPPED}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_site_is_accounted_for_and_counted(path):
    data = _load(path)
    sites = list(inv.iter_sites(data))
    assert len(sites) == data["sites"] > 0
    counts = Counter(s["disposition"].split(":", 1)[0] for s in sites)
    assert dict(sorted(counts.items())) == data["counts"]
    assert set(counts) <= {"rule", "class", "waiver", "unaccounted"}
    for s in sites:
        assert s["file"].startswith("srt/") and s["line"] > 0 and s["template"], s
    if path in (NEWEST, OLDER):
        unaccounted = [s for s in sites if s["disposition"] == "unaccounted"]
        assert not unaccounted, unaccounted[:5]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_named_rule_class_and_waiver_exists(path):
    rule_ids = {r.id for r in RuleSet.load(builtin=True, user=False).rules}
    class_ids = _class_ids()
    waivers = set(inv.Dispositions.load().waivers)
    missing = Counter()
    for s in inv.iter_sites(_load(path)):
        kind, _, name = s["disposition"].partition(":")
        known = {"rule": rule_ids, "class": class_ids, "waiver": waivers}.get(kind)
        if known is not None and name not in known:
            missing[s["disposition"]] += 1
    assert not missing, f"{path.name} names what does not exist: {dict(missing)}"


def test_every_waiver_has_a_reason_and_every_class_a_category():
    disp = inv.Dispositions.load()
    assert disp.waivers and all(len(reason.split()) >= 8 for reason in disp.waivers.values())
    # every waiver group says what the right answer for its sites is
    from sglang_doctor.model import CATEGORIES

    assert set(disp.right) == set(disp.waivers)
    assert all(r in ("none", "excluded", "by_phase") or r in CATEGORIES for r in disp.right.values()), disp.right
    for pat in disp.patterns:
        kind, _, name = pat["disposition"].partition(":")
        assert kind in ("class", "waiver"), pat
        if kind == "class":
            assert name in _class_ids(), pat
        else:
            assert name in disp.waivers, pat


def test_explicit_site_entries_still_name_a_site():
    keys = {inv.site_key(s) for path in SHIPPED for s in inv.iter_sites(_load(path))}
    stale = [k for k in inv.Dispositions.load().sites if k not in keys]
    assert not stale, f"dispositions.yaml names sites no shipped release has: {stale}"


@pytest.mark.parametrize("path", [NEWEST, OLDER], ids=lambda p: p.name)
def test_the_rules_still_name_the_sites_credited_to_them(path):
    """A rule's regex edited so that it no longer matches its site makes the inventory stale."""
    matcher = inv.RuleMatcher()
    wrong = {}
    for s in inv.iter_sites(_load(path)):
        if s["disposition"].startswith("rule:") and not s["template"].endswith("\u2026"):  # not cut
            got = matcher.match(s)
            if f"rule:{got}" != s["disposition"]:
                wrong[inv.site_key(s)] = (s["disposition"], got)
    assert not wrong, f"regenerate data/inventory (scripts/inventory_failures.py): {wrong}"


@pytest.mark.parametrize("path", [NEWEST, OLDER], ids=lambda p: p.name)
def test_no_rule_names_a_site_the_inventory_gives_to_something_else(path):
    """A new or widened rule makes the shipped inventory stale until it is regenerated."""
    matcher = inv.RuleMatcher()
    stale = {}
    for s in inv.iter_sites(_load(path)):
        if not s["disposition"].startswith("rule:"):
            got = matcher.match(s)
            if got is not None:
                stale[inv.site_key(s)] = (s["disposition"], got)
    assert not stale, f"regenerate data/inventory (scripts/inventory_failures.py): {stale}"


def test_templates_and_fillings_follow_the_source_forms():
    import ast

    code = (
        "def f(self, n, msg=None):\n"
        "    msg = 'Not enough memory.'\n"
        "    msg += f' Current value: mem_fraction_static={self.mem_fraction_static}'\n"
        "    raise RuntimeError(msg)\n"
        "def g(x):\n"
        "    assert x > 0, 'x=%d must be positive' % x\n"
        "    logger.error('bad {} here'.format(x))\n"
        "    raise ValueError\n"
        "def h(i, proc):\n"
        "    return RuntimeError(f'Rank {i} died (exit code: {proc.exitcode}).')\n"
    )
    ast.parse(code)
    sites = inv.find_sites("srt/x.py", code)
    assert [(s["kind"], s["function"], s["template"]) for s in sites] == [
        ("raise", "f", "Not enough memory. Current value: mem_fraction_static={self.mem_fraction_static}"),
        ("assert", "g", "x={x} must be positive"),
        ("log.error.raise", "g", "bad {x} here"),  # a raise follows it: the failure goes on
        ("raise", "h", "Rank {i} died (exit code: {proc.exitcode})."),
    ]
    assert "mem_fraction_static=0.88" in " ".join(inv.fillings(sites[0]["template"]))


def test_a_message_naming_a_string_constant_is_measured_as_sglang_prints_it():
    """``f"{FLAG} cannot run this setup"`` prints the flag FLAG names (0.5.23 srt/kernel_plugins,
    FLAG imported from sglang.kernels...spec); ``{cls._ERR}`` a class body's text; the template,
    the site's key, keeps the name, and a name bound to something else stays a placeholder."""
    modules = {
        "sglang/kernels/spec.py": 'FLAG = "--enable-nvidia-megakernel"\n',
        "sglang/srt/plugin/binding.py": (
            "from sglang.kernels.spec import FLAG\n"
            "from .local import NOTE\n"
            "LIMIT = compute()\n"
            "def refuse(reasons):\n"
            "    raise ValueError(f'{FLAG} cannot run this setup: {reasons}')\n"
            "def limit(n):\n"
            "    raise ValueError(f'{n} exceeds {LIMIT}; {NOTE}')\n"
            "def shadow(FLAG):\n"
            "    raise ValueError(f'{FLAG} is a parameter here')\n"
            "class Config:\n"
            "    _ERR = ('on-the-fly quantization (--quantization mlx_q4) '\n"
            "            'is handled by the MLX backend')\n"
            "    @classmethod\n"
            "    def from_config(cls, c):\n"
            "        raise NotImplementedError(f'{cls._ERR}')\n"),
        "sglang/srt/plugin/local.py": 'NOTE = "use --tp-size 1"\n',
    }
    constants = inv.Constants(modules.get)
    sites = inv.find_sites("srt/plugin/binding.py", modules["sglang/srt/plugin/binding.py"], constants=constants)
    assert [(s["template"], s["full"]) for s in sites] == [
        ("{FLAG} cannot run this setup: {reasons}", "--enable-nvidia-megakernel cannot run this setup: {reasons}"),
        ("{n} exceeds {LIMIT}; {NOTE}", "{n} exceeds {LIMIT}; use --tp-size 1"),
        ("{FLAG} is a parameter here", "{FLAG} is a parameter here"),
        ("{cls._ERR}", "on-the-fly quantization (--quantization mlx_q4) is handled by the MLX backend"),
    ]
    assert all(s["resolved"] == s["full"] for s in sites)  # short: the cut text is the whole text
    # the shipped inventory carries them: the measure's synthetic log prints the flag
    shipped = {inv.site_key(s): s for s in inv.iter_sites(_load(NEWEST))}
    site = next(s for k, s in shipped.items() if k.startswith("srt/kernel_plugins/nvidia/binding.py::_refuse::{FLAG}"))
    assert site["full"].startswith("--enable-nvidia-megakernel cannot run this setup")
    assert "--enable-nvidia-megakernel cannot run this setup" in inv.synthetic_log(site, "startup")


def test_internal_checks_take_the_category_of_their_phase():
    """class.internal.check's phase map covers every phase but unknown, with CONTRACT's names."""
    from sglang_doctor.model import CATEGORIES, PHASES

    by_phase, unknown = inv.by_phase_categories()
    # startup.args: an internal check there is server_args' own (class.args.server_args)
    assert set(by_phase) == set(PHASES) - {"unknown", "startup.args"}
    assert by_phase["serving"] == "runtime.crash" and unknown == "other"
    assert set(by_phase.values()) <= set(CATEGORIES)


def test_the_flags_the_feature_classes_name_exist_in_the_supported_releases():
    """A feature class's explanation says which flags switch its subsystem on: those flags
    must be flags of every release the inventory covers where the class covers a site (the
    release's catalogue): 0.5.4 has no diffusion-LLM code, so no site of class.feature.dllm,
    whose --dllm-algorithm it lacks."""
    import re

    from sglang_doctor.remedy.flags import shipped_catalog

    rules = [r for r in RuleSet.load(builtin=True, user=False).rules if r.id.startswith("class.feature.")]
    assert len(rules) >= 9
    # 0.5.x: the explanations speak 0.5's flags (0.4.6.post5 lacks 12 of them, e.g. --moe-a2a-backend,
    # --enable-lora: data/inventory/README.md, session 16)
    for path in (p for p in SHIPPED if inv.version_key(p.stem.split("-", 1)[1]) >= (0, 5)):
        catalog = shipped_catalog(path.stem.split("-", 1)[1])
        covered = {s["disposition"].split(":", 1)[1] for s in inv.iter_sites(_load(path))
                   if s["disposition"].startswith("class:")}
        for rule in (r for r in rules if path == NEWEST or r.id in covered):  # the newest: every one
            flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*", rule.explanation))
            assert flags, rule.id
            missing = sorted(f for f in flags if catalog.spec(f) is None)
            assert not missing, f"{rule.id} names flags {path.stem} does not have: {missing}"


def test_synthetic_logs_look_like_what_sglang_prints():
    """The measure's incident is SGLang's traceback ending in the site's own frame and
    ``Type: message``; a rejected request is what http_server logs for it."""
    site = {"file": "srt/lora/lora_manager.py", "line": 141, "function": "LoRAManager.__init__", "kind": "raise",
            "exception": "ValueError", "template": "LoRA backend {lora_backend} does not support DP attention",
            "disposition": "class:class.feature.lora"}
    text = inv.synthetic_log(site, "startup.load_weights", "args.invalid")
    lines = text.splitlines()
    assert lines[0].split("] ", 1)[1].startswith("server_args={")
    assert "Load weight begin" in lines[2] and "Scheduler hit an exception: Traceback" in lines[3]
    assert lines[-2] == "ValueError: LoRA backend X does not support DP attention"
    assert lines[-4].endswith('sglang/srt/lora/lora_manager.py", line 141, in __init__')
    rejected = inv.synthetic_log(dict(site, file="srt/managers/tokenizer_manager.py"), "serving", "none")
    assert "ready to roll" in rejected.splitlines()[0]
    assert "[http_server] Error: LoRA backend X" in rejected and "Traceback" not in rejected


def test_older_releases_module_homes_are_known():
    """0.4.x's request-serving code (the OpenAI adapter, the parsers at the top of srt/, the
    multimodal processors under srt/managers/) rejects requests, as 0.5.x's srt/entrypoints/openai,
    srt/parser and srt/multimodal do; its template loaders read a launch flag; its config reader
    (srt/hf_transformers_utils.py) loads the model: no site there is left to the `other` waiver."""
    sites = list(inv.iter_sites(_load(OLDER)))
    request_code = ("srt/openai_api/", "srt/conversation.py", "srt/reasoning_parser.py", "srt/code_completion_parser.py",
                    "srt/managers/multimodal_processors/", "srt/mm_utils.py")
    loaders = ("load_chat_template_for_openai_api", "load_completion_template_for_openai_api")
    for s in sites:
        if s["kind"] in ("raise", "assert") and s["file"].startswith(request_code):
            if s["function"] in loaders:
                assert s["disposition"] == "class:class.args.template_file", s
            elif not s["function"].endswith("__init__"):
                # (a processor's set-up helper refusing the model type is the model's, by its words;
                # a specific rule that names the message is an accounted answer too: the anyres
                # tiling's patch-size assert is the checkpoint's vision config)
                assert (s["disposition"] in ("waiver:request_level", "class:class.model.unsupported_arch")
                        or s["disposition"].startswith("rule:")), s
        if s["file"] == "srt/hf_transformers_utils.py" and s["kind"] == "raise":
            # the class rule, or a specific model rule that names the message (session 32's GGUF
            # config refusal)
            assert s["disposition"] == "class:class.model.load" or s["disposition"].startswith("rule:model."), s


def test_synthetic_logs_speak_the_release_of_the_inventory():
    """An 0.4.x site's synthetic log is what 0.4.x prints: its milestone wordings (no elapsed
    times), its ServerArgs(...) header, and a request's error through uvicorn; the whole message,
    not the template cut at 160 characters, when the inventory was just made from the wheel."""
    release = inv.release_context("0.4.6.post5")
    assert inv.release_context("0.5.9") is None and release is not None
    site = {"file": "srt/model_executor/model_runner.py", "line": 898, "function": "ModelRunner.init_memory_pool",
            "kind": "raise", "exception": "RuntimeError", "template": "Not enough memory. Please try to increase …",
            "full": "Not enough memory. Please try to increase --mem-fraction-static.",
            "disposition": "rule:memory.kv_pool.not_enough_memory_no_value"}
    text = inv.synthetic_log(site, "startup.cuda_graph", "memory.kv_pool", release=release)
    assert "server_args=ServerArgs(model_path=" in text.splitlines()[0]
    assert "Init torch distributed ends. mem usage=" in text and "elapsed=" not in text
    assert text.splitlines()[-2] == "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    request = dict(site, file="srt/openai_api/adapter.py", exception="HTTPException", template="File not found",
                   full="File not found", function="v1_retrieve_file_content")
    text = inv.synthetic_log(request, "serving", "none", release=release)
    assert "Exception in ASGI application" in text and "Error in request" not in text


def test_the_right_category_share_holds_on_a_sample():
    """Every 40th site of 0.5.23 (deterministic), run through the engine: the share of right
    answers is at least the one recorded by ``--measure --record`` (data/inventory/measured.json)."""
    recorded = json.loads((INVENTORY / "measured.json").read_text(encoding="utf-8"))["0.5.23"]
    sample = recorded["sample"]
    result = inv.measure(_load(NEWEST), inv.Dispositions.load(), every=sample["every"])
    assert result["user_facing"] == sample["user_facing"]
    assert result["share"] >= sample["share"], result["groups"]
    assert recorded["full"]["share"] >= 0.9


def test_hand_judged_sites_name_sites_of_the_release_with_contract_categories():
    """judged-VERSION.yaml (a person's verdicts, independent of the rule pack) names real
    sites, once each, with a CONTRACT category or ``none``."""
    from sglang_doctor.model import CATEGORIES

    judged = inv.load_judged("0.5.23")
    assert len(judged) >= 200
    keys = {inv.site_key(s) for s in inv.iter_sites(_load(NEWEST))}
    assert len({j["key"] for j in judged}) == len(judged)
    assert all(j["key"] in keys for j in judged), [j["key"] for j in judged if j["key"] not in keys][:3]
    assert all(j["right"] in CATEGORIES or j["right"] == "none" for j in judged)


def test_the_engine_is_right_on_the_hand_judged_sites():
    """Rightness, not consistency: on the hand-judged sites the engine gives the judged answer
    at least as often as recorded (measured.json "judged"; issue #12's target is 90%).  This test
    has only the shipped inventory, whose templates are cut at 160 characters, so it holds the
    engine to the figure the script recorded on that same shipped file ("shipped"), not to the
    whole-message figure it measured from the wheel."""
    recorded = json.loads((INVENTORY / "measured.json").read_text(encoding="utf-8"))["0.5.23"]["judged"]
    result = inv.measure_judged(_load(NEWEST), inv.Dispositions.load(), inv.load_judged("0.5.23"))
    assert result["missing"] == 0
    assert result["sites"] == recorded["sites"]
    assert result["right"] >= recorded["shipped"]["right"], result


@pytest.mark.slow
def test_the_shipped_inventory_is_what_the_script_makes(tmp_path):
    """Regenerate from the wheels (pip download into the user's cache) and compare bytes."""
    versions = [p.stem.split("-", 1)[1] for p in SHIPPED]
    rc = inv.main(["--versions", *versions, "--out", str(tmp_path)])
    assert rc == 0
    for path in SHIPPED:
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), f"{path.name} is stale: rerun the script"
