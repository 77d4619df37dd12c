"""The command-line layer: one module per ``benchbook`` command (argument parsing and console output)."""
