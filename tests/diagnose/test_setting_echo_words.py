"""A setting echoed is no word of a failure: an environment assignment (``HF_HUB_OFFLINE=1``,
``export NCCL_DEBUG=INFO``, docker's ``-e X=1``) or a shell's echo of a command line names what
was set or typed, in every launch that does so, failing or not.  The hub's own failures
(huggingface_hub's OfflineModeIsEnabled / LocalEntryNotFoundError, transformers' "We couldn't
connect to 'https://huggingface.co'") still name the hub, and a variable's name inside a
library's own message (torch's "TORCH_CUDA_ARCH_LIST is not set") still counts."""

import pytest

from sglang_doctor.diagnose import evidence
from sglang_doctor.diagnose.fallback import no_incident
from sglang_doctor.model import Incident, Line

INIT = "[2026-05-09 17:30:10 TP0] Init torch distributed begin.\n"


def word_names(pieces):
    return {p.name for p in pieces}


@pytest.mark.parametrize("echo", [
    "HF_HUB_OFFLINE=1",
    "export HF_HUB_OFFLINE=1 HF_HOME=/data/hf",
    "+ export HF_HUB_OFFLINE=1",
    "docker run --gpus all -e HF_HUB_OFFLINE=1 -e TORCH_CUDA_ARCH_LIST=9.0 lmsysorg/sglang:latest",
    "    - name: HF_HUB_OFFLINE",
])
def test_an_environment_echo_is_no_hub_or_build_word(echo):
    assert not word_names(evidence.from_text([echo])) & {"words:hub", "words:build"}


def test_a_shell_prompt_echo_is_no_word():
    assert evidence.from_text(["$ env | grep -E 'HF_|NCCL|CUDA'"]) == []
    assert evidence.from_text(["root@node1:~# grep NCCL /etc/nccl.conf"]) == []


def test_a_fragment_ending_in_an_env_dump_is_not_guessed_from_it():
    text = ("$ env | grep -E 'HF_|NCCL'\nHF_HUB_OFFLINE=1\nHF_HOME=/data/hf\n" + INIT).encode()
    out = no_incident([], text, 4)
    assert not any(e["name"].startswith("words:") for e in out["best_guess"]["evidence"])


@pytest.mark.parametrize("message", [
    "huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/models/Qwen/Qwen3-8B: "
    "offline mode is enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment variable.",
    "LocalEntryNotFoundError: Cannot find an appropriate cached snapshot folder for the specified revision on the "
    "local disk and outgoing traffic has been disabled.",
    "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the "
    "cached files.",
])
def test_the_hubs_own_failure_still_names_the_hub(message):
    line = Line(1, message, message.encode())
    inc = Incident(kind="signal", first_line=1, last_line=1, lines=[line], signals=[line], signal_names=["x"])
    assert "words:hub" in word_names(evidence.from_words(inc))


def test_a_variable_named_in_a_librarys_own_warning_still_counts():
    warning = ("UserWarning: TORCH_CUDA_ARCH_LIST is not set, all archs for visible cards are included for "
               "compilation.")
    assert "words:build" in word_names(evidence.from_text([warning]))
