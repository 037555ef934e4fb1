"""Every data file the package reads at run time goes into the wheel.

An editable install (what the tests run) reads ``src/`` in place, so a weights file or a
page asset left out of ``[tool.setuptools.package-data]`` passes every other test and is
missing only for users who ``pip install`` a built wheel (it happened once, to
``confidence_weights_lexical.json``)."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "twokeys"
# sources and build outputs, not data: the C kernels are compiled into extension modules
NOT_DATA = {".py", ".pyc", ".c", ".pyi", ".so"}


def _package_data() -> dict[str, list[str]]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        config = tomllib.load(f)
    data: dict[str, list[str]] = config["tool"]["setuptools"]["package-data"]
    return data


def _data_files() -> list[Path]:
    return sorted(
        path
        for path in PACKAGE.rglob("*")
        if path.is_file() and path.suffix not in NOT_DATA and "__pycache__" not in path.parts
    )


def _shipped(path: Path, package_data: dict[str, list[str]]) -> bool:
    for package, patterns in package_data.items():
        folder = ROOT / "src" / Path(*package.split("."))
        if not path.is_relative_to(folder):
            continue
        inside = path.relative_to(folder).as_posix()
        if any(
            fnmatch(inside, pattern) and inside.count("/") == pattern.count("/")
            for pattern in patterns
        ):
            return True
    return False


def test_the_package_has_data_files() -> None:
    names = {path.name for path in _data_files()}
    assert {"confidence_weights.json", "static_minilm_map.npy", "index.html"} <= names


def test_every_data_file_is_package_data() -> None:
    package_data = _package_data()
    missing = [
        path.relative_to(ROOT).as_posix()
        for path in _data_files()
        if not _shipped(path, package_data)
    ]
    assert not missing, f"not in [tool.setuptools.package-data], so not in a wheel: {missing}"


def test_a_file_outside_the_patterns_is_caught() -> None:
    package_data = _package_data()
    assert _shipped(PACKAGE / "rag" / "confidence_weights.json", package_data)
    assert not _shipped(PACKAGE / "rag" / "new_weights.npy", package_data)
    assert not _shipped(PACKAGE / "server" / "static" / "fonts" / "a.woff2", package_data)
