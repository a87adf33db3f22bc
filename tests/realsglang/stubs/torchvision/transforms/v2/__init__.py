"""``torchvision.transforms.v2``: only ``functional``, as transformers imports it."""

from torchvision.transforms.v2 import functional  # noqa: F401
