"""Framework adapters: a twokeys search as a LangChain, LlamaIndex or Haystack retriever.

Each lives in its own module and imports its framework (an optional extra:
``twokeys[langchain]``, ``twokeys[llamaindex]``, ``twokeys[haystack]``); this package and
:mod:`twokeys.integrations.common` import none. Each adapter is built the same way:
``index=`` (a path or an open :class:`~twokeys.engine.Index`) or ``client=`` (a
:class:`~twokeys.client.Client` of ``twokeys serve``), plus search options as keywords;
it maps types and filters and nothing else, the search is the library's.
"""
