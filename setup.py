"""The one compiled part: BM25 top-k of one query in C (``twokeys.lexical._kernel``).

Optional: where it can't be compiled (no C compiler or Python headers) the install goes
on without it and ``twokeys.lexical.index`` uses its numpy path, which gives identical
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
        )
    ]
)
