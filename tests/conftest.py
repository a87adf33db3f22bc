import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def seed_full() -> Path:
    return FIXTURES / "seed" / "seed_full.log"


@pytest.fixture
def seed_tail() -> Path:
    return FIXTURES / "seed" / "seed_tail20.log"


def doctor_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "sglang_doctor", *args]
