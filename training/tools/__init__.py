"""Tools around training: kahuna-exploit, kahuna-distill, kahuna-ship, kahuna-export, model cards."""
