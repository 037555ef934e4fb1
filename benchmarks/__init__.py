"""Speed and quality benchmarks of twokeys against peer libraries (not tests).

``python -m benchmarks all`` runs every part and writes ``benchmarks/RESULTS.md``.
"""
