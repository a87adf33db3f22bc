"""sglang-doctor: diagnose SGLang launch failures and fix their flags."""

__version__ = "0.1.0"
