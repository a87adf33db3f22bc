#!/usr/bin/env python3
"""Check the real-log corpus labels (corpus/dev, corpus/heldout, corpus/fresh, corpus/late,
corpus/blind, corpus/unseen, corpus/sealed8, corpus/sealed9, corpus/sealed10, corpus/sealed11, corpus/sealed12,
corpus/sealed13, corpus/sealed14, corpus/sealed15, corpus/sealed16, corpus/sealed17, corpus/sealed18, corpus/sealed19, corpus/sealed20, corpus/sealed21, corpus/sealed22, corpus/sealed23, corpus/sealed24, corpus/sealed25, corpus/sealed26, corpus/sealed27, corpus/sealed28, corpus/sealed29, corpus/sealed30, corpus/sealed31, corpus/sealed32, corpus/sealed33, corpus/sealed34, corpus/sealed35, corpus/sealed36, corpus/sealed37, corpus/sealed38, corpus/sealed39, corpus/sealed40, corpus/sealed41, corpus/sealed42, corpus/sealed43, corpus/sealed44, corpus/sealed45, corpus/sealed46, corpus/field,
corpus/field9, corpus/field10, corpus/notes10, corpus/field11, corpus/field12, corpus/field13, corpus/field14, corpus/field15, corpus/field16, corpus/field17, corpus/field18, corpus/field19, corpus/field20, corpus/field21, corpus/field22, corpus/field23, corpus/field24, corpus/field25, corpus/field26, corpus/field27, corpus/field28, corpus/field29, corpus/field30, corpus/field31, corpus/field32, corpus/field33, corpus/field34, corpus/field35, corpus/field36, corpus/field37, corpus/field38 and corpus/field39).

For each part that exists: every *.log file has exactly one label, every label names an
existing file, the keys are those of CORPUS.md, categories and phases are valid, the
key_line is found in its file, thread numbers obey the split (dev and field: N % 3 != 0,
field9, field10 and field11: N % 3 == 2, field12: N even for sgl-project/sglang threads (any number
for other projects' threads), notes10: numberless operators' notes only,
heldout, fresh, late, blind, unseen and sealed8: N % 3 == 0, sealed9 and sealed10: N % 3 in {0, 1},
sealed11: N % 3 in {0, 1} for sgl-project/sglang threads, any number for other projects' threads;
sealed12: odd N for sgl-project/sglang threads, any number for other projects' threads;
sealed13: odd N for every repository's threads, and a numberless source only when its repository owner (or,
without a repository, its site's host name) starts with a letter a-m;
sealed14: the same split as sealed13 (odd N in any repository, numberless owners a-m);
sealed15: the same split as sealed13 and sealed14 (odd N in any repository, numberless owners a-m);
sealed16: the same split as sealed13 to sealed15 (odd N in any repository, numberless owners a-m);
sealed17: the same split as sealed13 to sealed16 (odd N in any repository, numberless owners a-m);
sealed18: the same split as sealed13 to sealed17 (odd N in any repository, numberless owners a-m);
sealed19: the same split as sealed13 to sealed18 (odd N in any repository, numberless owners a-m);
sealed20: the same split as sealed13 to sealed19 (odd N in any repository, numberless owners a-m);
sealed21: the same split as sealed13 to sealed20 (odd N in any repository, numberless owners a-m);
sealed22: the same split as sealed13 to sealed21 (odd N in any repository, numberless owners a-m);
sealed23: the same split as sealed13 to sealed22 (odd N in any repository, numberless owners a-m);
sealed24: the same split as sealed13 to sealed23 (odd N in any repository, numberless owners a-m);
sealed25: the same split as sealed13 to sealed24 (odd N in any repository, numberless owners a-m);
sealed26: the same split as sealed13 to sealed25 (odd N in any repository, numberless owners a-m);
sealed27: the same split as sealed13 to sealed26 (odd N in any repository, numberless owners a-m; a numberless web page
  without a repository is split by the last number in its URL path, odd = sealed27, and by its host name's first
  letter a-m only when the path holds no number);
sealed28: the same split as sealed27 (odd N in any repository, numberless owners a-m; numberless web pages by the last
  number in the URL path, odd = sealed28, else the host name's first letter a-m);
sealed29: the same split as sealed27 and sealed28 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed29, else the host name's first letter a-m);
sealed30: the same split as sealed27 to sealed29 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed30, else the host name's first letter a-m);
sealed31: the same split as sealed27 to sealed30 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed31, else the host name's first letter a-m);
sealed32: the same split as sealed27 to sealed31 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed32, else the host name's first letter a-m);
sealed33: the same split as sealed27 to sealed32 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed33, else the host name's first letter a-m);
sealed34: the same split as sealed27 to sealed33 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed34, else the host name's first letter a-m);
sealed35: the same split as sealed27 to sealed34 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed35, else the host name's first letter a-m);
sealed36: the same split as sealed27 to sealed35 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed36, else the host name's first letter a-m);
sealed37: the same split as sealed27 to sealed36 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed37, else the host name's first letter a-m);
sealed38: the same split as sealed27 to sealed37 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed38, else the host name's first letter a-m);
sealed39: the same split as sealed27 to sealed37 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed39, else the host name's first letter a-m);
sealed40: the same split as sealed27 to sealed39 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed40, else the host name's first letter a-m);
sealed41: the same split as sealed27 to sealed40 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed41, else the host name's first letter a-m);
sealed42: the same split as sealed27 to sealed41 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed42, else the host name's first letter a-m);
sealed43: the same split as sealed27 to sealed42 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed43, else the host name's first letter a-m);
sealed44: the same split as sealed27 to sealed43 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed44, else the host name's first letter a-m);
sealed45: the same split as sealed27 to sealed44 (odd N in any repository, numberless owners a-m; numberless web pages
  by the last number in the URL path, odd = sealed45, else the host name's first letter a-m);
sealed46: the same split as sealed27 to sealed44 (odd N in any repository other than sgl-project/sglang, numberless owners
  a-m; numberless web pages by the last number in the URL path, odd = sealed46, else the host name's first letter a-m);
field13: even N in any repository, and a numberless source only when its owner (or site) starts with n-z or a digit;
field14: the same split as field13 (even N, numberless owners n-z or a digit);
field15: the same split as field13 (even N, numberless owners n-z or a digit);
field16: the same split as field13 (even N, numberless owners n-z or a digit);
field17: the same split as field13 (even N, numberless owners n-z or a digit);
field18: the same split as field13 (even N, numberless owners n-z or a digit);
field19: the same split as field13 (even N, numberless owners n-z or a digit);
field20: the same split as field13 (even N, numberless owners n-z or a digit);
field21: the same split as field13 (even N, numberless owners n-z or a digit);
field22: the same split as field13 (even N, numberless owners n-z or a digit);
field23: the same split as field13 (even N, numberless owners n-z or a digit);
field24: the same split as field13 (even N, numberless owners n-z or a digit);
field25: the same split as field13 (even N, numberless owners n-z or a digit);
field26: the same split as field13 (even N, numberless owners n-z or a digit), and a web page (a numberless source
without a repository) by the last number in its URL path (even), or, when the path has no number, by its host's first
letter (n-z or a digit);
field27: the same split as field13 (even N, numberless owners n-z or a digit);
field28: the same split as field13 (even N, numberless owners n-z or a digit);
field29: the same split as field13 (even N, numberless owners n-z or a digit);
field30: the same split as field13 (even N, numberless owners n-z or a digit);
field31: the same split as field13 (even N, numberless owners n-z or a digit);
field32: the same split as field13 (even N, numberless owners n-z or a digit);
field33: the same split as field13 (even N, numberless owners n-z or a digit);
field34: the same split as field13 (even N, numberless owners n-z or a digit);
field35: the same split as field13 (even N, numberless owners n-z or a digit; a numberless web page by the
last number in its URL path, even);
field36: the same split as field35 (even N, numberless owners n-z or a digit; a numberless web page by the
last number in its URL path, even);
field37: the same split as field36 (even N, numberless owners n-z or a digit; a numberless web page by the
last number in its URL path, even, or by its host's first letter when the path holds no number);
field38: the same split as field37;
field39: the same split as field38;
numberless sources are allowed in every other part), and no source URL appears in two parts.
Usage: python3 corpus/check_labels.py [CORPUS_DIR]   (exit 0 = ok, 1 = problems)
"""
import os
import re
import sys

import yaml

CATEGORIES = {
    "memory.kv_pool", "memory.cuda_oom", "memory.host_oom", "nccl", "model.unsupported",
    "model.load", "args.invalid", "kernel.build", "kernel.unsupported_hw", "cuda_graph",
    "network.port", "runtime.crash", "other", "none",
}
PHASES = {
    "startup.args", "startup.distributed", "startup.load_weights", "startup.memory_pool",
    "startup.cuda_graph", "startup.warmup", "serving", "unknown",
}
KEYS = [
    "file", "source", "sglang_version", "hardware", "category", "phase", "key_line",
    "exception_type", "evidence_in_log", "fix_flags", "fix_env", "fix_source", "truncated",
    "cut_mid_line", "label_confidence", "notes",
]
SOURCE_KEYS = {"url", "repo", "number", "kind", "comment_by"}
KINDS = {"issue", "pull", "doc", "note"}
PARTS = {"dev": lambda n: n % 3 != 0, "heldout": lambda n: n % 3 == 0, "fresh": lambda n: n % 3 == 0,
         "late": lambda n: n % 3 == 0, "blind": lambda n: n % 3 == 0,
         "unseen": lambda n: n % 3 == 0, "sealed8": lambda n: n % 3 == 0,
         "sealed9": lambda n: n % 3 in (0, 1), "sealed10": lambda n: n % 3 in (0, 1),
         "sealed11": lambda n: n % 3 in (0, 1),
         "field": lambda n: n % 3 != 0, "field9": lambda n: n % 3 == 2, "field10": lambda n: n % 3 == 2,
         "field11": lambda n: n % 3 == 2, "field12": lambda n: n % 2 == 0,
         "sealed12": lambda n: n % 2 == 1,
         "sealed13": lambda n: n % 2 == 1,
         "sealed14": lambda n: n % 2 == 1,
         "sealed15": lambda n: n % 2 == 1,
         "sealed16": lambda n: n % 2 == 1,
         "sealed17": lambda n: n % 2 == 1,
         "sealed18": lambda n: n % 2 == 1,
         "sealed19": lambda n: n % 2 == 1,
         "sealed20": lambda n: n % 2 == 1,
         "sealed21": lambda n: n % 2 == 1,
         "sealed22": lambda n: n % 2 == 1,
         "sealed23": lambda n: n % 2 == 1,
         "sealed24": lambda n: n % 2 == 1,
         "sealed25": lambda n: n % 2 == 1,
         "sealed26": lambda n: n % 2 == 1,
         "sealed27": lambda n: n % 2 == 1,
         "sealed28": lambda n: n % 2 == 1,
         "sealed29": lambda n: n % 2 == 1,
         "sealed30": lambda n: n % 2 == 1,
         "sealed31": lambda n: n % 2 == 1,
         "sealed32": lambda n: n % 2 == 1,
         "sealed33": lambda n: n % 2 == 1,
         "sealed34": lambda n: n % 2 == 1,
         "sealed35": lambda n: n % 2 == 1,
         "sealed36": lambda n: n % 2 == 1,
         "sealed37": lambda n: n % 2 == 1,
         "sealed38": lambda n: n % 2 == 1,
         "sealed39": lambda n: n % 2 == 1,
         "sealed40": lambda n: n % 2 == 1,
         "sealed41": lambda n: n % 2 == 1,
         "sealed42": lambda n: n % 2 == 1,
         "sealed43": lambda n: n % 2 == 1,
         "sealed44": lambda n: n % 2 == 1,
         "sealed45": lambda n: n % 2 == 1,
         "sealed46": lambda n: n % 2 == 1,
         "field13": lambda n: n % 2 == 0,
         "field14": lambda n: n % 2 == 0,
         "field15": lambda n: n % 2 == 0,
         "field16": lambda n: n % 2 == 0,
         "field17": lambda n: n % 2 == 0,
         "field18": lambda n: n % 2 == 0,
         "field19": lambda n: n % 2 == 0,
         "field20": lambda n: n % 2 == 0,
         "field21": lambda n: n % 2 == 0,
         "field22": lambda n: n % 2 == 0,
         "field23": lambda n: n % 2 == 0,
         "field24": lambda n: n % 2 == 0,
         "field25": lambda n: n % 2 == 0,
         "field26": lambda n: n % 2 == 0,
         "field27": lambda n: n % 2 == 0,
         "field28": lambda n: n % 2 == 0,
         "field29": lambda n: n % 2 == 0,
         "field30": lambda n: n % 2 == 0,
         "field31": lambda n: n % 2 == 0,
         "field32": lambda n: n % 2 == 0,
         "field33": lambda n: n % 2 == 0,
         "field34": lambda n: n % 2 == 0,
         "field35": lambda n: n % 2 == 0,
         "field36": lambda n: n % 2 == 0,
         "field37": lambda n: n % 2 == 0,
         "field38": lambda n: n % 2 == 0,
         "field39": lambda n: n % 2 == 0,
         "notes10": lambda n: False}
# Parts whose split rule binds only sgl-project/sglang's own threads (threads of projects that run
# SGLang may have any number there).
SGLANG_ONLY_SPLIT = {"sealed11", "sealed12", "field12"}
# Parts whose numberless sources are split by the first letter of the repository owner (or, for a source
# without a repository, of the site's host name without a leading "www."): the letters a part may take.
NUMBERLESS_OWNER_SPLIT = {"sealed13": "abcdefghijklm", "sealed14": "abcdefghijklm", "sealed15": "abcdefghijklm",
                          "sealed16": "abcdefghijklm", "sealed17": "abcdefghijklm",
                          "sealed18": "abcdefghijklm",
                          "sealed19": "abcdefghijklm",
                          "sealed20": "abcdefghijklm",
                          "sealed21": "abcdefghijklm",
                          "sealed22": "abcdefghijklm",
                          "sealed23": "abcdefghijklm",
                          "sealed24": "abcdefghijklm",
                          "sealed25": "abcdefghijklm",
                          "sealed26": "abcdefghijklm",
                          "sealed27": "abcdefghijklm",
                          "sealed28": "abcdefghijklm",
                          "sealed29": "abcdefghijklm",
                          "sealed30": "abcdefghijklm",
                          "sealed31": "abcdefghijklm",
                          "sealed32": "abcdefghijklm",
                          "sealed33": "abcdefghijklm",
                          "sealed34": "abcdefghijklm",
                          "sealed35": "abcdefghijklm",
                          "sealed36": "abcdefghijklm",
                          "sealed37": "abcdefghijklm",
                          "sealed38": "abcdefghijklm",
                          "sealed39": "abcdefghijklm",
                          "sealed40": "abcdefghijklm",
                          "sealed41": "abcdefghijklm",
                          "sealed42": "abcdefghijklm",
                          "sealed43": "abcdefghijklm",
                          "sealed44": "abcdefghijklm",
                          "sealed45": "abcdefghijklm",
                          "sealed46": "abcdefghijklm",
                          "field13": "nopqrstuvwxyz0123456789",
                          "field14": "nopqrstuvwxyz0123456789", "field15": "nopqrstuvwxyz0123456789",
                          "field16": "nopqrstuvwxyz0123456789", "field17": "nopqrstuvwxyz0123456789",
                          "field18": "nopqrstuvwxyz0123456789", "field19": "nopqrstuvwxyz0123456789",
                          "field20": "nopqrstuvwxyz0123456789",
                          "field21": "nopqrstuvwxyz0123456789",
                          "field22": "nopqrstuvwxyz0123456789",
                          "field23": "nopqrstuvwxyz0123456789",
                          "field24": "nopqrstuvwxyz0123456789",
                          "field25": "nopqrstuvwxyz0123456789",
                          "field26": "nopqrstuvwxyz0123456789",
                          "field27": "nopqrstuvwxyz0123456789",
                          "field28": "nopqrstuvwxyz0123456789",
                          "field29": "nopqrstuvwxyz0123456789",
                          "field30": "nopqrstuvwxyz0123456789",
                          "field31": "nopqrstuvwxyz0123456789",
                          "field32": "nopqrstuvwxyz0123456789",
                          "field33": "nopqrstuvwxyz0123456789",
                          "field34": "nopqrstuvwxyz0123456789",
                          "field35": "nopqrstuvwxyz0123456789",
                          "field36": "nopqrstuvwxyz0123456789",
                          "field37": "nopqrstuvwxyz0123456789",
                          "field38": "nopqrstuvwxyz0123456789",
                          "field39": "nopqrstuvwxyz0123456789"}


# Parts whose numberless web pages (no repository) are split first by the last number in the URL path: the
# parity a part takes (1 = odd); a page whose path holds no number falls back to NUMBERLESS_OWNER_SPLIT's host letter.
WEB_PAGE_NUMBER_SPLIT = {"sealed27": 1, "sealed28": 1, "sealed29": 1, "sealed30": 1, "sealed31": 1, "sealed32": 1, "sealed33": 1, "sealed34": 1, "sealed35": 1, "sealed36": 1, "sealed37": 1, "sealed38": 1, "sealed39": 1, "sealed40": 1, "sealed41": 1, "sealed42": 1, "sealed43": 1, "sealed44": 1, "sealed45": 1, "sealed46": 1, "field26": 0, "field35": 0, "field36": 0, "field37": 0, "field38": 0, "field39": 0}


def web_page_number(src):
    """The last number in a repository-less source's URL path, or None (a source with a repository, or no number)."""
    if src.get("repo"):
        return None
    url = src.get("url") or ""
    path = url.split("://", 1)[-1].split("/", 1)[1] if "/" in url.split("://", 1)[-1] else ""
    path = path.split("?", 1)[0].split("#", 1)[0]
    numbers = re.findall(r"\d+", path)
    return int(numbers[-1]) if numbers else None


def numberless_owner(src):
    """The name a numberless source is split by: its repository's owner, else its URL's host name."""
    repo = src.get("repo")
    if isinstance(repo, str) and "/" in repo:
        return repo.split("/", 1)[0].lower()
    url = src.get("url") or ""
    host = url.split("://", 1)[-1].split("/", 1)[0].lower()
    return host[4:] if host.startswith("www.") else host


def check_part(root, part, errors):
    d = os.path.join(root, part)
    path = os.path.join(d, "labels.yaml")
    if not os.path.exists(path):
        errors.append(f"{part}: no labels.yaml")
        return set(), 0
    try:
        labels = yaml.safe_load(open(path, encoding="utf-8"))
    except yaml.YAMLError as e:
        errors.append(f"{part}: labels.yaml does not parse: {e}")
        return set(), 0
    if not isinstance(labels, list):
        errors.append(f"{part}: labels.yaml is not a list")
        return set(), 0
    files = {f for f in os.listdir(d) if f.endswith(".log")}
    seen, urls = {}, set()
    for i, e in enumerate(labels):
        where = f"{part}[{i}]"
        if not isinstance(e, dict):
            errors.append(f"{where}: entry is not a mapping")
            continue
        name = e.get("file")
        where = f"{part}/{name}"
        seen[name] = seen.get(name, 0) + 1
        missing = [k for k in KEYS if k not in e]
        if missing:
            errors.append(f"{where}: missing keys {missing}")
        extra = set(e) - set(KEYS) - {"best_guess_category"}
        if extra:
            errors.append(f"{where}: unknown keys {sorted(extra)}")
        if name not in files:
            errors.append(f"{where}: no such file")
            continue
        prefix = name.split("-")
        if len(prefix) < 3 or not prefix[0].isdigit():
            errors.append(f"{where}: name is not NNN-category-slug.log")
        elif prefix[1] != e.get("category"):
            errors.append(f"{where}: category in name ({prefix[1]}) differs from label ({e.get('category')})")
        if e.get("category") not in CATEGORIES:
            errors.append(f"{where}: bad category {e.get('category')!r}")
        if e.get("phase") not in PHASES:
            errors.append(f"{where}: bad phase {e.get('phase')!r}")
        if e.get("label_confidence") not in {"high", "medium", "low"}:
            errors.append(f"{where}: bad label_confidence")
        for k in ("evidence_in_log", "truncated", "cut_mid_line"):
            if not isinstance(e.get(k), bool):
                errors.append(f"{where}: {k} must be a bool")
        for k in ("fix_flags", "fix_env"):
            if e.get(k) is not None and not isinstance(e.get(k), dict):
                errors.append(f"{where}: {k} must be a mapping")
        if e.get("evidence_in_log") is False:
            if e.get("best_guess_category") not in CATEGORIES:
                errors.append(f"{where}: evidence_in_log false needs a valid best_guess_category")
        src = e.get("source")
        if not isinstance(src, dict) or set(src) != SOURCE_KEYS:
            errors.append(f"{where}: source must have exactly {sorted(SOURCE_KEYS)}")
        else:
            if src.get("kind") not in KINDS:
                errors.append(f"{where}: bad source.kind {src.get('kind')!r}")
            n = src.get("number")
            page_n = web_page_number(src) if n is None and part in WEB_PAGE_NUMBER_SPLIT else None
            if page_n is not None:
                if page_n % 2 != WEB_PAGE_NUMBER_SPLIT[part]:
                    errors.append(f"{where}: web page number {page_n} belongs to the other part")
            elif n is None and part in NUMBERLESS_OWNER_SPLIT:
                owner = numberless_owner(src)
                if not owner or owner[0] not in NUMBERLESS_OWNER_SPLIT[part]:
                    errors.append(f"{where}: numberless source {owner!r} belongs to the other part")
            if n is not None:
                if not isinstance(n, int):
                    errors.append(f"{where}: source.number must be an int or null")
                elif part in SGLANG_ONLY_SPLIT and src.get("repo") != "sgl-project/sglang":
                    pass
                elif not PARTS[part](n):
                    errors.append(f"{where}: thread #{n} belongs to the other part")
            if src.get("url"):
                urls.add(src["url"])
        text = open(os.path.join(d, name), encoding="utf-8", errors="replace").read()
        lines = text.split("\n")
        kl = e.get("key_line")
        if kl is not None:
            if not isinstance(kl, str) or not kl:
                errors.append(f"{where}: key_line must be a non-empty string or null")
            elif kl not in lines and not any(kl in line for line in lines):
                errors.append(f"{where}: key_line not found in the file")
    for name, c in seen.items():
        if c > 1:
            errors.append(f"{part}/{name}: labelled {c} times")
    for name in sorted(files - set(seen)):
        errors.append(f"{part}/{name}: no label")
    return urls, len(labels)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    errors, urls = [], {}
    for part in PARTS:
        if os.path.isdir(os.path.join(root, part)):
            urls[part], n = check_part(root, part, errors)
            print(f"{part}: {n} labels")
    names = sorted(urls)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            for u in sorted(urls[a] & urls[b]):
                errors.append(f"URL in both {a} and {b}: {u}")
    for e in errors:
        print("ERROR", e)
    print("ok" if not errors else f"{len(errors)} problem(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
