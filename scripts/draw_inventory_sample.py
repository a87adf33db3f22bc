#!/usr/bin/env python3
"""Draw a new hand-check sample of a release's failure sites (the procedure of samples 8-13).

The distinct user-facing site keys of ``data/inventory/sglang-VERSION.json`` (test/debug code,
the waivers whose ``right:`` is ``excluded``, left out), in the inventory's order, one site per
key, less every key judged before (judged-VERSION.yaml and judged-VERSION-sample*.yaml, or the
files given with ``--exclude-up-to``); then ``random.seed(SEED); random.sample(sites, N)``.

It prints each site's file, line, function, kind, exception and template, and never its
disposition: the judge reads SGLang's source, not the tool's answer.

    python scripts/draw_inventory_sample.py --seed 141414 --n 50
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import inventory_failures as inv_mod  # noqa: E402


def draw(version: str, seed: int, n: int, up_to: int | None = None) -> tuple[int, list[dict]]:
    out = inv_mod.DEFAULT_OUT
    inv = json.loads((out / f"sglang-{version}.json").read_text(encoding="utf-8"))
    disp = inv_mod.Dispositions.load()
    paths = [inv_mod.judged_path(version, out)] + sorted(out.glob(f"judged-{version}-sample*.yaml"))
    judged: set[str] = set()
    for path in paths:
        m = re.search(r"-sample(\d+)\.yaml$", path.name)
        if up_to is not None and m and int(m.group(1)) > up_to:
            continue
        if path.is_file():
            judged |= {e["key"] for e in (inv_mod._load_yaml(path) or {}).get("sites") or []}
    seen: set[str] = set()
    sites: list[dict] = []
    for site in inv_mod.iter_sites(inv):
        kind, _, name = site["disposition"].partition(":")
        if kind == "waiver" and disp.right.get(name) == "excluded":
            continue
        key = inv_mod.site_key(site)
        if key in seen or key in judged:
            continue
        seen.add(key)
        sites.append(site)
    random.seed(seed)
    order = {id(s): i for i, s in enumerate(sites)}
    return len(sites), sorted(random.sample(sites, n), key=lambda s: order[id(s)])  # the inventory's order


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default="0.5.23")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--exclude-up-to", type=int, default=None,
                    help="only the samples numbered up to this one count as judged before")
    args = ap.parse_args()
    pool, sample = draw(args.version, args.seed, args.n, args.exclude_up_to)
    print(f"# {pool} distinct user-facing keys not judged before; random.seed({args.seed}); random.sample(sites, {args.n})")
    for i, s in enumerate(sample, 1):
        print(json.dumps({"i": i, "key": inv_mod.site_key(s), "line": s["line"], "kind": s["kind"],
                          "exception": s["exception"]}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
