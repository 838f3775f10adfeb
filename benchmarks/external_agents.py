"""Speed of agents from outside next to the project's own: one network, every way an entrant can hold it.

One ``ActorCritic`` of the shipped ``champion``'s size is written as a native agent
file, its ``kahuna-export`` ONNX and TorchScript files, and a ``py:`` agent that
runs the same torch module; an SB3 ``MaskablePPO`` checkpoint with the same
hidden sizes stands for a framework's own file.  Each plays ``--games`` games
against ``random`` through ``kahuna-eval``'s evaluation (one worker), and the
table gives each entrant's own decisions per second (its thinking time only,
from the report) and the ratio to the native file.

    python benchmarks/external_agents.py --games 200

Quote the output with the machine's CPU (``lscpu``); run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

PY_AGENT = '''"""The benchmark's py: agent: the native network's torch module behind the agent protocol."""
import numpy as np
import torch

from kahuna_policy.agent import load_agent

class Agent:
    def __init__(self):
        self.model = load_agent(__file__.replace("py_agent.py", "native.pt")).model

    @torch.inference_mode()
    def act(self, observation, action_mask):
        logits, _ = self.model(torch.from_numpy(observation[None]), torch.from_numpy(action_mask[None]))
        return int(logits.argmax())
'''


def _sb3_model(folder: Path, hidden: list[int]) -> Path:
    import gymnasium
    from sb3_contrib import MaskablePPO

    import kahuna_env  # noqa: F401
    from kahuna_env.sb3 import VecEnv

    envs = gymnasium.make_vec("Kahuna-v0", num_envs=4, opponent="random", observation="flat")
    model = MaskablePPO(
        "MlpPolicy", VecEnv(envs), n_steps=32, batch_size=32, seed=0, device="cpu", policy_kwargs={"net_arch": hidden}
    )
    model.learn(128)
    path = folder / "sb3.zip"
    model.save(path)
    return path


def main() -> None:
    """Write the files, evaluate each against ``random`` and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200, help="games per entrant against random (even)")
    args = parser.parse_args()
    from kahuna_policy.agent import load_agent

    champion = load_agent("champion").model
    hidden = list(champion.config.hidden_sizes)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        native = folder / "native.pt"
        from kahuna_policy.model import agent_payload

        torch.save(agent_payload(champion), native)
        for fmt, name in (("onnx", "export.onnx"), ("torchscript", "export.ts.pt")):
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "training.tools.export",
                    str(native),
                    "--format",
                    fmt,
                    "--out",
                    str(folder / name),
                    "--samples",
                    "8",
                ],
                check=True,
                capture_output=True,
            )
        (folder / "py_agent.py").write_text(PY_AGENT)
        entrants = {
            "native agent file": str(native),
            "ONNX (kahuna-export)": str(folder / "export.onnx"),
            "TorchScript (kahuna-export)": str(folder / "export.ts.pt"),
            "py: agent (torch module)": f"py:{folder / 'py_agent.py'}:Agent",
            f"SB3 MaskablePPO net_arch={hidden}": str(_sb3_model(folder, hidden)),
        }
        rows = []
        for label, spec in entrants.items():
            out = folder / "report.json"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "kahuna_arena.eval_cli",
                    spec,
                    "random",
                    "--games",
                    str(args.games),
                    "--seed",
                    "0",
                    "--no-progress",
                    "--json",
                    str(out),
                    "--force",
                ],
                check=True,
                capture_output=True,
            )
            report = json.loads(out.read_text())
            seconds = report["seconds_per_move"][spec]
            rows.append((label, seconds))
    base = rows[0][1]
    print(f"{args.games} games against random per entrant, one worker; network hidden sizes {hidden}")
    print(f"{'entrant':<40} {'ms per decision':>16} {'decisions/s':>12} {'x native':>9}")
    for label, seconds in rows:
        print(f"{label:<40} {seconds * 1e3:>16.3f} {1 / seconds:>12,.0f} {seconds / base:>9.2f}")


if __name__ == "__main__":
    main()
