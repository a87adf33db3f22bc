#!/usr/bin/env bash
# Long coverage-guided fuzz run of the server_args parser and the traceback assembler.
#   tests/fuzz/run_fuzz.sh [SECONDS_PER_TARGET]      (default 300)
# Makes a scratch venv with atheris under ${FUZZ_VENV:-/tmp/sglang-doctor-fuzz-venv} (never
# touches the project's .venv), seeds corpora from fixtures/, prints libFuzzer's figures.
# Without atheris (no wheel for this Python), falls back to the hypothesis tests at high
# example counts: FUZZ_EXAMPLES (default 200000) per target.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_TARGET=${1:-300}
VENV=${FUZZ_VENV:-/tmp/sglang-doctor-fuzz-venv}
WORK=${FUZZ_WORK:-/tmp/sglang-doctor-fuzz}
PY=${PYTHON:-python3}
if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check click rich regex watchdog PyYAML hypothesis pytest
  "$VENV/bin/pip" install -q --disable-pip-version-check atheris || echo "atheris did not install; using hypothesis"
fi
# FUZZ_SRC: the checkout whose sglang_doctor is fuzzed (default: this one)
export PYTHONPATH="${FUZZ_SRC:-$PWD}${PYTHONPATH:+:$PYTHONPATH}"
if ! "$VENV/bin/python" -c "import atheris" 2>/dev/null; then
  FUZZ_EXAMPLES=${FUZZ_EXAMPLES:-200000} exec "$VENV/bin/python" -m pytest -q -m slow tests/fuzz/test_fuzz_long.py -p no:cacheprovider
fi
mkdir -p "$WORK"
"$VENV/bin/python" - "$WORK" <<'PY'
import hashlib, sys
from pathlib import Path
sys.path.insert(0, "tests/fuzz")
import fuzz_targets as t
work = Path(sys.argv[1])
for name, seeds in (("server_args", [b"\x00\x01" + d for d in t.seed_dumps()]), ("assembler", t.seed_logs())):
    d = work / f"corpus_{name}"
    d.mkdir(parents=True, exist_ok=True)
    for s in seeds:
        (d / hashlib.sha1(s).hexdigest()).write_bytes(s)
PY
for target in server_args assembler; do
  echo "== $target: ${SECONDS_PER_TARGET}s"
  (cd "$WORK" && "$VENV/bin/python" "$OLDPWD/tests/fuzz/fuzz_atheris.py" "$target" "corpus_$target" \
     -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -print_final_stats=1 -artifact_prefix="$WORK/$target-") 2>&1 \
     | grep -E "^(#[0-9]+ +(DONE|pulse)|stat::|==|.*Error|.*crash)" | tail -15
done
