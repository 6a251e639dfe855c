//! Saved summaries: a format that cannot hurt the process that loads it.
//!
//! Layout (little endian): magic `SUSESTAT` (8 bytes) | format version (u32) | payload length
//! (u64) | CRC-32 of the payload (u32) | payload (bincode). The payload holds the caller's
//! metadata (the query and options as the Python layer states them), the last timestamp
//! processed and the summary with its automaton and configuration. Loading checks, in this
//! order and before building anything: magic, version, length, checksum, a bounded decode
//! (no allocation beyond the input's size), the automaton ([`Dfa::new`](crate::automaton::dfa::Dfa)),
//! sizes and indices, the resource limit, every other field against the query and the others
//! ([`check_fields`]: gap bits, times, positions, event counts, floats), and the exact
//! counters against a recomputation from the retained elements. A checksum is no defence
//! against an edited file, so nothing after it trusts the payload. Anything else is refused
//! with [`Error::State`] naming the field.
use crate::automaton::dfa::{Dfa, GAP_BREAK};
use crate::numbers::dual::{Dual, DualX};
use crate::engine::{ExactEngine, SummaryEngine};
use crate::engine::error::Error;
use crate::engine::limits::Limits;
use crate::numbers::num::{Num, U256};
use crate::automaton::semantics::{expired, Ev, Policy, Semantics};
use crate::numbers::tier::Ladder;
use crate::exact::window::{ExactWindow, Window};
use std::sync::Arc;
use crate::summary::counters::Counters;
use crate::summary::{Summary, SummaryPolicy};
use num_bigint::BigUint;
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
    let mut saved: Saved = codec(payload.len() as u64).deserialize(payload).map_err(|e| Error::State(format!("saved summary cannot be decoded: {e}")))?;
    saved.summary.validate(limits).map_err(|e| match e {
        Error::State(m) | Error::Input(m) => Error::State(format!("saved summary is inconsistent: {m}")),
        other => other,
    })?;
    check_fields(&saved)?;
    match &mut saved.summary {
        SummaryEngine::Any(s) => s.fit_loaded(),
        SummaryEngine::Next(s) => s.fit_loaded(),
        SummaryEngine::Contiguous(s) => s.fit_loaded(),
    }
    Ok(saved)
}

/// Every field of a decoded summary that [`Summary::validate`] does not cover, checked against
/// the query's automaton and the other fields, so that nothing the engine later indexes or
/// loops on can be out of range.
fn check_fields(saved: &Saved) -> Result<(), Error> {
    let checked = match &saved.summary {
        SummaryEngine::Any(s) => fields_of(s, saved.last_t),
        SummaryEngine::Next(s) => fields_of(s, saved.last_t),
        SummaryEngine::Contiguous(s) => fields_of(s, saved.last_t),
    };
    checked.map_err(|m| Error::State(format!("saved summary is inconsistent: field {m}")))
}

/// The gap bits an event between two elements can set: one per negated character, and the
/// break bit, which every such event sets (`Raw::classify`, `Dfa::absorbed`).
pub fn check_gap(dfa: &Dfa, gap: u32, what: &str) -> Result<(), String> {
    let negated = gap & !GAP_BREAK;
    let m = dfa.negated.len() as u32;
    if negated >> m != 0 {
        let bit = 31 - negated.leading_zeros();
        return Err(format!("{what}: gap bit {bit} names no negated character (the query has {m})"));
    }
    if gap != 0 && gap & GAP_BREAK == 0 {
        return Err(format!("{what}: a gap with negated characters but without the break bit"));
    }
    Ok(())
}

fn check_float(x: f64, what: &str) -> Result<(), String> {
    if x.is_finite() && x >= 0.0 {
        Ok(())
    } else {
        Err(format!("{what}: {x} is not a finite non-negative number"))
    }
}

fn fields_of<P: SummaryPolicy>(s: &Summary<P>, last_t: Option<i64>) -> Result<(), String> {
    let dfa = &s.dfa;
    for (i, e) in s.elems.iter().enumerate() {
        check_gap(dfa, e.gap, &format!("elems[{i}].gap"))?;
        if e.v > i64::MAX as u64 {
            return Err(format!("elems[{i}].v: {} is beyond the largest value an event can carry", e.v));
        }
    }
    check_gap(dfa, s.pending_gap, "pending_gap")?;
    // Times: the elements precede the summary's clock, which precedes the last timestamp fed.
    match (s.now, s.elems.last()) {
        (None, Some(_)) => return Err("now: missing although elements are retained".into()),
        (Some(now), Some(e)) if e.t > now => return Err(format!("now: {now} is earlier than the retained element at {}", e.t)),
        _ => {}
    }
    match (last_t, s.now) {
        (None, Some(now)) => return Err(format!("last_t: missing although the summary's clock is at {now}")),
        (Some(t), Some(now)) if t < now => return Err(format!("last_t: {t} is earlier than the summary's clock {now}")),
        _ => {}
    }
    // The active window: exactly the retained elements a new element at `now` can still meet.
    if let Some(now) = s.now {
        let end = s.elems.iter().position(|e| !expired(e.t, now, s.cfg.tau)).unwrap_or(s.elems.len());
        if s.active_start != end {
            return Err(format!("active_start: {} where the window of time {now} starts at element {end}", s.active_start));
        }
    } else if s.active_start != 0 {
        return Err(format!("active_start: {} without any element", s.active_start));
    }
    // Event counts: every retained or evicted element was an event that was not skipped.
    let kept = s.elems.len() as u64;
    if s.skipped > s.events || kept.saturating_add(s.evictions) > s.events - s.skipped {
        return Err(format!(
            "events: {} events, {} skipped, {} evicted and {kept} retained do not add up",
            s.events, s.skipped, s.evictions
        ));
    }
    let est = &s.estimator;
    if est.counts.iter().sum::<u64>() != est.total || est.total > s.events - s.skipped {
        return Err(format!("estimator.total: {} does not match its letter counts or the events", est.total));
    }
    for (c, x) in est.value_sums.iter().enumerate() {
        check_float(*x, &format!("estimator.value_sums[{c}]"))?;
    }
    if est.value_sums.len() != dfa.k() {
        return Err("estimator.value_sums: not one per letter".into());
    }
    if let (Some(a), Some(b)) = (est.t_first, est.t_last) {
        if a > b {
            return Err(format!("estimator.t_first: {a} is after t_last {b}"));
        }
    }
    if est.given.as_ref() != s.cfg.probabilities.as_ref() {
        return Err("estimator.given: not the configured probabilities".into());
    }
    for (name, xs) in [("coeffs.probabilities", &s.coeffs.probabilities), ("coeffs.means", &s.coeffs.means)] {
        for (c, x) in xs.iter().enumerate() {
            check_float(*x, &format!("{name}[{c}]"))?;
        }
    }
    let wide = s.est.wide();
    for (name, xs) in [("est.pres", &wide.pres), ("est.al", &wide.al)] {
        if let Some(i) = xs.iter().position(|d: &DualX| !d.c.is_well_formed() || !d.s.is_well_formed()) {
            return Err(format!("{name}[{i}]: not a non-negative extended float"));
        }
    }
    check_exact::<P>(s)
}

fn big<N: Num>(xs: &[Dual<N>]) -> Vec<Dual<BigUint>> {
    xs.iter().map(|d| d.to_big()).collect()
}

/// The counters `g`, `a` and `v` equal a recomputation from the retained elements (`detected`,
/// the matches ever formed, cannot be recomputed and is only a number).
fn check_exact<P: SummaryPolicy>(s: &Summary<P>) -> Result<(), String> {
    let fresh = Counters::<BigUint>::rebuild::<P>(&s.retained(), &Dual::zero()).map_err(|_| "exact: cannot be recomputed".to_string())?;
    let (g, a, v) = crate::on_tier!(&s.exact, |p| (big(&p.g), big(&p.a), big(&p.v)));
    if g != fresh.g {
        return Err("exact.g: the counters do not match the retained elements".into());
    }
    if a != fresh.a {
        return Err("exact.a: the active counters do not match the retained elements".into());
    }
    if v != fresh.v {
        return Err("exact.v: the initiators' counters do not match the retained elements".into());
    }
    Ok(())
}

/// The exact engine as plain data (pickling `suse.Exact`): the events still in its window,
/// its totals and the gap since its last element. Everything else an [`ExactEngine`] holds
/// (the window's stacks and active sets) follows from the window's events, so
/// [`restore_exact`] rebuilds it, as a promotion to wider numbers does.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactSnapshot {
    pub window: Vec<Ev>,
    pub totals: Vec<Dual<BigUint>>,
    pub gap: u32,
}

pub fn snapshot_exact(engine: &ExactEngine) -> ExactSnapshot {
    fn of<P: Semantics>(w: &ExactWindow<P>, gap: u32) -> ExactSnapshot {
        let (window, totals) = crate::on_tier!(&w.ladder, |x| (x.window_events(), big(&x.totals)));
        ExactSnapshot { window, totals, gap }
    }
    match engine {
        ExactEngine::Any(w, gap) => of(w, *gap),
        ExactEngine::Next(w, gap) => of(w, *gap),
        ExactEngine::Contiguous(w, gap) => of(w, *gap),
    }
}

/// The engine of [`snapshot_exact`], for the query `dfa` with window `tau` and `policy`; the
/// snapshot is checked first (`Error::State` naming what does not fit).
pub fn restore_exact(dfa: Arc<Dfa>, tau: i64, policy: Policy, limits: &Limits, snap: &ExactSnapshot) -> Result<ExactEngine, Error> {
    let fresh = ExactEngine::new(dfa.clone(), tau, policy, limits)?;
    check_snapshot(&dfa, tau, snap).map_err(|m| Error::State(format!("saved exact engine is inconsistent: {m}")))?;
    Ok(match fresh {
        ExactEngine::Any(..) => ExactEngine::Any(rebuild(dfa, tau, snap)?, snap.gap),
        ExactEngine::Next(..) => ExactEngine::Next(rebuild(dfa, tau, snap)?, snap.gap),
        ExactEngine::Contiguous(..) => ExactEngine::Contiguous(rebuild(dfa, tau, snap)?, snap.gap),
    })
}

fn check_snapshot(dfa: &Dfa, tau: i64, snap: &ExactSnapshot) -> Result<(), String> {
    check_gap(dfa, snap.gap, "gap")?;
    for (i, e) in snap.window.iter().enumerate() {
        if e.sym as usize >= dfa.k() {
            return Err(format!("window[{i}].sym: {} is no letter of the query", e.sym));
        }
        check_gap(dfa, e.gap, &format!("window[{i}].gap"))?;
    }
    if snap.window.windows(2).any(|w| w[1].t < w[0].t) {
        return Err("window: the events are not in time order".into());
    }
    if let (Some(first), Some(last)) = (snap.window.first(), snap.window.last()) {
        if expired(first.t, last.t, tau) {
            return Err("window: holds an event outside the window".into());
        }
    }
    if snap.totals.len() != dfa.n {
        return Err(format!("totals: {} where the automaton has {} states", snap.totals.len(), dfa.n));
    }
    Ok(())
}

/// The window at the narrowest number type that holds it.
fn rebuild<P: Semantics>(dfa: Arc<Dfa>, tau: i64, snap: &ExactSnapshot) -> Result<ExactWindow<P>, Error> {
    fn at<N: Num, P: Semantics>(dfa: &Arc<Dfa>, tau: i64, snap: &ExactSnapshot) -> crate::numbers::num::R<Window<N, P>> {
        let mut w = Window::<N, P>::run(dfa.clone(), tau, &snap.window)?;
        w.totals = snap.totals.iter().map(Dual::from_big).collect::<crate::numbers::num::R<_>>()?;
        Ok(w)
    }
    if let Ok(w) = at::<u64, P>(&dfa, tau, snap) {
        return Ok(ExactWindow { ladder: Ladder::U64(w) });
    }
    if let Ok(w) = at::<u128, P>(&dfa, tau, snap) {
        return Ok(ExactWindow { ladder: Ladder::U128(w) });
    }
    if let Ok(w) = at::<U256, P>(&dfa, tau, snap) {
        return Ok(ExactWindow { ladder: Ladder::U256(w) });
    }
    let w = at::<BigUint, P>(&dfa, tau, snap).map_err(|_| Error::internal("a window over big integers overflowed"))?;
    Ok(ExactWindow { ladder: Ladder::Big(w) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::ooo::Replay;
    use proptest::prelude::*;


    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// An engine restored from a snapshot taken mid-stream goes on as the original: the
        /// same totals after the rest of the stream, equal to one engine fed all of it.
        #[test]
        fn a_restored_exact_engine_goes_on_as_the_original((dfa, raw) in crate::exact::window::tests::case(), tau in 0i64..8, cut in any::<prop::sample::Index>()) {
            let cut = cut.index(raw.len() + 1);
            for policy in Policy::ALL {
                let new = || ExactEngine::new(dfa.clone(), tau, policy, &Limits::default()).unwrap();
                let (mut original, mut whole) = (new(), new());
                for &(b, t, v) in &raw[..cut] {
                    original.feed_raw(b, t, v).unwrap();
                }
                let snap = snapshot_exact(&original);
                let mut restored = restore_exact(dfa.clone(), tau, policy, &Limits::default(), &snap).unwrap();
                prop_assert_eq!(snapshot_exact(&restored), snap);
                for &(b, t, v) in &raw[cut..] {
                    original.feed_raw(b, t, v).unwrap();
                    restored.feed_raw(b, t, v).unwrap();
                }
                for &(b, t, v) in &raw {
                    whole.feed_raw(b, t, v).unwrap();
                }
                prop_assert_eq!(restored.totals(), original.totals());
                prop_assert_eq!(restored.totals(), whole.totals());
            }
        }
    }

    #[test]
    fn a_snapshot_that_does_not_fit_the_query_is_refused() {
        let dfa = Arc::new(crate::automaton::dfa::tests::paper());
        let ok = ExactSnapshot { window: vec![Ev { sym: 0, t: 5, v: 1, gap: 0 }], totals: vec![Dual::zero(); dfa.n], gap: 0 };
        let limits = Limits::default();
        assert!(restore_exact(dfa.clone(), 3, Policy::Any, &limits, &ok).is_ok());
        let bad = [
            (ExactSnapshot { window: vec![Ev { sym: 200, ..ok.window[0] }], ..ok.clone() }, "window[0].sym"),
            (ExactSnapshot { gap: 1, ..ok.clone() }, "gap: gap bit 0 names no negated character"),
            (ExactSnapshot { window: vec![Ev { t: 0, ..ok.window[0] }, ok.window[0]], ..ok.clone() }, "outside the window"),
            (ExactSnapshot { totals: vec![], ..ok.clone() }, "totals"),
        ];
        for (snap, field) in bad {
            match restore_exact(dfa.clone(), 3, Policy::Any, &limits, &snap) {
                Err(Error::State(m)) => assert!(m.contains(field), "{m}"),
                other => panic!("{field}: {:?}", other.map(|_| ())),
            }
        }
    }
}
