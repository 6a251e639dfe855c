//! The kernel's errors. Each kind maps to one of the package's exception types in Python.
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Bad events or parameters (Python: `suse.InputError`).
    Input(String),
    /// Saved state that is corrupt, from another version, or inconsistent (`suse.StateError`).
    State(String),
    /// A configuration whose engines would exceed a resource limit (`suse.LimitError`).
    Limit(String),
    /// A bug: an invariant of the kernel does not hold (`suse.InternalError`).
    Internal(String),
}

impl Error {
    pub fn input(m: impl Into<String>) -> Error {
        Error::Input(m.into())
    }
    pub fn state(m: impl Into<String>) -> Error {
        Error::State(m.into())
    }
    pub fn internal(m: impl Into<String>) -> Error {
        Error::Internal(m.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Input(m) | Error::State(m) | Error::Limit(m) | Error::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}
