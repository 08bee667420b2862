"""Explanations: why a goal holds (a why-proof, :mod:`.prover`), and why it does not (a why-not
tree, :mod:`.whynot`).

Both kinds of tree are made of :class:`Proof` nodes (:mod:`.proof`), rendered as text
(:meth:`Proof.render`), JSON (:meth:`Proof.to_dict`), Graphviz DOT and Mermaid (:func:`to_dot`,
:func:`to_mermaid`, :mod:`.render`); :class:`Explanation` (:mod:`.explanation`) is the answer
of ``explain`` (:func:`explain_goal`, :mod:`.goal`). :mod:`.atoms` grounds, shows and matches
the atoms both trees are made of.
"""

from .explanation import Explanation
from .goal import explain_goal
from .proof import WHY_KINDS, WHY_NOT_KINDS, Proof
from .prover import MAX_DEPTH, Origin, Prover
from .render import to_dot, to_mermaid
from .whynot import Limits, WhyNot

__all__ = ["MAX_DEPTH", "WHY_KINDS", "WHY_NOT_KINDS", "Explanation", "Limits", "Origin", "Proof",
           "Prover", "WhyNot", "explain_goal", "to_dot", "to_mermaid"]
