"""A page that strips HTML-like tags (a proxy or text copy of an issue page) turns Python's
``in <module>`` into a bare ``in``: the frame's file and line are still Python's frame format
and must still be read as a frame (field37/007's shape, sgl-project/sglang#14814 via a proxy)."""

from sglang_doctor.incidents import tracebacks
from sglang_doctor.pipeline import StreamPipeline

STRIPPED = """[2025-12-10 17:42:05] WARNING server_args.py:1391: Attention backend not explicitly specified.
Traceback (most recent call last):
File "", line 198, in _run_module_as_main
File "", line 88, in _run_code
File "/opt/sglang/python/sglang/launch_server.py", line 25, in
server_args = prepare_server_args(sys.argv[1:])
^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
File "/opt/sglang/python/sglang/srt/server_ar"""


def test_a_frame_whose_function_name_was_stripped_is_a_frame():
    line = 'File "/opt/sglang/python/sglang/launch_server.py", line 25, in'
    assert tracebacks.is_frame(line)
    frame = tracebacks.parse_frame(line)
    assert frame is not None and frame.line == 25 and frame.file.endswith("launch_server.py")
    assert frame.function == "?"


def test_a_word_that_only_starts_with_in_is_not_a_function_slot():
    assert not tracebacks.is_frame('File "/opt/x.py", line 25, inner')


def test_the_stripped_launcher_frame_places_the_failure_before_serving():
    pipe = StreamPipeline(whole_log=True)
    events = pipe.feed(STRIPPED.encode()) + pipe.finish()
    diagnoses = [e["_diagnosis"] for e in events if e["event"] == "incident"]
    assert len(diagnoses) == 1
    frames = diagnoses[0].incident.frames
    assert any(f.file.endswith("/sglang/launch_server.py") and f.line == 25 for f in frames)
    # the launcher's frame says the launch's arguments were being checked: not a crash while serving
    assert diagnoses[0].phase != "serving"
    assert diagnoses[0].category != "runtime.crash"
