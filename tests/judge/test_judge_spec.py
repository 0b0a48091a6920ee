"""Judge specs and prompt templates: what loads, and the errors (file and key named) for what does not."""

from __future__ import annotations

import pytest
import yaml

from irforge.judge.errors import JudgeSpecError
from irforge.judge.spec import JudgeSpec
from irforge.judge.template import DEFAULT_TEMPLATE, load_template

MINIMAL = {"kind": "openai-chat", "url": "http://127.0.0.1:8000/v1", "model": "m", "api_key_env": "SOME_KEY"}


def write(tmp_path, data, name="judge.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def test_the_default_template_keeps_the_air_bench_scale():
    template = load_template(None)
    assert template.text == DEFAULT_TEMPLATE and template.source == "default"
    for phrase in ("0 = not relevant", "1 = superficially relevant but actually not", "2 = somewhat relevant",
                   "3 = relevant", "single number", "no explanation"):
        assert phrase in template.text
    prompt = template.render("what causes {rain}?", "Clouds {document} release water.")
    assert "what causes {rain}?" in prompt and "Clouds {document} release water." in prompt  # braces in texts stay


def test_a_minimal_spec_takes_the_defaults(tmp_path):
    spec = JudgeSpec.from_file(write(tmp_path, MINIMAL))
    assert (spec.max_concurrency, spec.max_unparsed_retries, spec.temperature, spec.max_tokens) == (4, 2, 0.0, 5)
    assert spec.prompt.text == DEFAULT_TEMPLATE
    assert spec.identity() == {"backend": "openai-chat", "model": "m", "template_sha256": spec.prompt.sha256,
                               "temperature": "0.0", "max_tokens": "5"}
    assert spec.public()["host"] == "127.0.0.1:8000" and spec.public()["api_key_env"] == "SOME_KEY"


def test_a_template_file_is_read_relative_to_the_spec(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "judge.txt").write_text("Q: {query}\nD: {document}\nAnswer 0-3:")
    spec = JudgeSpec.from_file(write(tmp_path, {**MINIMAL, "template": "prompts/judge.txt"}))
    # The values arrive quoted, as in the default template.
    assert spec.prompt.render("q", "d") == "Q: <query>\nq\n</query>\nD: <passage>\nd\n</passage>\nAnswer 0-3:"
    assert spec.prompt.source == str(tmp_path / "prompts" / "judge.txt")
    # A changed template is a different judge: its labels are not reused.
    assert spec.identity()["template_sha256"] != JudgeSpec.from_dict(MINIMAL).identity()["template_sha256"]


def test_an_inline_template_is_checked(tmp_path):
    spec = JudgeSpec.from_dict({**MINIMAL, "template": "{{json}} {query} / {document}"})
    assert spec.prompt.render("q", "d") == "{json} <query>\nq\n</query> / <passage>\nd\n</passage>"
    assert spec.public()["template"] == "inline"


@pytest.mark.parametrize(("template", "message"), [
    ("Query: {query}. Answer:", "no {document} placeholder"),
    ("{query} {document} {title}", "unknown placeholder(s) {title}"),
    ("{query} {document} {0}", "unknown placeholder(s) {0}"),
    ("{query!r} {document}", "must be plain"),
    ("{query} { {document}", "not valid"),
    ("missing.txt", "template file"),
    ("", "empty"),
    ("   ", "empty"),
])
def test_bad_templates_are_refused_when_the_spec_loads(tmp_path, template, message):
    path = write(tmp_path, {**MINIMAL, "template": template})
    with pytest.raises(JudgeSpecError) as caught:
        JudgeSpec.from_file(path)
    assert str(path) in str(caught.value) and "`template`" in str(caught.value) and message in str(caught.value)


@pytest.mark.parametrize(("change", "message"), [
    ({"kind": "openai-embeddings"}, "`kind` 'openai-embeddings' is not one of openai-chat"),
    ({"kind": None}, "`kind` is required"),
    ({"url": "127.0.0.1:8000"}, "`url` must be an http"),
    ({"model": ""}, "`model` is required"),
    ({"max_concurrency": 0}, "`max_concurrency` must be at least 1"),
    ({"max_concurrency": "4"}, "`max_concurrency` must be a whole number"),
    ({"max_retries": -1}, "`max_retries` must not be negative"),
    ({"timeout_s": 0}, "`timeout_s` must be positive"),
    ({"token_budget": 0}, "`token_budget` must be at least 1"),
    ({"request_budget": 2.5}, "`request_budget` must be a whole number"),
    ({"temperature": "hot"}, "`temperature` must be a number"),
    ({"price_per_million_prompt_tokens": -0.1}, "must not be negative"),
    ({"max_tokens": True}, "`max_tokens` must be a whole number"),
    ({"api_key": "sk-123"}, "unknown key(s) api_key"),
])
def test_bad_fields_are_named_with_the_file(tmp_path, change, message):
    path = write(tmp_path, {**MINIMAL, **change})
    with pytest.raises(JudgeSpecError) as caught:
        JudgeSpec.from_file(path)
    assert str(path) in str(caught.value) and message in str(caught.value)


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(JudgeSpecError, match="judge spec not found"):
        JudgeSpec.from_file(tmp_path / "nope.yaml")
    with pytest.raises(JudgeSpecError, match="not valid YAML"):
        JudgeSpec.from_file(write(tmp_path, "kind: [openai-chat"))
    with pytest.raises(JudgeSpecError, match="expected a mapping"):
        JudgeSpec.from_file(write(tmp_path, "- openai-chat"))


def test_the_key_comes_from_the_environment_only(tmp_path, monkeypatch):
    spec = JudgeSpec.from_file(write(tmp_path, MINIMAL))
    monkeypatch.delenv("SOME_KEY", raising=False)
    assert spec.api_key() is None  # optional: unset means no key is sent (said once, irforge.common.api_keys)
    monkeypatch.setenv("SOME_KEY", "sk-secret-value")
    assert spec.api_key() == "sk-secret-value"
    assert "sk-secret-value" not in repr(spec) and "sk-secret-value" not in str(spec.public())
    assert JudgeSpec.from_dict({**MINIMAL, "api_key_env": None}).api_key() is None  # a keyless local server
