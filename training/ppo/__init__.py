"""The PPO trainer: ``trainer.train``, its config, checkpoints, run folders, metrics and CPU probing."""
