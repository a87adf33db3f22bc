"""``torchvision.transforms``: ``InterpolationMode`` (real members) and ``functional``."""

from enum import Enum


class InterpolationMode(Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


from torchvision.transforms import functional  # noqa: E402  (needs InterpolationMode)

__all__ = ["InterpolationMode", "functional"]
