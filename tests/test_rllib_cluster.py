"""The cluster path on a real multi-node Ray cluster on this machine (issue 16, item 2).

``ray.cluster_utils.Cluster`` starts a head node and one worker node (own raylet,
own object store) carrying a custom resource ``kahuna_runner``.  ``kahuna-rllib``
runs as a separate driver process that joins the cluster with
``--set ray.address=HOST:PORT`` and asks for that resource per EnvRunner, so
both EnvRunners must be placed on the worker node; it trains two iterations
and exports; ``kahuna-rllib export`` and ``kahuna-eval`` then use the export.
The cluster is shut down in a ``finally``, whatever fails.

Marked ``rllib_cluster`` (deselect with ``-m "not rllib_cluster"``); about a
minute on 2 cores.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_rllib import TINY_RUN

from training.rllib.errors import INSTALL_HINT

pytestmark = [
    pytest.mark.rllib_cluster,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None, reason=f"the rllib extra is not installed ({INSTALL_HINT})"
    ),
]

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "rllib.yaml"
RESOURCE = "kahuna_runner"
BUDGET_S = 120


@pytest.fixture
def cluster():
    """A head node (1 CPU) and a worker node (2 CPUs, 2 ``kahuna_runner``); always shut down."""
    import ray
    from ray.cluster_utils import Cluster

    assert not ray.is_initialized()
    started = None
    try:
        started = Cluster(
            initialize_head=True,
            head_node_args={"num_cpus": 1, "object_store_memory": 100 * 1024 * 1024, "include_dashboard": False},
        )
        worker = started.add_node(num_cpus=2, resources={RESOURCE: 2}, object_store_memory=100 * 1024 * 1024)
        started.wait_for_nodes()
        yield started, started.head_node.node_id, worker.node_id
    finally:
        if started is not None:
            started.shutdown()
        if ray.is_initialized():
            ray.shutdown()


def test_two_iterations_on_a_two_node_cluster_with_runners_on_the_worker_node(cluster, tmp_path):
    from arena.eval_cli import main as kahuna_eval
    from training import load_agent
    from training.rllib.cli import main as kahuna_rllib

    start = time.monotonic()
    running, head_id, worker_id = cluster
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "training.rllib.cli",
        "--config",
        str(CONFIG),
        "--run-dir",
        str(run_dir),
        "--set",
        f"ray.address={running.address}",
        "--set",
        f"env_runners.custom_resource={RESOURCE}",
        *(
            arg
            for setting in (*TINY_RUN, "model.hidden_sizes=[16]", "seed=7", "verbose=true", "checkpoint.every=0")
            for arg in ("--set", setting)
        ),
    ]
    environment = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    done = subprocess.run(
        command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=BUDGET_S - 20, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The driver joined the cluster (it did not start a Ray of its own) and the runners ran on the worker node.
    placement = re.search(r"driver on node (\w+), env runners on nodes \[([^\]]*)\]", done.stdout)
    assert placement, done.stdout[-2000:]
    nodes = re.findall(r"'(\w+)'", placement.group(2))
    assert placement.group(1) == head_id
    assert nodes == [worker_id, worker_id]
    assert "2 iterations" in done.stdout and (run_dir / "agent.pt").is_file()

    # Export the final checkpoint again through the command line, and evaluate the export.
    exported = tmp_path / "cluster-agent.pt"
    assert kahuna_rllib(["export", str(run_dir / "checkpoint"), str(exported)]) == 0
    assert load_agent(exported).model.config.hidden_sizes == (16,)
    assert kahuna_eval([str(exported), "random", "--games", "4", "--seed", "1", "--no-progress"]) == 0
    assert time.monotonic() - start < BUDGET_S
