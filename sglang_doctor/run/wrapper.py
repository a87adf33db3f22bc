"""The small POSIX sh program that owns the server's lifetime, here or behind ``--via``.

``run`` never starts the server directly: it starts ``sh -c WRAPPER`` (locally, or on the far
side of the ``--via`` prefix), with the doctor holding the wrapper's standard input.  The
wrapper

- makes a private run directory ``${TMPDIR:-/tmp}/sglang-doctor.TOKEN`` (``mkdir -m 700``, so
  an existing file or link there is an error, never followed) and writes the server's pid
  (= its process group and session id) to ``pid`` in it;
- starts the server with ``setsid`` (its own session and process group; the server's
  standard input is /dev/null) and waits for it;
- reads commands on its standard input: ``watch`` (the doctor is attached), ``term``
  (SIGTERM to the server's main process), ``kill`` (SIGKILL to its whole group), ``detach``
  (stop watching: the server is left running on purpose);
- when its standard input reaches end-of-file without ``detach`` (the doctor exited or was
  SIGKILLed, or the ssh connection dropped: ssh without ``-t`` does not signal the remote
  side on hang-up, but the remote read does see EOF), it sends SIGTERM to the server and
  SIGKILL to its whole group after the grace period;
- after the server's main process exited, gives lingering members of its group the grace
  period, kills them, removes the run directory and exits with the server's status
  (128+N when a signal N killed it).

``stop_script`` is the same stop sent through the prefix as a separate command, by the pid
file, for when the wrapper's input is no longer connected.

Every value reaches the wrapper as a positional argument ("$1", "$@"), never inside the
script's text: the token is hex from ``secrets``, the grace an integer.
"""

from __future__ import annotations

import secrets
import shlex

# $1 token, $2 grace seconds (stop), $3 reap seconds (lingering members), $4... the server's argv
WRAPPER = r'''
token=$1; grace=$2; reap=$3; shift 3
d="${TMPDIR:-/tmp}/sglang-doctor.$token"
mkdir -m 700 "$d" || { echo "[sglang-doctor] cannot create $d" >&2; exit 125; }
command -v "$1" >/dev/null 2>&1 || { echo "[sglang-doctor] command not found: $1" >&2; rmdir "$d"; exit 127; }
exec 3<&0
if command -v setsid >/dev/null 2>&1; then
  setsid "$@" </dev/null &
  pid=$!; pg=$pid
else
  "$@" </dev/null &
  pid=$!; pg=$$
fi
echo "$pid" > "$d/pid.tmp" && mv "$d/pid.tmp" "$d/pid"
group_alive() { kill -0 "-$pg" 2>/dev/null; }
take_down() {
  kill -TERM "$pid" 2>/dev/null
  i=0
  while [ "$i" -lt "$grace" ] && group_alive; do sleep 1; i=$((i + 1)); done
  kill -KILL "-$pg" 2>/dev/null
}
(
  watched=0
  while IFS= read -r cmd; do
    case $cmd in
      watch) watched=1 ;;
      term) kill -TERM "$pid" 2>/dev/null ;;
      kill) kill -KILL "-$pg" 2>/dev/null ;;
      detach) exit 0 ;;
    esac
  done
  if [ "$watched" = 1 ]; then
    echo "[sglang-doctor] lost the connection to sglang-doctor: stopping the server's process group" >&2
    take_down
  fi
) <&3 >/dev/null &
watcher=$!
exec 3<&-
wait "$pid" 2>/dev/null; status=$?  # no "Killed" of ours in the server's log
i=0
while [ "$i" -lt "$reap" ] && group_alive; do sleep 1; i=$((i + 1)); done
kill -KILL "-$pg" 2>/dev/null
kill "$watcher" 2>/dev/null
rm -rf "$d"
exit "$status"
'''

# $1 token, $2 "term" | "kill" | "alive" | "pid"
STOP = r'''
f="${TMPDIR:-/tmp}/sglang-doctor.$1/pid"
[ -f "$f" ] || exit 3
pid=$(cat "$f")
case $pid in ''|*[!0-9]*) exit 4 ;; esac
case $2 in
  term) kill -TERM "$pid" 2>/dev/null ;;
  kill) kill -KILL "-$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null ;;
  alive) kill -0 "-$pid" 2>/dev/null || kill -0 "$pid" 2>/dev/null ;;
  pid) echo "$pid" ;;
esac
'''

# $1 URL: curl on the far side, else python3
HEALTH = r'''
if command -v curl >/dev/null 2>&1; then
  curl -s -o /dev/null -w '%{http_code}' --max-time "$2" "$1"
else
  python3 -c 'import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2])).status, end="")
except urllib.error.HTTPError as e:
    print(e.code, end="")
except Exception:
    print("000", end="")' "$1" "$2"
fi
'''

SHELL_PREFIXES = ("ssh", "autossh")


def new_token() -> str:
    return secrets.token_hex(8)


def goes_through_shell(via: list[str], quoting: str = "auto") -> bool:
    """Whether the prefix hands its arguments to a remote shell (ssh joins them with spaces
    and the remote login shell parses the line), so each element must be quoted.

    ``auto``: yes when the prefix's program is ssh/autossh; ``shell``: always; ``none``:
    never (``pct exec 129 --``, ``docker exec -i CTR``, ``nsenter ...``, ``env``: these pass
    argv on as it is)."""
    if quoting == "shell":
        return True
    if quoting == "none" or not via:
        return False
    return via[0].rsplit("/", 1)[-1] in SHELL_PREFIXES


def through(via: list[str], argv: list[str], quoting: str = "auto") -> list[str]:
    """``argv`` run behind the prefix: quoted into one word for a remote shell, else as is."""
    if not via:
        return list(argv)
    if goes_through_shell(via, quoting):
        return [*via, shlex.join(argv)]
    return [*via, *argv]


def launch_argv(command: list[str], token: str, grace: float, via: list[str], quoting: str = "auto",
                reap: float = 5.0) -> list[str]:
    inner = ["sh", "-c", WRAPPER, "sglang-doctor-wrapper", token, str(max(1, int(round(grace)))),
             str(max(1, int(round(reap)))), *command]
    return through(via, inner, quoting)


def stop_argv(token: str, action: str, via: list[str], quoting: str = "auto") -> list[str]:
    return through(via, ["sh", "-c", STOP, "sglang-doctor-stop", token, action], quoting)


def health_argv(url: str, timeout: float, via: list[str], quoting: str = "auto") -> list[str]:
    return through(via, ["sh", "-c", HEALTH, "sglang-doctor-health", url, str(max(1, int(timeout)))], quoting)
