"""bash's "<script>: line N: <pid> Killed  <command>" is how the shell reports any job that died
of SIGKILL.  When the same log shows the operator's (or their script's) own ``kill -9 <pid>`` of
that pid -- ``set -x`` echoes it as "+ kill -9 <pid>" -- the Killed line is that kill, not the
kernel OOM killer, and not an incident (notes10/005: a benchmark driver kill -9s its server after
GSM8K).  Without that kill, or with a kill of another pid, the Killed line stays evidence."""

from conftest import streamed_incidents

HEAD = """Accuracy: 0.941
Invalid: 0.001
+ echo '>>> killing server ...'
"""
KILLED = ("/home/u/bench/run.sh: line 62: 18229 Killed                  python3 -m sglang.launch_server "
          "--model /data/m --tp 8 --port 8552 > \"$SERVER_LOG\" 2>&1\n")
TAIL = "DONE TP=8\n+ grep -E 'Accuracy:' /home/u/bench/Accuracy_GSM8K.log\nAccuracy: 0.941\n"


def incidents_of(text: str):
    return streamed_incidents(text)[0]


def test_killed_after_the_operators_own_kill_9_of_that_pid_is_not_an_incident():
    log = HEAD + "+ kill -9 18229\n>>> killing server ...\n+ pkill -9 -f sglang::scheduler\n+ sleep 3\n" + KILLED + TAIL
    assert incidents_of(log) == []


def test_a_kill_typed_after_a_prompt_counts_too():
    log = "(sglang) user@box:~$ kill -9 18229\n" + KILLED
    assert incidents_of(log) == []


def test_killed_without_a_kill_of_its_pid_stays_evidence():
    for before in ("", "+ kill -9 4242\n", "+ pkill -9 -f vllm.entrypoints\n", "+ pkill -f sglang.launch_server\n",
                   "+ pkill -9 -f 'sglang.*server'\n", "+ kill 18229\n"):
        incs = incidents_of(HEAD + before + KILLED + TAIL)
        assert [i.signal_names for i in incs] == [["killed"]], before


def test_killed_after_a_pkill_9_of_its_command_is_not_an_incident():
    """``pkill -9 -f PATTERN`` / ``killall -9 NAME`` name no pid: the Killed report whose command
    holds the pattern (read as a literal; a regex's escaped dot too) is that kill.  A pattern
    with other regex syntax, a kill without SIGKILL, or another command's pattern stays
    evidence (above)."""
    for before in ("+ pkill -9 -f sglang.launch_server\n", "+ pkill -9 -f 'sglang\\.launch_server'\n",
                   "$ sudo pkill -KILL -f sglang\n", "+ killall -9 python3\n", "+ pkill -s KILL -f launch_server\n"):
        assert incidents_of(HEAD + before + KILLED + TAIL) == [], before
    bare = incidents_of(HEAD + "+ pkill -9 -f sglang.launch_server\nKilled\n" + TAIL)
    assert [i.signal_names for i in bare] == [["killed"]]  # a bare Killed names no command


def test_a_kill_of_a_job_number_ends_that_job():
    job = "[1]+  Killed                  python3 -m sglang.launch_server --model /data/m --tp 8\n"
    assert incidents_of("$ kill -9 %1\n" + job) == []
    assert [i.signal_names for i in incidents_of("$ kill -9 %2\n" + job)] == [["killed"]]


def test_the_kill_echo_joined_with_other_lines_or_behind_a_logger_counts_too():
    """A browser's copy that joined runs of lines with two spaces (the echo starts and ends at two
    spaces inside a line), or a wrapper's logger prefix before each line it relayed."""
    joined = ("Output throughput: 2000.590 token/s  + echo '>>> killing server ...'  + kill -9 18229  "
              ">>> killing server ...\n+ sleep 3  " + KILLED)
    assert incidents_of(HEAD + joined + TAIL) == []
    logged = "[2025-06-01 08:15:02,123][rollout][ERROR] - "
    assert incidents_of(HEAD + logged + "+ kill -9 18229\n" + logged + KILLED + TAIL) == []
    # another pid's kill joined the same way, or a kill named in prose, leaves the Killed line evidence
    for before in ("Latency: 64 s  + kill -9 4242  >>> killing server ...\n", "see: kill -9 18229 in the docs\n",
                   "a+ kill -9 18229\n"):
        incs = incidents_of(HEAD + before + KILLED + TAIL)
        assert [i.signal_names for i in incs] == [["killed"]], before
