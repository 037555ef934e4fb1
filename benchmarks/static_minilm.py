"""Fit the affine map of the ``minilm-static`` query encoder (:mod:`twokeys.dense.static_minilm`).

``python -m benchmarks.static_minilm fit`` reads paragraphs from Debian documentation
that no benchmark collection draws on (training: the Rust book, Rust by Example, the
Rust reference, edition guide and unstable book from ``rust-doc``, Cargo's manual from
``cargo-doc``, CMake's from ``cmake-data``; held out: Octave's, gnuplot's and nginx's
manuals), cuts them into sentences and short word windows (query-sized pieces),
embeds each with the full int8 MiniLM and with the static table, fits the map by ridge
least squares (normalised static sum plus a bias -> the full model's normalised
vector) and writes it to ``src/twokeys/dense/static_minilm_map.npy``. It reports the
cosine between the static and the full vectors on the held-out pieces, with and without
the map (``benchmarks/results/static_minilm.json``).

``python -m benchmarks.static_minilm compare [--collection DIR] [--index PATH]`` measures
hybrid nDCG@10 on a BEIR collection's test queries (SciFact by default, whole) with the
default query encoder and with ``minilm-static``, over one index.

Files are read in the order of the hash of their path, pieces are deduplicated in
order, so the fit is the same on every run over the same packages.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.common import DATA, REPO, RESULTS, WORK, log, save_result

DOC = "/usr/share/doc"
TRAIN = [
    f"{DOC}/rust-doc/html/{part}/**/*.html"
    for part in ("book", "rust-by-example", "reference", "edition-guide", "unstable-book")
] + [f"{DOC}/cargo/doc/**/*.html", f"{DOC}/cmake-data/**/*.html"]
HELD_OUT = [f"{DOC}/octave/**/*.html", f"{DOC}/gnuplot/**/*.html", f"{DOC}/nginx-doc/**/*.html"]
TRAIN_PARAGRAPHS, HELD_OUT_PARAGRAPHS = 60_000, 4_000
RIDGE = 0.1  # chosen on the held-out cosine among 0.1 and 10 (NOTES.md)
BLOCKS = ("p", "li", "h1", "h2", "h3", "dt", "dd", "td")


class _Paragraphs(HTMLParser):
    """Text of the block elements of a page, whitespace collapsed; scripts, styles and
    preformatted code left out."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._text: list[str] | None = None
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in ("script", "style", "pre"):
            self._skip += 1
        if tag in BLOCKS:
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "pre"):
            self._skip = max(0, self._skip - 1)
        if tag in BLOCKS and self._text is not None:
            text = " ".join("".join(self._text).split())
            if 15 <= len(text) <= 600:
                self.found.append(text)
            self._text = None

    def handle_data(self, data: str) -> None:
        if self._text is not None and not self._skip:
            self._text.append(data)


def paragraphs(patterns: list[str], limit: int) -> list[str]:
    """Distinct paragraphs of the pages ``patterns`` match, files in hash order."""
    files = sorted({f for p in patterns for f in glob.glob(p, recursive=True)})
    files.sort(key=lambda f: hashlib.sha256(f.encode()).hexdigest())
    seen: dict[str, None] = {}
    for name in files:
        parser = _Paragraphs()
        with open(name, encoding="utf-8", errors="replace") as fh:
            parser.feed(fh.read())
        seen.update(dict.fromkeys(parser.found))
        if len(seen) >= limit:
            break
    return list(seen)[:limit]


def pieces(texts: list[str]) -> list[str]:
    """Query-sized pieces: each sentence of 3-40 words, and of a sentence over 12 words a
    window of 4-11 words placed by the sentence's hash."""
    out: dict[str, None] = {}
    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            words = sentence.split()
            if 3 <= len(words) <= 40:
                out[sentence] = None
            if len(words) > 12:
                h = int(hashlib.sha256(sentence.encode()).hexdigest()[:8], 16)
                n = 4 + h % 8
                start = h % (len(words) - n + 1)
                out[" ".join(words[start : start + n])] = None
    return list(out)


def _cosines(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return np.asarray((a * b).sum(axis=1), np.float64)


def fit(ridge: float = RIDGE) -> dict[str, Any]:
    from twokeys.dense.onnx_minilm import OnnxMiniLM
    from twokeys.dense.static_minilm import DIM, MAP_FILE, load_table, static_sums

    train = pieces(paragraphs(TRAIN, TRAIN_PARAGRAPHS))
    held = pieces(paragraphs(HELD_OUT, HELD_OUT_PARAGRAPHS))
    log(f"pieces: {len(train)} training, {len(held)} held out")
    if not train or not held:
        raise SystemExit("no text: install rust-doc, cargo-doc, cmake-data, octave-doc, ...")
    full = OnnxMiniLM(threads=1)
    table = load_table()

    def static(texts: list[str]) -> npt.NDArray[np.float32]:
        encoded = full._tokenizer.encode_batch(texts)
        return static_sums(table, [e.ids[1:-1] for e in encoded])

    x_train, y_train = static(train), full.encode(train, "query")
    x_held, y_held = static(held), full.encode(held, "query")
    design = np.hstack([x_train, np.ones((len(x_train), 1), np.float32)]).astype(np.float64)
    gram = design.T @ design + ridge * np.eye(DIM + 1)
    weights = np.linalg.solve(gram, design.T @ y_train.astype(np.float64)).astype(np.float32)
    mapped = x_held @ weights[:DIM] + weights[DIM]
    cos_raw, cos_mapped = _cosines(x_held, y_held), _cosines(mapped, y_held)
    cos_train = _cosines(x_train @ weights[:DIM] + weights[DIM], y_train)
    np.save(MAP_FILE, weights, allow_pickle=False)
    figures = {
        "training_pieces": len(train),
        "held_out_pieces": len(held),
        "ridge": ridge,
        "held_out_cosine_unmapped": round(float(cos_raw.mean()), 4),
        "held_out_cosine": round(float(cos_mapped.mean()), 4),
        "held_out_cosine_p10": round(float(np.percentile(cos_mapped, 10)), 4),
        "training_cosine": round(float(cos_train.mean()), 4),
        "map": str(MAP_FILE.relative_to(REPO)),
        "map_sha256": hashlib.sha256(MAP_FILE.read_bytes()).hexdigest(),
    }
    log(str(figures))
    return figures


def compare(collection: Path, index: Path, split: str = "test") -> dict[str, Any]:
    """Hybrid nDCG@10 (k=100 chunks collapsed to documents) and median CPU time of a
    search, over a BEIR collection's ``split`` queries, with the index's own query
    encoder and with ``minilm-static``: one index (built at ``index`` when missing)."""
    import statistics
    import time

    from twokeys import IndexOptions, build_index, open_index
    from twokeys.evaluation.runs import evaluate

    if not index.exists():
        build_index(collection / "corpus.jsonl", index, IndexOptions())
    texts = {}
    for line in (collection / "queries.jsonl").read_text("utf-8").splitlines():
        record = json.loads(line)
        texts[str(record["_id"])] = record["text"]
    qrels: dict[str, dict[str, int]] = {}
    for line in (collection / "qrels" / f"{split}.tsv").read_text("utf-8").splitlines()[1:]:
        qid, doc, grade = line.split("\t")
        if int(grade) > 0:
            qrels.setdefault(qid, {})[doc] = int(grade)
    out: dict[str, Any] = {"collection": collection.name, "split": split, "queries": len(qrels)}
    for name, query_encoder in (("minilm", None), ("minilm-static", "minilm-static")):
        opened = open_index(index, query_encoder=query_encoder)
        run: dict[str, dict[str, float]] = {}
        cpu = []
        for qid in qrels:
            started = time.process_time()
            hits = opened.search(texts[qid], k=100)
            cpu.append(time.process_time() - started)
            ranking: dict[str, float] = {}
            for hit in hits:
                ranking.setdefault(hit.doc_id, float(100 - len(ranking)))
            run[qid] = ranking
        out[name] = {
            "ndcg@10": round(evaluate(qrels, run, ["nDCG@10"])["nDCG@10"], 4),
            "median_cpu_ms": round(statistics.median(cpu) * 1000, 2),
        }
        log(f"{collection.name} {split} {name}: {out[name]}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["fit", "compare"])
    parser.add_argument("--ridge", type=float, default=RIDGE)
    parser.add_argument("--collection", type=Path, default=DATA / "scifact")
    parser.add_argument("--index", type=Path, default=WORK / "static-minilm" / "scifact")
    parser.add_argument("--split", default="test")
    args = parser.parse_args(argv)
    if args.command == "fit":
        save_result("static_minilm", fit(args.ridge))
        return 0
    path = RESULTS / "static_minilm.json"
    figures = json.loads(path.read_text("utf-8")) if path.exists() else {}
    figures.pop("benchmark", None)
    figures.pop("machine", None)
    figures.setdefault("compare", {})[f"{args.collection.name}/{args.split}"] = compare(
        args.collection, args.index, args.split
    )
    save_result("static_minilm", figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
