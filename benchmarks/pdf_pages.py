"""PDF extraction and page-level retrieval on real manuals from Debian packages.

Five PDFs (589 pages, ``PDFS``) from ``gnuplot-doc``, ``octave-doc``,
``lilypond-doc-pdf`` and ``docbook-xsl-doc-pdf`` are read by four extractors:

* ``twokeys``: twokeys' PDF reader (PDFium through pypdfium2, then the cleaning of
  :mod:`twokeys.ingest.pdftext`: running headers/footers, line-end hyphens, ligatures,
  two-column order);
* ``pypdfium2``: PDFium's raw page text, uncleaned (what the cleaning adds);
* ``pypdf``: ``page.extract_text()``;
* ``markitdown``: Microsoft's markitdown (pdfminer.six), installed per its README
  (``pip install 'markitdown[pdf]'``) in its own venv (``--markitdown-python``).
  markitdown gives one text per file, without page breaks: its speed is measured on
  the whole files, and its page texts come from converting each page split into a
  one-page PDF (by pypdf; that time is not counted).

``build OUT`` runs each extractor over all the files in a fresh process and writes one
BEIR collection per extractor, one document per page (``<file>#p<N>``), with the
queries of ``benchmarks/pdf_pages/written.tsv`` (436 queries, 218 identifier and 218
paraphrase, each with its gold page); ``markitdown OUT`` writes markitdown's collection
alone. ``speed OUT [--pdfs ...]`` times each extractor in a fresh process: wall and CPU
seconds (compare CPU time on a shared machine) and peak RSS. ``run OUT`` evaluates
bm25, dense and hybrid on each collection (``twokeys eval``, the default MiniLM encoder)
and prints nDCG@10 and Recall@10 per query kind: page-level figures, since a document
is a page.
``paired OUT [--retriever dense]`` compares two extractors' saved runs query by query
(twokeys' text against markitdown's: how many queries differ, sign and permutation
tests), to tell a difference of means from noise.

How the queries were written (before any retrieval was run on these collections): 80
pages were drawn at random (seed 34) among pages with at least 800 characters of text
and no dot-leader table of contents, 10-30 per file; for each, pypdf's text of the page
(not twokeys') was read and two queries written from it: an identifier query naming
something the page defines or uses (an option, a function, a parameter), and a
paraphrase query asking for what the page says in other words. Five pages were left
out as license text repeated in several manuals (GPL, FDL) or an index page; four
more pages were added from an earlier draw. The gold page is the page the query was
written from (other pages may answer too: then a system is penalised alike).

A second draw (2026-12-05, session 5; the last 58 lines of ``written.tsv``), written and
committed before any retrieval was run on them: 34 pages drawn at random (seed 3405)
among pages with at least 800 characters of pypdfium2 text, no dot-leader table of
contents and no query yet (gnuplot 10, liboctave 6, lilypond usage 6, lilypond
extending 5, docbook-xsl 7); the page's pypdfium2 text was read and the same two kinds
of query written from it. Five were left out by the same rules: four license pages
(GPL, FDL) and one table-of-contents page without dot leaders (docbook-xsl p. 4).

A third draw (2026-12-05, session 6; the last 80 lines), written and committed before
any retrieval was run on them: 46 pages drawn at random (seed 3406) by the same filters
(pages with a query left out); six were left out by the same rules: four license pages
(gnuplot p. 21, liboctave p. 16, lilypond extending pp. 46 and 49) and two index pages
(gnuplot pp. 309 and 311). 40 pages (gnuplot 29, liboctave 3, lilypond usage 4, lilypond
extending 2, docbook-xsl 2), one identifier and one paraphrase query each, written from
the page's pypdfium2 text (42 queries train, 38 test).

A fourth draw (2026-12-05, session 8; the last 140 lines), written and committed before
any retrieval was run on them (by a writer who had not seen per-query results): the
pages with at least 800 characters of pypdfium2 text, no dot-leader table of contents
(three or more lines ending in five dots and a number) and no query yet, all five PDFs
in one pool (so in proportion to their pages that pass), shuffled by
``random.Random(8080)`` and taken in that order; nine were left out: seven license
pages (GPL, FDL: liboctave pp. 11-13, lilypond extending p. 48, lilypond usage pp. 69
and 70), the title page of lilypond extending (p. 1), a table-of-contents page without
dot leaders (docbook-xsl p. 4) and an index page (gnuplot p. 305). 70 pages (gnuplot 46,
docbook-xsl 12, lilypond usage 7, liboctave 3, lilypond extending 2), one identifier and
one paraphrase query each, written from the page's pypdfium2 text; a fact was chosen
that the page holds alone where the text of another page repeats it (gnuplot's x11
resources, pp. 238-239 and 299-300; its PostScript-LaTeX options, pp. 254, 278 and 282)
or another page already has a query on it (66 queries train, 74 test).

Splits (fixed 2026-12-05, before any fusion was tuned on this collection): a query is
in ``train`` when the first byte of the SHA-256 of its gold page's id
(``gnuplot.pdf#p28``) is even, else in ``test`` (:func:`split_of`): both queries written
from one page fall in the same split, so a page's wording never leaks from the queries
fusion rules are tuned on into those reported. ``qrels/train.tsv`` and
``qrels/test.tsv`` hold the two, ``qrels/all.tsv`` every query; ``split OUT`` writes
them into collections built before the splits existed. Fusion changes are tuned on
``train`` only; ``run`` reports ``test`` and ``all``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent / "pdf_pages"
DOC = Path("/usr/share/doc")
#: name in the collection -> path under /usr/share/doc (the docbook one is gzipped)
PDFS = {
    "gnuplot.pdf": "gnuplot/gnuplot.pdf",
    "liboctave.pdf": "octave/liboctave.pdf",
    "lilypond-usage.pdf": "lilypond/html/Documentation/usage.pdf",
    "lilypond-extending.pdf": "lilypond/html/Documentation/extending.pdf",
    "docbook-xsl-reference.pdf": "docbook-xsl-doc-pdf/doc/reference.pdf.gz",
}
EXTRACTORS = ("twokeys", "markitdown", "pypdf", "pypdfium2")
RETRIEVERS = ("bm25", "dense", "hybrid")
SPLITS = ("train", "test", "all")


def split_of(page_id: str) -> str:
    """``train`` or ``test``, by the gold page (``gnuplot.pdf#p28``): see the module doc."""
    return "train" if hashlib.sha256(page_id.encode()).digest()[0] % 2 == 0 else "test"


def written(splits: tuple[str, ...] = ("train", "test"), last: int = 0) -> list[list[str]]:
    """The written queries (file, page, kind, text) whose gold page is in ``splits``;
    ``last``: only the last that many lines of ``written.tsv`` (a draw; 0: all; a
    negative count is an error, not the lines after the first that many)."""
    if last < 0:
        raise ValueError(f"last: must be >= 0, got {last}")
    lines = (HERE / "written.tsv").read_text().splitlines()
    rows = [line.split("\t") for line in lines[-last if last else 0 :]]
    return [row for row in rows if split_of(f"{row[0]}#p{row[1]}") in splits]


def pdf_files(out: Path) -> dict[str, Path]:
    """The PDFs, the gzipped one unpacked into ``out``."""
    import gzip

    files = {}
    for name, rel in PDFS.items():
        path = DOC / rel
        if not path.exists():
            sys.exit(f"missing {path}: apt-get install gnuplot-doc octave-doc lilypond-doc-pdf "
                     "docbook-xsl-doc-pdf")  # fmt: skip
        if path.suffix == ".gz":
            target = out / name
            if not target.exists():
                target.write_bytes(gzip.decompress(path.read_bytes()))
            path = target
        files[name] = path
    return files


# -- extraction (each run in a fresh process by ``extract``) ---------------------------


def _twokeys(path: Path) -> list[str]:
    from twokeys.ingest.base import SourceFile
    from twokeys.ingest.readers.pdf import read

    docs = list(read(SourceFile(path, path.name, "pdf"), lambda skipped: None))
    pages: dict[int, list[str]] = defaultdict(list)
    for doc in docs:
        for seg in doc.segments:
            if seg.locator.page is not None:
                pages[seg.locator.page].append(doc.text[seg.start : seg.end])
    n = max(pages, default=0)
    return ["\n".join(pages.get(i, [])) for i in range(1, n + 1)]


def _pypdfium2(path: Path) -> list[str]:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    out = []
    for i in range(len(pdf)):
        page = pdf[i]
        textpage = page.get_textpage()
        out.append(textpage.get_text_range())
        textpage.close()
        page.close()
    pdf.close()
    return out


def _pypdf(path: Path) -> list[str]:
    import pypdf

    logging.disable(logging.CRITICAL)  # font warnings on every page otherwise
    return [page.extract_text() for page in pypdf.PdfReader(path).pages]


def _markitdown_whole(path: Path) -> list[str]:
    from markitdown import MarkItDown

    return [MarkItDown().convert(str(path)).text_content]


def extract(name: str, files: list[Path]) -> dict[str, Any]:
    """Run one extractor over ``files``: its texts, pages, seconds and peak RSS."""
    function = {
        "twokeys": _twokeys,
        "pypdfium2": _pypdfium2,
        "pypdf": _pypdf,
        "markitdown": _markitdown_whole,
    }[name]
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    texts = {path.name: function(path) for path in files}
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    peak = after.ru_maxrss * 1024
    return {"texts": texts, "seconds": seconds, "cpu_seconds": cpu, "peak_rss": peak}


def speed(out: Path, markitdown_python: str, names: tuple[str, ...]) -> None:
    """Time each extractor over the PDFs ``names`` in a fresh process: wall and CPU
    seconds (CPU time is what to compare on a shared machine) and peak RSS."""
    files = pdf_files(out)
    chosen = [files[n] for n in names]
    found = {}
    for name in EXTRACTORS:
        result = _extract_in_process(name, chosen, markitdown_python)
        pages = sum(len(t) for t in result["texts"].values())
        if name == "markitdown":  # one text per file: count the pages with pypdf
            import pypdf

            pages = sum(len(pypdf.PdfReader(p).pages) for p in chosen)
        found[name] = {k: v for k, v in result.items() if k != "texts"} | {"pages": pages}
    (out / "speed.json").write_text(json.dumps(found, indent=1))
    speed_table(out)


def _extract_in_process(name: str, files: list[Path], markitdown_python: str) -> dict[str, Any]:
    python = markitdown_python if name == "markitdown" else sys.executable
    code = (
        "import json,sys\nfrom pathlib import Path\nfrom benchmarks.pdf_pages import extract\n"
        f"r=extract({name!r},[Path(p) for p in sys.argv[1:]])\nprint(json.dumps(r))"
    )
    paths = [str(Path.cwd()), str(Path.cwd() / "src")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run([python, "-c", code, *map(str, files)], capture_output=True,
                          text=True, env=env, check=True)  # fmt: skip
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _markitdown_pages(python: str, path: Path, scratch: Path) -> list[str]:
    """markitdown's text of each page, from one-page PDFs split by pypdf."""
    import pypdf

    logging.disable(logging.CRITICAL)
    reader = pypdf.PdfReader(path)
    names = []
    for i, page in enumerate(reader.pages):
        writer = pypdf.PdfWriter()
        writer.add_page(page)
        target = scratch / f"{path.stem}-{i + 1:04d}.pdf"
        with open(target, "wb") as fh:
            writer.write(fh)
        names.append(str(target))
    script = (
        "import json,sys\nfrom markitdown import MarkItDown\nm=MarkItDown()\n"
        "print(json.dumps([m.convert(p).text_content for p in sys.argv[1:]]))"
    )
    done = subprocess.run([python, "-c", script, *names], capture_output=True, text=True,
                          check=True)  # fmt: skip
    pages: list[str] = json.loads(done.stdout)
    return pages


def build(out: Path, markitdown_python: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    files = pdf_files(out)
    queries = [line.split("\t") for line in (HERE / "written.tsv").read_text().splitlines()]
    speed = {}
    for name in EXTRACTORS:
        python = markitdown_python if name == "markitdown" else sys.executable
        code = (
            "import json,sys\nfrom pathlib import Path\nfrom benchmarks.pdf_pages import extract\n"
            f"r=extract({name!r},[Path(p) for p in sys.argv[1:]])\nprint(json.dumps(r))"
        )
        paths = [str(Path.cwd()), str(Path.cwd() / "src")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        done = subprocess.run([python, "-c", code, *map(str, files.values())], capture_output=True,
                              text=True, env=env, check=True)  # fmt: skip
        result = json.loads(done.stdout)
        names = {path.name: name for name, path in files.items()}  # usage.pdf: lilypond-usage.pdf
        texts: dict[str, list[str]] = {names[k]: v for k, v in result["texts"].items()}
        if name == "markitdown":
            scratch = out / "markitdown-pages"
            scratch.mkdir(exist_ok=True)
            texts = {n: _markitdown_pages(python, p, scratch) for n, p in files.items()}
            pages = sum(len(t) for t in texts.values())
        else:
            pages = sum(len(t) for t in texts.values())
        speed[name] = {"pages": pages, "seconds": result["seconds"], "peak_rss": result["peak_rss"]}
        _collection(out / name, texts, queries)
        print(f"{name}: {pages} pages in {result['seconds']:.1f}s", file=sys.stderr)
        (out / "speed.json").write_text(json.dumps(speed, indent=1))
    speed_table(out)


def speed_table(out: Path) -> None:
    """Pages/s and peak memory of each extractor, measured in one ``build`` run."""
    speed = json.loads((out / "speed.json").read_text())
    print("| extractor | pages | CPU seconds | pages per CPU second | peak RSS MB |")
    print("|---|---:|---:|---:|---:|")
    for name, s in speed.items():
        cpu = s.get("cpu_seconds", s["seconds"])
        rate, rss = s["pages"] / cpu, s["peak_rss"] / 2**20
        print(f"| {name} | {s['pages']} | {cpu:.1f} | {rate:.1f} | {rss:.0f} |")


def markitdown_collection(out: Path, markitdown_python: str) -> None:
    """Only markitdown's collection (its page texts, from one-page PDFs)."""
    files = pdf_files(out)
    queries = [line.split("\t") for line in (HERE / "written.tsv").read_text().splitlines()]
    scratch = out / "markitdown-pages"
    scratch.mkdir(parents=True, exist_ok=True)
    texts = {n: _markitdown_pages(markitdown_python, p, scratch) for n, p in files.items()}
    _collection(out / "markitdown", texts, queries)


def _collection(folder: Path, texts: dict[str, list[str]], queries: list[list[str]]) -> None:
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w") as fh:
        for name, pages in texts.items():
            for number, text in enumerate(pages, start=1):
                record = {"_id": f"{name}#p{number}", "title": "", "text": text}
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    with open(folder / "queries.jsonl", "w") as fq:
        for i, (_, _, kind, text) in enumerate(queries, start=1):
            qid = f"q{i:03d}"
            fq.write(json.dumps({"_id": qid, "text": text, "metadata": {"kind": kind}}) + "\n")
    write_splits(folder, queries)


def write_splits(folder: Path, queries: list[list[str]]) -> None:
    """``qrels/{train,test,all}.tsv`` of a collection (see :func:`split_of`)."""
    rows: dict[str, list[str]] = {split: [] for split in SPLITS}
    for i, (name, page, _, _) in enumerate(queries, start=1):
        page_id = f"{name}#p{page}"
        row = f"q{i:03d}\t{page_id}\t1\n"
        rows[split_of(page_id)].append(row)
        rows["all"].append(row)
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    for split, lines in rows.items():
        text = "query-id\tcorpus-id\tscore\n" + "".join(lines)
        (folder / "qrels" / f"{split}.tsv").write_text(text)


# -- the PDFs indexed as a user indexes them ------------------------------------------


def native(
    out: Path,
    page_tokens: tuple[int, ...] = (0, 64),
    splits: tuple[str, ...] = ("train", "test"),
    last: int = 0,
) -> dict[str, Any]:
    """The PDFs indexed by ``twokeys index`` itself (the reader's pages, sections and
    joined small pages; chunks located by page) once per PDF chunk cap in
    ``page_tokens`` (``ChunkerConfig.page_tokens``; 0: PDF pages chunked at 250 tokens
    like other text, the default).
    Each query is searched by bm25, dense and the hybrid, the hybrid with every chunk
    fused on its own (as before) and with a page's chunks fused as the page
    (:mod:`twokeys.fusion.units`); the hits' pages (``hit.locator``) are scored:
    nDCG@10 and Recall@10 per split and kind. Only the queries of ``splits`` are
    searched (``("train",)``: a fusion change is decided without a test figure printed
    beside it); the ``all`` rows only when both splits are; ``last``: only the queries of
    the last that many lines of ``written.tsv`` (a new draw alone). The indexes are built
    under ``out/native`` and reused."""
    import shutil

    import twokeys
    from twokeys.chunking import ChunkerConfig

    folder = out / "native" / "pdfs"
    folder.mkdir(parents=True, exist_ok=True)
    for name, path in pdf_files(out).items():
        if not (folder / name).exists():
            shutil.copyfile(path, folder / name)
    queries = written(splits, last)
    pooled = ("all",) if {"train", "test"} <= set(splits) else ()
    layouts = {
        str(tokens or 250): (
            "index.twokeys" if not tokens else f"index-pages{tokens}.twokeys",
            tokens,
        )
        for tokens in page_tokens
    }
    variants = {"bm25": "bm25", "dense": "dense", "hybrid (chunks)": "hybrid",
                "hybrid (pages)": "hybrid"}  # fmt: skip
    scores: dict[tuple[str, str, str, str], list[tuple[float, float]]] = defaultdict(list)
    counts = {}
    for layout, (where, page_tokens) in layouts.items():
        location = out / "native" / where
        options = twokeys.IndexOptions(chunker=ChunkerConfig(page_tokens=page_tokens))
        twokeys.build_index(folder, location, options)
        index = twokeys.open_index(location)
        counts[layout] = index.info().get("counts")
        for variant, mode in variants.items():
            for name, page, kind, text in queries:
                gold = f"{name}#p{page}"
                if variant == "hybrid (pages)":
                    hits = _paged_hits(index, text)
                else:
                    hits = [(h.path, h.locator) for h in index.search(text, mode=mode, k=300)]
                at = _page_rank(hits, gold)
                ndcg = 1.0 / math.log2(at + 1) if at else 0.0
                for split in (split_of(gold), *pooled):
                    for k in (kind, "all"):
                        scores[(layout, variant, split, k)].append((ndcg, 1.0 if at else 0.0))
        index.close()
    rows = []
    print("| PDF chunks | retriever | split | kind | queries | nDCG@10 | Recall@10 |")
    print("|---|---|---|---|---:|---:|---:|")
    order = list(variants)

    def place(key: tuple[str, str, str, str]) -> tuple[int, str, int, int]:
        layout, variant, split, kind = key
        return SPLITS.index(split), kind, -int(layout), order.index(variant)

    for (layout, variant, split, kind), values in sorted(scores.items(), key=lambda x: place(x[0])):
        ndcg = sum(v[0] for v in values) / len(values)
        recall = sum(v[1] for v in values) / len(values)
        rows.append({"pdf_chunk_tokens": int(layout), "retriever": variant, "split": split,
                     "kind": kind, "queries": len(values), "ndcg@10": round(ndcg, 4),
                     "recall@10": round(recall, 4)})  # fmt: skip
        print(f"| {layout} | {variant} | {split} | {kind} | {len(values)} | {ndcg:.3f} "
              f"| {recall:.3f} |")  # fmt: skip
    return {"indexes": counts, "rows": rows}


def _paged_hits(index: Any, text: str) -> list[tuple[str, Any]]:
    """(path, locator) of the hybrid's 300 best chunks with a page's chunks fused as
    the page (``HybridRetriever(units=Index.page_units())``)."""
    from twokeys.request import SearchRequest

    retriever = index.retriever(SearchRequest(text, k=300))
    retriever.units = index.page_units()
    run = retriever.retrieve(text, 300).run
    found = index.backend.chunks_with_source([h.row for h in run])
    return [(path, chunk.locator) for chunk, _, path in found]


def _page_rank(hits: list[tuple[str, Any]], gold: str) -> int:
    """The rank (1-10) of the page ``gold`` among the hits' pages (``(path, locator)``
    in rank order), 0 when not in the top 10; a chunk over several pages (``pp.
    12-13``) ranks each of them."""
    ranked: list[str] = []
    for path, loc in hits:
        if loc is None or loc.page is None:
            continue
        for number in range(loc.page, (loc.page_end or loc.page) + 1):
            page_id = f"{path}#p{number}"
            if page_id not in ranked:
                ranked.append(page_id)
    return ranked.index(gold) + 1 if gold in ranked[:10] else 0


# -- evaluation --------------------------------------------------------------------------


def run(out: Path, extractors: tuple[str, ...] = EXTRACTORS) -> None:
    """nDCG@10 and Recall@10 per extractor, retriever, split (``test``, ``all``) and
    query kind (``train`` is what fusion rules are tuned on: not reported here)."""
    import ir_measures
    from ir_measures import R, nDCG

    rows = []
    queries = [line.split("\t") for line in (HERE / "written.tsv").read_text().splitlines()]
    for name in extractors:
        folder = out / name
        write_splits(folder, queries)
        runs = out / f"runs-{name}"
        subprocess.run(
            [sys.executable, "-m", "twokeys.cli", "eval", str(folder), "-q", "--split", "all",
             "--retrievers", ",".join(RETRIEVERS), "--index", str(out / f"index-{name}.twokeys"),
             "--save-runs", str(runs), "--json"],
            check=True, capture_output=True,
        )  # fmt: skip
        kinds = {}
        for line in (folder / "queries.jsonl").read_text().splitlines():
            q = json.loads(line)
            kinds[q["_id"]] = q["metadata"]["kind"]
        for retriever in RETRIEVERS:
            run_file = next(runs.glob(f"*{retriever}*"))
            scored = list(ir_measures.read_trec_run(str(run_file)))
            for split in ("test", "all"):
                qrels = [
                    ir_measures.Qrel(q, d, int(r))
                    for q, d, r in (
                        line.split("\t")
                        for line in (folder / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]
                    )
                ]
                for kind in ("identifier", "paraphrase", "all"):
                    keep = {q.query_id for q in qrels if kind == "all" or kinds[q.query_id] == kind}
                    measures = ir_measures.calc_aggregate(
                        [nDCG @ 10, R @ 10],
                        [q for q in qrels if q.query_id in keep],
                        [s for s in scored if s.query_id in keep],
                    )
                    rows.append(
                        (name, retriever, split, kind, len(keep), measures[nDCG @ 10],
                         measures[R @ 10])
                    )  # fmt: skip
                    print(*rows[-1], file=sys.stderr, flush=True)
    print("| extractor | retriever | split | kind | queries | nDCG@10 | Recall@10 |")
    print("|---|---|---|---|---:|---:|---:|")
    for name, retriever, split, kind, n, ndcg, recall in rows:
        print(f"| {name} | {retriever} | {split} | {kind} | {n} | {ndcg:.3f} | {recall:.3f} |")


def paired_differences(a: dict[str, float], b: dict[str, float]) -> dict[str, Any]:
    """Per-query differences ``a - b`` over the queries both score: the mean, its
    standard error, how many queries differ (a above, a below), and two-sided p-values
    of the sign test (the queries that differ; :func:`scipy.stats.binomtest`) and of the
    project's paired randomisation test (:func:`twokeys.evaluation.significance.compare`:
    exact up to 2**13 sign assignments, else 10,000 with seed 0)."""
    from scipy.stats import binomtest

    from twokeys.evaluation.significance import compare

    queries = sorted(set(a) & set(b))
    if not queries:
        return {"queries": 0, "mean_difference": 0.0, "standard_error": 0.0, "differ": 0,
                "a_above": 0, "a_below": 0, "sign_test_p": 1.0, "permutation_p": 1.0}  # fmt: skip
    found = compare("b", {q: b[q] for q in queries}, "a", {q: a[q] for q in queries}, measure="")
    diffs = list(found.deltas.values())
    n = len(diffs)
    sd = (sum((d - found.mean_delta) ** 2 for d in diffs) / (n - 1)) ** 0.5 if n > 1 else 0.0
    above, below = found.record.wins, found.record.losses
    sign = binomtest(above, above + below).pvalue if above + below else 1.0
    return {"queries": n, "mean_difference": round(found.mean_delta, 4),
            "standard_error": round(sd / n**0.5, 4), "differ": above + below,
            "a_above": above, "a_below": below, "sign_test_p": round(float(sign), 3),
            "permutation_p": round(found.randomisation_pvalue, 3)}  # fmt: skip


def paired(
    out: Path, retriever: str, a: str = "twokeys", b: str = "markitdown"
) -> list[dict[str, Any]]:
    """Per-query nDCG@10 of ``retriever`` on extractor ``a``'s page texts against ``b``'s
    (the runs ``run OUT`` saved), by split and kind: is a difference of means a
    difference of rankings or noise (:func:`paired_differences`)?"""
    import ir_measures
    from ir_measures import nDCG

    kinds = {}
    for line in (out / a / "queries.jsonl").read_text().splitlines():
        q = json.loads(line)
        kinds[q["_id"]] = q["metadata"]["kind"]
    found = []
    for split in SPLITS:
        lines = (out / a / "qrels" / f"{split}.tsv").read_text().splitlines()[1:]
        qrels = [ir_measures.Qrel(q, d, int(r)) for q, d, r in (x.split("\t") for x in lines)]
        scores = {}
        for name in (a, b):
            run = list(
                ir_measures.read_trec_run(str(next((out / f"runs-{name}").glob(f"*{retriever}*"))))
            )
            scores[name] = {
                m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ 10], qrels, run)
            }
        for kind in ("identifier", "paraphrase"):
            pick = [{q: v for q, v in scores[n].items() if kinds[q] == kind} for n in (a, b)]
            row = {"split": split, "kind": kind, "retriever": retriever,
                   a: round(sum(pick[0].values()) / len(pick[0]), 4),
                   b: round(sum(pick[1].values()) / len(pick[1]), 4)}  # fmt: skip
            found.append(row | paired_differences(*pick))
            print(found[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("out", type=Path)
    b.add_argument("--markitdown-python", default="/work/cache/markitdown-venv/bin/python")
    m = sub.add_parser("markitdown")
    m.add_argument("out", type=Path)
    m.add_argument("--markitdown-python", default="/work/cache/markitdown-venv/bin/python")
    t = sub.add_parser("speed")
    t.add_argument("out", type=Path)
    t.add_argument("--markitdown-python", default="/work/cache/markitdown-venv/bin/python")
    t.add_argument("--pdfs", default=",".join(PDFS))
    s = sub.add_parser("split", help="write qrels/{train,test,all}.tsv into built collections")
    s.add_argument("out", type=Path)
    s.add_argument("--extractors", default=",".join(EXTRACTORS))
    n = sub.add_parser("native", help="index the PDFs with twokeys itself; pages of the hits")
    n.add_argument("out", type=Path)
    n.add_argument("--json", type=Path, help="write the figures here too")
    n.add_argument(
        "--page-tokens",
        default="0,64",
        help="PDF chunk caps to index with, comma-separated (0: as other text)",
    )
    n.add_argument(
        "--splits",
        default="train,test",
        help="the splits whose queries are searched (train: decide without test figures)",
    )
    n.add_argument(
        "--last",
        type=int,
        default=0,
        help="only the queries of the last N lines of written.tsv (a new draw; 0: all)",
    )
    p = sub.add_parser("paired", help="per-query differences of two extractors' runs")
    p.add_argument("out", type=Path)
    p.add_argument("--retriever", default="dense", choices=RETRIEVERS)
    p.add_argument("--json", type=Path, help="write the rows here too")
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--extractors", default=",".join(EXTRACTORS))
    args = parser.parse_args()
    if args.command == "build":
        build(args.out, args.markitdown_python)
    elif args.command == "markitdown":
        markitdown_collection(args.out, args.markitdown_python)
    elif args.command == "speed":
        speed(args.out, args.markitdown_python, tuple(args.pdfs.split(",")))
    elif args.command == "split":
        queries = [line.split("\t") for line in (HERE / "written.tsv").read_text().splitlines()]
        for name in args.extractors.split(","):
            write_splits(args.out / name, queries)
    elif args.command == "paired":
        rows = paired(args.out, args.retriever)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
    elif args.command == "native":
        splits = tuple(args.splits.split(","))
        if not splits or not set(splits) <= {"train", "test"}:
            parser.error(f"--splits: train, test or train,test, got {args.splits!r}")
        if args.last < 0:
            parser.error(f"--last: must be >= 0, got {args.last}")
        tokens = tuple(int(t) for t in args.page_tokens.split(","))
        found = native(args.out, tokens, splits, args.last)
        if args.json:
            args.json.write_text(json.dumps(found, indent=1) + "\n")
    else:
        run(args.out, tuple(args.extractors.split(",")))


if __name__ == "__main__":
    main()
