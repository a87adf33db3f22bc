"""``torchvision.io``: the names transformers.image_utils imports at module level."""

from enum import Enum

from torchvision import _unavailable


class ImageReadMode(Enum):
    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4


decode_image = _unavailable("io.decode_image")
decode_jpeg = _unavailable("io.decode_jpeg")
read_video = _unavailable("io.read_video")
