"""A C++ client's glog E line "Failed to start <name> operation: <code>" is one operation of a
running client that failed, not a component that could not start (signals.py component_failed).

Mooncake's store client logs it for a put the store has no room for (client.cpp, "Failed to start
put operation: NO_AVAILABLE_HANDLE", then store_py.cpp's "Put operation failed with error: ...");
SGLang's HiCache storage backend gets the error code back, drops that write and goes on serving.
The lines are sgl-project/sglang#6836's (corpus/field25/005)."""

from conftest import streamed_incidents


def incidents_of(text: str):
    return streamed_incidents(text)[0]


STORE_PUT_FAILED = (
    "[2025-06-16 07:25:02 DP7 TP7] Connect to Mooncake store successfully.\n"
    "E0616 07:25:02.248354 40411 client.cpp:380] Failed to start put operation: NO_AVAILABLE_HANDLE\n"
    "E0616 07:25:02.248379 40411 store_py.cpp:372] Put operation failed with error: NO_AVAILABLE_HANDLE\n"
)


def test_a_store_clients_failed_put_is_not_an_incident():
    assert incidents_of(STORE_PUT_FAILED) == []


def test_a_glog_component_that_could_not_start_still_is():
    # the same glog shape naming a component, not an operation, stays a failure to start
    (inc,) = incidents_of("E0616 07:25:02.248354 40411 master.cpp:52] Failed to start master service: "
                          "address already in use\n")
    assert "component_failed" in inc.signal_names
