"""Where a run executes: a private local Ray instance or a cluster, reached or refused within seconds.

:func:`connect_ray` starts a private local Ray instance (``ray.address: null``)
or joins a cluster (``"auto"``, ``"HOST:PORT"``, ``"ray://..."``).  Before
joining, :func:`check_reachable` probes the address with a raw gRPC handshake:
``ray.init`` on an address where nothing, or something else, listens waits for
minutes, the probe answers within ``ray.connect_timeout_s`` with a one-line
:class:`~training.rllib.errors.RayConnectionError`.
"""

from __future__ import annotations

import math
import os
import socket

from training.rllib.config import RLlibConfig
from training.rllib.errors import RayConnectionError, require_ray

_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""HTTP/2 client preface and an empty SETTINGS frame: a gRPC server (Ray's GCS) answers with its SETTINGS."""
_ADVICE = "start it with `ray start --head` on the head node, or set ray.address: null for a local run"


def connect_ray(config: RLlibConfig) -> bool:
    """Start or join Ray for ``config``; returns True when this call did it (so the caller shuts it down).

    An already initialised Ray (e.g. a test fixture's) is reused as it is.
    """
    require_ray()
    import ray

    if ray.is_initialized():
        return False
    address = config.ray.address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        _start_local(config)
    else:
        _join_cluster(config, address)
    return True


def _start_local(config: RLlibConfig) -> None:
    """A private local Ray instance with the CPUs the env runners and learners need (or ``ray.num_cpus``)."""
    import ray

    needed = config.env_runners.num_env_runners * config.env_runners.num_cpus_per_env_runner
    needed += config.learners.num_learners * config.learners.num_cpus_per_learner
    ray.init(
        address="local",  # never silently join a cluster someone started on this machine
        num_cpus=config.ray.num_cpus or max(1, math.ceil(needed)),
        num_gpus=0 if config.learners.num_gpus_per_learner == 0 else None,
        include_dashboard=False,
        object_store_memory=config.ray.object_store_mb * 1024 * 1024,
        logging_level="WARNING",
        log_to_driver=config.verbose,  # env runner errors reach the console
    )


def _join_cluster(config: RLlibConfig, address: str) -> None:
    """Join the cluster at ``address`` after checking that its head answers (:func:`check_reachable`)."""
    import ray

    if address.startswith("ray://"):
        check_reachable(address, config.ray.connect_timeout_s)
    else:
        address = _resolve_address(address)
        if address != "auto":
            check_reachable(address, config.ray.connect_timeout_s)
    try:
        ray.init(address=address, logging_level="WARNING", log_to_driver=config.verbose)
    except (ConnectionError, TimeoutError) as error:
        raise RayConnectionError(f"cannot join the Ray cluster at {address}: {str(error).splitlines()[0]}") from None


def _resolve_address(address: str) -> str:
    """``"auto"`` -> the ``HOST:PORT`` of the cluster started on this node (``ray start``)."""
    if address != "auto":
        return address
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die
    except ImportError:  # private API moved: let ray.init resolve it
        return address
    try:
        return canonicalize_bootstrap_address_or_die("auto")
    except (ConnectionError, ValueError) as error:
        raise RayConnectionError(
            f"ray.address is 'auto' but no running Ray cluster was found on this node ({str(error).splitlines()[0]}); "
            "run `ray start --head` (or `ray start --address=HEAD:6379`) first, or set ray.address: null"
        ) from None


def check_reachable(address: str, timeout_s: float) -> None:
    """Fail fast unless a gRPC server (a Ray head's GCS, or a Ray Client server) answers at ``address``.

    ``ray.init`` on an address where nothing or something else listens waits for minutes; this
    check takes at most ``timeout_s`` twice: to connect, then for the protocol's answer.
    """
    host, port = _host_and_port(address)
    where = f"{host}:{port}"
    try:
        connection = socket.create_connection((host, port), timeout=timeout_s)
    except OSError as error:
        reason = "timed out" if isinstance(error, TimeoutError | socket.timeout) else (error.strerror or str(error))
        raise RayConnectionError(
            f"cannot reach the Ray cluster at {where} ({reason} after at most {timeout_s:g}s); {_ADVICE}"
        ) from None
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        connection.close()  # a TLS cluster does not answer plain HTTP/2; let ray.init do the handshake
        return
    with connection:
        answer = _grpc_answer(connection, timeout_s)
    if len(answer) < 9 or answer[3] != 0x04:  # the first frame of a gRPC server is SETTINGS (type 4)
        raise RayConnectionError(
            f"{where} accepts connections but is not a Ray cluster's head (GCS) port: it did not answer like one "
            f"within {timeout_s:g}s (the head listens on 6379 by default; 8265 is the dashboard); {_ADVICE}"
        )


def _host_and_port(address: str) -> tuple[str, int]:
    """``(host, port)`` of ``[scheme://]HOST[:PORT]`` (port 6379 by default; ``[::1]:6379`` for IPv6)."""
    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host:
        host, port = target, "6379"
    try:
        return host.strip("[]"), int(port)
    except ValueError:
        raise RayConnectionError(f"bad ray.address {address!r}: expected 'auto', 'HOST:PORT' or null") from None


def _grpc_answer(connection: socket.socket, timeout_s: float) -> bytes:
    """Send the HTTP/2 preface; the first 9 bytes answered within ``timeout_s`` (fewer: no such answer)."""
    answer = b""
    try:
        connection.settimeout(timeout_s)
        connection.sendall(_HTTP2_PREFACE)
        while len(answer) < 9:
            chunk = connection.recv(9 - len(answer))
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    return answer
