"""Lines of a healthy launch that quote a failure's words but are not failures (session 24, fa24).

- NCCL <= 2.18 WARNs about every InfiniBand port event, the subnet manager's routine ones
  (a GID table change, a client reregistration, a port coming up) included: no incident; its
  error events ("port error") stay failures.
- RCCL's ncclInit prints its advice about the host's kernel settings with NCCL WARN on every
  healthy start of a host that has them ("NUMA auto balancing enabled ...", 'Missing "iommu=pt"
  from kernel command line ...') and goes on initialising: no incident;  other NCCL WARN lines
  stay failures.
- A line that says it will try again is not a failure, whatever error it quotes: urllib3's
  "Retrying (Retry(total=N, ...)) after connection broken by 'NewConnectionError(... Failed to
  establish a new connection ...)'", SGLang 0.5.23's "Prefill register attempt N/M failed: ..."
  while N < M (disaggregation/common/conn.py ``_register_topology_row``), MooncakeStore's
  "Warmup put failed (attempt N/M), ..., retrying in Ns...".  The last attempt (N == M) and the
  error a caller logs once its retries ran out ("Error fetching prefill parallel info from
  bootstrap: ... Max retries exceeded ...", tuned dev/086) stay evidence.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_doctor.incidents import signals
from tests.incidents.test_record_exception import explain_file

ROOT = Path(__file__).resolve().parents[2]
REFUSED = ("HTTPConnectionPool(host='10.0.0.2', port=8998): Max retries exceeded with url: /route (Caused by "
           "NewConnectionError(\"HTTPConnection(host='10.0.0.2', port=8998): Failed to establish a new connection: "
           "[Errno 111] Connection refused\"))")
RCCL = "mi300-node:41207:41207 [0] /src/rccl/hipify/src/init.cc:{n} NCCL WARN {text}"


@pytest.mark.parametrize("line, name", [
    (RCCL.format(n=140, text='NUMA auto balancing enabled which can lead to variability in the RCCL performance! '
                             'Disable by "sudo sysctl kernel.numa_balancing=0"'), "nccl_routine_warn"),
    (RCCL.format(n=161, text='Missing "iommu=pt" from kernel command line which can lead to system instablity or hang!'),
     "nccl_routine_warn"),
    # NCCL <= 2.18's WARN for an InfiniBand port event that is not an error
    ("n1:2301:2330 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : mlx5_0:1 Got async event : GID table change",
     "nccl_routine_warn"),
    ("n1:2301:2330 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : client reregistration",
     "nccl_routine_warn"),
    # other WARN lines of NCCL/RCCL are failures as before
    (RCCL.format(n=300, text="Cuda failure 'out of memory'"), "nccl_warn"),
    ("gpu-node-1:2301:2330 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got async event : port error", "nccl_warn"),
    # retries
    ("WARNING:urllib3.connectionpool:Retrying (Retry(total=2, connect=None, read=None, redirect=None, status=None)) "
     "after connection broken by 'NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f1>: Failed to "
     "establish a new connection: [Errno 111] Connection refused')': /health", "connection_retry"),
    (f"[2026-02-19 16:30:05] Prefill register attempt 1/5 failed: {REFUSED}", "connection_retry"),
    ("[2026-02-19 16:30:05] Prefill register attempt 1/10 failed: status 500", "connection_retry"),
    ("[2026-02-19 16:30:05] [TP0] Warmup put failed (attempt 2/3), ret=-1, retrying in 1s...", "connection_retry"),
    # the last attempt, and the caller's error once the retries ran out: evidence
    (f"[2026-02-19 16:30:05] Prefill register attempt 5/5 failed: {REFUSED}", "transfer_error"),
    (f"[2026-02-19 16:32:42 TP5] Error fetching prefill parallel info from bootstrap: {REFUSED}", "transfer_error"),
])
def test_advice_and_retries_are_told_from_failures(line: str, name: str | None):
    found = signals.classify(line)
    assert (found[0].name if found else None) == name


def test_the_rccl_advice_fragment_raises_no_incident():
    assert explain_file(ROOT / "fixtures" / "healthy" / "rccl_host_settings_warn_fragment.log") == []


HEAD = ("[2026-02-19 16:30:01] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=1, "
        "disaggregation_mode='prefill', disaggregation_transfer_backend='mooncake', port=30000)\n")
LOAD = "[2026-02-19 16:30:09 TP0] Load weight begin. avail mem=78.50 GB\n"


def test_register_retries_before_the_load_raise_no_incident(tmp_path: Path):
    log = tmp_path / "prefill.log"
    log.write_text(HEAD + "".join(f"[2026-02-19 16:30:0{n}] Prefill register attempt {n}/5 failed: {REFUSED}\n"
                                  for n in (1, 2, 3)) + LOAD)
    assert explain_file(log) == []


def test_the_last_register_attempt_is_an_incident(tmp_path: Path):
    log = tmp_path / "prefill.log"
    log.write_text(HEAD + "".join(f"[2026-02-19 16:30:0{n}] Prefill register attempt {n}/5 failed: {REFUSED}\n"
                                  for n in (1, 2, 3, 4, 5))
                   + "[2026-02-19 16:30:08] Prefill instance failed to register to bootstrap server after 5 retries\n")
    found = explain_file(log)
    assert len(found) == 1 and found[0]["lines"][0] == 6


def test_a_failed_bootstrap_registration_stays_an_incident_after_the_ready_line(tmp_path: Path):
    """The PD warm-up goes to a fake bootstrap host: the ready line proves nothing about the
    bootstrap server, whatever the last attempt's cause said (survived.py TRANSPORT_LITERALS)."""
    text = (ROOT / "fixtures" / "nccl" / "pd_bootstrap_register_failed_0523.log").read_text()
    lines = [("[2026-04-02 09:10:56 TP0] Prefill register attempt 5/5 failed: status 503\n"
              if "attempt 5/5" in ln else ln) for ln in text.splitlines(keepends=True)]
    log = tmp_path / "prefill.log"
    log.write_text("".join(lines))
    found = explain_file(log)
    assert [i["rule"] for i in found] == ["nccl.pd_bootstrap_register_failed"]


@pytest.mark.parametrize("event, rule", [("GID table change", None), ("port error", "nccl.ib_transport")])
def test_an_ib_port_event_is_a_failure_only_when_it_is_an_error(tmp_path: Path, event: str, rule: str | None):
    """Before: the routine event formed an incident through nccl.ib_transport's literal."""
    log = tmp_path / "ib.log"
    log.write_text("[2026-01-01 00:00:01 TP0] Init torch distributed begin.\n"
                   f"gpu-node-1:2301:2330 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : mlx5_0:1 Got async event : {event}\n"
                   "[2026-01-01 00:00:02 TP0] Load weight begin. avail mem=70.00 GB\n")
    assert [i["rule"] for i in explain_file(log)] == ([rule] if rule else [])
