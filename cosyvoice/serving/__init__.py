"""Serving the engines on a Ray Serve cluster (optional: ``requirements-ray.txt``; docs/ray.md).

``replica.py`` is one synthesis replica's work (models, synthesis, health, reload) and
``ingress.py`` the HTTP app in front of the replicas; both are plain Python over the
existing server code. ``deployments.py`` turns them into Serve deployments and is the only
module that imports Ray at the top; nothing else in the package needs Ray to be imported.
"""
