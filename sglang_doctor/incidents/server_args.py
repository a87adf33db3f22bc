"""Parse SGLang's configuration dump.

0.5.9 logs ``server_args=ServerArgs(model_path='/m', ..., forward_hooks=None)`` (a dataclass
repr); newer versions log ``server_args={'model_path': '/m', ...}`` (a dict repr).  Values that
are not Python literals (``LoRARef(...)``, ``<function ...>``) are kept as their raw source
text.  A dump cut off mid-line (by ``tail``, a terminal, or a crash) still yields every field
before the cut.
"""

from __future__ import annotations

import ast
import keyword
import re
import warnings
from typing import Any

MARKER = "server_args="


def _literal_eval(src: str):
    """ast.literal_eval without the SyntaxWarning an invalid escape ('\\ ') in a dumped
    string raises on Python 3.12+: the dump is data, its escapes are SGLang's business.
    Every way a text can fail to be a literal is a ValueError or SyntaxError here: a set of
    dicts (``{{...}}``, unhashable: TypeError), or nesting too deep (RecursionError)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.literal_eval(src)
        except (TypeError, MemoryError, RecursionError) as exc:
            raise ValueError(f"not a literal: {type(exc).__name__}") from exc


class DumpError(ValueError):
    """The text is not a server_args dump."""


def find_dump(message: str) -> str | None:
    """The text after ``server_args=`` when the message is a dump, else None."""
    idx = message.find(MARKER)
    if idx < 0:
        return None
    rest = message[idx + len(MARKER):]
    if rest.startswith("ServerArgs(") or rest.startswith("{"):
        return rest
    return None


def parse_dump(text: str) -> tuple[dict[str, Any], str]:
    """(fields, form) for the text after ``server_args=``; form is "dataclass" or "dict"."""
    fields, form, _ = parse_dump_checked(text)
    return fields, form


def parse_dump_checked(text: str) -> tuple[dict[str, Any], str, bool]:
    """(fields, form, complete): ``parse_dump`` and ``dump_is_complete`` together.  A dump
    read whole as one literal (the usual case) is complete without the character scan of
    ``dump_is_complete`` when nothing in it can make that scan read it otherwise: no comment
    (``#``), no line break, no triple quote (see ``_plainly_closed``)."""
    text = text.strip()
    if text.startswith("ServerArgs("):
        fields = _parse_call(text)
        whole = fields is not None
        if fields is None:
            fields = _parse_fields(text[len("ServerArgs("):], dict_form=False)
        return fields, "dataclass", (whole and _plainly_closed(text)) or dump_is_complete(text)
    if text.startswith("{"):
        try:
            value = _literal_dict(text)
            if isinstance(value, dict):
                return ({str(k): v for k, v in value.items()}, "dict",
                        _plainly_closed(text) or dump_is_complete(text))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
        return _parse_fields(text[1:], dict_form=True), "dict", dump_is_complete(text)
    raise DumpError("not a server_args dump")


def _plainly_closed(text: str) -> bool:
    """For a stripped text that parsed whole as one literal call or dict: True when
    ``dump_is_complete`` is sure to say so too.  Its scan tracks brackets and quotes only;
    in a valid literal without a comment, a line break or a triple-quoted string, those are
    exactly Python's, so it finds the closing bracket at the text's end."""
    return "#" not in text and "\n" not in text and "\r" not in text and "'''" not in text and '"""' not in text


_CONSTANT = ast.Constant


def _node_value(node):
    """``ast.literal_eval(node)``, without its per-call set-up for a plain constant (most of
    a dump's 150-300 values): ``literal_eval`` returns a ``Constant``'s ``value`` as is."""
    return node.value if type(node) is _CONSTANT else ast.literal_eval(node)


def _literal_dict(text: str):
    """``_literal_eval(text)`` for a dict repr, its keys and values converted by
    ``_node_value``: the same value, or an exception where that raises one."""
    fields = _plain_fields(text, _DICT_ITEM) if text.isascii() else None
    if fields is not None:
        return fields
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            node = ast.parse(text.lstrip(" \t"), mode="eval").body
            if type(node) is not ast.Dict:
                return ast.literal_eval(node)
            return dict(zip(map(_node_value, node.keys), map(_node_value, node.values)))
        except (TypeError, MemoryError, RecursionError) as exc:
            raise ValueError(f"not a literal: {type(exc).__name__}") from exc


def _parse_call(text: str) -> dict[str, Any] | None:
    """The fields of a whole ``ServerArgs(k=v, ...)`` whose values are all Python literals,
    from one parse (a field at a time costs about 50 us each, 150-300 fields a dump); None
    for anything else (a cut dump, a value that is not a literal, a non-ASCII name, which
    Python would normalise), which ``_parse_fields`` then reads field by field, with the
    same result where both apply."""
    if not text.isascii():
        return None
    fields = _plain_fields(text, _CALL_ITEM)
    if fields is not None:
        return fields
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call = ast.parse(text, mode="eval").body
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "ServerArgs"
                and not call.args):
            return None
        fields: dict[str, Any] = {}
        for kw in call.keywords:
            if kw.arg is None:  # **kwargs
                return None
            fields[kw.arg] = _node_value(kw.value)
        return fields
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


# The plain dump, read without ``ast`` (a 10 KB dump's parse is 0.8 ms, 34 dumps a GiB of the
# benchmark log: 30 ms of explain).  SGLang's dumps are reprs: ``name=value`` (or ``'name':
# value``) joined by ", ", in ASCII, each value a string without a backslash or a control
# character, a number as repr writes it, True / False / None, or a list, tuple, dict or set with
# no bracket inside it.  Such a text splits into its values where Python's parser splits it (a
# string holds no quote of its kind; a container no bracket, and its strings are whole tokens),
# so each value is what ``ast`` reads there; a text that is not all of this shape (a nested
# list, an escape, ``LoRARef(...)``, a keyword as a name) is read by ``ast`` as before.
_STR = r"'[^'\\\x00-\x1f\x7f]*'|\"[^\"\\\x00-\x1f\x7f]*\""
_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?"
_VALUE = (rf"(?P<str>{_STR})|(?P<num>{_NUMBER})|(?P<const>True|False|None)"
          rf"|(?P<flat>[\[({{](?:[^\[\](){{}}'\"\\\x00-\x1f\x7f]|{_STR})*[\])}}])")
_CALL_ITEM = re.compile(rf"(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?:{_VALUE})(?:, |\)\Z)")
_DICT_ITEM = re.compile(rf"(?P<key>{_STR}): (?:{_VALUE})(?:, |}}\Z)")
_CONSTANTS = {"True": True, "False": False, "None": None}


def _plain_fields(text: str, item: re.Pattern) -> dict[str, Any] | None:
    """The fields of a plain dump (above; ``item``: ``_CALL_ITEM`` for ``ServerArgs(...)``,
    ``_DICT_ITEM`` for ``{...}``) read without ``ast``, as ``_parse_call`` / ``_literal_dict``
    give them; None when the text is not all of that shape."""
    call = item is _CALL_ITEM
    pos = len("ServerArgs(") if call else 1
    if not text.endswith(")" if call else "}") or pos >= len(text):
        return None
    fields: dict[str, Any] = {}
    match = item.match
    while pos < len(text):  # (each item ends with ", " or with the closing bracket at the text's end)
        m = match(text, pos)
        if m is None:
            return None
        pos = m.end()
        name, string, number, constant, flat = m.groups()
        if not call:
            name = name[1:-1]
        elif keyword.iskeyword(name):
            return None  # (not a name Python takes: ast's SyntaxError decides)
        if string is not None:
            fields[name] = string[1:-1]
        elif number is not None:
            fields[name] = float(number) if "." in number or "e" in number else int(number)
        elif constant is not None:
            fields[name] = _CONSTANTS[constant]
        else:
            try:
                fields[name] = ast.literal_eval(flat)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return None  # (a container that is no literal, ``(a)``: read by ast as before)
    return fields


def dump_is_complete(text: str) -> bool:
    """True when the dump text reaches its closing bracket (every field is there); False
    for a dump cut off by ``tail``, a terminal or a crash."""
    text = text.strip()
    if text.startswith("ServerArgs("):
        body = text[len("ServerArgs("):]
    elif text.startswith("{"):
        body = text[1:]
    else:
        return False
    closed = []
    for _ in _split_top_level(body, closed):
        pass
    return bool(closed)


def _parse_fields(body: str, *, dict_form: bool) -> dict[str, Any]:
    """Split ``k=v, k=v`` (or ``'k': v, ...``) at top-level commas, tolerating a cut end."""
    fields: dict[str, Any] = {}
    for item in _split_top_level(body):
        item = item.strip()
        if not item:
            continue
        if dict_form:
            key_src, sep, value_src = _split_key(item, ":")
            if not sep:
                continue
            try:
                key = _literal_eval(key_src.strip())
            except (ValueError, SyntaxError):
                continue
            if not isinstance(key, str):
                continue
        else:
            key, sep, value_src = _split_key(item, "=")
            key = key.strip()
            if not sep or not key.isidentifier():
                continue
        fields[key] = _value(value_src.strip())
    return fields


def _split_key(item: str, sep: str) -> tuple[str, str, str]:
    if sep == ":":
        # a quoted key may itself contain ':'; find the first ':' outside quotes
        quote = None
        for i, ch in enumerate(item):
            if quote:
                if ch == quote:
                    quote = None
            elif ch in "'\"":
                quote = ch
            elif ch == ":":
                return item[:i], ":", item[i + 1:]
        return item, "", ""
    return item.partition(sep)


def _value(src: str) -> Any:
    try:
        return _literal_eval(src)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return _RawValue(src)


class _RawValue(str):
    """A value that was not a Python literal, kept as its source text."""

    __slots__ = ()


def is_raw(value: Any) -> bool:
    return isinstance(value, _RawValue)


_OUTSIDE = re.compile(r"""['"()\[\]{},<]""")  # the characters _split_top_level acts on outside quotes
_INSIDE = {q: re.compile(r"[\\%s]" % q) for q in "'\""}  # ... and inside a quote: a backslash or its end


def _split_top_level(body: str, closed: list | None = None):
    """Yield the items of a comma-separated list, respecting brackets and quotes.

    The closing bracket of the whole dump ends the list (and appends True to ``closed``); a
    cut-off last item (no closing bracket, unterminated quote) is dropped, since its value
    is unknown.  Jumps from one character that matters to the next (a dump is about 10 KB,
    several per launch).
    """
    depth = 0
    start = 0
    i = 0
    outside = _OUTSIDE.search
    while True:
        m = outside(body, i)
        if m is None:
            return  # cut off: the text ended before the closing bracket; the last item is incomplete
        i = m.start()
        ch = body[i]
        if ch in "'\"":
            inside = _INSIDE[ch].search
            i += 1
            while True:
                q = inside(body, i)
                if q is None:
                    return  # an unterminated quote: cut off
                i = q.start()
                if body[i] == "\\":
                    i += 2  # the escaped character is skipped
                    continue
                break
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                if closed is not None:
                    closed.append(True)
                yield body[start:i]
                return
            depth -= 1
        elif ch == ",":
            if depth == 0:
                yield body[start:i]
                start = i + 1
        elif depth == 0:  # "<": <function f at 0x...>: skip to the matching '>'
            end = body.find(">", i)
            if end < 0:
                return
            i = end
        i += 1
