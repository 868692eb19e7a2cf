"""docs/api.md, the reference of every public name, is what the code says."""

import importlib
import importlib.util
import inspect
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _api_script():
    spec = importlib.util.spec_from_file_location("api_docs", ROOT / "docs" / "api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_is_up_to_date():
    api = _api_script()
    assert (ROOT / "docs" / "api.md").read_text() == api.render(), "docs/api.md is stale: run python docs/api.py"


def test_every_public_name_has_an_entry_and_a_summary():
    api = _api_script()
    text = api.render()
    for module_name in api.MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            assert f"### `{module_name}.{name}` (" in text, (module_name, name)
            if callable(obj) and not inspect.ismodule(obj):
                assert api._summary(inspect.getdoc(obj) or ""), f"{module_name}.{name} has no docstring"


def test_summaries_turn_rst_roles_into_markdown_code():
    api = _api_script()
    assert api._markdown(":func:`~jaxnn.fit` and ``k``\n  and :class:`Model`") == "`fit` and `k` and `Model`"
    assert api._summary("Root of eq. (10),\n\n    G(d) = 0,\n\nwhere G falls.\n\nMore.") == "Root of eq. (10), G(d) = 0, where G falls."
