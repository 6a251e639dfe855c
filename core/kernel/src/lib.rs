//! suse-kernel: exact windowed aggregation of regular-expression subsequence matches and the
//! bounded state summary with selection. Pure Rust; the Python bindings live beside it.
//!
//! Layers, bottom up (docs/ENGINE.md, "Architecture"); each uses only those above it in this
//! list (and the caller layer's [`Error`]):
//! * [`numbers`]: exact number types (checked u128, 256-bit, big integers), the extended-range
//!   float of estimates, count+sum dual numbers, the overflow promotion ladder;
//! * [`automaton`]: the validated automaton, the one sparse counter update, and the selection
//!   semantics behind one trait (skip-till-any/next-match, contiguity);
//! * [`exact`]: the exact two-stacks engine and what is built on it (MIN/MAX, approximate
//!   matching, query sets, out-of-order events and retraction);
//! * [`summary`]: the bounded summary (lifecycle, counters, neighbourhood algebra, estimates,
//!   selection, expected-benefit coefficients);
//! * [`matches`]: matches as output (listing, exact uniform samples);
//! * [`engine`]: what a caller drives: run-time policy → type, batches, saved state, limits,
//!   errors;
//! * [`conditions`]: conditions between a match's events (`where`): exact values, postfix
//!   programs over registers, the value index, and the exact engine keyed by (state, registers);
//! * [`recognize`]: the standard's row-pattern matcher (MATCH_RECOGNIZE): preferment by
//!   backtracking over a compiled pattern, and the skip rules.
pub mod automaton;
pub mod conditions;
pub mod engine;
pub mod exact;
pub mod matches;
pub mod numbers;
pub mod recognize;
pub mod summary;

pub use automaton::semantics::Policy;
pub use engine::error::Error;
pub use engine::{ExactEngine, SummaryEngine};
