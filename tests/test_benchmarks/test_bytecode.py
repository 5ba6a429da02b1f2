"""bench_workflow compiles stale project bytecode before it times processes."""

import os

import pytest

from benchmarks.bench_workflow import refresh_bytecode


def test_only_missing_or_stale_bytecode_is_written(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    module = package / "mod.py"
    module.write_text("VALUE = 1\n")
    assert refresh_bytecode(package) == 2  # no bytecode yet
    assert refresh_bytecode(package) == 0  # all current
    module.write_text("VALUE = 2  # edited\n")
    stat = module.stat()
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    assert refresh_bytecode(package) == 1


def test_a_module_that_does_not_compile_stops_the_benchmark(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "broken.py").write_text("def oops(:\n")
    with pytest.raises(RuntimeError, match="compileall failed"):
        refresh_bytecode(package)
