"""kubectl logs --prefix puts ``[pod/NAME/CONTAINER] `` before every line (kubectl's logs
command: the pod's kind, name and container); it comes off as the other collectors' do."""

import pytest

from sglang_doctor.read.records import strip_outer


@pytest.mark.parametrize("line, rest", [
    ("[pod/sglang-0/sglang] [2026-01-01 00:00:30 TP0] Scheduler hit an exception: Traceback (most recent call last):",
     "[2026-01-01 00:00:30 TP0] Scheduler hit an exception: Traceback (most recent call last):"),
    ('[pod/sglang-deploy-7c9f8d-x2k4q/server]   File "/x.py", line 3, in f', '  File "/x.py", line 3, in f'),
    ("[pod/sglang-0/sglang] ValueError: x", "ValueError: x"),
])
def test_kubectl_prefix_comes_off(line, rest):
    assert strip_outer(line) == rest


@pytest.mark.parametrize("line", ["[pod/x] not a prefix", "[2026-01-01 00:00:30 TP0] pod/a/b", "[pods/a/b] x"])
def test_other_brackets_stay(line):
    assert strip_outer(line) == line
