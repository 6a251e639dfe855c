//! Saved summaries: a format that cannot hurt the process that loads it.
//!
//! Layout (little endian): magic `SUSESTAT` (8 bytes) | format version (u32) | payload length
//! (u64) | CRC-32 of the payload (u32) | payload (bincode). The payload holds the caller's
//! metadata (the query and options as the Python layer states them), the last timestamp
//! processed and the summary with its automaton and configuration. Loading checks, in this
//! order and before building anything: magic, version, length, checksum, a bounded decode
//! (no allocation beyond the input's size), the automaton ([`Dfa::new`](crate::dfa::Dfa)),
//! sizes and indices, the resource limit, and the exact counters against a recomputation
//! from the retained elements. Anything else is refused with [`Error::State`].
use crate::engine::SummaryEngine;
use crate::error::Error;
use crate::limits::Limits;
use bincode::Options;
use serde::{Deserialize, Serialize};

pub const MAGIC: &[u8; 8] = b"SUSESTAT";
pub const FORMAT_VERSION: u32 = 2;
const HEADER: usize = 8 + 4 + 8 + 4;

#[derive(Clone, Serialize, Deserialize)]
pub struct Saved {
    /// The caller's description of the query and options (JSON from the Python layer).
    pub meta: String,
    pub last_t: Option<i64>,
    pub summary: SummaryEngine,
}

fn codec(limit: u64) -> impl Options {
    bincode::DefaultOptions::new().with_fixint_encoding().reject_trailing_bytes().with_limit(limit)
}

pub fn save(saved: &Saved) -> Result<Vec<u8>, Error> {
    if saved.summary.is_deferred() {
        // The format holds the full state: a deferred summary is saved as it would be settled.
        let mut settled = saved.clone();
        settled.summary.settle()?;
        return save(&settled);
    }
    let payload = codec(u64::MAX).serialize(saved).map_err(|e| Error::internal(format!("cannot save the summary: {e}")))?;
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

pub fn load(data: &[u8], limits: &Limits) -> Result<Saved, Error> {
    let bad = |m: String| Err(Error::State(m));
    if data.len() < 4 || &data[..4] != b"SUSE" {
        return bad("these bytes are not a serialised suse summary (no SUSE signature)".into());
    }
    if data.len() < 8 || &data[..8] != MAGIC {
        // Format 1 (suse 0.1): "SUSE", a JSON header and the engine's own bytes.
        return bad(format!(
            "this summary was saved by suse 0.1 (state format 1); this version reads format {FORMAT_VERSION} only: \
             rebuild the summary by replaying its events (Spark streaming: start from a new checkpoint)"
        ));
    }
    if data.len() < HEADER {
        return bad(format!("saved summary is truncated: {} bytes, the header alone has {HEADER}", data.len()));
    }
    let version = u32::from_le_bytes(data[8..12].try_into().unwrap_or_default());
    if version != FORMAT_VERSION {
        return bad(format!("saved summary has state format {version}; this version of suse reads format {FORMAT_VERSION}"));
    }
    let len = u64::from_le_bytes(data[12..20].try_into().unwrap_or_default());
    let payload = &data[HEADER..];
    if len != payload.len() as u64 {
        return bad(format!("saved summary is {} bytes long but its header says {len}: truncated or extended", payload.len()));
    }
    let crc = u32::from_le_bytes(data[20..24].try_into().unwrap_or_default());
    if crc32fast::hash(payload) != crc {
        return bad("saved summary is corrupt: its checksum does not match".into());
    }
    let saved: Saved = codec(payload.len() as u64).deserialize(payload).map_err(|e| Error::State(format!("saved summary cannot be decoded: {e}")))?;
    saved.summary.validate(limits).map_err(|e| match e {
        Error::State(m) | Error::Input(m) => Error::State(format!("saved summary is inconsistent: {m}")),
        other => other,
    })?;
    check_counters(&saved.summary)?;
    Ok(saved)
}

/// The exact counters must equal a recomputation from the retained elements.
fn check_counters(s: &SummaryEngine) -> Result<(), Error> {
    let (kept, fresh) = s.active_check()?;
    let readout = s.readout();
    let g_fresh = s.recount().map_err(|_| Error::internal("recomputation failed"))?;
    if kept != fresh || readout.g != g_fresh {
        return Err(Error::State("saved summary is inconsistent: its counters do not match its retained elements".into()));
    }
    Ok(())
}
