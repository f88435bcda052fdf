"""Checks of an HTTP bot config beyond its schema, and error messages naming the key.

Template variables and JMESPath expressions are checked when the config is loaded, so a
typo fails before the first episode rather than in the middle of one.
"""

from __future__ import annotations

import difflib
import typing
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import BaseModel, ValidationError

from adapters.http.config import BotConfig, ConfigError
from adapters.http.templates import TemplateError, placeholders

# Variables a template may use (see docs/http-adapter.md for their meaning).
VARIABLES = frozenset(
    {
        "session_id",
        "bot_session_id",
        "domain",
        "task_id",
        "task_split",
        "user_id",
        "trial",
        "turn",
        "message",
        "history",
        "messages",
        "policy",
        "tools",
        "tool_results",
        "tool_result",
        "tool_server_url",
        "tool_session_id",
        "tool_session_url",
        "tool_token",
        "tool_mcp_url",
        "tool_openapi_url",
    }
)


def _loc(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for i, item in enumerate(loc):
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif i > 0 and item in ("float", "Timeouts", "function-after[_url(), str]"):
            continue  # a union member's tag, not a key
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "config"


def format_validation(source: str, exc: ValidationError) -> str:
    errors = []
    for err in exc.errors():
        if err["type"] == "float_type" and err["loc"][-1:] == ("float",):
            continue  # a union (`timeout`) given a table: the table's errors say what is wrong
        where = _loc(tuple(err["loc"]))
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            loc = tuple(err["loc"])
            model = _model_at(tuple(x for x in loc[:-1] if x not in ("Timeouts",)))
            known = model.model_fields if model is not None else {}
            msg = "unknown key" + _did_you_mean(str(loc[-1]), known)
        elif err["type"] == "missing":
            msg = "required key is missing"
        msg = msg.removeprefix("Value error, ")
        errors.append(f"{where}: {msg}")
    # A union (timeout) reports once per member; keep the first of identical locations.
    unique = list(dict.fromkeys(errors))
    return f"{source}: " + "; ".join(unique)


def check_templates(source: str, cfg: BotConfig) -> None:
    templates: dict[str, Any] = {
        "headers": cfg.headers,
        "session.id": cfg.session.id,
        "message": cfg.message.model_dump(),
        "tool_results": cfg.tool_results.model_dump(),
    }
    if cfg.session.start is not None:
        templates["session.start"] = cfg.session.start.model_dump()
    if cfg.session.end is not None:
        templates["session.end"] = cfg.session.end.model_dump()
    if cfg.health is not None:
        templates["health"] = cfg.health.model_dump()
    for prefix, template in templates.items():
        try:
            found = list(placeholders(template))
        except TemplateError as exc:
            raise ConfigError(f"{source}: {prefix}: {exc}") from None
        for where, name in found:
            if name not in VARIABLES:
                key = f"{prefix}.{where}" if where else prefix
                raise ConfigError(
                    f"{source}: {key}: unknown template variable {name!r}"
                    f"{_did_you_mean(name, VARIABLES)} (known: {', '.join(sorted(VARIABLES))})"
                )
    tool_vars = {
        n for n in VARIABLES if n.startswith("tool_") and n not in ("tool_results", "tool_result")
    }
    if not cfg.server_tools.enabled:
        for prefix, template in templates.items():
            for where, name in placeholders(template):
                if name in tool_vars:
                    key = f"{prefix}.{where}" if where else prefix
                    raise ConfigError(
                        f"{source}: {key}: {name!r} needs `server_tools: {{enabled: true}}`"
                    )


def check_jmespath(source: str, cfg: BotConfig) -> None:
    r = cfg.response
    exprs = {
        "response.messages": r.messages,
        "response.tool_calls": r.tool_calls,
        "response.end": r.end,
        "response.handoff": r.handoff,
        "response.tool_call.id": r.tool_call.id,
        "response.tool_call.name": r.tool_call.name,
        "response.tool_call.arguments": r.tool_call.arguments,
        "session.id_path": cfg.session.id_path,
    }
    if r.usage is not None:
        exprs["response.usage.prompt_tokens"] = r.usage.prompt_tokens
        exprs["response.usage.completion_tokens"] = r.usage.completion_tokens
    for key, expr in exprs.items():
        if not expr:
            continue
        try:
            parsed = jmespath.compile(expr).parsed
        except JMESPathError as exc:
            raise ConfigError(f"{source}: {key}: {jmespath_message(expr, exc)}") from None
        except RecursionError:
            parsed = None
        except Exception as exc:  # a parser bug must still be one line
            raise ConfigError(
                f"{source}: {key}: invalid JMESPath {_short(expr)}: {type(exc).__name__}"
            ) from None
        if parsed is None or _depth_exceeds(parsed, MAX_EXPRESSION_DEPTH):
            raise ConfigError(
                f"{source}: {key}: JMESPath expression {_short(expr)} is nested deeper "
                f"than {MAX_EXPRESSION_DEPTH} levels"
            )


MAX_EXPRESSION_DEPTH = 100
"""Deepest JMESPath syntax tree accepted (its evaluation recurses once per level)."""


def _depth_exceeds(node: Any, limit: int) -> bool:
    """Whether a parsed JMESPath tree nests deeper than `limit` (iterative)."""
    stack: list[tuple[Any, int]] = [(node, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.get("children") or ())
    return False


def _short(expr: str, limit: int = 60) -> str:
    return repr(expr if len(expr) <= limit else expr[:limit] + "...")


def jmespath_message(expr: str, exc: JMESPathError) -> str:
    """The whole of a JMESPath error on one line: what is wrong and where."""
    what = getattr(exc, "msg", "") or str(exc).splitlines()[0]
    token = getattr(exc, "token_value", None)
    if token is not None and str(token) not in what:
        what += f" {token!r}"
    if isinstance(exc, jmespath.exceptions.IncompleteExpressionError):
        what = "incomplete expression (an unclosed bracket, quote or filter?)"
    pos = getattr(exc, "lex_position", None)
    where = ""
    if isinstance(pos, int) and 0 <= pos <= len(expr):
        where = f" at column {pos + 1}: {expr[:pos]}<HERE>{expr[pos:]}"
    return f"invalid JMESPath {expr!r}: {what}{where}"


def _did_you_mean(name: str, known: Any) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The pydantic model whose fields live at `loc` (for suggesting a key)."""
    model: Any = BotConfig
    for item in loc:
        if isinstance(item, int) or model is None:
            continue
        field_info = model.model_fields.get(item)
        if field_info is None:
            return None
        model = _model_of(field_info.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _model_of(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_of(arg)
        if found is not None:
            return found
    return None
