"""The compiled modules: ``twokeys.lexical._kernel`` (BM25 top-k of a query or a batch,
the build's raw-token scan and postings layout, see its ``_kernel.c``) and
``twokeys.text._kernel`` (sentence ends, approximate token counts and packing for
chunking).

Optional: where they can't be compiled (no C compiler or Python headers) the install
goes on without them and twokeys uses its Python and numpy paths, which give identical
results, more slowly. Everything else is configured in ``pyproject.toml``.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "twokeys.lexical._kernel",
            ["src/twokeys/lexical/_kernel.c"],
            # no fused multiply-add: numpy rounds "qtf * weight" before adding it
            extra_compile_args=["-O2", "-ffp-contract=off"],
            optional=True,
        ),
        Extension(
            "twokeys.text._kernel",
            ["src/twokeys/text/_kernel.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)
