"""The README as a newcomer follows it: no link out of the clone, set-up's exit status explained."""

import re
import subprocess

from conftest import ROOT, doctor_cmd

README = (ROOT / "README.md").read_text()


def test_no_link_leaves_the_repository():
    assert "../shared" not in README
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
    assert (ROOT / "docs" / "CONTRACT.md").is_file()


def test_setup_explains_that_the_demo_exits_1():
    setup = README.split("## Set-up on a fresh machine", 1)[1].split("Pass the tests", 1)[0]
    block = setup.split("```", 2)[1]
    commands = [line for line in block.splitlines() if line.strip()]
    demo = next(c for c in commands if "sglang-doctor explain" in c)
    after = demo.split("sglang-doctor explain", 1)[1]
    assert "&&" not in after  # nothing chained after the demo, whose exit 1 would read as failure
    assert "exits 1 by design" in setup
    args = ["explain", *after.split(";")[0].split()]
    r = subprocess.run(doctor_cmd(*args), capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 1 and "summary: 2 incidents in 2 launches" in r.stdout


def test_readme_gpu_names_are_the_ones_the_tool_takes():
    from sglang_doctor.remedy import hardware

    for name in re.findall(r"`((?:a6000|a100-40|a100-80|h100-80|l40s|rtx3090|rtx4090)(?:x\d+)?|\d+(?:MiB|GiB)x\d+)`", README):
        hardware.get_profile(name)  # raises on a name the tool does not know
    assert "`h100`" not in README
