#!/usr/bin/env python3
"""Generate sglang_doctor/remedy/catalogs/sglang-VERSION.json from SGLang's real argument parser.

    python scripts/gen_flag_catalog.py 0.5.9 0.5.23            # scratch venvs under /tmp
    python scripts/gen_flag_catalog.py 0.5.23 --venv /tmp/v    # reuse (or create) this venv
    python scripts/gen_flag_catalog.py 0.5.23 --check          # exit 1 if the shipped file drifts

For each version it makes (or reuses) a venv, installs ``sglang==VERSION --no-deps`` plus only
the packages ``sglang/srt/server_args.py`` imports at module level (found by importing it in
an empty venv until it stopped failing; listed in REQUIREMENTS with the versions that worked)
and the local CPU ``torch==2.13.0``, then runs this same file inside that venv with
``--dump``: it builds ``argparse.ArgumentParser()``, calls ``ServerArgs.add_cli_args`` and
writes every action and every ServerArgs field default through
``sglang_doctor.remedy.flags.snapshot_parser`` -- the function ``load_catalog`` uses on a live
SGLang, so the two can't disagree.  Output has sorted keys and no timestamps: regenerating
gives identical bytes.

The dump runs with SGLANG_* / SGL_* variables removed (some choices depend on them) and from
an empty working directory.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE_DIR = ROOT / "sglang_doctor" / "remedy" / "catalogs"
TORCH = "torch==2.13.0"  # the local CPU wheel; a bare `torch` would pull a CUDA build

# What `import sglang.srt.server_args` needs beyond the standard library and torch.
REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "0.5.9": (
        "aiohttp==3.14.5", "dill==0.4.1", "huggingface_hub==0.36.2", "ipython==9.18.1",
        "numpy==2.4.6", "openai==2.6.1", "orjson==3.13.0", "packaging==26.4",
        "partial-json-parser==0.2.1.1.post7", "pillow==13.0.0", "psutil==7.2.2",
        "pybase64==1.5.1", "pydantic==2.14.4", "pyzmq==27.3.0", "requests==2.34.2",
        "safetensors==0.8.0", "sentencepiece==0.2.3", "starlette==1.10.0", "tqdm==4.70.1",
        "transformers==4.57.1", "triton==3.9.0",
    ),
    "0.5.23": (
        "aiohttp==3.14.5", "ipython==9.18.1", "msgspec==0.23.0", "numpy==2.4.6",
        "orjson==3.13.0", "packaging==26.4", "pillow==13.0.0", "psutil==7.2.2",
        "pybase64==1.5.1", "pydantic==2.14.4", "pyzmq==27.3.0", "requests==2.34.2",
        "starlette==1.10.0", "tqdm==4.70.1", "triton==3.9.0",
    ),
}

# Modules that have no CPU wheel here and are imported at module level on the way to
# server_args but never used by the parser.  Stubbed only when really missing, and the
# catalogue's metadata says so.
STUBS: dict[str, dict[str, str]] = {
    "0.5.9": {
        # sglang/srt/server_args.py:69 -> utils/hf_transformers_utils.py:46 -> configs/
        # nano_nemotron_vl.py:22 -> multimodal/internvl_utils.py:3 `import
        # torchvision.transforms as T` (used only inside image preprocessing functions).
        # PyPI's torchvision wheels require a CUDA torch.
        "torchvision": "no CPU wheel for torch 2.13.0; imported at module level by "
                       "sglang/srt/multimodal/internvl_utils.py, unused by the parser",
    },
}


class _StubModule(types.ModuleType):
    """A module whose every attribute is a new empty class (enough for `from x import Y`)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (), {"__module__": self.__name__})
        setattr(self, name, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the stubbed top-level packages (and their submodules), last in sys.meta_path."""

    def __init__(self, roots: set[str]):
        self.roots = roots

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        return None


def install_stubs(version: str) -> list[str]:
    """Stub the modules STUBS lists for ``version`` that cannot be imported; their names."""
    missing = sorted(name for name in STUBS.get(version, {})
                     if importlib.util.find_spec(name) is None)
    if missing:
        sys.meta_path.append(_StubFinder(set(missing)))
    return missing


def dump_catalog(version: str) -> dict:
    """The catalogue document for ``version`` from the SGLang installed in this interpreter.
    The drift test calls this too."""
    sys.path.insert(0, str(ROOT))
    from sglang_doctor.remedy import flags

    installed = importlib.metadata.version("sglang")
    if installed != version:
        raise SystemExit(f"the installed SGLang is {installed}, not {version}")
    stubbed = install_stubs(version)
    body = flags.snapshot_parser()
    return {
        "catalogue_format": flags.CATALOGUE_FORMAT,
        "sglang_version": version,
        "generated_by": {
            "script": "scripts/gen_flag_catalog.py",
            "how": "argparse.ArgumentParser(); ServerArgs.add_cli_args(parser); every action "
                   "of parser._actions; ServerArgs field defaults",
            "requirements": [f"sglang=={version} --no-deps", TORCH,
                             *REQUIREMENTS.get(version, ())],
            "environment": "SGLANG_* and SGL_* variables unset",
            "stubbed_modules": {name: STUBS[version][name] for name in stubbed},
        },
        **body,
    }


def _clean_env(extra_path: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "SGL_"))}
    env["PYTHONPATH"] = str(ROOT)
    env.pop("PYTHONHOME", None)
    return env


def ensure_venv(version: str, venv: Path) -> None:
    """Create ``venv`` (if needed) with the parser's requirements and sglang==version."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    try:
        have = subprocess.run([str(python), "-c",
                               "import importlib.metadata as m; print(m.version('sglang'))"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        have = ""
    if have == version:
        return
    pip = [str(python), "-m", "pip", "--disable-pip-version-check", "-q", "install"]
    start = time.monotonic()
    subprocess.run([*pip, TORCH, *REQUIREMENTS[version]], check=True)
    subprocess.run([*pip, "--no-deps", f"sglang=={version}"], check=True)
    print(f"[{version}] installed into {venv} in {time.monotonic() - start:.0f} s",
          file=sys.stderr)


def generate(version: str, venv: Path, out: Path) -> None:
    """Run the dump inside ``venv`` and write ``out``."""
    ensure_venv(version, venv)
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([str(venv / "bin" / "python"), str(Path(__file__).resolve()),
                        "--dump", version, "--out", str(out)],
                       check=True, cwd=scratch, env=_clean_env())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="*", help="SGLang versions, e.g. 0.5.9 0.5.23")
    parser.add_argument("--venv", type=Path,
                        help="venv to use or create (one version only); default "
                             "/tmp/sglang-doctor-flags-VERSION")
    parser.add_argument("--out", type=Path, help="output file (default: the shipped file)")
    parser.add_argument("--check", action="store_true",
                        help="regenerate to a temporary file and fail if the shipped one differs")
    parser.add_argument("--dump", metavar="VERSION",
                        help="internal: dump the SGLang installed in this interpreter")
    args = parser.parse_args(argv)

    if args.dump:
        sys.path.insert(0, str(ROOT))
        from sglang_doctor.remedy.flags import catalogue_json

        text = catalogue_json(dump_catalog(args.dump))
        out = args.out or CATALOGUE_DIR / f"sglang-{args.dump}.json"
        out.write_text(text, encoding="utf-8")
        return 0

    if not args.versions:
        parser.error("name at least one SGLang version")
    if args.venv and len(args.versions) > 1:
        parser.error("--venv takes one version")
    unknown = [v for v in args.versions if v not in REQUIREMENTS]
    if unknown:
        parser.error(f"no requirement list for {', '.join(unknown)}: add it to REQUIREMENTS "
                     "after finding what its server_args module imports")
    status = 0
    for version in args.versions:
        venv = args.venv or Path(tempfile.gettempdir()) / f"sglang-doctor-flags-{version}"
        shipped = CATALOGUE_DIR / f"sglang-{version}.json"
        if args.check:
            with tempfile.TemporaryDirectory() as scratch:
                fresh = Path(scratch) / shipped.name
                generate(version, venv, fresh)
                same = shipped.exists() and fresh.read_bytes() == shipped.read_bytes()
            print(f"[{version}] {'up to date' if same else 'DRIFTED from the real parser'}: "
                  f"{shipped.relative_to(ROOT)}")
            status |= 0 if same else 1
        else:
            out = args.out or shipped
            generate(version, venv, out)
            print(f"[{version}] wrote {out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
