"""`api_base` and `user_api_base` are http(s) URLs with a host, checked where settings are
read: a typo is one line before anything runs (it was a pre-flight's connection error
after its retries), and the URL is echoed only masked (it may carry a key).

Also the numbers a run may ask for are bounded: workers, concurrency and deadlines, and
an eval's user models (each a run, all at once) and samples."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau_bench.config import RunConfigError, build_config, eval_config_from_mapping
from tau_bench.config.eval_config import MAX_USER_MODELS
from tau_bench.config.run_config import (
    MAX_CONCURRENCY,
    MAX_FAILURES_IN_A_ROW,
    MAX_PLATFORM_PRICE,
    MAX_SEED,
    MAX_STEPS,
    MAX_TRIALS,
    MAX_WORKERS,
)
from tau_bench.user_values import MAX_TIMEOUT, MAX_URL_LENGTH, check_endpoint_url
from tests.conftest import DATA_DIR

TAU = Path(sys.executable).parent / "tau"
ENV = {**os.environ, "TAU_BENCH_DATA": str(DATA_DIR), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

BAD_API_BASE = ["--task-ids", "0", "--api-base", "not a url"]
GOOD = [
    "http://localhost:8000/v1",
    "https://my-resource.openai.azure.com",
    "http://[::1]:8000/v1",
    "HTTPS://Gateway.Example.com/openai/v1?api-version=2024-06-01",
    "http://user:pw@proxy.internal:3128/v1",
]


@pytest.mark.parametrize("url", GOOD)
def test_endpoint_urls_are_kept_as_written(url: str) -> None:
    assert check_endpoint_url(url) == url
    config = build_config({"env": "airline", "api_base": url, "user_api_base": url})
    assert (config.api_base, config.user_api_base) == (url, url)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("not a url", "no spaces"),
        ("localhost:8000/v1", "http(s) URL"),
        ("ftp://files.example.com/v1", "http(s) URL"),
        ("http://", "http(s) URL"),
        ("http:///v1", "http(s) URL"),
        ("http://host:port/v1", "http(s) URL"),
        ("http://[::1/v1", "http(s) URL"),
        ("http://host/v1\n", "no spaces"),
        ("http://ho\x07st/v1", "no spaces"),
        ("http://" + "h" * MAX_URL_LENGTH, f"more than {MAX_URL_LENGTH}"),
    ],
)
@pytest.mark.parametrize("field", ["api_base", "user_api_base"])
def test_what_is_no_endpoint_url_is_refused_in_one_line(field: str, url: str, why: str) -> None:
    with pytest.raises(RunConfigError) as caught:
        build_config({"env": "airline", field: url})
    message = str(caught.value)
    assert message.startswith(f"{field}: ") and why in message, message
    assert "\n" not in message and len(message) < 500


def test_a_refused_url_never_echoes_its_secret() -> None:
    for url in ["htp://u:SECRETPW@host/v1", "ftp://host/v1?key=SECRETPW", "localhost?SECRETPW"]:
        with pytest.raises(RunConfigError) as caught:
            build_config({"env": "airline", "api_base": url})
        assert "SECRETPW" not in str(caught.value)


def test_tau_run_refuses_a_bad_api_base_before_any_model_call() -> None:
    done = subprocess.run(
        [str(TAU), "run", "--env", "airline", "--model", "openai/gpt-4o", *BAD_API_BASE],
        capture_output=True,
        text=True,
        env=ENV,
        check=False,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: api_base: a URL has no spaces or control characters: 'not a url'"
    ]


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("workers", MAX_WORKERS + 1),
        ("max_concurrency", MAX_CONCURRENCY + 1),
        ("max_concurrency", 10_000_000_000),
        ("episode_timeout", MAX_TIMEOUT * 2),
        ("turn_timeout", 1e300),
        # 1e308 USD a request made a run's cost infinite, and its log unreadable
        ("platform_price_per_request", 1e308),
        ("platform_price_per_request", MAX_PLATFORM_PRICE * 2),
        # 10**200 behaved as a large number; a seed past 64 bits reaches no model
        ("seed", 10**200),
        ("seed", MAX_SEED + 1),
        ("shuffle", MAX_SEED + 1),
        ("max_steps", MAX_STEPS + 1),
        ("max_consecutive_failures", MAX_FAILURES_IN_A_ROW + 1),
    ],
)
def test_the_numbers_a_run_asks_for_are_bounded(setting: str, value: float) -> None:
    with pytest.raises(RunConfigError, match=f"^{setting}: .*less than or equal"):
        build_config({"env": "airline", setting: value})
    build_config(
        {"env": "airline", setting: type(value)(value // 2 if setting == "workers" else 1)}
    )


def test_seeds_are_64_bit_either_sign() -> None:
    for seed in (MAX_SEED, -MAX_SEED - 1, 0, -5):
        assert build_config({"env": "airline", "seed": seed}).seed == seed
    with pytest.raises(RunConfigError, match=r"^seed: .*greater than or equal"):
        build_config({"env": "airline", "seed": -MAX_SEED - 2})


@pytest.mark.parametrize("price", [float("inf"), float("nan"), -1.0])
def test_a_platform_price_is_a_finite_amount(price: float) -> None:
    with pytest.raises(RunConfigError, match=r"^platform_price_per_request: "):
        build_config({"env": "airline", "platform_price_per_request": price})


def test_an_eval_is_bounded_in_its_runs_and_samples() -> None:
    models = [f"openai/m{i}" for i in range(MAX_USER_MODELS + 1)]
    with pytest.raises(RunConfigError, match=r"^user_models: "):
        eval_config_from_mapping({"user_models": models})
    with pytest.raises(RunConfigError, match=r"^num_samples: "):
        eval_config_from_mapping({"user_models": "gpt-4o", "num_samples": MAX_TRIALS + 1})
    config = eval_config_from_mapping({"user_models": models[:-1], "num_samples": MAX_TRIALS})
    assert len(config.user_models) == MAX_USER_MODELS
