"""Shared test set-up: one moto S3 server per run (fixtures.pytest_plugin)."""

from __future__ import annotations

pytest_plugins = ["fixtures.pytest_plugin"]
