"""Sources people can see: citations with their locators, marks on unsupported
sentences, OpenAI ``url_citation`` annotations, and a page that shows one passage.

An answer cites its context blocks as ``[n]``. The reply lists them at its end, each
named by where it is (:attr:`twokeys.types.Hit.cite`'s label: ``manual.pdf p. 12``, or
the path when the reader recorded no locator) and its heading. A generated sentence the
grounding check finds unsupported by the blocks it cites is marked in the text itself
(:data:`UNSUPPORTED`). Clients that render structured sources (Open WebUI turns each
``url_citation`` annotation of a streamed delta into a source card) get one annotation
per source, titled with its number, locator and heading, linking to
``GET /passages/{chunk_id}``: the passage as an HTML page, every piece of document text
escaped (nothing in a document runs in the browser).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from twokeys.engine import Index
from twokeys.rag.ask import Answer, Source
from twokeys.server.messages import UNSUPPORTED_MARK
from twokeys.server.service import IndexService, UnknownDocumentError

UNSUPPORTED = UNSUPPORTED_MARK
PASSAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'"  # no script runs there


def cites(index: Index, answer: Answer) -> dict[int, str]:
    """Each source's citation label: its first chunk's locator label, else its path."""
    first = {s.number: s.chunk_ids[0] for s in answer.sources if s.chunk_ids}
    chunks = index.backend.passages(list(first.values())) if first else {}
    out = {}
    for source in answer.sources:
        chunk = chunks.get(first.get(source.number, ""))
        locator = chunk.locator if chunk is not None else None
        out[source.number] = locator.label(source.path) if locator else source.path
    return out


def marked_text(answer: Answer) -> str:
    """The answer's text with each unsupported generated sentence marked after it."""
    text = answer.text
    if answer.kind != "generated":
        return text
    for check in answer.checks:
        if check.status != "unsupported" or not check.text.strip():
            continue
        at = text.find(check.text)
        if at >= 0:
            end = at + len(check.text)
            text = f"{text[:end]}{UNSUPPORTED}{text[end:]}"
    return text


def unsupported_text(answer: Answer) -> str:
    """For a streamed answer (its text already sent): the unsupported sentences, listed,
    and the sentences that cited nothing with the citation the check found for them."""
    if answer.kind != "generated":
        return ""
    flagged = [c.text for c in answer.checks if c.status == "unsupported"]
    added = [c.shown for c in answer.checks if c.added]
    lines = []
    if flagged:
        lines += ["", "", "Not supported by the cited sources:"]
        lines += [f"- {text}" for text in flagged]
    if added:
        lines += ["", "", "Cited by the check (the model cited no source):"]
        lines += [f"- {text}" for text in added]
    return "\n".join(lines)


def _title(source: Source, cite: str) -> str:
    heading = "; ".join(source.quoted_headings) or source.heading
    return f"[{source.number}] {cite}" + (f" — {heading}" if heading else "")


def sources_text(answer: Answer, labels: Mapping[int, str]) -> str:
    """The sources, as the lines appended to the reply."""
    if not answer.sources:
        return ""
    lines = ["", "", "Closest sources:" if answer.abstains else "Sources:"]
    for s in answer.sources:
        quiet = s.cited or answer.abstains
        title = _title(s, labels.get(s.number, s.cite or s.path))
        lines.append(f"{title}{'' if quiet else ' (not cited)'}")
    return "\n".join(lines)


def passage_url(base_url: str, chunk_id: str) -> str:
    return f"{base_url.rstrip('/')}/passages/{quote(chunk_id, safe='')}"


def url_citations(
    answer: Answer, labels: Mapping[int, str], base_url: str, text: str
) -> list[dict[str, Any]]:
    """One ``url_citation`` per source (OpenAI's annotation shape): its title, the link
    to its passage, and where its first ``[n]`` is in ``text``."""
    out = []
    for s in answer.sources:
        if not s.chunk_ids:
            continue
        mark = f"[{s.number}]"
        start = text.find(mark)
        start, end = (start, start + len(mark)) if start >= 0 else (0, 0)
        out.append(
            {
                "type": "url_citation",
                "url_citation": {
                    "url": passage_url(base_url, s.chunk_ids[0]),
                    "title": _title(s, labels.get(s.number, s.path)),
                    "start_index": start,
                    "end_index": end,
                },
            }
        )
    return out


def passage_router(service: IndexService) -> APIRouter:
    router = APIRouter(tags=["documents"])

    @router.get("/passages/{chunk_id:path}", response_class=HTMLResponse)
    def passage(chunk_id: str) -> HTMLResponse:
        """One passage (chunk) as an HTML page: where it is, its heading and its text,
        all escaped. The link a citation's annotation carries."""
        with service.reader() as index:
            chunk = index.backend.passages([chunk_id]).get(chunk_id)
            info = index.backend.documents([chunk.doc_id]).get(chunk.doc_id) if chunk else None
        if chunk is None:
            raise UnknownDocumentError(f"no passage {chunk_id!r}")
        path = info.path if info is not None else chunk.doc_id
        title = info.title if info is not None else ""
        cite = chunk.locator.label(path) if chunk.locator else path
        e = html.escape
        page = (
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{e(cite)}</title>"
            "<style>body{font:16px/1.5 sans-serif;max-width:46em;margin:2em auto;padding:0 1em}"
            "pre{white-space:pre-wrap;font:inherit}.where{color:#555}</style></head><body>"
            f"<p class='where'>{e(cite)}</p><h1>{e(title or path)}</h1>"
            f"<h2>{e(chunk.heading)}</h2><pre>{e(chunk.text)}</pre>"
            f"<p class='where'>characters {chunk.start}–{chunk.end} of {e(path)}</p>"
            "</body></html>"
        )
        return HTMLResponse(page, headers={"Content-Security-Policy": PASSAGE_CSP})

    return router
