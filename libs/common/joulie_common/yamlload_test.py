from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from joulie_common.yamlload import YamlError, load_document, load_yaml, load_yaml_all, parse_document, parse_yaml


class Pool(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    count: int


class Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pools: list[Pool]


@pytest.mark.parametrize(("text", "kwargs", "message"), [
    ("a: 1\nb:\n  c: 2\n  c: 3\n", {}, "spec.yaml: b: duplicate key 'c' (line 4)"),
    ("a: 1\na: 2\n", {}, "spec.yaml: (top level): duplicate key 'a' (line 2)"),
    ("l:\n  - x: 1\n    x: 1\n", {}, "spec.yaml: l.0: duplicate key 'x' (line 3)"),
    ("a: 1\nb: c: 2\n", {}, "spec.yaml: not valid YAML: mapping values are not allowed here (line 2)"),
    ("- 1\n- 2\n", {"mapping": True}, "spec.yaml: (top level): expected a mapping, got list (line 1)"),
    ("", {"mapping": True}, "spec.yaml: (top level): expected a mapping, got NoneType"),
    ("a: 1\n---\nb: 2\n", {}, "spec.yaml: expected one YAML document, found 2 (line 3)"),
])
def test_bad_yaml_is_refused_naming_file_field_and_line(text: str, kwargs: dict[str, bool], message: str) -> None:
    with pytest.raises(YamlError) as err:
        parse_yaml(text, "spec.yaml", **kwargs)
    assert str(err.value) == message


def test_the_error_carries_its_parts() -> None:
    with pytest.raises(YamlError) as err:
        parse_yaml("a:\n  b: 1\n  b: 2\n", "f.yaml")
    assert (err.value.source, err.value.field, err.value.line) == ("f.yaml", "a", 3)
    assert isinstance(err.value, ValueError)


def test_duplicate_keys_pass_when_asked_and_the_last_wins() -> None:
    assert parse_yaml("a: 1\na: 2\n", "f", unique_keys=False) == {"a": 2}


@pytest.mark.parametrize(("text", "kwargs", "want"), [
    ("", {}, None),
    ("", {"mapping": True, "empty": {}}, {}),
    ("# only a comment\n", {"empty": {}}, {}),
    ("a: [1, 2]\nb: {c: x}\n", {"mapping": True}, {"a": [1, 2], "b": {"c": "x"}}),
    ("- 1\n", {}, [1]),
])
def test_good_yaml_loads(text: str, kwargs: dict[str, object], want: object) -> None:
    assert parse_yaml(text, "f", **kwargs) == want  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "message"), [
    ("pools:\n  - name: a\n    count: 1\n  - name: b\n    count: many\n",
     "s.yaml: pools.1.count: Input should be a valid integer, unable to parse string as an integer (line 5)"),
    ("pools:\n  - name: a\n", "s.yaml: pools.0.count: Field required (line 2)"),
    ("pools: []\nextra: 1\n", "s.yaml: extra: Extra inputs are not permitted (line 2)"),
    ("{}\n", "s.yaml: pools: Field required (line 1)"),
])
def test_a_model_error_names_the_field_and_its_line(text: str, message: str) -> None:
    with pytest.raises(YamlError) as err:
        parse_document(text, "s.yaml").validate(Spec)
    assert str(err.value) == message


def test_files_are_named_in_errors_and_a_missing_file_is_a_yaml_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("pools:\n  - name: a\n    name: b\n")
    with pytest.raises(YamlError, match=rf"^{bad}: pools\.0: duplicate key 'name' \(line 3\)$"):
        load_yaml(bad)
    with pytest.raises(YamlError, match=r"^values file x: cannot read: No such file or directory$"):
        load_yaml(tmp_path / "missing.yaml", source="values file x")
    good = tmp_path / "good.yaml"
    good.write_text("pools:\n  - name: a\n    count: 2\n")
    assert load_document(good).validate(Spec) == Spec(pools=[Pool(name="a", count=2)])


def test_multi_document_files_skip_empty_documents(tmp_path: Path) -> None:
    f = tmp_path / "m.yaml"
    f.write_text("a: 1\n---\n---\nb: 2\n")
    assert load_yaml_all(f) == [{"a": 1}, {"b": 2}]
    f.write_text("a: 1\n---\nb: 2\nb: 3\n")
    with pytest.raises(YamlError, match=r"duplicate key 'b' \(line 4\)"):
        load_yaml_all(f)
