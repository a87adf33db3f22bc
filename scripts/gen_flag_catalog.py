#!/usr/bin/env python3
"""Generate SGLang's flag catalogues (sglang_doctor/remedy/catalogs/) from each release's real
argument parser.

    python scripts/gen_flag_catalog.py 0.5.9 0.4.6.post5     # (re)generate these releases
    python scripts/gen_flag_catalog.py --all                 # every release from 0.4.0 on PyPI
    python scripts/gen_flag_catalog.py 0.4.6 --check         # exit 1 if the shipped one drifts
    python scripts/gen_flag_catalog.py 0.5.23 --out F.json   # the whole catalogue to a file

For each release it installs ``sglang==VERSION --no-deps`` with ``pip install --target``
into its own directory (wheels cached in --cache, outside the repository), and runs this same
file with ``--dump`` in the venv of the release's ENVIRONMENT (torch==2.13.0, the local CPU
build, plus only the packages ``sglang/srt/server_args.py`` imports at module level, found
by importing it in an empty venv until it stopped failing), with the release directory and
the environment's overlay first on PYTHONPATH.  One venv serves every release of an
environment, so the 90-odd releases need three venvs, not ninety.  The dump builds
``argparse.ArgumentParser()``, calls ``ServerArgs.add_cli_args`` and writes every action and
every ServerArgs field default through ``sglang_doctor.remedy.flags.snapshot_parser`` -- the
function ``load_catalog`` uses on a live SGLang, so the two can't disagree.  Output has
sorted keys and no timestamps: regenerating gives identical bytes.

The catalogues are stored as the oldest release whole and every later release as its
differences from the one before (``flags.pack_catalogues``); after dumping, this script
rebuilds that chain from the shipped releases and the fresh dumps and rewrites the
directory.  ``flags.read_shipped`` rebuilds any release's whole document.

The dump runs with SGLANG_* / SGL_* variables removed (some choices depend on them) and from
an empty working directory.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # sglang_doctor.remedy.flags: version order, dump, storage
CATALOGUE_DIR = ROOT / "sglang_doctor" / "remedy" / "catalogs"
TORCH = "torch==2.13.0"  # the local CPU wheel; a bare `torch` would pull a CUDA build
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sglang-doctor" / "flag-catalogues"
OLDEST = "0.4.0"


class Environment(typing.NamedTuple):
    """What ``import sglang.srt.server_args`` needs for a range of releases."""

    name: str                        # also the venv's name: environments may share one
    first: str                       # oldest release it serves
    last: str                        # newest release it serves
    requirements: tuple[str, ...]    # installed in the environment's venv (with TORCH)
    overlay: tuple[str, ...] = ()    # installed with --target, first on PYTHONPATH
    stubs: tuple[tuple[str, str], ...] = ()  # (module, why) stubbed when not importable

    def serves(self, version: str) -> bool:
        from sglang_doctor.remedy.flags import version_key

        return version_key(self.first) <= version_key(version) <= version_key(self.last)

    def all_requirements(self) -> list[str]:
        """What the dump really imports from: the overlay shadows the venv's same package."""
        shadowed = {r.split("==")[0].lower() for r in self.overlay}
        kept = [r for r in self.requirements if r.split("==")[0].lower() not in shadowed]
        return [TORCH, *sorted(kept + list(self.overlay), key=str.lower)]


_WITH_TRANSFORMERS = (
    "aiohttp==3.14.5", "dill==0.4.1", "fastapi==0.165.0", "huggingface_hub==0.36.2",
    "ipython==9.18.1", "msgspec==0.23.0", "numpy==2.4.6", "openai==2.6.1", "orjson==3.13.0",
    "packaging==26.4", "partial-json-parser==0.2.1.1.post7", "pillow==13.0.0",
    "psutil==7.2.2", "pybase64==1.5.1", "pydantic==2.14.4", "pyzmq==27.3.0",
    "requests==2.34.2", "safetensors==0.8.0", "sentencepiece==0.2.3", "starlette==1.10.0",
    "tqdm==4.70.1", "transformers==4.57.1", "triton==3.9.0", "uvicorn==0.55.0",
)
_TORCHVISION = ("torchvision", "no CPU wheel for torch 2.13.0; imported at module level on the "
                "way to server_args (image preprocessing, e.g. 0.5.9 sglang/srt/multimodal/"
                "internvl_utils.py:3), unused by the parser")
_DECORD = ("decord", "video decoding; no wheel for this Python; imported at module level by "
           "0.4.4.post4-0.4.x sglang/srt/utils.py (VideoReader), unused by the parser")

# Found by importing each release's server_args in these environments until it stopped
# failing (ordered oldest first; a release is served by the first environment that covers it).
ENVIRONMENTS: tuple[Environment, ...] = (
    # 0.4.x sglang/srt/utils.py imports `default_cache_dir` from triton.runtime.cache, which
    # triton 3.2 removed: triton 3.1.0 (torch 2.5's) goes first on the path for these.
    # Their transformers as pinned (0.4.3.post4 and 0.4.4 pin 4.48.3, 0.4.4.post4 to 0.4.6
    # pin 4.51.0): qwen2_5_vl_config.py imports names later transformers moved or removed.
    Environment("transformers", "0.4.0", "0.4.3", _WITH_TRANSFORMERS,
                overlay=("triton==3.1.0", "transformers==4.51.1", "tokenizers==0.21.1"),
                stubs=(_TORCHVISION, _DECORD)),
    Environment("transformers", "0.4.3.post1", "0.4.4.post3", _WITH_TRANSFORMERS,
                overlay=("triton==3.1.0", "transformers==4.48.3", "tokenizers==0.21.1"),
                stubs=(_TORCHVISION, _DECORD)),
    Environment("transformers", "0.4.4.post4", "0.4.6.post5", _WITH_TRANSFORMERS,
                overlay=("triton==3.1.0", "transformers==4.51.1", "tokenizers==0.21.1"),
                stubs=(_TORCHVISION, _DECORD)),
    Environment("transformers", "0.4.7", "0.4.10.post2", _WITH_TRANSFORMERS,
                overlay=("triton==3.1.0",), stubs=(_TORCHVISION, _DECORD)),
    # 0.5.4 and 0.5.4.post1 entrypoints/openai/protocol.py:40 `from xgrammar import
    # StructuralTag` at module level (a pydantic field type): their pinned xgrammar.
    Environment("transformers", "0.5.4", "0.5.4.post1", _WITH_TRANSFORMERS,
                overlay=("xgrammar==0.1.25",), stubs=(_TORCHVISION, _DECORD)),
    Environment("transformers", "0.5.0", "0.5.12.post1", _WITH_TRANSFORMERS,
                stubs=(_TORCHVISION, _DECORD)),
    # 0.5.13 on import transformers 5 names (configs/cohere2_moe.py:4 `PreTrainedConfig`);
    # transformers 5 needs huggingface_hub 1.x.  (They pin 5.8.1-5.19.0; 5.12.1 serves all.)
    Environment("transformers", "0.5.13", "0.5.15.post1", _WITH_TRANSFORMERS,
                overlay=("transformers==5.12.1", "huggingface_hub==1.5.0"),
                stubs=(_TORCHVISION, _DECORD)),
    # 0.5.16 on: function_call/inkling_detector.py:9 `from xgrammar import StructuralTag`
    # at module level; xgrammar 0.2.1 as 0.5.16-0.5.20 pin it, and the tvm-ffi it needs.
    Environment("transformers", "0.5.16", "0.5.22", _WITH_TRANSFORMERS,
                overlay=("transformers==5.12.1", "huggingface_hub==1.5.0", "xgrammar==0.2.1",
                         "apache-tvm-ffi==0.1.9"),
                stubs=(_TORCHVISION, _DECORD)),
    # 0.5.23 patches transformers at import (utils/hf_transformers_patches.py) in a way
    # transformers 4.57 refuses; its server_args needs no transformers at all.
    Environment("plain", "0.5.23", "0.5.23", (
        "aiohttp==3.14.5", "ipython==9.18.1", "msgspec==0.23.0", "numpy==2.4.6",
        "orjson==3.13.0", "packaging==26.4", "pillow==13.0.0", "psutil==7.2.2",
        "pybase64==1.5.1", "pydantic==2.14.4", "pyzmq==27.3.0", "requests==2.34.2",
        "starlette==1.10.0", "tqdm==4.70.1", "triton==3.9.0")),
)


def environment_for(version: str) -> Environment | None:
    return next((env for env in ENVIRONMENTS if env.serves(version)), None)


class _StubType(type):
    """A stub class whose every attribute is another stub class (``InterpolationMode.BICUBIC``
    read at import time by a module that only uses it later)."""

    def __getattr__(cls, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _StubType(name, (), {"__module__": cls.__module__})
        setattr(cls, name, value)
        return value


class _StubModule(types.ModuleType):
    """A module whose every attribute is a new empty class (enough for `from x import Y`)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _StubType(name, (), {"__module__": self.__name__})
        setattr(self, name, value)
        return value


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the stubbed top-level packages (and their submodules), last in sys.meta_path,
    and remembers which of them something really imported."""

    def __init__(self, roots: set[str]):
        self.roots = roots
        self.served: set[str] = set()

    def find_spec(self, fullname, path=None, target=None):
        root = fullname.split(".")[0]
        if root in self.roots:
            self.served.add(root)
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        # a version for libraries that parse it (transformers 5 compares torchvision's)
        module.__version__ = "0+stub"
        return module

    def exec_module(self, module):
        return None


def install_stubs(version: str) -> _StubFinder:
    """Stub the modules the release's environment lists that cannot be imported."""
    env = environment_for(version)
    missing = {name for name, _ in (env.stubs if env else ())
               if importlib.util.find_spec(name) is None}
    finder = _StubFinder(missing)
    sys.meta_path.append(finder)
    return finder


def dump_catalog(version: str) -> dict:
    """The catalogue document for ``version`` from the SGLang installed in this interpreter.
    The drift test calls this too."""
    sys.path.insert(0, str(ROOT))
    from sglang_doctor.remedy import flags

    installed = importlib.metadata.version("sglang")
    if installed != version:
        raise SystemExit(f"the installed SGLang is {installed}, not {version}")
    finder = install_stubs(version)
    body = flags.snapshot_parser()
    env = environment_for(version)
    why = dict(env.stubs) if env else {}
    return {
        "catalogue_format": flags.CATALOGUE_FORMAT,
        "sglang_version": version,
        "generated_by": {
            "script": "scripts/gen_flag_catalog.py",
            "how": "argparse.ArgumentParser(); ServerArgs.add_cli_args(parser); every action "
                   "of parser._actions; ServerArgs field defaults",
            "requirements": [f"sglang=={version} --no-deps",
                             *(env.all_requirements() if env else [TORCH])],
            "environment": "SGLANG_* and SGL_* variables unset",
            "stubbed_modules": {name: why[name] for name in sorted(finder.served)},
        },
        **body,
    }


def _clean_env(python_path: list[Path]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SGLANG_", "SGL_"))}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in [*python_path, ROOT])
    env.pop("PYTHONHOME", None)
    return env


def _pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "-q", *args],
                   check=True)


def ensure_environment(env: Environment, cache: Path) -> tuple[Path, list[Path]]:
    """(python, overlay dirs) of ``env``'s venv, created and filled on first use."""
    venv = cache / "venvs" / env.name
    python = venv / "bin" / "python"
    stamp = venv / "requirements.txt"
    wanted = "\n".join([TORCH, *env.requirements]) + "\n"
    if not python.exists() or not stamp.exists() or stamp.read_text() != wanted:
        start = time.monotonic()
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        _pip(python, "install", TORCH, *env.requirements)
        stamp.write_text(wanted)
        print(f"[{env.name}] venv ready in {time.monotonic() - start:.0f} s", file=sys.stderr)
    overlays = []
    for requirement in env.overlay:
        target = cache / "overlays" / requirement.replace("==", "-")
        if not (target / ".complete").exists():
            _pip(python, "install", "--no-deps", "--target", str(target), requirement)
            (target / ".complete").write_text("")
        overlays.append(target)
    return python, overlays


def ensure_release(version: str, python: Path, cache: Path) -> Path:
    """The directory holding ``sglang==version --no-deps`` (pip install --target)."""
    target = cache / "releases" / version
    if (target / ".complete").exists():
        return target
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    if not list(wheels.glob(f"sglang-{version}-*.whl")):
        _pip(python, "download", "--no-deps", "-d", str(wheels), f"sglang=={version}")
    _pip(python, "install", "--no-deps", "--no-index", "--find-links", str(wheels),
         "--target", str(target), f"sglang=={version}")
    (target / ".complete").write_text("")
    return target


def generate(version: str, out: Path, cache: Path) -> None:
    """Dump ``version``'s real parser into ``out`` (a whole catalogue)."""
    env = environment_for(version)
    if env is None:
        raise SystemExit(f"no ENVIRONMENT serves SGLang {version}: add one after finding what "
                         "its server_args module imports")
    python, overlays = ensure_environment(env, cache)
    release = ensure_release(version, python, cache)
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run([str(python), str(Path(__file__).resolve()),
                        "--dump", version, "--out", str(out)],
                       check=True, cwd=scratch, env=_clean_env([*overlays, release]))


def pypi_releases() -> list[str]:
    """Every SGLang release on the index from OLDEST on (``pip index versions sglang``)."""
    sys.path.insert(0, str(ROOT))
    from sglang_doctor.remedy.flags import version_key

    done = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "sglang"],
                          capture_output=True, text=True, check=True)
    line = next(l for l in done.stdout.splitlines() if l.startswith("Available versions:"))
    versions = [v.strip() for v in line.split(":", 1)[1].split(",")]
    return sorted((v for v in versions if version_key(v) >= version_key(OLDEST)), key=version_key)


def write_shipped(fresh: dict[str, dict]) -> None:
    """Rewrite the catalogue directory: every shipped release, with ``fresh`` dumps
    replacing or adding theirs, packed as a base and per-release deltas."""
    sys.path.insert(0, str(ROOT))
    from sglang_doctor.remedy import flags

    documents = {v: flags.read_shipped(f"sglang-{v}.json") for v in flags.KNOWN_VERSIONS}
    documents.update(fresh)
    files = flags.pack_catalogues(documents.values())
    for stale in CATALOGUE_DIR.glob("sglang-*.json"):
        if stale.name not in files:
            stale.unlink()
    for name, text in files.items():
        path = CATALOGUE_DIR / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="*", help="SGLang releases, e.g. 0.5.9 0.4.6.post5")
    parser.add_argument("--all", action="store_true",
                        help=f"every release from {OLDEST} that `pip index versions` lists")
    parser.add_argument("--out", type=Path,
                        help="write this one release's whole catalogue here instead")
    parser.add_argument("--check", action="store_true",
                        help="regenerate and fail if a shipped catalogue differs")
    parser.add_argument("--cache", type=Path, default=CACHE,
                        help=f"venvs, wheels and release directories (default {CACHE})")
    parser.add_argument("--dump-dir", type=Path,
                        help="write the whole dumps into this directory and stop (to run "
                             "several generators at once); --pack DIR ships them")
    parser.add_argument("--pack", type=Path, metavar="DIR",
                        help="ship every sglang-V.json dump in DIR (with the shipped releases)")
    parser.add_argument("--dump", metavar="VERSION",
                        help="internal: dump the SGLang installed in this interpreter")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT))
    from sglang_doctor.remedy import flags

    if args.dump:
        text = flags.catalogue_json(dump_catalog(args.dump))
        out = args.out or CATALOGUE_DIR / f"sglang-{args.dump}.json"
        out.write_text(text, encoding="utf-8")
        return 0

    if args.pack:
        dumps = {}
        for path in sorted(args.pack.glob("sglang-*.json")):
            document = json.loads(path.read_text(encoding="utf-8"))
            dumps[document["sglang_version"]] = document
        write_shipped(dumps)
        print(f"wrote {len(dumps)} release(s) into {CATALOGUE_DIR.relative_to(ROOT)}")
        return 0

    versions = pypi_releases() if args.all else args.versions
    if not versions:
        parser.error("name at least one SGLang version, or --all")
    if args.out and len(versions) != 1:
        parser.error("--out takes one version")
    unserved = [v for v in versions if environment_for(v) is None]
    if unserved:
        parser.error(f"no ENVIRONMENT serves {', '.join(unserved)}: add one after finding "
                     "what its server_args module imports")
    status = 0
    fresh: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for version in versions:
            dumped = (args.dump_dir or Path(scratch)) / f"sglang-{version}.json"
            start = time.monotonic()
            try:
                generate(version, dumped, args.cache)
            except subprocess.CalledProcessError as exc:
                print(f"[{version}] FAILED: {exc}", file=sys.stderr)
                status = 1
                continue
            if args.dump_dir:
                print(f"[{version}] dumped in {time.monotonic() - start:.0f} s", file=sys.stderr)
                continue
            text = dumped.read_text(encoding="utf-8")
            if args.check:
                try:
                    shipped = flags.catalogue_json(flags.read_shipped(f"sglang-{version}.json"))
                except FileNotFoundError:
                    shipped = None
                same = shipped == text
                print(f"[{version}] {'up to date' if same else 'DRIFTED from the real parser'}")
                status |= 0 if same else 1
            elif args.out:
                args.out.write_text(text, encoding="utf-8")
                print(f"[{version}] wrote {args.out}")
            else:
                fresh[version] = json.loads(text)
                print(f"[{version}] dumped in {time.monotonic() - start:.0f} s", file=sys.stderr)
    if fresh:
        write_shipped(fresh)
        print(f"wrote {len(fresh)} release(s) into {CATALOGUE_DIR.relative_to(ROOT)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
