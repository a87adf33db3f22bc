"""Only the optional C extension lives here; everything else is in pyproject.toml.

``sglang_doctor.read._native`` (read/_native.c, plain CPython C API) is the scanner's
one-pass block search.  It is optional: without a C compiler the build skips it and the
scanner uses its other engines, which give the same lines (tests/read/test_properties.py).
"""

import sys

from setuptools import Extension, setup

args = [] if sys.platform == "win32" else ["-O3"]
setup(ext_modules=[Extension("sglang_doctor.read._native", ["sglang_doctor/read/_native.c"],
                             optional=True, extra_compile_args=args)])
