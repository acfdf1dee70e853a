"""A plain install works: what ``import guardrail`` loads, the pytest plugin's footprint, name and version.

These run in fresh interpreters (``subprocess``) so that what other tests imported cannot hide a module that
``import guardrail`` would load by itself. .ci/run also installs the package without extras into a separate
virtual environment and runs an unrelated pytest project there.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import guardrail
from guardrail._optional import require
from guardrail.errors import GuardrailError, MissingExtra

ROOT = Path(__file__).resolve().parents[2]
#: Optional or heavy packages that ``import guardrail`` must not load: they load on first use of a feature.
NOT_ON_IMPORT = ("structlog", "sqlglot", "rich", "re2", "idna", "openai", "anthropic", "google.genai", "redis", "torch",
                 "transformers", "llguidance", "httpx", "jsonschema", "opentelemetry.sdk")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_import_guardrail_loads_no_optional_or_heavy_package() -> None:
    loaded = _modules_after("import guardrail")
    assert sorted(m for m in loaded if m.split(".")[0] in {n.split(".")[0] for n in NOT_ON_IMPORT}
                  and any(m == n or m.startswith(n + ".") for n in NOT_ON_IMPORT)) == []


def test_using_the_parser_loads_no_vendor_sdk_or_policy_checker() -> None:
    loaded = _modules_after("import guardrail, pydantic\n"
                            "class T(pydantic.BaseModel):\n    a: int\n"
                            "guardrail.parse('```json\\n{\"a\": 1,}\\n```', T)")
    assert {"openai", "anthropic", "sqlglot", "re2", "structlog", "rich"} & loaded == set()


def test_the_wrapper_and_decorator_load_no_policy_checker_cli_or_sdk() -> None:
    loaded = _modules_after("import guardrail\nguardrail.wrap, guardrail.structured, guardrail.configure")
    sdks = {"openai", "anthropic", "google.genai"}
    assert (sdks | {"sqlglot", "re2", "structlog", "rich", "redis", "torch"}) & loaded == set()
    assert not any(m.startswith("guardrail.tools.policy") for m in loaded)


def test_every_public_name_resolves_and_is_listed() -> None:
    for name in guardrail.__all__:
        assert getattr(guardrail, name) is not None, name
    assert set(guardrail.__all__) <= set(dir(guardrail))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        guardrail.not_a_name  # noqa: B018


def test_functions_named_like_modules_stay_functions_after_the_modules_load() -> None:
    import guardrail.parse.pipeline
    import guardrail.tools.identity

    assert callable(guardrail.parse) and guardrail.parse.__name__ == "parse"
    assert callable(guardrail.identity) and guardrail.identity.__name__ == "identity"


def test_distribution_name_is_guardrail_llm_and_version_is_written_once() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "guardrail-llm"
    assert "version" in project["dynamic"]
    assert importlib.metadata.version("guardrail-llm") == guardrail.__version__
    readme = (ROOT / "README.md").read_text()
    assert "pip install 'guardrail-llm[" in readme and "pip install guardrail\n" not in readme


def test_test_tools_are_a_dependency_group_not_a_user_extra() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    assert "dev" not in extras and "test" not in extras
    assert any(d.startswith("pytest") for d in pyproject["dependency-groups"]["test"])
    assert not any(d.startswith("opentelemetry-sdk") for d in pyproject["project"]["dependencies"])


def test_require_names_the_extra_to_install() -> None:
    with pytest.raises(MissingExtra) as caught:
        require("guardrail_no_such_module", "openai", "the OpenAI wrapper")
    assert "pip install 'guardrail-llm[openai]'" in str(caught.value)
    assert isinstance(caught.value, GuardrailError) and isinstance(caught.value, ImportError)
    assert caught.value.extra == "openai"


def test_the_pytest_plugin_imports_only_pytest_and_defines_only_namespaced_fixtures() -> None:
    loaded = _modules_after("import guardrail.testing.pytest_plugin")
    assert "guardrail.testing.emulator" not in loaded and "openai" not in loaded
    from guardrail.testing import pytest_plugin

    fixtures = [name for name in vars(pytest_plugin) if hasattr(getattr(pytest_plugin, name), "_fixture_function")
                or type(getattr(pytest_plugin, name)).__name__ == "FixtureFunctionDefinition"]
    assert fixtures and all(name.startswith("guardrail_") for name in fixtures)


@pytest.mark.slow
def test_an_unrelated_pytest_project_sees_only_namespaced_fixtures(tmp_path: Path) -> None:
    (tmp_path / "test_other.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef openai_client():\n    return 'mine'\n\n"
        "def test_mine(openai_client):\n    assert openai_client == 'mine'\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    listed = subprocess.run([sys.executable, "-m", "pytest", "--fixtures", "-p", "no:cacheprovider", str(tmp_path)],
                            capture_output=True, text=True, cwd=tmp_path).stdout
    assert "guardrail_emulator" in listed
    assert "vendor_emulator" not in listed and "anthropic_client" not in listed


@pytest.mark.parametrize("missing", ["torch", "llguidance"])
def test_local_decoding_without_its_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch, missing: str) -> None:
    from guardrail.local import LocalModel

    monkeypatch.setitem(sys.modules, missing, None)  # what an install without the [local] extra looks like
    with pytest.raises(MissingExtra, match=r"pip install 'guardrail-llm\[local\]'") as caught:
        LocalModel(object(), object())
    assert caught.value.module == missing


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_vendor_from_the_environment_without_its_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch,
                                                                       vendor: str) -> None:
    from guardrail.call.config import Config

    monkeypatch.setitem(sys.modules, vendor, None)  # an install without that vendor's extra
    with pytest.raises(MissingExtra, match=rf"pip install 'guardrail-llm\[{vendor}\]'"):
        Config.from_env({"GUARDRAIL_VENDOR": vendor, f"{vendor.upper()}_API_KEY": "k"})
