"""Self-play collection: scalar and batched game loops, GAE, the collector process, the quick evaluation."""
