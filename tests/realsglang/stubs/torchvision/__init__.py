"""A stand-in ``torchvision`` for running real SGLang 0.5.23 on a CPU-only machine.

Why: the torchvision wheel on PyPI is built against a CUDA torch and does not load beside the
local CPU ``torch==2.13.0``; yet SGLang imports ``torchvision.transforms`` at start-up even
for a text model (sglang/srt/configs/__init__.py -> nano_nemotron_vl -> multimodal/
internvl_utils.py), and once any ``torchvision`` is importable, transformers' image utilities
import ``torchvision.io`` and ``torchvision.transforms(.v2).functional`` too.

Only the names imported at module level are provided: the two enums with their real members,
and functions that raise if an image path ever calls them.  A text-only launch never does.
"""

__version__ = "0.0.0+sglang-doctor-stub"


def _unavailable(name: str):
    def call(*_args, **_kwargs):
        raise NotImplementedError(
            f"torchvision.{name} is not available: this is the CPU test stub "
            "(tests/realsglang/stubs/torchvision), for text-only launches"
        )

    call.__name__ = name.rsplit(".", 1)[-1]
    return call
