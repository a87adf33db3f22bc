from sglang_doctor.read import reader
from sglang_doctor.read.reader import LineSplitter, clean_text


def split_all(data: bytes, chunk: int | None = None, **kw):
    s = LineSplitter(**kw)
    out = []
    if chunk is None:
        out += s.feed(data)
    else:
        for i in range(0, len(data), chunk):
            out += s.feed(data[i:i + chunk])
    out += s.finish()
    return out


def test_lines_numbered_and_terminators_removed():
    lines = split_all(b"a\r\nb\n\nc")
    assert [(l.number, l.text) for l in lines] == [(1, "a"), (2, "b"), (3, ""), (4, "c")]


def test_same_lines_whatever_the_chunking():
    data = b"one\ntwo \xff\xfe bad\n\x1b[31mred\x1b[0m\nprogress 1\rprogress 2\rprogress 3\nend"
    whole = [(l.number, l.text, l.raw) for l in split_all(data, keep_raw=True)]
    for chunk in (1, 2, 3, 7):
        assert [(l.number, l.text, l.raw) for l in split_all(data, chunk, keep_raw=True)] == whole


def test_cleaning_keeps_raw():
    lines = split_all(b"\x1b[1;32mINFO\x1b[0m ok\x00\n", keep_raw=True)
    assert lines[0].text == "INFO ok"
    assert lines[0].raw == b"\x1b[1;32mINFO\x1b[0m ok\x00"


def test_invalid_utf8_is_replaced_not_lost():
    assert clean_text(b"a\xffb") == "a\ufffdb"


def test_progress_bar_rewrites_keep_last_drawing():
    assert clean_text(b"Loading 10%\rLoading 50%\rLoading 100%\r") == "Loading 100%"


def test_long_dump_line_is_kept_whole():
    line = b"[2026-05-09 09:16:24] server_args=ServerArgs(" + b"x=1, " * 6000 + b")"
    (got,) = split_all(line + b"\n", 4096)
    assert got.cut == 0 and len(got.text) == len(line)


def test_pathological_line_keeps_head_and_tail_with_marker(monkeypatch):
    monkeypatch.setattr(reader, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(reader, "HEAD_BYTES", 300)
    monkeypatch.setattr(reader, "TAIL_BYTES", 200)
    data = b"H" * 300 + b"m" * 5000 + b"T" * 200 + b"\nnext\n"
    lines = split_all(data, 97)
    assert lines[0].text.startswith("H" * 300)
    assert lines[0].text.endswith("T" * 200)
    assert "5000 bytes of this line not kept" in lines[0].text
    assert lines[0].cut == 5000
    assert lines[1].text == "next" and lines[1].number == 2
