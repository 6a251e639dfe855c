"""Query compiler: query text -> syntax tree -> minimal trimmed DFA.

>>> a = compile_regex("A(B*C)*D")
>>> a.alphabet, a.n_states, a.accepts("ABCD")
('ABCD', 4, True)
"""
from suse.query.approximate import MAX_MISSING
from suse.query.automaton import Automaton, compile_regex
from suse.query.construction import MAX_DFA_STATES, MAX_GUARDS, MAX_NFA_TRANSITIONS
from suse.query.nfa import NFA
from suse.query.parser import (
    MAX_DEPTH,
    MAX_EXPANDED_SIZE,
    MAX_REPEAT,
    Alternation,
    AnyChar,
    Char,
    Concat,
    Negation,
    Node,
    Repeat,
    alphabet_of,
    format_query,
    negated_of,
    parse,
)

__all__ = [
    "Alternation",
    "AnyChar",
    "Automaton",
    "Char",
    "Concat",
    "MAX_DEPTH",
    "MAX_DFA_STATES",
    "MAX_GUARDS",
    "MAX_MISSING",
    "MAX_EXPANDED_SIZE",
    "MAX_NFA_TRANSITIONS",
    "MAX_REPEAT",
    "NFA",
    "Negation",
    "Node",
    "Repeat",
    "alphabet_of",
    "compile_regex",
    "format_query",
    "negated_of",
    "parse",
]
