"""``torchvision.transforms.functional``: callables that refuse to run on the stub."""

from torchvision import _unavailable
from torchvision.transforms import InterpolationMode  # noqa: F401  (re-exported, as upstream)

pil_to_tensor = _unavailable("transforms.functional.pil_to_tensor")
to_tensor = _unavailable("transforms.functional.to_tensor")
resize = _unavailable("transforms.functional.resize")
normalize = _unavailable("transforms.functional.normalize")
