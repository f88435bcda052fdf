"""A client's run settings -> a validated `RunConfig`, or an error naming the bad field.

The body of `POST /runs` uses the same names as `tau run`'s long flags with underscores
(dashes are accepted too), and goes through the same normalisation as a YAML config
(`tau_bench.config.config_from_mapping`), so the three ways to describe a run agree.
Everything that can be checked before a run is queued is checked here - field types,
unknown settings, the domain, split and task ids, the agent and user strategies - so a
client gets a 422 at once rather than a failed run later.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from tau_adapters import jsonsafe
from tau_bench.config import (
    RunConfig,
    RunConfigError,
    build_config,
    config_from_mapping,
    normalize_key,
)
from tau_bench.service.settings import SERVER_FIELDS

# Local strategies that cannot run without `model` (the others are hosted agents or
# the oracle, which need none).
MODEL_STRATEGIES = frozenset({"tool-calling", "act", "react", "few-shot"})
# User simulators that cannot work unattended behind an API.
INTERACTIVE_USERS = frozenset({"human"})


_SERVER_FLAGS = re.compile(r"(?:inside |in )?--log-dir(?: [^\s:]+)?")


def client_words(message: str) -> str:
    """A runner's message as a client of the server reads it: no `--log-dir` (the
    server's, not a setting of the request) nor the folder it names."""
    return _SERVER_FLAGS.sub("in the run's folder", message)


class SubmissionError(ValueError):
    """A request the server refuses; `field` is the setting at fault (or `body`)."""

    def __init__(self, field: str, message: str, status: int = 422, *, close: bool = False) -> None:
        message = client_words(message)
        super().__init__(message)
        self.field = field
        self.message = message
        self.status = status
        self.close = close  # hang up after the answer (the rest of a body may be coming)

    def to_dict(self) -> dict[str, Any]:
        return {"detail": f"{self.field}: {self.message}", "field": self.field}


def parse_body(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object."""
    try:
        data = jsonsafe.loads(raw or b"null")
    except jsonsafe.JSONDepthError as exc:
        raise SubmissionError("body", str(exc)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        message = getattr(exc, "msg", "not UTF-8")
        raise SubmissionError("body", f"not valid JSON ({message})") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        message = str(exc).split(";", 1)[0]
        raise SubmissionError("body", f"not valid JSON ({message})") from None
    if not isinstance(data, dict):
        raise SubmissionError("body", "expected a JSON object of run settings")
    finite_numbers(data)
    return data


def finite_numbers(data: Mapping[str, Any]) -> None:
    """Refuse NaN and ±Infinity anywhere in a request (Python's JSON reads them, and
    `1e999` as infinity): a deadline of Infinity is none, and they are not JSON when
    written back. Names the top-level setting that holds one."""
    for key, value in data.items():
        stack = [value]
        while stack:  # iterative: the depth is bounded by the JSON reader, not the stack
            item = stack.pop()
            if isinstance(item, float) and not math.isfinite(item):
                raise SubmissionError(normalize_key(str(key)), "must be a finite number")
            if isinstance(item, dict):
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)


# Control characters (NUL, CR/LF, ESC...), Unicode line breaks and bidi overrides: no run
# setting needs one, and one in a model name would reach the server's log and errors.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def no_control_characters(data: Mapping[str, Any]) -> None:
    """Refuse a control character in any text of a request (values and keys, at any
    depth), naming the top-level setting that holds it."""
    for key, value in data.items():
        stack: list[Any] = [str(key), value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                found = _CONTROL.search(item)
                if found is not None:
                    char = f"U+{ord(found.group()):04X}"
                    raise SubmissionError(
                        normalize_key(_CONTROL.sub("?", str(key))),
                        f"contains a control character ({char}); settings are one line of text",
                    )
            elif isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)


def _field_of(message: str) -> str:
    """The RunConfig field a runner/config error message is about (`body` if unclear)."""
    head = message.split(":", 1)[0].strip()
    base = head.split(".", 1)[0]
    if base in RunConfig.model_fields:
        return base
    lowered = message.lower()
    for needle, name in (
        ("task id", "task_ids"),
        ("task range", "start_index"),
        ("provider limit", "provider_limits"),
        ("agent_option", "agent_options"),
        ("tasks file", "tasks_file"),
        ("has no tasks", "task_split"),
        ("no tasks selected", "task_ids"),
        ("run's name", "run_name"),
    ):
        if needle in lowered:
            return name
    return "body"


def config_from_request(data: Mapping[str, Any]) -> RunConfig:
    """Validate settings into a RunConfig (client requests and the server's `GET /scores`
    defaults alike: neither may name the server-owned paths)."""
    finite_numbers(data)
    no_control_characters(data)
    for key in data:
        name = normalize_key(str(key))
        if name in SERVER_FIELDS:
            raise SubmissionError(name, "set by the server, not by a request")
    try:
        mapping = config_from_mapping(dict(data))
    except RunConfigError as exc:
        raise SubmissionError(_field_of(str(exc)), str(exc)) from None
    mapping["quiet"] = True
    try:
        config = build_config(mapping)
    except RunConfigError as exc:
        where, sep, message = str(exc).partition(": ")
        if not sep:
            raise SubmissionError("body", str(exc)) from None
        field, _, rest = where.partition(".")
        raise SubmissionError(field, f"{rest}: {message}" if rest else message) from None
    if config.user_strategy in INTERACTIVE_USERS:
        raise SubmissionError("user_strategy", f"{config.user_strategy!r} needs a terminal")
    if config.agent_strategy in MODEL_STRATEGIES and not config.model:
        raise SubmissionError("model", f"required by agent strategy {config.agent_strategy!r}")
    return config


def check_strategies(config: RunConfig) -> None:
    """The agent and user strategies exist on this server and take the config."""
    from tau_adapters.registry import UnknownAdapterError, load_builder
    from tau_bench.users import UnknownUserStrategyError, build_user

    try:
        load_builder(config.agent_strategy)
    except UnknownAdapterError as exc:
        raise SubmissionError("agent_strategy", str(exc)) from None
    except ImportError as exc:
        raise SubmissionError("agent_strategy", f"not available on this server: {exc}") from None
    try:
        build_user(config.user_strategy, **config.user_options())
    except UnknownUserStrategyError as exc:
        raise SubmissionError("user_strategy", str(exc)) from None
    except ImportError as exc:
        raise SubmissionError("user_strategy", f"not available on this server: {exc}") from None
    except (ValueError, KeyError) as exc:
        raise SubmissionError("user_strategy", str(exc)) from None


PROBE_RUN_NAME = "0" * 32
"""The name a run's files get when the request names none: its run id (32 hex digits)."""


def check_runnable(
    config: RunConfig,
    data_dir: str | None,
    max_episodes: int | None = None,
    log_dir: str | None = None,
) -> None:
    """What needs the data and the plugins: strategies exist, domain, split and task ids
    are valid, and the selected tasks × trials are at most `max_episodes`. The run's files
    are checked as the server will write them: in `log_dir` (a folder like the run's), named
    after the run id unless the request names the run. Blocking (reads the data on first
    use): call it in a worker thread."""
    from tau_bench.data.paths import DataDirError
    from tau_bench.runner import prepare_run
    from tau_bench.suites import UnknownDomainError, UnknownSplitError
    from tau_bench.tasks import TaskFileError

    check_strategies(config)
    # One trial: the plan lists tasks × trials, and only the task count is needed here.
    probe = config.model_copy(
        update={
            "data_dir": data_dir,
            "resume": None,
            "num_trials": 1,
            "run_name": config.run_name or PROBE_RUN_NAME,
            **({"log_dir": log_dir} if log_dir is not None else {}),
        }
    )
    try:
        plan = prepare_run(probe)
    except UnknownDomainError as exc:
        raise SubmissionError("env", str(exc)) from None
    except UnknownSplitError as exc:
        raise SubmissionError("task_split", str(exc)) from None
    except TaskFileError as exc:
        raise SubmissionError("tasks_file", str(exc)) from None
    except DataDirError as exc:
        raise SubmissionError("data_dir", f"the server has no benchmark data: {exc}", 503) from None
    except RunConfigError as exc:
        raise SubmissionError(_field_of(str(exc)), str(exc)) from None
    episodes = len(plan.tasks) * config.num_trials
    if max_episodes is not None and episodes > max_episodes:
        raise SubmissionError(
            "num_trials",
            f"{len(plan.tasks)} tasks × {config.num_trials} trials is {episodes} episodes; "
            f"at most {max_episodes} on this server (select fewer tasks or trials)",
        )
