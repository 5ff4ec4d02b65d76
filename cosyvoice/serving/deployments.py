"""The Ray Serve application: an ``Ingress`` deployment (the app's REST + OpenAI routes) in
front of a ``Synthesis`` deployment whose replicas hold the models.

    serve run deploy/ray/serve.yaml            # or: bash run.sh --ray
    serve run cosyvoice.serving.deployments:build_app replicas=2 replica_cpus=1

``build_app`` takes the application's ``args`` (serve.yaml) — see :class:`RayOptions` — and
sizes the deployments from them and from the app's own settings: each synthesis replica
gets ``num_cpus``/``num_gpus``, ``max_ongoing_requests`` = ``--concurrency`` and
``max_queued_requests`` = ``--queue-size`` (Serve refuses beyond that: a 429 here), and
autoscales on ongoing requests between ``min_replicas`` and ``max_replicas`` when they
differ. A serve.yaml ``deployments:`` entry overrides any of these, as Serve documents.
"""

from __future__ import annotations

import logging
import shlex
from dataclasses import dataclass, fields

from ray import serve
from ray.serve import Application
from ray.serve.handle import DeploymentHandle

from cosyvoice.serving.ingress import create_ingress_app
from cosyvoice.serving.replica import SynthesisReplica
from cosyvoice.settings import Settings

HEALTH_CHECK_PERIOD_S = 5.0
HEALTH_CHECK_TIMEOUT_S = 30.0
GRACEFUL_SHUTDOWN_S = 60.0  # a replica being replaced finishes its requests first


@dataclass
class RayOptions:
    """The Serve application's ``args``. ``app_args``: the app's own arguments (``python
    app.py --help``), a list or one shell-quoted string, the same for every replica."""

    app_args: list[str]
    replicas: int = 2
    min_replicas: int = 0  # with max_replicas > min_replicas: autoscaling
    max_replicas: int = 0
    replica_cpus: float = 1.0
    replica_gpus: float = 0.0
    max_rss_mb: float = 0.0  # health check fails past it (0: no bound)
    ingress_replicas: int = 1

    @classmethod
    def from_args(cls, args: dict) -> RayOptions:
        known = {f.name: f.type for f in fields(cls)}
        unknown = set(args) - set(known)
        if unknown:
            raise ValueError(f"unknown application args {sorted(unknown)}; known: "
                             f"{', '.join(known)}")
        values = dict(args)
        raw = values.get("app_args", [])
        values["app_args"] = shlex.split(raw) if isinstance(raw, str) else list(raw)
        for name in ("replicas", "min_replicas", "max_replicas", "ingress_replicas"):
            if name in values:
                values[name] = int(values[name])
        for name in ("replica_cpus", "replica_gpus", "max_rss_mb"):
            if name in values:
                values[name] = float(values[name])
        return cls(**values)

    def synthesis_options(self, settings: Settings) -> dict:
        """Options of the synthesis deployment."""
        options = {
            "ray_actor_options": {"num_cpus": self.replica_cpus,
                                  "num_gpus": self.replica_gpus},
            "max_ongoing_requests": settings.concurrency,
            "max_queued_requests": settings.queue_size,
        }
        if self.max_replicas > max(self.min_replicas, 0) and self.max_replicas > 1:
            options["autoscaling_config"] = {
                "min_replicas": self.min_replicas, "max_replicas": self.max_replicas,
                "initial_replicas": max(self.min_replicas, 1),
                "target_ongoing_requests": max(settings.concurrency / 2, 1)}
        else:
            options["num_replicas"] = self.replicas
        return options


@serve.deployment(name="Synthesis", user_config={"reload": 0},
                  health_check_period_s=HEALTH_CHECK_PERIOD_S,
                  health_check_timeout_s=HEALTH_CHECK_TIMEOUT_S,
                  graceful_shutdown_timeout_s=GRACEFUL_SHUTDOWN_S)
class Synthesis(SynthesisReplica):
    """A replica with the models (see :class:`SynthesisReplica`); the app's log lines go
    to the replica's Serve log (``logs/serve/replica_<app>_Synthesis_<id>.log``)."""

    def __init__(self, app_args: list[str], max_rss_mb: float = 0.0) -> None:
        use_serve_logging()
        super().__init__(app_args, max_rss_mb)


def use_serve_logging() -> None:
    """Send the ``cosyvoice`` loggers' INFO lines to Serve's replica log handlers (Serve
    configures only its own ``ray.serve`` logger)."""
    ours = logging.getLogger("cosyvoice")
    ours.setLevel(logging.INFO)
    for handler in logging.getLogger("ray.serve").handlers:
        if handler not in ours.handlers:
            ours.addHandler(handler)


@serve.deployment(name="Ingress", ray_actor_options={"num_cpus": 0},
                  max_ongoing_requests=200)
@serve.ingress()
class Ingress:
    """The HTTP entry: the app's routes, syntheses sent to ``synthesis``."""

    def __init__(self, synthesis: DeploymentHandle, app_args: list[str]) -> None:
        self.synthesis = synthesis
        self.app_args = app_args

    def __serve_build_asgi_app__(self):
        return create_ingress_app(self.app_args, self.synthesis)


def build_app(args: dict) -> Application:
    """The application for ``serve run`` / ``serve deploy`` (import path
    ``cosyvoice.serving.deployments:build_app``)."""
    options = RayOptions.from_args(args)
    settings = Settings.from_args(options.app_args)  # fails early on a bad app argument
    synthesis = Synthesis.options(**options.synthesis_options(settings)).bind(
        options.app_args, options.max_rss_mb)
    return Ingress.options(num_replicas=options.ingress_replicas).bind(
        synthesis, options.app_args)
