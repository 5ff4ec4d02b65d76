"""The Serve application's args (deploy/ray/serve.yaml) → deployment options. Skipped where
Ray is not installed."""

from __future__ import annotations

import pytest
import yaml

pytest.importorskip("ray.serve")

from cosyvoice.serving.deployments import RayOptions  # noqa: E402
from cosyvoice.settings import Settings  # noqa: E402
from tests.conftest import ROOT  # noqa: E402


def test_serve_yaml_args_give_replicas_resources_and_bounds():
    config = yaml.safe_load((ROOT / "deploy/ray/serve.yaml").read_text())
    app = config["applications"][0]
    assert app["import_path"] == "cosyvoice.serving.deployments:build_app"
    options = RayOptions.from_args(app["args"])
    settings = Settings.from_args(options.app_args)
    out = options.synthesis_options(settings)
    assert out["num_replicas"] == 2 and "autoscaling_config" not in out
    assert out["ray_actor_options"] == {"num_cpus": 1.0, "num_gpus": 0.0}
    assert out["max_ongoing_requests"] == settings.concurrency == 2
    assert out["max_queued_requests"] == settings.queue_size == 16
    assert app["deployments"][0] == {"name": "Synthesis", "user_config": {"reload": 0}}


def test_autoscaling_when_max_replicas_exceeds_min():
    options = RayOptions.from_args({"app_args": "--concurrency 4", "min_replicas": "1",
                                    "max_replicas": "8", "replica_gpus": "0.5"})
    out = options.synthesis_options(Settings.from_args(options.app_args))
    assert "num_replicas" not in out
    assert out["autoscaling_config"] == {"min_replicas": 1, "max_replicas": 8,
                                         "initial_replicas": 1, "target_ongoing_requests": 2.0}
    assert out["ray_actor_options"]["num_gpus"] == 0.5


def test_unknown_args_are_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="replica_cpus"):
        RayOptions.from_args({"app_args": "", "replicaz": 2})
