"""Search-improved policy targets: a Gumbel root search over one ply, batched across the games of a tick.

On a configurable fraction of the learner's decisions (``search.fraction``), the
collection also computes an *improved policy* for that decision, which the update
trains the policy towards (``search.coef`` times the cross-entropy, beside the PPO
objective; :func:`training.ppo.trainer.ppo_losses`).  The learner still plays the
action it sampled from its own policy, so the games, the PPO ratios and the
advantages are exactly those of a run without search.

The search is the root of Gumbel MuZero (Danihelka et al., *Policy improvement by
planning with Gumbel*, ICLR 2022) with one simulation per candidate:

1. **Candidates**: the top ``m = search.candidates`` legal actions by
   ``logits + g`` with ``g`` Gumbel noise (Gumbel-top-k: a sample without
   replacement from the policy).
2. **One ply each**: every candidate is played on a copy of the game
   (:meth:`~kahuna_env.vector.KahunaBatch.take`; the copies of the whole tick in
   one batch) and the resulting position is scored from the learner's side: the
   result itself if the game ended, otherwise the network's value for the player
   to move (a win-loss outcome in [-1, 1], the island shaping undone as in
   :mod:`policy.search`), negated when the opponent moves next.
3. **Completed Q**: the candidates get their score; every other legal action the
   mixed value ``v_mix`` (the root value and the candidates' scores weighted by
   the policy, as in the paper's eq. 33); the completed values are rescaled to
   [0, 1] over the legal actions (min-max, as ``mctx``'s default).
4. **Improved policy**: ``softmax(logits + sigma(q))`` over the legal actions, with
   ``sigma(q) = (c_visit + 1) * c_scale * q`` (one visit per candidate).

With fewer than two legal actions there is nothing to improve and no search.
All randomness (which decisions are searched, the Gumbel noise, the copies'
reshuffle seeds) comes from the batch's own generator, so a run is reproducible.
The games the copies play are the real games' hidden cards included: a training
target, not a player's view (the network only ever reads observations).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from kahuna_env.vector import KahunaBatch
from policy.model import ActorCritic
from policy.reward import island_potentials


@dataclasses.dataclass(frozen=True)
class GumbelSettings:
    """What the collection needs to compute the targets (from the run's ``search`` and ``reward`` sections).

    Attributes:
        fraction: share of the learner's decisions (with a choice) that get a target.
        candidates: ``m``, the actions compared per decision.
        c_visit: ``c_visit`` of ``sigma``.
        c_scale: ``c_scale`` of ``sigma``.
        win_reward: the terminal reward of a win the critic is trained on.
        island_shaping: the shaping coefficient the critic is trained with.
    """

    fraction: float
    candidates: int
    c_visit: float = 50.0
    c_scale: float = 0.1
    win_reward: float = 1.0
    island_shaping: float = 0.0


def outcome_estimates(values: np.ndarray, observations: np.ndarray, settings: GumbelSettings) -> np.ndarray:
    """The critic's values as win-loss outcomes in [-1, 1] for each observation's viewer (shaping undone)."""
    outcome = (values + settings.island_shaping * island_potentials(observations)) / settings.win_reward
    return np.clip(outcome, -1.0, 1.0)


class GumbelTargets:
    """Improved policies for a share of the learner's decisions (see the module docstring).

    Args:
        model: the learner's network (the one that chose the actions), in eval mode.
        settings: the search's settings.
        rng: the generator of everything random in the search.
    """

    def __init__(self, model: ActorCritic, settings: GumbelSettings, rng: np.random.Generator) -> None:
        self.model = model
        self.settings = settings
        self.rng = rng
        self.searched = 0
        """Decisions given a target so far."""
        self.children = 0
        """Positions scored so far (one per candidate)."""

    def improve(
        self,
        batch: KahunaBatch,
        rows: np.ndarray,
        observations: np.ndarray,
        masks: np.ndarray,
        logits: np.ndarray,
        values: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Targets for some of the decisions the learner takes now in the games ``rows`` of ``batch``.

        ``observations``, ``masks``, ``logits`` (masked) and ``values`` are the learner's, row by row.
        Returns ``(chosen, targets)``: the positions in ``rows`` that were searched, and their improved
        policies (``(len(chosen), 179)`` float32, zero on illegal actions).  ``batch`` is not changed.
        """
        settings = self.settings
        legal_counts = masks.sum(axis=1)
        draw = self.rng.random(len(rows))
        chosen = np.flatnonzero((draw < settings.fraction) & (legal_counts >= 2))
        if not len(chosen):
            return chosen, np.zeros((0, masks.shape[1]), dtype=np.float32)
        legal = masks[chosen]
        policy_logits = logits[chosen].astype(np.float64)
        gumbel = self.rng.gumbel(size=policy_logits.shape)
        ranked = np.argsort(-np.where(legal, policy_logits + gumbel, -np.inf), axis=1, kind="stable")
        ranked = ranked[:, : settings.candidates]
        valid = np.take_along_axis(legal, ranked, axis=1)  # a decision with fewer legal actions has fewer candidates
        parents = np.repeat(rows[chosen], ranked.shape[1])[valid.ravel()]
        actions = ranked.ravel()[valid.ravel()]
        scores = np.full(ranked.shape, np.nan)
        scores[valid] = self._score(batch, parents, actions)
        self.searched += len(chosen)
        self.children += len(actions)
        root = outcome_estimates(values[chosen].astype(np.float64), observations[chosen], settings)
        return chosen, self._improved(policy_logits, legal, ranked, valid, scores, root)

    def _score(self, batch: KahunaBatch, parents: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Each ``actions[k]`` played on a copy of game ``parents[k]``: the outcome for the learner, in [-1, 1]."""
        copies = batch.take(parents, seeds=[int(s) for s in self.rng.integers(2**63, size=len(parents))])
        copies.step(actions)
        learner = batch.current[parents]
        scores = np.zeros(len(parents))
        over = copies.over
        if over.any():
            winner = copies.winner[over]
            scores[over] = np.where(winner < 0, 0.0, np.where(winner == learner[over], 1.0, -1.0))
        live = np.flatnonzero(~over)
        if len(live):
            observations = copies.observations(rows=live)
            masks = copies.legal_masks()[live]
            with torch.inference_mode():
                _, values = self.model(torch.from_numpy(observations), torch.from_numpy(masks))
            mover = outcome_estimates(values.float().numpy().astype(np.float64), observations, self.settings)
            scores[live] = np.where(copies.current[live] == learner[live], mover, -mover)
        return scores

    def _improved(
        self,
        policy_logits: np.ndarray,
        legal: np.ndarray,
        ranked: np.ndarray,
        valid: np.ndarray,
        scores: np.ndarray,
        root: np.ndarray,
    ) -> np.ndarray:
        """``softmax(logits + sigma(completed Q))`` over the legal actions (the module docstring's steps 3-4)."""
        settings = self.settings
        shifted = np.where(legal, policy_logits, -np.inf)
        shifted -= shifted.max(axis=1, keepdims=True)
        prior = np.exp(shifted)
        prior /= prior.sum(axis=1, keepdims=True)
        visited_prior = np.where(valid, np.take_along_axis(prior, ranked, axis=1), 0.0)
        visits = valid.sum(axis=1)
        weighted = (visited_prior * np.nan_to_num(scores)).sum(axis=1) / np.maximum(visited_prior.sum(axis=1), 1e-12)
        mixed = (root + visits * weighted) / (1.0 + visits)
        completed = np.repeat(mixed[:, None], legal.shape[1], axis=1)
        row, column = np.nonzero(valid)
        completed[row, ranked[row, column]] = scores[row, column]
        low = np.where(legal, completed, np.inf).min(axis=1, keepdims=True)
        high = np.where(legal, completed, -np.inf).max(axis=1, keepdims=True)
        rescaled = (completed - low) / np.maximum(high - low, 1e-8)
        sigma = (settings.c_visit + 1.0) * settings.c_scale * rescaled
        improved = np.where(legal, policy_logits + sigma, -np.inf)
        improved -= improved.max(axis=1, keepdims=True)
        target = np.exp(improved)
        target /= target.sum(axis=1, keepdims=True)
        return target.astype(np.float32)
