//! The automaton and what one element does to counters over it.
//!
//! [`dfa`]: the validated automaton (explicit start state, negated characters);
//! [`step`]: the one sparse counter update; [`semantics`]: the selection semantics behind one
//! trait, and [`Policy`](semantics::Policy), the run-time name of each.
pub mod dfa;
pub mod semantics;
pub mod step;
