"""Token-id input to ``/v1/embeddings``, read back as the text the client encoded.

OpenAI's embeddings API takes a text as a list of token ids, and LangChain's
``OpenAIEmbeddings`` sends every text that way by default: it counts with tiktoken,
which for a model it does not know (any of ours) uses ``cl100k_base``. Those ids are the
client's tokenizer's, not the index's encoder's, so they are decoded with
``cl100k_base`` (by ``bpe-openai``, whose vocabulary ships in its wheel: nothing is
downloaded; its table is byte-identical to tiktoken's, ``tests/integration/
test_langchain.py``) and the text is embedded as any other. Without the ``token-ids``
extra the input is refused with a 400 that says how to send text instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, cast

from twokeys.server.config import RequestError

ENCODING = "cl100k_base"

#: the refusal when the extra is missing: what the client can change, and the server
REFUSED = (
    "input: token ids need the server's 'token-ids' extra (pip install "
    "'twokeys[token-ids]'); or send text (LangChain: OpenAIEmbeddings(..., "
    "check_embedding_ctx_length=False))"
)


@cache
def _encoding() -> Any:
    try:
        import bpe_openai  # type: ignore[import-untyped]
    except ImportError:
        return None
    return bpe_openai.get_encoding(ENCODING)


def decode_inputs(given: Sequence[int] | Sequence[Sequence[int]]) -> list[str]:
    """The texts of token-id input: a list of ids is one text, a list of lists many
    (the request model has checked that every id is an int)."""
    encoding = _encoding()
    if encoding is None:
        raise RequestError(400, REFUSED)
    one = bool(given) and isinstance(given[0], int)
    many = cast("list[Sequence[int]]", [given] if one else list(given))
    texts = []
    for i, ids in enumerate(many):
        if not ids:
            raise RequestError(400, f"input[{i}]: holds no token ids")
        bad = next((t for t in ids if not 0 <= t < encoding.n_vocab), None)
        if bad is not None:
            raise RequestError(400, f"input[{i}]: {bad} is not a {ENCODING} token id")
        texts.append(str(encoding.decode(ids)))
    return texts
