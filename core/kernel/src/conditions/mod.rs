//! Conditions between a match's events (`where`): values, compiled conditions, the
//! value-keyed index and the exact engine that counts with them (docs/ENGINE.md,
//! "Conditions between events").
pub mod count;
pub mod engine;
pub mod hash;
pub mod index;
pub mod outlook;
pub mod program;
pub mod retained;
pub mod value;
