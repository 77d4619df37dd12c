"""benchbook: turn raw LLM-serving benchmark captures into honest, reproducible HTML reports."""

__version__ = "0.1.0"
