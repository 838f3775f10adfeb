"""The cluster path on a real multi-node Ray cluster on this machine (issue 16, item 2).

``ray.cluster_utils.Cluster`` starts a head node and one worker node (own raylet,
own object store) carrying a custom resource ``kahuna_runner``.  ``kahuna-rllib``
runs as a separate driver process that joins the cluster with
``--set ray.address=HOST:PORT`` and asks for that resource per EnvRunner, so
both EnvRunners must be placed on the worker node; it trains two iterations
and exports; ``kahuna-rllib export`` and ``kahuna-eval`` then use the export.
The head also serves Ray's dashboard, so a second test submits the same run with
``ray job submit`` (no ``ray.address``: the job's ``RAY_ADDRESS`` names the
cluster) and checks the job's log and its export.  The cluster (shared by both
tests) is shut down in a ``finally``, whatever fails.

Marked ``rllib_cluster`` (deselect with ``-m "not rllib_cluster"``); about a
minute on 2 cores.  ``serial`` (tests/conftest.py): it never runs beside another
Ray test.  Its time bounds only stop a hang; they are generous, since on a
2-core machine with other CPU-bound work the same run takes several minutes.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
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
BUDGET_S = 900
"""Wall-clock guard of one test (a hang, not a speed check): about a minute idle, several on a loaded machine."""
DASHBOARD_WAIT_S = 300
"""How long the head's dashboard may take to accept a job client (seconds idle, a minute or more when busy)."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    """A head node (1 CPU, the dashboard) and a worker node (2 CPUs, 2 ``kahuna_runner``); always shut down."""
    import ray
    from ray.cluster_utils import Cluster

    assert not ray.is_initialized()
    started = None
    try:
        started = Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 1,
                "object_store_memory": 100 * 1024 * 1024,
                "include_dashboard": True,
                "dashboard_host": "127.0.0.1",
                "dashboard_port": _free_port(),
            },
        )
        worker = started.add_node(num_cpus=2, resources={RESOURCE: 2}, object_store_memory=100 * 1024 * 1024)
        started.wait_for_nodes()
        yield started, started.head_node.node_id, worker.node_id
    finally:
        if started is not None:
            started.shutdown()
        if ray.is_initialized():
            ray.shutdown()


def _driver_args(run_dir: Path, seed: int) -> list[str]:
    """``kahuna-rllib`` arguments for a tiny run whose EnvRunners need the worker node's resource."""
    settings = (
        *TINY_RUN,
        f"env_runners.custom_resource={RESOURCE}",
        "model.hidden_sizes=[16]",
        f"seed={seed}",
        "verbose=true",
        "checkpoint.every=0",
    )
    return ["--config", str(CONFIG), "--run-dir", str(run_dir), *(arg for s in settings for arg in ("--set", s))]


def _assert_placed_on(log: str, head_id: str, worker_id: str) -> None:
    """The driver ran on the head node and both EnvRunners on the worker node (from the run's log line)."""
    placement = re.search(r"driver on node (\w+), env runners on nodes \[([^\]]*)\]", log)
    assert placement, log[-2000:]
    assert placement.group(1) == head_id
    assert re.findall(r"'(\w+)'", placement.group(2)) == [worker_id, worker_id]


def test_two_iterations_on_a_two_node_cluster_with_runners_on_the_worker_node(cluster, tmp_path):
    from kahuna_arena.eval_cli import main as kahuna_eval
    from training import load_agent
    from training.rllib.cli import main as kahuna_rllib

    start = time.monotonic()
    running, head_id, worker_id = cluster
    run_dir = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "training.rllib.cli",
        *_driver_args(run_dir, seed=7),
        "--set",
        f"ray.address={running.address}",
    ]
    environment = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    done = subprocess.run(
        command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=BUDGET_S - 20, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The driver joined the cluster (it did not start a Ray of its own) and the runners ran on the worker node.
    _assert_placed_on(done.stdout, head_id, worker_id)
    assert "2 iterations" in done.stdout and (run_dir / "agent.pt").is_file()

    # Export the final checkpoint again through the command line, and evaluate the export.
    exported = tmp_path / "cluster-agent.pt"
    assert kahuna_rllib(["export", str(run_dir / "checkpoint"), str(exported)]) == 0
    assert load_agent(exported).model.config.hidden_sizes == (16,)
    assert kahuna_eval([str(exported), "random", "--games", "4", "--seed", "1", "--no-progress"]) == 0
    assert time.monotonic() - start < BUDGET_S


def test_ray_job_submit_runs_the_driver_on_the_cluster(cluster, tmp_path):
    """docs/RLLIB.md's ``ray job submit`` recipe against the head's dashboard: the job trains, places
    its EnvRunners on the worker node and writes its export to the absolute run directory."""
    from ray.job_submission import JobStatus, JobSubmissionClient

    from training import load_agent

    start = time.monotonic()
    running, head_id, worker_id = cluster
    dashboard = f"http://{running.head_node.webui_url}"
    run_dir = tmp_path / "job-run"
    job_id = f"kahuna-test-{os.getpid()}"
    environment = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    client = None
    while client is None:  # the dashboard may still be starting when this test runs first
        try:
            client = JobSubmissionClient(dashboard)
        except ConnectionError:
            if time.monotonic() - start > DASHBOARD_WAIT_S:
                raise
            time.sleep(1.0)
    submit = [
        str(Path(sys.executable).with_name("ray")),
        "job",
        "submit",
        "--address",
        dashboard,
        "--submission-id",
        job_id,
        "--no-wait",
        "--",
        sys.executable,
        "-m",
        "training.rllib.cli",
        *_driver_args(run_dir, seed=8),
    ]
    while True:
        submitted = subprocess.run(
            submit, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=DASHBOARD_WAIT_S, check=False
        )
        # The head's job agent starts after the dashboard (a minute or more on a busy machine); until then the
        # submission is refused ("No available agent") and no job exists, so it is safe to submit again.
        agent_starting = "No available agent to submit job" in submitted.stdout + submitted.stderr
        if submitted.returncode == 0 or not agent_starting or time.monotonic() - start > DASHBOARD_WAIT_S:
            break
        time.sleep(2.0)
    assert submitted.returncode == 0, submitted.stdout[-2000:] + submitted.stderr[-2000:]
    assert job_id in submitted.stdout + submitted.stderr

    terminal = {JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED}
    status = client.get_job_status(job_id)
    while status not in terminal and time.monotonic() - start < BUDGET_S - 10:
        time.sleep(1.0)
        status = client.get_job_status(job_id)
    log = client.get_job_logs(job_id)
    if status not in terminal:
        client.stop_job(job_id)
    assert status == JobStatus.SUCCEEDED, f"job {status}: {log[-3000:]}"
    _assert_placed_on(log, head_id, worker_id)
    assert "2 iterations" in log
    assert load_agent(run_dir / "agent.pt").model.config.hidden_sizes == (16,)
