import pytest

from sglang_doctor.incidents.server_args import DumpError, find_dump, is_raw, parse_dump


def test_dataclass_form(seed_full):
    line = seed_full.read_text().splitlines()[3]
    fields, form = parse_dump(find_dump(line))
    assert form == "dataclass"
    assert fields["tp_size"] == 2 and fields["mem_fraction_static"] == 0.85
    assert fields["speculative_algorithm"] == "NEXTN"
    assert fields["cuda_graph_bs"] == [1, 2, 4, 8, 12, 16, 24, 32]
    assert fields["forward_hooks"] is None


def test_cut_dump_keeps_fields_before_the_cut(seed_full):
    line = seed_full.read_text().splitlines()[3]
    dump = find_dump(line)
    cut = dump[: dump.index("nccl_port") + 3]
    fields, _ = parse_dump(cut)
    assert fields["port"] == 30000 and "nccl_port" not in fields


def test_dict_form_and_non_literals():
    fields, form = parse_dump("{'model_path': '/m', 'mem_fraction_static': 0.716, 'cuda_graph_config': {'decode': {'max_bs': 32}}}")
    assert form == "dict" and fields["cuda_graph_config"]["decode"]["max_bs"] == 32
    fields, _ = parse_dump("{'a': 1, 'f': <function g at 0x7f>, 'z': 2}")
    assert fields["a"] == 1 and is_raw(fields["f"]) and fields["z"] == 2
    fields, _ = parse_dump("ServerArgs(lora_paths=[LoRARef(lora_id='x', pinned=False)], custom_sigquit_handler=<function h at 0x1>, port=1)")
    assert is_raw(fields["lora_paths"]) and fields["port"] == 1


def test_not_a_dump():
    assert find_dump("server_args=42") is None
    with pytest.raises(DumpError):
        parse_dump("nonsense")


def test_one_parse_equals_field_by_field(seed_full):
    """A whole dump of literals is read in one parse (_parse_call); cut or mutated dumps
    field by field: both give the fields, values and raw values the field-by-field reader
    gives."""
    import random

    from sglang_doctor.incidents import server_args

    dump = find_dump(next(line for line in seed_full.read_text().splitlines() if "server_args=" in line))
    fields, form = parse_dump(dump)
    assert form == "dataclass" and server_args._parse_call(dump.strip()) == fields
    assert server_args._parse_fields(dump.strip()[len("ServerArgs("):], dict_form=False) == fields
    rng = random.Random(7)
    for _ in range(300):
        text = list(dump)
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(text))
            text[k:k] = rng.choice(["", "=", ",", "'", '"', "\\", "(", ")", "[", "]", "{", "}", "<", ">",
                                    ", a=<function f at 0x1>", ", b=name", ", é=1", ", c=2"])
        text = "".join(text)[:rng.randint(1, len(dump) + 40)]
        if not text.startswith("ServerArgs("):
            continue
        got, _ = parse_dump(text)
        want = server_args._parse_fields(text.strip()[len("ServerArgs("):], dict_form=False)
        assert got == want and [is_raw(v) for v in got.values()] == [is_raw(v) for v in want.values()]


def _mutations(dump: str, rng, count: int):
    pieces = ["", "=", ",", "'", '"', "'''", '"""', "\\", "(", ")", "[", "]", "{", "}", "<", ">", "#", "# )",
              "\n", "\r", ", a=<function f at 0x1>", ", b=name", ", c=-2", ", d=(1, 'x')", ", e={'k': [1]}",
              ": 1, 'k2': ", "'k': -1.5, "]
    for _ in range(count):
        text = list(dump)
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(text))
            text[k:k] = rng.choice(pieces)
        yield "".join(text)[:rng.randint(1, len(dump) + 40)]


def test_parse_checked_equals_parse_and_completeness(seed_full):
    """parse_dump_checked's fields, form and completeness are parse_dump's and
    dump_is_complete's (whose character scan it skips for a dump read whole), and its
    literal conversions are ast.literal_eval's, on whole, cut and mutated dumps of both forms
    (comments, triple quotes and line breaks included, where the scan reads otherwise)."""
    import ast
    import random
    import warnings

    from sglang_doctor.incidents import server_args

    dump = find_dump(next(line for line in seed_full.read_text().splitlines() if "server_args=" in line))
    fields, _ = parse_dump(dump)
    as_dict = repr(fields)
    rng = random.Random(13)
    texts = [dump, as_dict, "{'a': 1} # }", "{'a': '''x'y'''}", "ServerArgs(a='''x'y''')", "ServerArgs(a=1) # x",
             "{'a': 1,\n 'b': 2}", "ServerArgs(a=1,\n b=[2])", "{'a': 1, **x}", "{[1]: 2}", "{'a': {1, 2}}"]
    texts += list(_mutations(dump, rng, 120)) + list(_mutations(as_dict, rng, 120))
    for text in texts:
        try:
            expected = parse_dump(text)
        except DumpError:
            with pytest.raises(DumpError):
                server_args.parse_dump_checked(text)
            continue
        got = server_args.parse_dump_checked(text)
        assert got == (*expected, server_args.dump_is_complete(text)), text
        assert [type(v) for v in got[0].values()] == [type(v) for v in expected[0].values()]
        stripped = text.strip()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = ast.literal_eval(stripped)
        except Exception:  # noqa: BLE001 - any failure: the fast form fails too
            want = ValueError
        try:
            have = server_args._literal_dict(stripped)
        except (ValueError, SyntaxError):
            have = ValueError
        assert have == want or (have is ValueError and want is ValueError), text


def _ast_fields(text: str):
    """The fields Python's own parser reads in a whole dump (a call of keywords or a dict
    literal), or None where it reads none."""
    import ast

    try:
        node = ast.parse(text, mode="eval").body
        if text.startswith("ServerArgs("):
            if not isinstance(node, ast.Call) or node.args or any(kw.arg is None for kw in node.keywords):
                return None
            return {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
        value = ast.literal_eval(node)
        return value if isinstance(value, dict) else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def test_plain_reading_is_asts(seed_full):
    """A dump read without ast (server_args._plain_fields: strings, numbers, constants, flat
    containers joined by ", ") gives exactly the fields, values and value types ast gives, on
    the seed's dump, its dict form, and dumps with values ast reads otherwise or not at all
    inserted (escapes, nested containers, keywords as names, numbers repr never writes)."""
    import random

    from sglang_doctor.incidents import server_args

    dump = find_dump(next(line for line in seed_full.read_text().splitlines() if "server_args=" in line)).strip()
    as_dict = repr(parse_dump(dump)[0])
    assert server_args._plain_fields(dump, server_args._CALL_ITEM) == _ast_fields(dump) is not None
    assert server_args._plain_fields(as_dict, server_args._DICT_ITEM) == _ast_fields(as_dict) is not None
    values = ["'a\\'b'", "'a\\nb'", '"it\'s"', "'[x]'", "'\t'", "'\x00'", "-0.0", "1e-05", "1E5", "007", "0x1f",
              "1_000", "-1", "inf", "[1, [2]]", "[1, '[', ']']", "(1)", "()", "(1,)", "{1, 2}", "{}", "{'k': (1, 2)}",
              "set()", "b'x'", "name", "True", "None", "[True, None]", "<function f at 0x1>", "[LoRARef(a=1)]"]
    names = ["a", "class", "None", "match", "_x", "tp_size", "é"]
    rng = random.Random(32)
    texts = [dump, as_dict]
    seps = {form: [i for i in range(len(form)) if form.startswith(", ", i)] + [len(form) - 1] for form in (dump, as_dict)}
    for _ in range(400):
        form = rng.choice((dump, as_dict))
        cut = rng.choice(seps[form])  # (before a field, or inside a list: ast reads that otherwise)
        name = rng.choice(names)
        item = f"{name}={rng.choice(values)}" if form is dump else f"{name!r}: {rng.choice(values)}"
        texts.append(form[:cut] + ", " + item + form[cut:])
    plain = 0
    for text in texts:
        item = server_args._CALL_ITEM if text.startswith("ServerArgs(") else server_args._DICT_ITEM
        got = server_args._plain_fields(text, item) if text.isascii() else None
        if got is None:
            continue
        plain += 1
        want = _ast_fields(text)
        assert got == want and list(got) == list(want), text
        assert [type(v) for v in got.values()] == [type(v) for v in want.values()], text
    assert 100 < plain < len(texts)  # (both kinds were met: read plainly, and left to ast)
