"""The application room: irforge's use cases (evaluate, evaluate instructions, judge and fill
holes, bench, QC, compare, agreement, generate) over typed configurations, each returning the
one Results object or its report. The command line (irforge.cli) and the Python API
(irforge.api) are its fronts: they parse or take keywords, build a configuration, call, print."""
