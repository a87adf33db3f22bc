"""Python tracebacks as they appear in logs: where they start, what continues them, what
they say.

``TracebackBuilder`` is fed one line at a time and answers whether the line continues the
traceback; it knows frames, source lines, caret lines, ``[Previous line repeated N more
times]``, chained exceptions ("During handling of the above exception ..." and "The above
exception was the direct cause ..."), exception groups (``|`` and ``+-`` decorations),
multi-line exception messages, frames whose indentation was lost in copying, and
tracebacks cut off at the top (no header) or at the bottom (no exception line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sglang_doctor.model import ExceptionInfo, Frame

HEADER = "Traceback (most recent call last):"
_LOGGING_DUMP = ("Message: ", "Arguments: ", "Call stack:")
CHAIN_MARKERS = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)

# ``in`` with no name after it: a page that strips HTML-like tags took ``<module>`` away
# (``File "/x/launch_server.py", line 25, in``); the frame's file and line still stand.
_FRAME = re.compile(r'^(?P<indent>\s*)File "(?P<file>[^"]*)", line (?P<line>\d+),?(?: in(?: (?P<func>.+?))?)?\s*$')
# A frame pasted without its head: the reporter cut ``File "<install prefix>/`` off every frame
# line, leaving the package path and Python's ``", line N, in FUNC`` (``sglang/srt/server_args.py",
# line 1084, in prepare_server_args``).  The closing quote right after a ``.py`` path and the
# ", line N" are Python's frame format; nothing else prints them together.
STRIPPED_FRAME_LITERAL = '", line '
_STRIPPED_FRAME = re.compile(
    r'^(?P<indent>\s*)(?P<file>[\w.~/\\-][^"]*\.py)", line (?P<line>\d+),?(?: in(?: (?P<func>.+?))?)?\s*$')
_CARET = re.compile(r"^\s*[\^~]+\s*$")
_REPEATED = re.compile(r"^\s*\[Previous line repeated \d+ more times?\]\s*$")
_GROUP_DECOR = re.compile(r"^(?:\s*\|\s?)+")
_GROUP_SEPARATOR = re.compile(r"^\s*\+[-+]*(?:\s*(?:\d+|\.\.\.)\s*-*)?\s*$|^\s*\|?\s*\+-+\s*(?:\d+|\.\.\.)?\s*-*\s*$")
# An exception line: a (dotted) type name, optionally ": message".
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)(?::(?: (?P<msg>.*))?)?$")
_EXC_SUFFIXES = ("Error", "Exception", "Exit", "Interrupt", "Warning", "Group", "Fault", "Iteration", "Abort")
# A bare exception line as a paste keeps it when the traceback above was cut: a dotted type
# whose last part is a CamelCase class (``triton.runtime.errors.OutOfResources: ...``), or a
# wrapper that names the cause (``ray.exceptions.RayTaskError(OutOfMemoryError): ...``).
_DOTTED_EXC = re.compile(
    r"^(?P<type>(?:[a-z_][a-z0-9_]*\.)+[A-Z][A-Za-z0-9]*(?:\((?P<inner>[A-Z]\w*)\))?): (?P<msg>\S.*)$")
# The same wrapper with its module path lost (a paste that began at the class's name:
# ``RayTaskError(OutOfMemoryError): ray::main_task() ...``): both names exception classes.
_WRAPPER_EXC = re.compile(
    r"^(?P<type>[A-Z]\w*(?:Error|Exception)\((?P<inner>[A-Z]\w*(?:Error|Exception|Fault|Interrupt|Exit))\)): (?P<msg>\S.*)$")
# An exception as its repr, the form wrappers print (``print(repr(e))``, ray, pyo3's
# ``PyErr { type: ..., value: TypeError("..."), traceback: None }`` with the paste starting at
# the value): ``ValueError("type fp8e4nv not supported ...")``, the whole line or followed by
# the wrapper's ``, traceback: ...``.
_REPR_EXC = re.compile(
    r"(?:^|(?<=\bvalue: ))(?P<type>(?:[a-z_][a-z0-9_]*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Fault))\((?P<q>[\"'])(?P<msg>.+?)(?P=q)\)"
    r"(?=$|[,;}\s])")
# An elided stretch: what a paste or an issue template put where lines were dropped.
ELISION = re.compile(r"^\s*(?:\.{3,}|\[\.\.\.\]|\u2026|\[\s*\.\.\.\s*(?:\d+ )?(?:more )?lines?[^\]]*\]|<\s*truncated[^>]*>)\s*$")
# SGLang's "<who> hit an exception: Traceback ..." cut before the header was complete
_CUT_HEADER = re.compile(r"hit an exception: ?(?:T(?:r(?:a(?:c(?:e(?:b(?:a(?:c(?:k(?: \(.*)?)?)?)?)?)?)?)?)?)?$")
CUT_HEADER_LITERAL = "hit an exception:"
# "2025-0", "(Work", "[2025-06-05 10:4": the next line's time stamp or prefix (ray's
# "(WorkerDict pid=N)", a bracketed stamp) cut short by the paste, where the exception line was
_CUT_STAMP = re.compile(r"^(?:\d[\d:.,T/ -]*|[\[(][\w:.,/ =-]*)$")
_WRAPPED_IN = re.compile(r"^\s*in ([A-Za-z_<][\w<>.]*)\s*$")
_IDENTIFIER_PIECE = re.compile(r"^[\w<>.]+$")
# What a markdown paste puts around a log (a code fence, GitHub's collapsed <details> block):
# never a line of Python's; the line after an exception line that is one ends the message.
_MARKUP = re.compile(r"^(?:```|~~~)[\w+-]*\s*$|^</?(?:details|summary)\b[^>]*>")

# IPython's own traceback format (IPython/core/ultratb.py VerboseTB; Jupyter notebooks too, where
# SGLang's offline Engine is often used): a rule of dashes, then the type padded and the header
# without its colon ("ValueError                                Traceback (most recent call
# last)"), then per frame a location line -- "Cell In[1], line 11" for a cell and "File
# ~/x/engine.py:43, in Engine.__init__(self, *args)" ("File path:52" at module level) on IPython
# >= 8.5, "Input In [1], in <cell line: 11>()" on 8.0-8.4, "<ipython-input-1-ab12> in <module>"
# and "~/x/engine.py in __init__(self, *args)" on 7.x -- its numbered source lines with the
# current one marked ("---> 43 ...", the arrow's dashes padded to the number's width), a blank
# line between frames, and the exception line last.
IPYTHON_HEADER_TEXT = "Traceback (most recent call last)"
# (IPython pads the type to 75 characters with the header: a long dotted type gets no space)
_IPYTHON_HEADER = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*?\s*Traceback \(most recent call last\)\s*$")
_IPYTHON_FRAME = re.compile(
    r"^(?:File (?P<file>\S.*?):(?P<line>\d+)(?:, in (?P<func>[\w<>.]+)\(.*\))?"
    r"|(?P<cell>Cell In ?\[\d*\]), line (?P<cell_line>\d+)"
    r"|(?P<input>Input In ?\[\d*\]), in (?P<input_func><cell line: \d+>|[\w<>.]+)(?:\(\))?"
    r"|(?P<file7>\S+\.py|<ipython-input-[\w-]+>) in (?P<func7>[\w<>.]+)(?:\(.*\))?"
    r")\s*$")
_IPYTHON_SOURCE = re.compile(r"^(?:\s*\d+(?: |$)|-*> ?\d+(?: |$))")
_IPYTHON_CURRENT = re.compile(r"^-*> ?\d+ ?")
_IPYTHON_RULE = re.compile(r"^-{20,}\s*$")
_IPYTHON_HIDDEN = re.compile(r"^\s*\[\.\.\. skipping [^\]]*\]\s*$")


def is_ipython_header(text: str) -> bool:
    """IPython's traceback header: ``ValueError        Traceback (most recent call last)``."""
    return IPYTHON_HEADER_TEXT in text and _IPYTHON_HEADER.match(text) is not None


def parse_ipython_frame(text: str) -> Frame | None:
    """An IPython frame's location line as a Frame (a cell's file is ``Cell In[1]``)."""
    m = _IPYTHON_FRAME.match(text)
    if m is None:
        return None
    if m.group("file"):
        return Frame(file=m.group("file"), line=int(m.group("line")), function=m.group("func") or "<module>")
    if m.group("cell"):
        return Frame(file=m.group("cell"), line=int(m.group("cell_line")), function="<module>")
    if m.group("input"):
        func = m.group("input_func")
        line = re.search(r"\d+", func) if func.startswith("<cell line") else None
        return Frame(file=m.group("input"), line=int(line.group()) if line else 0,
                     function="<module>" if line else func)
    return Frame(file=m.group("file7"), line=0, function=m.group("func7"))


def strip_group_decor(text: str) -> str:
    """``  | ValueError: x`` inside an exception group -> ``ValueError: x``."""
    if "|" in text[:12]:
        return _GROUP_DECOR.sub("", text, count=1)
    return text


def header_position(text: str) -> int:
    return text.find(HEADER)


def is_frame(text: str) -> bool:
    if "File \"" in text:
        return _FRAME.match(strip_group_decor(text)) is not None
    return STRIPPED_FRAME_LITERAL in text and _STRIPPED_FRAME.match(strip_group_decor(text)) is not None


def parse_frame(text: str) -> Frame | None:
    text = strip_group_decor(text)
    m = _FRAME.match(text) if "File \"" in text else _STRIPPED_FRAME.match(text)
    if not m:
        return None
    return Frame(file=m.group("file"), line=int(m.group("line")), function=(m.group("func") or "?").strip())


def strict_exception(text: str) -> ExceptionInfo | None:
    """An exception line that needs no context to be recognised (type name looks like one)."""
    m = _EXC.match(text)
    if not m:
        return None
    etype = m.group("type")
    last = etype.rsplit(".", 1)[-1]
    if not (last.endswith(_EXC_SUFFIXES) or last in ("KeyboardInterrupt", "StopIteration", "SystemExit")):
        return None
    return ExceptionInfo(etype, m.group("msg") or "")


def bare_exception(text: str) -> ExceptionInfo | None:
    """An exception line that can stand alone, with nothing above it: a strict one
    (``ValueError: ...``), a dotted class (``triton.runtime.errors.OutOfResources: ...``,
    ``ray.exceptions.RayTaskError(OutOfMemoryError): ...``) or an exception's repr
    (``ValueError("...")``).  Needs a message."""
    exc = strict_exception(text)
    if exc is not None:
        return exc if exc.message else None
    m = _DOTTED_EXC.match(text) or _WRAPPER_EXC.match(text)
    if m is not None:
        return ExceptionInfo(m.group("type"), m.group("msg"))
    m = _REPR_EXC.search(text) if "Error(" in text or "Exception(" in text else None
    if m is not None:
        return ExceptionInfo(m.group("type"), m.group("msg"))
    return None


def open_exception(text: str) -> ExceptionInfo | None:
    """An exception line whose message starts on the next line: a named exception type and a
    colon that ends the line (``ImportError:``), as Python prints an exception whose message
    begins with a newline (sgl_kernel's loader, textwrap'd messages).  Not the bare words
    ``Error:`` / ``Exception:`` (a heading), not a warning type; the message lines that
    follow are the builder's to collect."""
    if not text.endswith(":"):
        return None
    exc = strict_exception(text)
    if exc is None or exc.message:
        return None
    last = exc.type.rsplit(".", 1)[-1]
    if last in _EXC_SUFFIXES or last.endswith("Warning"):
        return None
    return exc


# What stands in front of an exception type whose head a paste cut off: the line the paste
# starts with was ``torch.OutOfMemoryError: ...`` and reads ``ryError: ...`` or ``r: ...`` (a
# search excerpt, a selection dragged from inside the line).  rules_engine matches such a
# type to the names it can be the tail of.
CUT_MARK = "\u2026"
_CUT_HEAD = re.compile(r"^\.*(?P<type>[A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*): (?P<msg>\S.*)$")
_CUT_HEAD_REPR = re.compile(r"""^\.*(?P<type>[A-Za-z_]\w*)\((?P<q>["'])(?P<msg>.+?)(?P=q)\)(?=$|[,;}\s])""")
_CUT_WORDS = ("Error", "Exception", "Exit", "Interrupt", "Fault")


def cut_type(etype: str) -> bool:
    """Whether a type read from a paste's first line can only be the tail of a longer one:
    its class name starts lowercase (``ueError``, ``rror``), or is a bare suffix word or a
    piece of one (``Error``, ``ption``) that no class of SGLang's stack is named (``Exception``
    is one)."""
    last = etype.rsplit(".", 1)[-1]
    if not last:
        return False
    if last[0].islower() or last[0] == "_":
        return last.endswith(_EXC_SUFFIXES) or any(w.endswith(last) for w in _CUT_WORDS)
    return last in _CUT_WORDS and last != "Exception"  # (SGLang raises a bare Exception)


def telling_tail(etype: str) -> bool:
    """Whether a CUT_MARK'd type's tail reads as an exception type whatever its message says:
    ``rror`` or a class name's end with its suffix word whole (``ueError``, ``Exception``);
    a shorter piece (``r``, ``or``, ``ption``) ends common words too (``monitor``, ``option``)."""
    last = etype[len(CUT_MARK):].rsplit(".", 1)[-1] if etype.startswith(CUT_MARK) else ""
    return last == "rror" or (last.endswith(_EXC_SUFFIXES) and last != "Error")


# The messages CPython itself gives its built-in exceptions (Python/ceval.c import_from,
# Python/import.c, Objects/object.c, Python/ceval.c format_exc_check_arg, Objects/abstract.c):
# a message in one of these forms names its type even when a paste cut the type to a tail
# that ends many names (``r: cannot import name 'x' from 'y'``).
_PYTHON_MESSAGES = (
    ("ModuleNotFoundError", re.compile(r"No module named '[^']+'")),
    ("ImportError", re.compile(r"cannot import name '[^']+' from '[^']+'")),
    ("AttributeError", re.compile(r"(?:'[\w.]+' object|module '[\w.]+') has no attribute '[^']+'")),
    ("NameError", re.compile(r"name '\w+' is not defined")),
    ("TypeError", re.compile(r"unsupported operand type\(s\) for |'[\w.]+' object is not (?:subscriptable|callable|iterable)\b"
                             r"|\w\(\) got an unexpected keyword argument '|\w\(\) missing \d+ required positional argument")),
)

# The same messages whole, to the line's end (a path CPython adds after an import's module, the
# hint 3.10+ adds to a NameError), for a paste's first line that begins inside one of them
# (``pe' object has no attribute 'cpu'``): python_message_tail.
_PYTHON_MESSAGE_LINES = (
    ("ModuleNotFoundError", r"No module named '[^'\n]+'"),
    ("ImportError", r"cannot import name '[^'\n]+' from '[^'\n]+'(?: \([^)\n]*\))?"),
    ("AttributeError", r"(?:'[\w.]+' object|module '[\w.]+') has no attribute '[^'\n]+'(?:\. Did you mean: '\w+'\?)?"),
    ("NameError", r"name '\w+' is not defined(?:\. Did you mean: '\w+'\?)?"),
    ("TypeError", r"(?:unsupported operand type\(s\) for [^:\n]+: '[\w.]+' and '[\w.]+'"
                  r"|'[\w.]+' object is not (?:subscriptable|callable|iterable)"
                  r"|\w+\(\) got an unexpected keyword argument '\w+'"
                  r"|\w+\(\) missing \d+ required (?:positional|keyword-only) arguments?: '\w+'(?:(?:, | and |, and )'\w+')*"
                  r"|argument of type '[\w.]+' is not (?:a container or )?iterable"
                  r"|cannot unpack non-iterable \S+ object)"),
)
_PYTHON_TAILS: list = []  # (name, the line's pattern compiled to match backwards), built once
# a first line read as the end of such a message: this long, and so many characters of its own words
PYTHON_TAIL_MIN = 16
PYTHON_TAIL_WORDS = 10


def python_message_type(etype: str, message: str) -> str | None:
    """The built-in exception a CUT_MARK'd type's tail can end whose message, as CPython
    words it, ``message`` starts with (``…r`` + ``cannot import name 'x' from 'y'`` ->
    ImportError); None when there is none."""
    for name, rx in _PYTHON_MESSAGES:
        if rx.match(message) and cut_type_matches(etype, (name,)):
            return name
    return None


def python_message_tail(text: str) -> str | None:
    """The built-in exception whose message, as CPython words it, is the whole of ``text``
    or its end (a paste that began inside it: ``pe' object has no attribute 'cpu'``, ``me
    'ModelRunner' is not defined``), or None: the message's form run backwards from the line's
    end to its start (``regex``'s REVERSE flag, partial there), PYTHON_TAIL_MIN characters or
    more of which PYTHON_TAIL_WORDS are the form's own words.  A line that only ends with such
    a message (``Failed: 'X' object has no attribute 'y'``) is another record quoting it."""
    text = text.strip()
    if len(text) < PYTHON_TAIL_MIN:
        return None
    if not _PYTHON_TAILS:
        import regex

        _PYTHON_TAILS.extend((name, regex.compile(rf"(?:{source})$", regex.REVERSE))
                             for name, source in _PYTHON_MESSAGE_LINES)
    from sglang_doctor.incidents.cut_match import held_words

    for name, back in _PYTHON_TAILS:
        m = back.search(text, partial=True)
        if m is not None and m.start() == 0 and m.end() == len(text) \
                and held_words(back.pattern, text) >= PYTHON_TAIL_WORDS:
            return name
    return None


def cut_head_exception(text: str) -> ExceptionInfo | None:
    """The exception of a paste's first line when it starts inside the exception type
    (``rror: CUDA out of memory. ...``, ``.OutOfMemoryError: ...``, the repr form
    ``rror("...")`` when the type is a cut one), its type marked with
    CUT_MARK when only a tail of it is left; None when the line does not read so."""
    m = _CUT_HEAD.match(text)
    if m is None:
        # the repr form wrappers print, its type's head lost: ``rror("type fp8e4nv not ...")``
        m = _CUT_HEAD_REPR.match(text) if "(" in text else None
        if m is None or not cut_type(m.group("type")):
            return None
    etype = m.group("type")
    if cut_type(etype):
        return ExceptionInfo(CUT_MARK + etype, m.group("msg"))
    if text.startswith(".") and etype.rsplit(".", 1)[-1].endswith(_EXC_SUFFIXES):
        return ExceptionInfo(etype, m.group("msg"))  # only the module path was lost
    return None


def cut_type_matches(etype: str, names, *, min_tail: int = 0) -> list[str]:
    """The names (dotted or not) a CUT_MARK'd type can be the tail of: every name when the
    whole type was lost (CUT_MARK alone: the paste began inside the message); none when
    fewer than ``min_tail`` characters of it are left."""
    frag = etype[len(CUT_MARK):]
    if len(frag) < min_tail:
        return []
    return [n for n in names if n.endswith(frag)] if frag else list(names)


def inner_type(etype: str) -> str:
    """``RayTaskError(OutOfMemoryError)`` -> ``OutOfMemoryError``; else the type as is."""
    if etype.endswith(")") and "(" in etype:
        return etype[etype.rfind("(") + 1:-1]
    return etype


def is_elision(text: str) -> bool:
    """A line that stands for dropped lines: ``...``, ``[...]``, ``......``, ``<truncated>``."""
    return ("." in text or "\u2026" in text or "truncated" in text) and ELISION.match(text) is not None


def is_cut_header(text: str) -> bool:
    """SGLang's ``... hit an exception: Traceb`` whose line was cut before the header ended."""
    return CUT_HEADER_LITERAL in text and HEADER not in text and _CUT_HEADER.search(text) is not None


def loose_exception(text: str) -> ExceptionInfo:
    """A column-0 line where Python puts the exception; take it as one whatever it says."""
    m = _EXC.match(text)
    # "RuntimeError:" alone: an exception whose message starts on the next line (multiprocessing's
    # bootstrapping error, textwrap'd messages)
    if m and m.group("type") and (m.group("msg") is not None or ":" not in text or text.endswith(":")):
        return ExceptionInfo(m.group("type"), m.group("msg") or "")
    r = _REPR_EXC.search(text) if "Error(" in text or "Exception(" in text else None
    if r is not None:  # ValueError("...") as a wrapper printed it
        return ExceptionInfo(r.group("type"), r.group("msg"))
    etype, sep, msg = text.partition(": ")
    if sep and " " not in etype.strip():
        return ExceptionInfo(etype.strip(), msg)
    return ExceptionInfo("", text.strip())


# rich's traceback (rich.traceback: Typer's and other CLIs' pretty errors, a wrapper that called
# rich.traceback.install() before running SGLang): a box instead of Python's lines.  The header
# is the box's top, ``╭──── Traceback (most recent call last) ────╮``; each frame is a row
# ``│ /path/to/file.py:413 in __init__ │`` (folded mid-path or wrapped before the function when
# the terminal is narrow: ``│ .../model_runn │`` / ``│ er.py:413 in __init__ │``), then a few
# numbered source rows, the current one marked ``❱  413 │   │   self.initialize()`` (``│`` as the
# indentation guides), an optional nested ``locals`` box, and the box's bottom ``╰────╯``; the
# exception line follows the box as Python writes it (rich 15, rich/traceback.py _render_stack).
_RICH_TOP = re.compile(r"^\s*╭─+ ?Traceback \(most recent call last\) ?─+╮\s*$")
_RICH_ROW = re.compile(r"^\s*│(?P<body>.*)│\s*$")
_RICH_FRAME = re.compile(r"^(?P<file>[^\s│]+):(?P<line>\d+) in (?P<func>[\w<>.]+)$")
_RICH_CURRENT = re.compile(r"^❱ *\d+ (?P<code>.*)$")
# a frame row's first piece when the terminal folded it: one token (the path, or the path and
# ``:N in``), never a numbered source row
_RICH_PIECE = re.compile(r"^[^\s\d│❱╭╰][^\s│]*(?: in)?$")


class RichBox:
    """Turns the lines of rich's traceback box (above) into the lines Python would have written:
    the top into the header, a frame row into ``  File "...", line N, in f``, the current source
    row into the source line, every other row of the box (context rows, blank rows, locals) and
    its bottom into a blank line.  ``line`` returns None for a line that is no part of a box."""

    def __init__(self) -> None:
        self.open = False
        self._piece: str | None = None  # a frame row's first piece, waiting for its rest

    def line(self, text: str) -> str | None:
        if not self.open:
            if IPYTHON_HEADER_TEXT in text and _RICH_TOP.match(text):
                self.open, self._piece = True, None
                return HEADER
            return None
        stripped = text.strip()
        if stripped.startswith("╰") and stripped.endswith("╯"):
            self.open, self._piece = False, None
            return ""
        m = _RICH_ROW.match(text)
        if m is None:  # the box ended without its bottom (a cut paste): not a row
            self.open, self._piece = False, None
            return None
        body = m.group("body").strip()
        piece, self._piece = self._piece, None
        for joined in ((piece + body, piece + " " + body) if piece is not None else ()) + (body,):
            frame = _RICH_FRAME.match(joined)
            if frame is not None:
                return f'  File "{frame.group("file")}", line {frame.group("line")}, in {frame.group("func")}'
        current = _RICH_CURRENT.match(body)
        if current is not None:
            return "    " + current.group("code").replace("│", " ").strip()
        if _RICH_PIECE.match(body):
            self._piece = body if piece is None else piece + body
        return ""


# A traceback printed through another program's logger one line at a time (a wrapper that logs
# ``traceback.format_exc()`` line by line, ``print_exc`` into a logging stream, vLLM-style and
# loguru formats): the same logger prefix before every line, the header's
# (``ERROR:root:Traceback (most recent call last):``, ``2025-06-01 08:15:02.123 | ERROR    |
# rollout:init:42 - Traceback ...``, ``E0601 08:15:02.123456 4012 rollout.py:42] Traceback ...``).
# The text before the header is that prefix; the lines after it that start with it, its numbers
# (time, line, pid) any, are the traceback's lines once it is taken off.
# SGLang's whole record header (read/records.py's), then its message
_RECORD_HEADER = re.compile(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{1,6})?(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*\] ")
# ... or torch's C++ log header (c10's "[W624 12:52:07.296197118 ProcessGroupNCCL.cpp:1659] ", the
# rank's "[rank7]:" before it when torch.distributed set it): its own record, logged by the wrapper
# (the heartbeat monitor's and TCPStore's warnings of a run whose store had gone)
_TORCH_HEADER = re.compile(r"(?:\[rank\d+\]:)?\[[WEIF]\d{3,4} \d\d:\d\d:\d\d\.\d+ [\w.]+:\d+\] ")
_TORCH_LITERAL = ".cpp:"
_PREFIX_END = re.compile(r"[\s:\]|>)-]$")
_MAX_LOGGER_PREFIX = 160


def logger_prefix(text: str) -> tuple[re.Pattern, bool] | None:
    """The pattern of the logger prefix before a traceback header or an SGLang record header on
    ``text`` (above), and whether it stands before a record header (the line is that record's,
    read without the prefix); None when the header starts the line or what stands before it
    does not end as a prefix does."""
    at = text.find(HEADER)
    record = _record_inside(text, at if at >= 0 else min(len(text), _MAX_LOGGER_PREFIX + 50))
    if record is not None:  # SGLang's own record logged by the wrapper: the prefix is what stands before it
        at = record.start()
    prefix = text[:at]
    if at <= 0 or at > _MAX_LOGGER_PREFIX or not _PREFIX_END.search(prefix) or not any(c.isalnum() for c in prefix):
        return None  # (an exception group's "    | " is its decoration, not a logger's)
    pattern = "".join(r"\d+" if piece.isdigit() else re.escape(piece) for piece in re.split(r"(\d+)", prefix))
    return re.compile(pattern), record is not None


def _record_inside(text: str, end: int) -> re.Match | None:
    """SGLang's record header (or torch's C++ one) inside ``text`` before ``end``, not at its start."""
    m = _RECORD_HEADER.search(text, 1, end)
    if m is None and _TORCH_LITERAL in text:
        m = _TORCH_HEADER.search(text, 1, end)
    return m


def has_record_inside(text: str) -> bool:
    """An SGLang record header (or torch's C++ one) stands inside ``text``, not at its start (see
    logger_prefix)."""
    return _record_inside(text, _MAX_LOGGER_PREFIX + 50) is not None


@dataclass
class TracebackPart:
    """One traceback of a chain: its frames and its exception."""

    frames: list[Frame] = field(default_factory=list)
    exception: ExceptionInfo | None = None


# faulthandler (Python's fatal-error handler: a segfault, an abort) dumps every thread as
# "Thread 0x00007f39a0232b80 (most recent call first):" ("Current thread 0x...:" for the one
# that crashed, "Stack (most recent call first):" without threads), then that thread's frames
# as ``  File "x.py", line 294 in load_weights``.
_THREAD_DUMP_HEADER = re.compile(r"^(?:(?:Current )?[Tt]hread 0x[0-9a-fA-F]+|Stack) \(most recent call first\):\s*$")


# Ray's error for a task or actor method that raised (ray/exceptions.py RayTaskError): the first
# line is "ray.exceptions.RayTaskError(RuntimeError): ray::WorkerDict.init_model() (pid=4012,
# ip=...)", then the remote process's traceback *without* its "Traceback (most recent call last):"
# header, down to the remote exception (verl / slime / AReaL rollout workers that run SGLang).
_RAY_TASK_HEAD = re.compile(r"^ray::[\w.<>]+\(\)")


# nanobind's report of the objects its bindings still held when the interpreter exited
# (src/nb_internals.cpp, "nanobind: leaked N instances!" / "types!" / "functions!" / "keep_alive
# records!", then "nanobind: this is likely caused by a reference counting issue in the binding
# code."): triton's and xgrammar's bindings print it at the exit of a process that Ctrl-C or
# SIGTERM stopped, right below the KeyboardInterrupt that ended its traceback.  Never the
# exception's message: the exception line ended above it.
_NANOBIND_REPORT = re.compile(r"nanobind: (?:leaked \d+ \w+(?: \w+)?!|this is likely caused by )")


def _remote_task_error(exc: ExceptionInfo | None) -> bool:
    """The exception is Ray's report of a remote task's error (RayTaskError, or the type Ray
    made for it, ``RayTaskError(RuntimeError)``), whose message the remote frames follow."""
    return exc is not None and (exc.type.rsplit(".", 1)[-1].startswith("RayTaskError")
                                or _RAY_TASK_HEAD.match(exc.message or "") is not None)


# SGLang's graph-capture failure (0.4.x-0.5.2x cuda_graph_runner / piecewise / draft / prefill /
# CPU graph runners: "Capture cuda graph failed: {e}\n{...CAPTURE_FAILED_MSG}") and the first
# line of the advice it appends ("Possible solutions:", the prefill runner's "Possible suggestions:")
_CAPTURE_FAILED = re.compile(r"Capture [\w .-]{0,40}?graph failed: ", re.IGNORECASE)
_CAPTURE_ADVICE = re.compile(r"Possible (?:solutions|suggestions):\s*$")


class TracebackBuilder:
    """Follows one traceback record line by line.

    ``offer(text)`` returns how many of the held lines plus this one now belong to the
    traceback (>= 1), or 0 when the line does not continue it; lines it holds back (blank
    lines that may precede a chained part) are either taken in with a later line or, when
    the traceback turns out to have ended, given back by ``release()``.
    """

    def __init__(self, first_text: str, *, headless: bool = False):
        self.parts: list[TracebackPart] = [TracebackPart()]
        self.truncated_top = headless
        self.state = "frames"  # frames | message
        self._held = 0  # blank lines held back
        self._prev_frame_indented: bool | None = None  # None: previous line was not a frame
        self._frame_indent: int | None = None  # the last frame line's indentation
        self._folded: str | None = None  # "frame" / "source": the previous line was an indented one
        self._msg_lines: list[str] = []
        self._after_marker = False
        self.elided = False  # a "..." / "[...]" stood for dropped lines inside it
        # a frame of it was printed inside an exception group (``  |   File ...``): Python's
        # format of a sub-exception's traceback (or the group's own)
        self.grouped = False
        # a faulthandler thread dump: the index in the part's frames where the thread block
        # being read starts (None: not a dump); its frames come most recent first
        self._dump_start: int | None = None
        self.ipython = _IPYTHON_HEADER.match(first_text) is not None  # IPython's format (above)
        if headless:
            self._frame_line(first_text)

    # -- public ----------------------------------------------------------------------

    @property
    def complete(self) -> bool:
        return self.state == "message"

    @property
    def held(self) -> int:
        return self._held

    def offer(self, raw_text: str) -> int:
        text = strip_group_decor(raw_text)
        if not text.strip():
            if _GROUP_DECOR.match(raw_text) and self.state == "frames":
                return self._take()  # an empty "  |" line inside a group
            self._held += 1
            return 0
        if _GROUP_SEPARATOR.match(raw_text):
            return self._take()
        if self.ipython and _IPYTHON_RULE.match(text):
            self._held += 1  # the rule above a chained part's header: taken with the header
            return 0
        if HEADER in text or (self.ipython and _IPYTHON_HEADER.match(text)):
            if self.state == "message" and not self._after_marker:
                return 0  # a new traceback, not a chained part
            self._after_marker = False
            self._finish_message()
            if self.parts[-1].frames or self.parts[-1].exception:
                self.parts.append(TracebackPart())
            self.state = "frames"
            self._prev_frame_indented = None
            return self._take()
        if text.strip() in CHAIN_MARKERS:
            self._after_marker = True
            self._finish_message()
            self.state = "frames"
            self._prev_frame_indented = None
            return self._take()
        if self.state == "frames":
            return self._in_frames(text)
        return self._in_message(text)

    def release(self) -> int:
        """Blank lines held back that turned out not to belong; resets the count."""
        held, self._held = self._held, 0
        return held

    def finish(self) -> None:
        if self._dump_start is not None:
            self._end_dump_block()
        self._finish_message()

    @property
    def frames(self) -> list[Frame]:
        return [f for part in self.parts for f in part.frames]

    @property
    def chain(self) -> list[ExceptionInfo]:
        return [p.exception for p in self.parts if p.exception is not None]

    # -- states ----------------------------------------------------------------------

    def _end_dump_block(self) -> None:
        """A faulthandler thread block ended: its frames, listed most recent call first, are put
        in a traceback's order (outermost first, the deepest last), as every reader expects."""
        frames = self.parts[-1].frames
        start = self._dump_start or 0
        frames[start:] = frames[start:][::-1]
        self._dump_start = len(frames)

    def _take(self) -> int:
        n = self._held + 1
        self._held = 0
        return n

    def _in_frames(self, text: str) -> int:
        folded, self._folded = self._folded, None
        if self.ipython and (taken := self._ipython_line(text)):
            return taken
        if is_frame(text):
            self._frame_line(text)
            if text[:1] in (" ", "\t"):
                self._folded = "frame"
            return self._take()
        if text.lstrip().startswith('File "') and (self.parts[-1].frames or self.truncated_top):
            # a frame line the paste cut short (``File "/usr/local/``), at column 0 once the
            # indentation was lost: still a frame's start, never the exception line
            self._prev_frame_indented = None
            return self._take()
        if _CARET.match(text) or _REPEATED.match(text):
            return self._take()
        if text[:1] in "`~<" and _MARKUP.match(text):
            return 0  # the paste's closing code fence or </details> below cut frames: no exception line
        if _THREAD_DUMP_HEADER.match(text) and (self.parts[-1].frames or self.truncated_top):
            # faulthandler's dump of every thread (after "Fatal Python error: ..."), pasted from
            # its middle: the next thread's header, then that thread's frames; no exception line
            self._end_dump_block()
            self._prev_frame_indented = None
            return self._take()
        if is_elision(text):
            self.elided = True  # lines were dropped here: what follows still belongs
            self._prev_frame_indented = None
            return self._take()
        indented = text[:1] in (" ", "\t")
        if self._held and not self.parts[-1].frames and not indented:
            return 0  # "Traceback ..." then blank lines then unrelated text
        if indented and self._frame_indent is not None and strip_group_decor(text) == text \
                and len(text) - len(text.lstrip(" \t")) <= self._frame_indent:
            # Python indents a frame's source line deeper than its frame line; a line no deeper
            # than the frame is the exception line of a paste that indented everything (a
            # markdown list, a quoted block), when it reads as one
            exc = strict_exception(text.strip())
            if exc is not None:
                return self._exception(exc)
        if indented:
            self._source_line(text)
            self._folded = "source"
            return self._take()
        if folded is not None and ": " not in text and not text.rstrip().endswith(":") \
                and strict_exception(text.strip()) is None and not _CUT_STAMP.match(text):
            # the rest of the indented line above, folded at column 0 by the terminal the log
            # was copied from ("...line 150, in _" / "ba_radix_strategy"): no exception line
            self._unfold(folded, text.strip())
            self._folded = folded
            return self._take()
        if self._prev_frame_indented is False:
            # a frame copied without indentation: its source line is at column 0 too,
            # unless the line is unmistakably an exception
            exc = strict_exception(text.strip())
            if exc is None:
                self._source_line(text)
                return self._take()
            return self._exception(exc)
        if not self.parts[-1].frames and not self.truncated_top and len(self.parts) == 1:
            exc = strict_exception(text.strip())
            if exc is None:
                return 0
            return self._exception(exc)
        if text.startswith(_LOGGING_DUMP):
            # logging's "--- Logging error ---" dump: "Message: '...'" / "Arguments: ()" close
            # the stack of a log call that failed, not an exception
            return self._take()
        if _CUT_STAMP.match(text):
            return 0  # the next log line's time stamp, cut by the paste: no exception line here
        return self._exception(loose_exception(text.strip()))

    def _in_message(self, text: str) -> int:
        if self._held:
            if self._held == 1 and _CAPTURE_ADVICE.match(text) and self._capture_failure():
                # SGLang's graph runners raise f"Capture ... graph failed: {e}\n{advice}"; a
                # CUDA error's text ends with a newline, so one blank line stands between the
                # message and its "Possible solutions:" list: the list is still the message
                self._msg_lines.append("")
                self._msg_lines.append(text)
                return self._take()
            return 0  # a blank line ended the exception message
        if is_frame(text):
            if not self._msg_lines and _remote_task_error(self.parts[-1].exception):
                # Ray's RayTaskError prints the remote task's traceback as its message, frames
                # first and with no "Traceback" header: a chained part, its exception the cause
                self.parts.append(TracebackPart())
                self.state = "frames"
                self._prev_frame_indented = None
                return self._in_frames(text)
            return 0
        if text[:1] in "`~<" and _MARKUP.match(text):
            return 0  # the paste's closing code fence or </details>: the text ends there
        if text.startswith("nanobind: ") and _NANOBIND_REPORT.match(text):
            return 0  # nanobind's exit-time leak report: the interpreter is exiting, the message ended
        self._msg_lines.append(text)
        return self._take()

    # -- helpers ---------------------------------------------------------------------

    def _ipython_line(self, text: str) -> int:
        """A line of IPython's format in its frames (a location, a numbered source line, a
        note of hidden frames), or 0."""
        frame = parse_ipython_frame(text)
        if frame is not None:
            self.parts[-1].frames.append(frame)
            self._prev_frame_indented = None
            return self._take()
        if _IPYTHON_SOURCE.match(text) and self.parts[-1].frames:
            current = _IPYTHON_CURRENT.match(text)
            if current is not None and self.parts[-1].frames[-1].source is None:
                self.parts[-1].frames[-1].source = text[current.end():].strip()
            return self._take()
        if _IPYTHON_HIDDEN.match(text):
            return self._take()
        return 0

    def _frame_line(self, text: str) -> None:
        frame = parse_frame(text)
        if frame is not None:
            self.parts[-1].frames.append(frame)
            decorated = strip_group_decor(text) != text
            self.grouped = self.grouped or decorated
            self._prev_frame_indented = text[:1] in (" ", "\t") or decorated
            self._frame_indent = len(text) - len(text.lstrip(" \t"))
        self.state = "frames"

    def _unfold(self, kind: str, piece: str) -> None:
        """Put a folded line's rest back on the frame or source line it was cut from."""
        part = self.parts[-1]
        if not part.frames:
            return
        frame = part.frames[-1]
        if kind == "frame" and frame.source is None and _IDENTIFIER_PIECE.match(piece):
            frame.function = piece if frame.function == "?" else frame.function + piece
        elif kind == "source" and frame.source is not None:
            frame.source += piece

    def _source_line(self, text: str) -> None:
        part = self.parts[-1]
        if part.frames and part.frames[-1].source is None:
            m = _WRAPPED_IN.match(text)
            if m and part.frames[-1].function == "?":
                # a frame line wrapped before its function: ``File "x.py", line 3,`` / ``in f``
                part.frames[-1].function = m.group(1)
                return
            part.frames[-1].source = text.strip()
        self._prev_frame_indented = None

    def _exception(self, exc: ExceptionInfo) -> int:
        self.parts[-1].exception = exc
        self._msg_lines = []
        self.state = "message"
        self._prev_frame_indented = None
        return self._take()

    def _capture_failure(self) -> bool:
        exc = self.parts[-1].exception
        return exc is not None and _CAPTURE_FAILED.match(exc.message or "") is not None

    def _finish_message(self) -> None:
        part = self.parts[-1]
        if part.exception is not None and self._msg_lines:
            extra = "\n".join(self._msg_lines)
            msg = part.exception.message
            part.exception = ExceptionInfo(part.exception.type, f"{msg}\n{extra}" if msg else extra)
            self._msg_lines = []


# A Python environment (conda env, venv) that its owner named "sglang": its stdlib, scripts
# and other packages live under ".../envs/sglang/lib/python3.X/" or ".../sglang/bin/", which
# are not SGLang's code ("/User/x/miniconda3/envs/sglang/lib/python3.11/site-packages/diskcache/core.py").
_ENV_NAMED_SGLANG = re.compile(r"/sglang/(?:lib(?:64)?/python[\d.]*|bin|include)/")
_PACKAGE_DIRS = ("/site-packages/", "/dist-packages/")


def is_sglang_file(path: str) -> bool:
    """Whether a frame's file is SGLang's code: the package ``sglang`` installed
    (``site-packages/sglang/...``) or a checkout (``.../sglang/python/sglang/...``), not
    another package of an environment that happens to be named sglang."""
    p = path.replace("\\", "/")
    if p.startswith("sglang/"):
        p = "/" + p  # a frame pasted from the package's own directory on (_STRIPPED_FRAME)
    if "/sglang/" not in p:
        return False
    cut = max(p.rfind(d) for d in _PACKAGE_DIRS)
    if cut >= 0:  # an installed package: the directory right after site-packages names it
        return p[cut:].split("/", 3)[2] == "sglang"
    return "/sglang/" in _ENV_NAMED_SGLANG.sub("/", p)


def sglang_frames(frames: list[Frame]) -> list[Frame]:
    return [f for f in frames if is_sglang_file(f.file)]


# Functions only start-up runs: the constructors of the scheduler, the TP worker and the model
# runner (scheduler.py / tp_worker*.py / model_runner.py).  A serving traceback goes through
# run_scheduler_process -> event_loop_* -> run_batch -> forward and never through these.
_STARTUP_FUNCTIONS = frozenset({"__init__", "init", "initialize", "init_model_worker", "init_tp_model_worker",
                                "_init_model_runner"})
_STARTUP_MODULES = ("srt/managers/scheduler.py", "srt/managers/tp_worker", "srt/model_executor/model_runner.py")


def in_startup_constructor(frames: list[Frame]) -> bool:
    """True when a frame is one of the start-up constructors: the server was not ready yet."""
    return any(f.function in _STARTUP_FUNCTIONS and any(m in f.file.replace("\\", "/") for m in _STARTUP_MODULES)
               for f in frames)


# The scheduler's event loop.  run_scheduler_process builds the Scheduler (every start-up step:
# distributed set-up, weights, memory pools, CUDA graphs), tells the launcher it is up
# (pipe_writer.send), and only then enters the loop: ``scheduler.run_event_loop()`` ->
# ``dispatch_event_loop`` -> ``event_loop_normal`` / ``event_loop_overlap`` / ``event_loop_pp``
# and the disaggregation / multiplexing loops (``event_loop_overlap_disagg_decode``,
# ``event_loop_pdmux``; 0.5.23 scheduler.py, whose run_event_loop says "Engine init (graph
# capture, warmups) is done"); the releases before 0.5.1x call ``scheduler.event_loop_*()``
# straight from run_scheduler_process.  The releases before the Scheduler (0.1.x router/
# model_rpc.py ModelRpcServer, 0.2.x-0.3.x tp_worker.py ModelTpServer) have a step loop
# instead: the router's / controller's ``loop_for_forward`` and run_tp_server's ``while True``
# call ``exposed_step`` only after the server was built, and only it calls ``forward_step``,
# which alone calls ``forward_fill_batch`` / ``forward_prefill_batch`` / ``forward_decode_batch``
# (sglang 0.1.12 model_rpc.py, 0.2.7 tp_worker.py / controller_single.py).  A traceback that
# passes the loop -- as a frame, or as the call a frame's source line makes when the text is
# cut right below it -- was raised by a scheduler (TP server) that had finished starting.
_EVENT_LOOP_FUNCTION = re.compile(
    r"(?:run|_?dispatch)_event_loop(?:_once)?|event_loop_(?:normal|overlap|pp|pdmux)(?:_\w+)?"
    r"|loop_for_forward|exposed_step|forward_step|forward_(?:fill|prefill|decode)_batch")
_CALLED = re.compile(r"([A-Za-z_]\w*)\s*\(")


def event_loop_reason(frames: list[Frame]) -> str | None:
    """Why the frames show the scheduler's event loop (the server had finished starting), or None."""
    for f in frames:
        if not is_sglang_file(f.file):
            continue
        function = f.function.rsplit(".", 1)[-1].strip()
        if _EVENT_LOOP_FUNCTION.fullmatch(function):
            return f"its traceback runs through the scheduler's event loop ({function}), which starts after start-up"
        called = next((n for n in _CALLED.findall(f.source or "") if _EVENT_LOOP_FUNCTION.fullmatch(n)), None)
        if called is not None:
            return (f"a frame of its traceback calls the scheduler's event loop ({called} in {function}), "
                    "which starts after start-up")
    return None


# A traceback whose newlines a paste lost (a web form, a chat message, a log shipper that joins
# a record's lines with spaces): "Traceback (most recent call last): File "/x.py", line 3, in f
# g() File ... ValueError: ...", after SGLang's header or alone, or its frames alone from the
# first ``File "``.  Python writes each frame as ``File "<path>", line <n>, in <function>`` and
# the exception line after the last frame's source line; chained parts are separated by
# CHAIN_MARKERS and a new header.
# (faulthandler's frame, ``File "<path>", line <n> in <function>`` without the comma, keeps its
# function too: a name that ends like an exception type, ``raise_for_HTTPError``, is no exception)
_JOINED_FRAME = re.compile(r'File "[^"\n]*", line \d+(?:,? in [\w<>.]+)?')
_JOINED_MARK = re.compile("|".join(re.escape(m) for m in (HEADER,) + CHAIN_MARKERS))
# the exception line's start inside the text after the last frame: a (dotted) type that ends in
# one of Python's exception suffixes, then ": " or the end (after the source line, if any)
_JOINED_EXC = re.compile(
    r"(?<![\w.])(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Fault|Abort|Iteration)"
    r"(?:\([A-Za-z_][\w.]*\))?(?=: |:?\s*$)")


# Not a traceback a request or its answer carries as text (joined or escaped, below): SGLang's request log
# (--log-requests: "Receive: obj=GenerateReqInput(text='...'", "Finish: obj=..., out={'text': ...")
# and a JSON request or answer whose prompt or generated text quotes a traceback
_ECHOED = re.compile(r"""obj=|ReqInput\(|out=\{|["'](?:text|content|prompt|messages|input|output|response|completion)["']\s*:""")


def echoes_traceback(text: str) -> bool:
    """The traceback header in ``text`` is inside a request's or an answer's text (_ECHOED
    before it): a quote, not a traceback the process printed."""
    at = text.find(HEADER)
    return at > 0 and _ECHOED.search(text, 0, at) is not None


def split_joined_traceback(text: str) -> list[str] | None:
    """The lines of a traceback joined into one line (see above), or None when ``text`` is not
    one: it must hold a frame after a header, or start with a frame and hold a second frame or
    an exception after it.  What comes before the first header (SGLang's record header and
    "Scheduler hit an exception: ") stays on the first line."""
    at = text.find(HEADER)
    first_frame = text.find('File "')
    if _ECHOED.search(text, 0, min(i for i in (at, first_frame, len(text)) if i >= 0)):
        return None  # a request's or an answer's text quoting a traceback (see _ECHOED)
    if at >= 0:
        head, rest = text[:at + len(HEADER)], text[at + len(HEADER):]
        if 'File "' not in rest:
            exc = strict_exception(rest.strip())  # "Traceback (...): ValueError: ...", its frames lost
            return [head, rest.strip()] if exc is not None and exc.message else None
    else:
        head, rest = None, text.lstrip()
        first = _JOINED_FRAME.search(rest)
        if first is None or (rest.count('File "') < 2 and _JOINED_EXC.search(rest, first.end()) is None):
            return None
        if first.start() and not (text[:1].isspace() and rest[:first.start()].endswith("  ")
                                  and 'File "' not in rest[:first.start()]):
            # only a frame starts the line, or the source line of the frame above it (indented, as
            # a traceback's source lines are) with the frame after it on the same line; a frame's
            # own start cut short before it (``File "  File "/x.py", ...``) is no source line
            return None
    lines = [head] if head is not None else []
    pos = 0
    marks = [(m.start(), m.end(), "mark") for m in _JOINED_MARK.finditer(rest)]
    frames = [(m.start(), m.end(), "frame") for m in _JOINED_FRAME.finditer(rest)]
    items = sorted(marks + frames)
    if not frames:
        return None
    for i, (start, end, kind) in enumerate(items):
        between = rest[pos:start].strip()
        if between:
            lines.extend(_source_and_exception(between, last_of_part=kind == "mark"))
        if kind == "mark":
            if rest[start:end] != HEADER:
                lines.append("")
            lines.append(rest[start:end])
            if rest[start:end] != HEADER:
                lines.append("")
        else:
            lines.append("  " + rest[start:end])
        pos = end
    tail = rest[pos:].strip()
    if tail:
        lines.extend(_source_and_exception(tail, last_of_part=True))
    return lines


# A traceback inside a string literal: a JSON body's field ({"detail": "Traceback (most recent
# call last):\n  File \"/x.py\", ..."}), a Python repr of the log text, a log shipper's escaped
# message.  Its newlines are the two characters backslash and n, and a JSON or double-quoted
# string escapes its quotes and backslashes.  Only a text whose escaped newline is next to the
# traceback's header or a frame is one.
_ESCAPED_TRACEBACK = re.compile(r'Traceback \(most recent call last\):\\n|\\n\s*File \\?"')
_ESCAPE = re.compile(r"""\\[n"'\\t]""")
_UNESCAPED = {"n": "\n", '"': '"', "'": "'", "\\": "\\", "t": "\t"}
# what closes the literal after its last escaped newline: the quote, a JSON object's brace
_LITERAL_END = re.compile(r"""^\s*["'][\s}\]),]*$""")


def split_escaped_traceback(text: str) -> list[str] | None:
    """The lines of a traceback written as a string literal's escaped text (see above), or None."""
    if "\\n" not in text or (m := _ESCAPED_TRACEBACK.search(text)) is None or _ECHOED.search(text, 0, m.start()):
        return None
    lines = _ESCAPE.sub(lambda m: _UNESCAPED[m.group(0)[1]], text).split("\n")
    if len(lines) > 1 and _LITERAL_END.match(lines[-1]):
        lines.pop()  # the literal's closing quote, not the exception message's
    return lines


def _source_and_exception(piece: str, *, last_of_part: bool) -> list[str]:
    """The text after a frame: its source line, and -- after a part's last frame -- the
    exception line that starts at the first exception type."""
    m = _JOINED_EXC.search(piece) if last_of_part else None
    if m is None:
        return ["    " + piece]
    source, exc = piece[:m.start()].strip(), piece[m.start():].strip()
    return (["    " + source] if source else []) + [exc]


# A frame's source line and the exception line below it on one line, two spaces (or more)
# between them where the line break was: a browser's copy of a traceback shown as wrapped text
# (bench/robustness.py browser_join), whose frame lines each stood on a line of their own or
# were split off by split_joined_traceback, ``    raise KeyboardInterrupt()  KeyboardInterrupt``,
# ``    raise self.failureException(msg)  AssertionError: 1963.81 not greater than ...``.  Only
# read while a traceback's frames are being read (Assembler._feed_line): the source line is
# indented as Python indents one, and what follows the spaces is an exception line's shape
# (_JOINED_EXC: a dotted type with one of Python's exception suffixes, then ": " or the end).
_SOURCE_THEN_EXC = re.compile(r"(?<=\S) {2,}(?=" + _JOINED_EXC.pattern.removeprefix(r"(?<![\w.])") + ")")


# ... and an exception line without a message (``KeyboardInterrupt``) with the line below it joined
# on: Python prints a type alone or followed by ": ", never by two spaces and more text.
_BARE_EXC_THEN_TEXT = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*) {2,}(?=\S)")


def split_source_and_exception(text: str) -> list[str] | None:
    """[source line, exception line] of a source line joined with the exception line below it,
    or [exception line, next line] of an exception line without a message joined with the line
    below it (see above); None for any other text."""
    if (m := _BARE_EXC_THEN_TEXT.match(text)) is not None:
        return [m.group(1), text[m.end():]] if strict_exception(m.group(1)) is not None else None
    if text[:1] not in (" ", "\t") or (m := _SOURCE_THEN_EXC.search(text)) is None:
        return None
    exc = text[m.end():]
    if strict_exception(exc.rstrip()) is None:
        return None
    return [text[:m.start()], exc]


# An exception group's traceback (Python 3.11+, the exceptiongroup backport) whose lines a copy
# joined with two spaces: Python starts the group's header with ``  + `` and every line of its
# sub-tracebacks with ``  | `` (deeper groups indent both), so after the join each of those
# lines starts at two spaces or more before ``| `` / ``+ Exception Group Traceback`` / ``+-``:
# ``... Exception in ASGI application    + Exception Group Traceback (most recent call last):
# |   File "...", line 77, in collapse_excgroups    |     yield``.  A line is split there when
# it holds the group's header or starts with the group's decoration itself.
_GROUP_HEADER = "+ Exception Group Traceback"
_GROUP_JOIN = re.compile(r"(?<=\S) {2,}(?=\| |\+ Exception Group Traceback|\+-)")
_GROUP_LINE = re.compile(r"^\s*\| ")


def split_joined_group(text: str) -> list[str] | None:
    """The lines of an exception group's traceback joined into one line (see above), each with
    two spaces of its join before its decoration, or None."""
    if _GROUP_HEADER not in text and not _GROUP_LINE.match(text):
        return None
    cuts = [m.start() for m in _GROUP_JOIN.finditer(text)]
    if not cuts:
        return None
    return [text[a:b] for a, b in zip([0] + [c + 2 for c in cuts], cuts + [len(text)])]
