"""A traceback cut off below transformers' model-type lookup (AutoConfig.from_pretrained's
``config_class = CONFIG_MAPPING[config_dict["model_type"]]``, which raises only KeyError for a
model type transformers does not know) failed to recognise the architecture: the best guess is
model.unsupported, not a config that could not be read.  Another line of from_pretrained, or the
same traceback with its exception line, is not read that way."""

from conftest import only_incident

CAUSE = "/app/.venv/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py"
LOOKUP = ('[2025-07-10 07:10:50] Scheduler hit an exception: Traceback (most recent call last):\n'
          f'  File "{CAUSE}", line 1170, in from_pretrained\n'
          '    config_class = CONFIG_MAPPING[config_dict["model_type"]]\n'
          f'  File "{CAUSE}", line 873, in __getitem__\n'
          '    raise KeyError(key)\n')
READ = ('[2025-07-10 07:10:50] Scheduler hit an exception: Traceback (most recent call last):\n'
        f'  File "{CAUSE}", line 1151, in from_pretrained\n'
        '    config_dict, unused_kwargs = PretrainedConfig.get_config_dict(pretrained_model_name_or_path, **kwargs)\n')


def _guess(ev):
    return (ev.get("fallback") or {}).get("best_guess") or {}


def test_a_traceback_cut_below_the_model_type_lookup_guesses_an_unknown_architecture(pack):
    guess = _guess(only_incident(pack, LOOKUP))
    assert guess["category"] == "model.unsupported"
    assert any(e["name"] == "config_lookup_frame" for e in guess["evidence"])


def test_another_line_of_from_pretrained_is_no_lookup(pack):
    guess = _guess(only_incident(pack, READ))
    assert not any(e["name"] == "config_lookup_frame" for e in guess.get("evidence", []))


def test_with_its_exception_line_the_exception_speaks_not_the_frame(pack):
    ev = only_incident(pack, LOOKUP + "KeyError: 'mineru2_qwen'\n")
    assert not any(e["name"] == "config_lookup_frame" for e in _guess(ev).get("evidence", []))


# the ValueError AutoConfig.from_pretrained re-raises for the unknown model type (transformers
# 4.51.1 configuration_auto.py:1131, 5.19.0 :430): its traceback's last frame is the except block's
# ``raise ValueError(`` line, below SGLang's config reader (class.model.load's module)
SGL = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
RERAISE = ('[2025-07-10 07:10:50] Scheduler hit an exception: Traceback (most recent call last):\n'
           f'  File "{SGL}/configs/model_config.py", line 262, in __init__\n'
           '    self.hf_config = get_config(\n'
           f'  File "{SGL}/utils/hf_transformers_utils.py", line 402, in get_config\n'
           '    config = AutoConfig.from_pretrained(\n'
           f'  File "{CAUSE}", line 430, in from_pretrained\n'
           '    raise ValueError(\n')
REMOTE_CODE = ('[2025-07-10 07:10:50] Scheduler hit an exception: Traceback (most recent call last):\n'
               f'  File "{SGL}/utils/hf_transformers_utils.py", line 402, in get_config\n'
               '    config = AutoConfig.from_pretrained(\n'
               f'  File "{CAUSE}", line 1103, in from_pretrained\n'
               '    trust_remote_code = resolve_trust_remote_code(\n'
               '  File "/usr/local/lib/python3.10/dist-packages/transformers/dynamic_module_utils.py", line 696, in resolve_trust_remote_code\n'
               '    raise ValueError(\n')


def test_a_traceback_cut_below_from_pretrained_s_reraise_guesses_an_unknown_architecture(pack):
    guess = _guess(only_incident(pack, RERAISE))
    assert guess["category"] == "model.unsupported"
    assert any(e["name"] == "config_lookup_frame" for e in guess["evidence"])


def test_a_raise_below_from_pretrained_elsewhere_is_no_lookup(pack):
    guess = _guess(only_incident(pack, REMOTE_CODE))
    assert not any(e["name"] == "config_lookup_frame" for e in guess.get("evidence", []))
