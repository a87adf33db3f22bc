"""``torchvision.transforms.v2.functional``: callables that refuse to run on the stub."""

from torchvision.transforms.functional import normalize, pil_to_tensor, resize  # noqa: F401
