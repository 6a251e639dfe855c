//! Exact engines over the window: the ground truth every summary is measured against.
//!
//! [`window`]: the two-stacks engine, generic over semantics and number type; [`extrema`]:
//! MIN/MAX over elements in a match on the same stacks; [`approx`]: counts by missing pattern
//! letters; [`multi`] and [`merged`]: several queries over one stream in one pass; [`ooo`]:
//! out-of-order events and retraction in front of an engine.
pub mod approx;
pub mod extrema;
pub mod merged;
pub mod multi;
pub mod ooo;
pub mod window;
