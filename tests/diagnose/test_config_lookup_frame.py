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
