"""grantlog's engine: checks, lowering to IR, planning and the in-memory evaluator.

Imports flow one way: ``engine`` uses ``grammar`` and never ``spark_bridge`` or the public API.
"""

from .answer.explain import Explanation, Proof
from .answer.reasoner import Reasoner
from .compile.compiler import compile_goal, compile_program
from .core.ir import Program
from .core.results import Answers, Changes, Decision, RevisionConflict, Transaction

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
