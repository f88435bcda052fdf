from __future__ import annotations

import pytest

from adapters.http.templates import TemplateError, placeholders, render, render_string

VARS = {
    "message": "hi",
    "task_id": 7,
    "history": [{"role": "user", "content": "hi"}],
    "none": None,
    "flag": True,
    "result": {"content": "ok", "tool_call_id": "c1"},
}


def test_whole_placeholder_keeps_type() -> None:
    out = render(
        {"h": "{{ history }}", "t": "{{task_id}}", "n": "{{ none }}", "f": " {{ flag }} "},
        VARS,
    )
    assert out == {"h": VARS["history"], "t": 7, "n": None, "f": True}


def test_interpolation_gives_strings() -> None:
    assert render("task {{ task_id }}: {{ message }}", VARS) == "task 7: hi"
    assert render("[{{ none }}]", VARS) == "[]"
    assert render("f={{ flag }}", VARS) == "f=true"
    assert render("h={{ history }}", VARS) == 'h=[{"role":"user","content":"hi"}]'


def test_dotted_paths_and_indexes() -> None:
    assert render("{{ result.content }}", VARS) == "ok"
    assert render("{{ history.0.role }}", VARS) == "user"
    assert render("{{ history.5.role }}", VARS) is None
    assert render("{{ message.nope }}", VARS) is None


def test_keys_lists_and_literals_render() -> None:
    out = render({"k_{{ task_id }}": ["{{ message }}", 3, None, {"x": "y"}]}, VARS)
    assert out == {"k_7": ["hi", 3, None, {"x": "y"}]}


def test_unknown_variable_is_an_error() -> None:
    with pytest.raises(TemplateError, match="unknown template variable 'nope'"):
        render("{{ nope }}", VARS)


def test_quote_applies_to_interpolated_values_only() -> None:
    assert (
        render_string(
            "/s/{{ message }}/x", {"message": "a/b c"}, quote=lambda s: s.replace("/", "%2F")
        )
        == "/s/a%2Fb c/x"
    )


def test_placeholders_report_locations() -> None:
    found = list(placeholders({"body": {"a": ["{{ x }}", "{{ y.z }} {{ w }}"]}}))
    assert found == [("body.a[0]", "x"), ("body.a[1]", "y"), ("body.a[1]", "w")]
