"""Where a cut traceback stopped, said more precisely (diagnose/evidence.py, fallback.py):
building the model class is not loading weights, an allocation cut short is most often an
OOM, a background thread works while serving, the speculative draft worker's constructor
checks launch flags, a frame line cut inside its function name is completed by its caller's
call, and a traceback's code lines are not the failure's words.  Each fragment is written
from SGLang's own frame layout (0.4.x-0.5.x), cut before its exception line."""


from conftest import only_incident

P = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
HEAD = (f"[2025-04-10 07:26:56 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        f'  File "{P}/managers/scheduler.py", line 1809, in run_scheduler_process\n'
        "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)\n")
LOAD = (HEAD + f'  File "{P}/model_executor/model_runner.py", line 379, in load_model\n'
        "    self.model = get_model(\n"
        f'  File "{P}/model_loader/__init__.py", line 22, in get_model\n'
        "    return loader.load_model(\n"
        f'  File "{P}/model_loader/loader.py", line 366, in load_model\n')


def answer(pack, text):
    ev = only_incident(pack, text)
    return ev, ev["fallback"]["best_guess"]


def test_building_the_model_class_is_not_loading_its_weights(pack):
    # cut inside the frame line of _initialize_model; the caller's source line names the call
    ev, guess = answer(pack, LOAD + "    model = _initialize_model(\n"
                                    f'  File "{P}/model_loader/loader.py", line 145, in _in')
    assert guess["category"] == "model.unsupported"
    assert "_initialize_model" in guess["why"] and ev["rule"] == "class.model.load"
    assert guess["strength"] < ev["confidence"]  # weighed below the rule layer's


def test_a_cut_inside_load_weights_stays_model_load(pack):
    _, guess = answer(pack, LOAD + "    self.load_weights_and_postprocess(\n"
                                   f'  File "{P}/models/llama.py", line 480, in load_weights\n'
                                   "    param = params_dict[name]\n")
    assert guess["category"] == "model.load"


def test_a_traceback_cut_at_a_device_allocation_is_most_often_oom(pack):
    text = (f'  File "{P}/models/llama.py", line 39, in __init__\n'
            "    self.gate_up_proj = MergedColumnParallelLinear(\n"
            '  File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/layers/linear.py", line 81, in create_weights\n'
            "    weight = Parameter(torch.empty(output_size_per_partition,\n"
            '  File "/usr/local/lib/python3.10/dist-packages/torch/utils/_device.py", line 78, in __torch_function__\n')
    _, guess = answer(pack, text)
    assert guess["category"] == "memory.cuda_oom"
    assert any(e["name"] == "allocation" for e in guess["evidence"])


def test_an_allocation_with_its_exception_line_is_no_allocation_evidence(pack):
    text = (f'  File "{P}/models/llama.py", line 39, in __init__\n'
            "    weight = torch.empty(n, m)\n"
            "RuntimeError: Error \n")
    _, guess = answer(pack, text)
    assert not any(e["name"] == "allocation" for e in guess.get("evidence", ()))


def test_a_background_threads_traceback_is_a_serving_crash_guess(pack):
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.11/threading.py", line 1045, in _bootstrap_inner\n'
            "    self")
    _, guess = answer(pack, text)
    assert guess["category"] == "runtime.crash"
    assert [e["name"] for e in guess["evidence"]] == ["thread"]


def test_the_draft_worker_constructor_checks_launch_flags(pack):
    text = (HEAD + f'  File "{P}/managers/scheduler.py", line 682, in init_model_worker\n'
            "    self.maybe_init_draft_worker()\n"
            f'  File "{P}/managers/scheduler.py", line 666, in maybe_init_draft_worker\n'
            "    self.draft_worker = DraftWorkerClass(**draft_worker_kwargs)\n"
            f'  File "{P}/speculative/eagle_worker_v2.py", lin')
    _, guess = answer(pack, text)
    assert guess["category"] == "args.invalid" and "draft worker" in guess["why"]


def test_a_short_cut_function_name_is_completed_by_the_files_own_places(pack):
    text = ("Traceback (most recent call last):\n"
            '  File "/srv/worker.py", line 12, in <module>\n'
            "    runtime = sgl.Runtime(\n"
            '  File "/usr/local/lib/python3.11/site-packages/sglang/api.py", line 39, in R')
    _, guess = answer(pack, text)
    assert guess["category"] == "args.invalid" and "Runtime" in guess["why"]


def test_a_tracebacks_code_lines_are_not_the_failures_words(pack):
    text = (HEAD + f'  File "{P}/managers/tp_worker.py", line 84, in __init__\n'
            "    self.model_runner = ModelRunner(\n"
            "                        ~~~~~~~~~~~^\n"
            "        model_config=self.model_config,\n"
            "        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            "    ...<13 lines>...\n"
            "        token_to_kv_pool_allocato")
    ev, guess = answer(pack, text)
    assert ev["layer"] == "fallback"
    assert not any(e["name"] == "words:kv_pool" for e in guess.get("evidence", ()))


# -- ServerArgs' construction names the phase, not a category (evidence.ARGS_CONSTRUCTION) ------
from pathlib import Path  # noqa: E402

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
SA = "/usr/local/lib/python3.12/dist-packages/sglang/srt/server_args.py"
LAUNCH = ("Traceback (most recent call last):\n"
          '  File "/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", line 10, in <module>\n'
          "    server_args = prepare_server_args(sys.argv[1:])\n"
          f'  File "{SA}", line 4495, in prepare_server_args\n'
          "    return ServerArgs.from_cli_args(raw_args)\n"
          f'  File "{SA}", line 4033, in from_cli_args\n'
          "    return cls(**{attr: getattr(args, attr) for attr in attrs})\n"
          '  File "<string>", line 331, in __init__\n'
          f'  File "{SA}", line 733, in __post_init__\n')


def test_a_cut_in_server_args_construction_reads_the_phase_not_an_invalid_argument(pack):
    # the real fragment: a GGUF launch (0.5.x) cut in from_cli_args; its cause was an import of
    # libnvrtc while resolving the kernels (field10/017, labelled other)
    path = CORPUS / "field10" / "017-other-gguf-launch-libnvrtc-import-frames-cut.log"
    _, guess = answer(pack, path.read_text(encoding="utf-8"))
    names = {e["name"] for e in guess["evidence"]}
    assert "prior:startup.args" in names and "deepest_frame" not in names
    assert guess["category"] != "args.invalid"
    # the same in SGLang's frame layout, cut in __post_init__'s call
    _, guess = answer(pack, LAUNCH + "    self._handle\n")
    assert "prior:startup.args" in {e["name"] for e in guess["evidence"]}
    assert not any(e["category"] == "args.invalid" and e["name"] == "deepest_frame" for e in guess["evidence"])


def test_a_named_check_below_the_construction_still_points_at_the_arguments(pack):
    # counter-example: __post_init__ -> _handle_kv4_compatibility, a named check of the flags
    _, guess = answer(pack, LAUNCH + "    self._handle_kv4_compatibility()\n"
                                     f'  File "{SA}", line 2837, in _handle_kv4_compatibility\n')
    place = [e for e in guess["evidence"] if e["name"] == "deepest_frame"]
    assert place and place[0]["category"] == "args.invalid" and place[0]["weight"] >= 0.4
    assert guess["category"] == "args.invalid"


def test_the_old_releases_architecture_lookup_is_the_architecture_lookup(pack):
    # 0.1.x ModelRunner.load_model -> get_model_cls_by_arch_name ("Unsupported architectures: ..."),
    # its frame line cut inside the name: the caller's source line completes it (field9/005)
    path = CORPUS / "field9" / "005-model.unsupported-llava-next-110b-get-model-cls-cut.log"
    _, guess = answer(pack, path.read_text(encoding="utf-8"))
    assert guess["category"] == "model.unsupported"
    assert "get_model_cls_by_arch_name" in guess["why"]


# sglang.Runtime(...) importing the server module, which imports the constrained-decoding disk
# cache, whose diskcache.Cache(...) fails on its SQLite file; the paste lost its indentation and
# is cut before the exception line (corpus field11/013's shape).  The environment is named
# "sglang": its site-packages are not SGLang's code.
ENV = "/home/u/miniconda3/envs/sglang/lib/python3.11/site-packages"
SRC = "/home/u/sglang/python/sglang"
IMPORTING = (f'File "{SRC}/api.py", line 37, in Runtime\n'
             "  from sglang.srt.server import Runtime\n"
             f'File "{SRC}/srt/server.py", line 47, in <module>\n'
             "  from sglang.srt.constrained.disk_cache import disk_cache\n"
             f'File "{SRC}/srt/constrained/disk_cache.py", line 13, in <module>\n'
             '  memory = Cache(cache_dir, eviction_policy="none", cull_limit=0)\n'
             f'File "{ENV}/diskcache/core.py", line 500, in __init__\n'
             "  self.reset(key, value)\n"
             f'File "{ENV}/diskcache/core.py", line 2409, in reset\n'
             "  sql_retry(statement, (value, key))\n")


def test_a_traceback_cut_while_importing_an_sglang_module_is_the_environment(pack):
    ev, guess = answer(pack, IMPORTING)
    assert guess["category"] == "other" and "imported" in guess["why"]


def test_a_script_run_as_main_is_not_an_import(pack):
    # runpy runs launch_server.py as __main__: its <module> frame is the program, not an import
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.10/runpy.py", line 86, in _run_code\n'
            "    exec(code, run_globals)\n"
            f'  File "{P}/../launch_server.py", line 11, in <module>\n'
            "    server_args = prepare_server_args(sys.argv[1:])\n")
    ev, guess = answer(pack, text)
    assert guess is None or "imported" not in guess["why"]


def test_an_environment_named_sglang_is_not_sglangs_code():
    from sglang_doctor.incidents.tracebacks import is_sglang_file

    assert not is_sglang_file(f"{ENV}/diskcache/core.py")
    assert not is_sglang_file("/home/u/miniconda3/envs/sglang/lib/python3.11/runpy.py")
    assert is_sglang_file(f"{ENV}/sglang/srt/managers/scheduler.py")
    assert is_sglang_file(f"{SRC}/srt/constrained/disk_cache.py")
    assert is_sglang_file(f"{P}/managers/scheduler.py")
