//! suse-kernel: exact windowed aggregation of regular-expression subsequence matches and the
//! bounded state summary with selection. Pure Rust; the Python bindings live beside it.
//!
//! Layers, bottom up (docs/ENGINE.md, "Architecture"):
//! * [`num`], [`xf`], [`dual`]: number types (checked u128, 256-bit, big integers; the
//!   extended-range float of estimates) and the count+sum dual numbers over them;
//! * [`dfa`]: the automaton, validated; [`step`]: the one sparse counter update;
//! * [`semantics`]: selection semantics behind one trait (skip-till-any/next-match);
//! * [`tier`]: overflow promotion, once; [`window`]: the exact two-stacks engine;
//! * [`summary`]: the bounded summary (lifecycle, counters, neighbourhood algebra,
//!   estimates, selection); [`benefit`]: expected-benefit coefficients;
//! * [`approx`]: counts by missing pattern letters (approximate matching);
//! * [`engine`], [`batch`], [`state`], [`limits`], [`error`]: what a caller drives;
//!   [`multi`]: several exact queries over one stream in one pass; [`ooo`]: out-of-order
//!   events and retraction in front of the exact engine.
pub mod approx;
pub mod batch;
pub mod conditions;
pub mod benefit;
pub mod dfa;
pub mod dual;
pub mod engine;
pub mod extrema;
pub mod error;
pub mod limits;
pub mod matches;
pub mod merged;
pub mod multi;
pub mod num;
pub mod ooo;
pub mod semantics;
pub mod state;
pub mod step;
pub mod summary;
pub mod tier;
pub mod window;
pub mod xf;
