"""require_extra / missing_extra (irforge.common.extras): a missing optional library becomes a
message naming the extra to install; a library that is installed but broken is not disguised as
missing. Real imports of real (and really absent) modules."""

from __future__ import annotations

import sys

import pytest

from irforge.common.extras import EXTRA_OF_MODULE, MissingExtra, lazy_module, missing_extra, require_extra


def test_an_installed_library_is_returned():
    import json

    assert require_extra("dense", "json") is json


def test_an_absent_library_names_the_extra_and_how_to_install_it():
    with pytest.raises(MissingExtra) as raised:
        require_extra("dense", "irforge_tests_no_such_library", "a local dense model")
    assert str(raised.value) == ("a local dense model needs the 'dense' extra (irforge_tests_no_such_library is not "
                                 "installed): pip install 'irforge[dense]' (from a clone: pip install -e '.[dense]')")
    assert isinstance(raised.value, ImportError)   # code that falls back on an ImportError still does


def test_a_library_broken_inside_is_not_reported_as_missing(tmp_path, monkeypatch):
    # Installed, but its own import needs something absent: that is its bug, shown as it is.
    (tmp_path / "irforge_tests_broken.py").write_text("import irforge_tests_absent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as raised:
        require_extra("dense", "irforge_tests_broken")
    assert not isinstance(raised.value, MissingExtra) and raised.value.name == "irforge_tests_absent_dependency"
    sys.modules.pop("irforge_tests_broken", None)


@pytest.mark.parametrize("name, extra", [("torch", "dense"), ("torch.nn", "dense"), ("grpc", "platform"),
                                         ("google", "platform"), ("google.protobuf.json_format", "platform"),
                                         ("kubernetes.client", "kubernetes"), ("qdrant_client", "qdrant"),
                                         ("openai", "endpoints")])
def test_the_command_lines_net_maps_a_missing_module_to_its_extra(name, extra):
    found = missing_extra(ModuleNotFoundError(f"No module named {name!r}", name=name), "irforge eval")
    assert found.extra == extra and str(found).startswith(f"irforge eval needs the '{extra}' extra")


def test_other_missing_modules_are_left_alone():
    assert missing_extra(ModuleNotFoundError("No module named 'numpyy'", name="numpyy")) is None
    assert missing_extra(ModuleNotFoundError("No module named 'torchvision'", name="torchvision")) is None
    assert missing_extra(ValueError("torch")) is None


def test_every_mapped_extra_is_declared_in_pyproject():
    import tomllib
    from pathlib import Path

    extras = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(EXTRA_OF_MODULE.values()) <= set(extras) and "all" in extras


def test_a_lazy_module_loads_at_first_use(tmp_path, monkeypatch):
    (tmp_path / "irforge_tests_counted.py").write_text("import builtins\nbuiltins.irforge_tests_loads = "
                                                     "getattr(builtins, 'irforge_tests_loads', 0) + 1\nVALUE = 7\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins

    module = lazy_module("irforge_tests_counted")
    assert getattr(builtins, "irforge_tests_loads", 0) == 0
    assert module.VALUE == 7 and builtins.irforge_tests_loads == 1
    del builtins.irforge_tests_loads
    sys.modules.pop("irforge_tests_counted", None)
    with pytest.raises(ModuleNotFoundError):
        lazy_module("irforge_tests_no_such_library")
