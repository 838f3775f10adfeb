"""The league: the opponent pool (past snapshots drawn by PFSP, baselines, fixed targets)."""
