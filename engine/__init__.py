"""grantlog's engine: checks, lowering to IR, planning and the in-memory evaluator.

Imports flow one way: ``engine`` uses ``grammar`` and never ``spark_bridge`` or the public API.
"""

from .compiler import compile_goal, compile_program
from .explain import Explanation, Proof
from .ir import Program
from .reasoner import Answers, Changes, Decision, Reasoner, RevisionConflict, Transaction

__all__ = [
    "Answers",
    "Changes",
    "Decision",
    "Explanation",
    "Program",
    "Proof",
    "Reasoner",
    "RevisionConflict",
    "Transaction",
    "compile_goal",
    "compile_program",
]
