use super::selection::StrategyKind;
use super::*;
use crate::automaton::dfa::tests::paper;
use crate::automaton::dfa::DfaSpec;
use crate::engine::{ExactEngine, SummaryEngine};
use crate::engine::limits::Limits;
use crate::automaton::semantics::{AnyMatch, NextMatch, Policy};
use crate::engine::state::{load, save, Saved};
use crate::engine::batch::Raw;
use crate::automaton::semantics::Contiguous;
use crate::exact::window::{split_totals, tests::case, tests::elements, tests::stream, Window};
use crate::numbers::xf::Xf;
use proptest::prelude::*;

fn config(size: usize, tau: i64, strategy: StrategyKind, aggregate: Aggregate, ttl: Option<i64>) -> Config {
    Config { size, tau, strategy, aggregate, time_to_live: ttl, probabilities: None, seed: 7 }
}

fn strategy_of(i: usize) -> StrategyKind {
    [StrategyKind::Suse, StrategyKind::Present, StrategyKind::Fifo, StrategyKind::Random, StrategyKind::Adaptive][i % 5]
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// After every step: the counters equal a recomputation from the retained elements, and the
/// present-benefit estimates equal the exact local counters.
fn check_invariants<P: SummaryPolicy>(s: &mut Summary<P>) -> Result<(), TestCaseError> {
    let (kept, fresh) = s.active_check().unwrap();
    prop_assert_eq!(kept, fresh, "active counters");
    let g = Window::<BigUint, P>::run(s.dfa.clone(), s.cfg.tau, &s.elems).unwrap().totals;
    prop_assert_eq!(&s.readout().g, &g, "global counters");
    let locals = s.exact_locals().unwrap();
    let (pres, _) = s.estimates();
    // Sums only where the estimates carry them: under COUNT and AVG they are count-only.
    let sums = s.est.has_sums();
    prop_assert_eq!(sums, s.cfg.aggregate == Aggregate::Sum);
    for (e, x) in pres.iter().zip(&locals) {
        let want = (num_traits::ToPrimitive::to_f64(&x.c).unwrap(), num_traits::ToPrimitive::to_f64(&x.s).unwrap());
        prop_assert!(close(e.c.to_f64(), want.0) && (!sums || close(e.s.to_f64(), want.1)), "estimate {:?} vs exact {:?} ({:?}, {:?}, elems {:?})", e, want, s.cfg.strategy, P::POLICY, s.elems);
    }
    Ok(())
}

fn run_checked<P: SummaryPolicy>(dfa: &Arc<Dfa>, evs: &[Ev], cfg: Config) -> Result<(), TestCaseError> {
    let mut s = Summary::<P>::new(dfa.clone(), cfg.clone());
    let mut exact = Summary::<P>::new(dfa.clone(), Config { size: 64, ..cfg });
    for e in evs {
        s.observe(*e).unwrap();
        exact.observe(*e).unwrap();
        check_invariants(&mut s)?;
        // Negation and contiguity are judged on the full stream: evicting an element never
        // creates a match among the others, so the summary never counts more than the stream.
        // (Skip-till-next-match runs over the retained elements may take an element the full
        // stream's run skipped, with or without negation: there the property does not hold.)
        if P::POLICY == crate::automaton::semantics::Policy::Next {
            continue;
        }
        let (c, _, _) = split_totals(dfa, &s.readout().g);
        let (all, _, _) = split_totals(dfa, &exact.readout().g);
        prop_assert!(c <= all, "summary {} > stream {} ({:?}, {:?}, ttl {:?}, elems {:?}, all {:?})", c, all, s.cfg.strategy, P::POLICY, s.cfg.time_to_live, s.elems, evs);
    }
    Ok(())
}

fn same_with_wide<P: SummaryPolicy>(dfa: &Arc<Dfa>, evs: &[Ev], cfg: Config) -> Result<(), TestCaseError> {
    let mut narrow = Summary::<P>::new(dfa.clone(), cfg.clone());
    let mut wide = Summary::<P>::new(dfa.clone(), cfg);
    wide.forced.wide = true;
    for e in evs {
        narrow.observe(*e).unwrap();
        wide.observe(*e).unwrap();
        prop_assert_eq!(&narrow.elems, &wide.elems);
        let (a, b) = (narrow.estimates(), wide.estimates());
        prop_assert!(!narrow.est.is_wide() && wide.est.is_wide());
        prop_assert_eq!(a, b);
    }
    Ok(())
}

/// The estimates' counts alone, for comparing count-only estimates with ones that carry sums.
fn counts_of((pres, al): (Vec<DualX>, Vec<Vec<DualX>>)) -> (Vec<Xf>, Vec<Vec<Xf>>) {
    (pres.iter().map(|d| d.c).collect(), al.iter().map(|r| r.iter().map(|d| d.c).collect()).collect())
}

/// Settled, saved and loaded (without what a saved state leaves out, as a restore does).
fn reloaded<P: SummaryPolicy>(s: &Summary<P>) -> Summary<P> {
    let mut settled = s.clone();
    settled.settle().unwrap();
    bincode::deserialize(&bincode::serialize(&settled).unwrap()).unwrap()
}

/// Under COUNT the count-only estimates give, step for step, the elements, counters, evictions
/// and estimated counts of estimates that carry sums (as every summary's did before, since no
/// count reads a sum); a state saved with sums (as such summaries saved it) loads and goes on
/// as the count-only one does.
fn same_with_sums<P: SummaryPolicy>(dfa: &Arc<Dfa>, evs: &[Ev], cfg: Config) -> Result<(), TestCaseError> {
    let mut counts = Summary::<P>::new(dfa.clone(), cfg.clone());
    let mut sums = Summary::<P>::new(dfa.clone(), cfg);
    sums.forced.sums = true;
    let half = evs.len() / 2;
    for e in &evs[..half] {
        let (a, b) = observe_alike(&mut counts, &mut sums, *e)?;
        prop_assert!(!a.est.has_sums() && b.est.has_sums());
    }
    let (mut counts, mut old) = (reloaded(&counts), reloaded(&sums));
    prop_assert!(old.est.has_sums());
    for e in &evs[half..] {
        observe_alike(&mut counts, &mut old, *e)?;
        prop_assert!(!old.est.has_sums());
    }
    Ok(())
}

/// Both summaries take `e` and agree on elements, evictions, counters and estimated counts;
/// returns the copies whose estimates were read (refreshed).
fn observe_alike<P: SummaryPolicy>(a: &mut Summary<P>, b: &mut Summary<P>, e: Ev) -> Result<(Summary<P>, Summary<P>), TestCaseError> {
    a.observe(e).unwrap();
    b.observe(e).unwrap();
    prop_assert_eq!(&a.elems, &b.elems);
    prop_assert_eq!(a.evictions, b.evictions);
    let (x, y) = (a.readout(), b.readout());
    prop_assert_eq!((x.g, x.detected), (y.g, y.detected));
    let (mut a, mut b) = (a.clone(), b.clone());
    prop_assert_eq!(counts_of(a.estimates()), counts_of(b.estimates()));
    Ok((a, b))
}

/// A summary with `forced` gives, step for step, the elements, counters, evictions and
/// estimates (sums too) of one without: bit for bit.
fn same_forced<P: SummaryPolicy>(dfa: &Arc<Dfa>, evs: &[Ev], cfg: Config, forced: Forced) -> Result<(), TestCaseError> {
    let mut free = Summary::<P>::new(dfa.clone(), cfg.clone());
    let mut held = Summary::<P>::new(dfa.clone(), cfg);
    held.forced = forced;
    for e in evs {
        observe_alike(&mut free, &mut held, *e)?;
        prop_assert_eq!(free.clone().estimates(), held.clone().estimates());
    }
    Ok(())
}

/// Taking the new element in the recomputation of the active local rows changes nothing
/// against recomputing and then extending (bit for bit, as every value is a small integer).
fn same_unfused<P: SummaryPolicy>(dfa: &Arc<Dfa>, evs: &[Ev], cfg: Config) -> Result<(), TestCaseError> {
    same_forced::<P>(dfa, evs, cfg, Forced { unfused: true, ..Forced::default() })
}

/// The kernels compiled for the automaton's size compute what the ones reading it at run
/// time compute, in the same order.
fn same_runtime_width<P: SummaryPolicy>(dfa: &Arc<Dfa>, evs: &[Ev], cfg: Config) -> Result<(), TestCaseError> {
    same_forced::<P>(dfa, evs, cfg, Forced { runtime_width: true, ..Forced::default() })
}

/// A summary that defers its selection state until it first has to evict reaches, after
/// every step, the state of one that kept it from the start: the same elements, counters,
/// evictions and estimates, bit for bit (the golden tests rely on it).
fn same_as_eager<P: SummaryPolicy>(dfa: &Arc<Dfa>, evs: &[Ev], cfg: Config) -> Result<(), TestCaseError> {
    let mut lazy = Summary::<P>::new(dfa.clone(), cfg.clone());
    let mut eager = Summary::<P>::new(dfa.clone(), cfg);
    eager.settle().unwrap();
    for e in evs {
        lazy.observe(*e).unwrap();
        eager.observe(*e).unwrap();
        prop_assert_eq!(&lazy.elems, &eager.elems);
        prop_assert_eq!((lazy.evictions, lazy.active_start, lazy.pending_gap), (eager.evictions, eager.active_start, eager.pending_gap));
        let (a, b) = (lazy.readout(), eager.readout());
        prop_assert_eq!((a.g, a.detected), (b.g, b.detected));
        // Reading the estimates settles (and refreshes): do it on copies.
        prop_assert_eq!(lazy.clone().estimates(), eager.clone().estimates());
        if lazy.is_deferred() {
            prop_assert_eq!(lazy.evictions, 0);
        }
    }
    if evs.len() < lazy.cfg.size && lazy.cfg.time_to_live.is_none() {
        prop_assert!(lazy.is_deferred(), "a summary that never filled up settled");
    }
    Ok(())
}

/// Run a check generic over the policy under the one drawn (0: any, 1: next, else contiguous).
macro_rules! under_policy {
    ($policy:expr, $check:ident($($arg:expr),*)) => {
        match $policy {
            0 => $check::<AnyMatch>($($arg),*),
            1 => $check::<NextMatch>($($arg),*),
            _ => $check::<Contiguous>($($arg),*),
        }
    };
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn deferred_selection_state_equals_eager((dfa, raw) in case(), size in 1usize..12, tau in 0i64..12, strat in 0usize..5,
                                             ttl in proptest::option::of(0i64..10), policy in 0usize..3) {
        let cfg = config(size, tau, strategy_of(strat), Aggregate::Count, ttl);
        let evs = elements(&dfa, &raw);
        under_policy!(policy, same_as_eager(&dfa, &evs, cfg))?;
    }

    #[test]
    fn invariants_hold_after_every_step((dfa, raw) in case(), size in 1usize..7, tau in 0i64..12, strat in 0usize..5,
                                        sum in any::<bool>(), ttl in proptest::option::of(0i64..10), policy in 0usize..3) {
        let cfg = config(size, tau, strategy_of(strat), if sum { Aggregate::Sum } else { Aggregate::Count }, ttl);
        let evs = elements(&dfa, &raw);
        under_policy!(policy, run_checked(&dfa, &evs, cfg))?;
    }

    #[test]
    fn a_summary_larger_than_the_stream_is_exact((dfa, raw) in case(), tau in 0i64..12, policy in 0usize..3) {
        let policy = Policy::ALL[policy];
        let limits = Limits::default();
        let mut s = SummaryEngine::new(dfa.clone(), policy, config(20, tau, StrategyKind::Suse, Aggregate::Count, None), &limits).unwrap();
        let mut x = ExactEngine::new(dfa.clone(), tau, policy, &limits).unwrap();
        for &(b, t, v) in &raw {
            s.feed(Raw::classify(&dfa, b, t, v)).unwrap();
            x.feed(Raw::classify(&dfa, b, t, v)).unwrap();
        }
        let r = s.readout();
        let (c, sum, partial) = split_totals(&dfa, &r.g);
        prop_assert_eq!((c.clone(), sum, partial), x.totals());
        prop_assert_eq!(r.detected.c, c);
    }

    /// Estimates in `f64` and in `Xf` make the same choices and hold the same values.
    #[test]
    fn narrow_and_wide_estimates_agree((dfa, raw) in case(), size in 1usize..7, tau in 0i64..12, strat in 0usize..5, policy in 0usize..3) {
        let cfg = config(size, tau, strategy_of(strat), Aggregate::Count, None);
        let evs = elements(&dfa, &raw);
        under_policy!(policy, same_with_wide(&dfa, &evs, cfg))?;
    }

    /// See `same_unfused` and `same_runtime_width`.
    #[test]
    fn fused_steps_and_sized_kernels_change_nothing((dfa, raw) in case(), size in 1usize..9, tau in 0i64..12, strat in 0usize..5,
                                                    sum in any::<bool>(), ttl in proptest::option::of(0i64..10), policy in 0usize..3) {
        let cfg = config(size, tau, strategy_of(strat), if sum { Aggregate::Sum } else { Aggregate::Count }, ttl);
        let evs = elements(&dfa, &raw);
        under_policy!(policy, same_unfused(&dfa, &evs, cfg.clone()))?;
        under_policy!(policy, same_runtime_width(&dfa, &evs, cfg))?;
    }

    /// Count-only estimates change no count, decision or estimated count (see `same_with_sums`).
    #[test]
    fn count_only_estimates_agree_with_summed_ones((dfa, raw) in case(), size in 1usize..7, tau in 0i64..12, strat in 0usize..5,
                                                    ttl in proptest::option::of(0i64..10), policy in 0usize..3, avg in any::<bool>()) {
        let cfg = config(size, tau, strategy_of(strat), if avg { Aggregate::Avg } else { Aggregate::Count }, ttl);
        let evs = elements(&dfa, &raw);
        under_policy!(policy, same_with_sums(&dfa, &evs, cfg))?;
    }

    /// Saved state: every corruption is refused with a state error, never a panic; an
    /// untouched state loads to the same bytes.
    #[test]
    fn saved_state_is_checked(evs in stream(), tau in 0i64..12, policy in 0usize..3, pos in any::<usize>(),
                              byte in any::<u8>(), kind in 0usize..4) {
        let dfa = Arc::new(paper());
        let policy = Policy::ALL[policy];
        let limits = Limits::default();
        let mut s = SummaryEngine::new(dfa, policy, config(4, tau, StrategyKind::Suse, Aggregate::Count, None), &limits).unwrap();
        for e in &evs {
            s.observe(*e).unwrap();
        }
        let bytes = save(&Saved { meta: "{}".into(), last_t: evs.last().map(|e| e.t), summary: s }).unwrap();
        let again = save(&load(&bytes, &limits).unwrap()).unwrap();
        prop_assert_eq!(&again, &bytes);
        let mut bad = bytes.clone();
        match kind {
            0 => { let i = pos % bad.len(); bad[i] ^= byte.max(1); }
            1 => bad.truncate(pos % bad.len()),
            2 => bad.push(byte),
            _ => { let i = pos % bad.len(); bad.insert(i, byte); }
        }
        match load(&bad, &limits) {
            Ok(x) => prop_assert_eq!(save(&x).unwrap(), bytes),
            Err(e) => prop_assert!(matches!(e, crate::engine::error::Error::State(_)), "{e:?}"),
        }
    }
}

/// A payload with a valid checksum but lying counters or sizes is still refused.
#[test]
fn consistent_checksum_with_inconsistent_content_is_refused() {
    let limits = Limits::default();
    let mut s = SummaryEngine::new(Arc::new(paper()), Policy::Any, config(4, 5, StrategyKind::Suse, Aggregate::Count, None), &limits).unwrap();
    for (t, sym) in [(0, 0u8), (1, 3), (2, 4)] {
        s.observe(Ev { sym, t, v: 1, gap: 0 }).unwrap();
    }
    s.settle().unwrap(); // a deferred summary holds no counters to lie about
    let mut lying = s.clone();
    if let SummaryEngine::Any(x) = &mut lying {
        let crate::numbers::tier::Ladder::U64(c) = &mut x.exact else { panic!("small counters are held in u64") };
        c.g[4].c += 1;
    }
    let err = load(&save(&Saved { meta: String::new(), last_t: Some(2), summary: lying }).unwrap(), &limits).err().unwrap();
    assert!(err.to_string().contains("counters do not match"), "{err}");
    let mut oversized = s.clone();
    if let SummaryEngine::Any(x) = &mut oversized {
        x.cfg.size = 2; // three retained elements
    }
    let err = load(&save(&Saved { meta: String::new(), last_t: Some(2), summary: oversized }).unwrap(), &limits).err().unwrap();
    assert!(err.to_string().contains("exceed the summary size"), "{err}");
    let big_dfa = save(&Saved { meta: String::new(), last_t: Some(2), summary: s }).unwrap();
    assert!(load(&big_dfa, &Limits { max_bytes: 10 }).is_err());
    assert!(load(b"SUSE\x10\x00\x00\x00{\"query\": 1}", &limits).err().unwrap().to_string().contains("suse 0.1"));
    assert!(load(b"garbage", &limits).err().unwrap().to_string().contains("not a serialised suse summary"));
}

/// `a+b` with 1,100 a's: counts near 2^1100, far past f64. Selection under `present` must
/// still make the decisions exact arithmetic makes (here: which element is the cheapest).
#[test]
fn selection_stays_exact_past_f64() {
    let spec = DfaSpec { n: 3, alphabet: b"ab".to_vec(), negated: Vec::new(), start: 0, finals: vec![false, false, true], table: vec![1, -1, 1, 2, -1, -1] };
    let dfa = Arc::new(Dfa::new(spec).unwrap());
    let n_a = 1100;
    let mut s = Summary::<AnyMatch>::new(dfa, config(n_a + 2, 1 << 40, StrategyKind::Present, Aggregate::Count, None));
    let mut t = 0;
    for _ in 0..n_a {
        s.observe(Ev { sym: 0, t, v: 1, gap: 0 }).unwrap();
        t += 1;
    }
    // b1, b2 fill the summary; every b then forms 2^1100 − 1 matches.
    for _ in 0..4 {
        s.observe(Ev { sym: 1, t, v: 1, gap: 0 }).unwrap();
        t += 1;
    }
    // Every a is in 2·2^1099 matches, every b in 2^1100 − 1: the new b ties the cheapest b.
    let locals = s.exact_locals().unwrap();
    let (pres, _) = s.estimates();
    assert!(pres.iter().all(|d| d.c.to_f64().is_infinite()), "scores really are past f64");
    for (e, x) in pres.iter().zip(&locals) {
        assert!((e.c.log2() - crate::numbers::num::Num::to_xf(&x.c).log2()).abs() < 1e-9, "estimate 2^{}", e.c.log2());
    }
    assert_eq!(s.evictions, 0);
    let mut s2 = Summary::<AnyMatch>::new(s.dfa.clone(), config(n_a + 1, 1 << 40, StrategyKind::Present, Aggregate::Count, None));
    for i in 0..n_a as i64 {
        s2.observe(Ev { sym: 0, t: i, v: 1, gap: 0 }).unwrap();
    }
    s2.observe(Ev { sym: 1, t: n_a as i64, v: 1, gap: 0 }).unwrap(); // full now: a's hold 2^1099 each
    s2.observe(Ev { sym: 1, t: n_a as i64 + 1, v: 1, gap: 0 }).unwrap(); // 2^1100 − 1 > 2^1099: evicts an a
    assert_eq!(s2.evictions, 1, "a candidate worth 2^1100 must beat an element worth 2^1099");
    assert_eq!(s2.elems.iter().filter(|e| e.sym == 1).count(), 2);
}

#[test]
fn strategies_choose_as_documented() {
    let dfa = Arc::new(paper());
    let evs: Vec<Ev> = (0..40).map(|i| Ev { sym: [0, 1, 2, 3, 4, 6][i % 6], t: i as i64, v: 1, gap: 0 }).collect();
    // fifo keeps the newest elements.
    let mut f = Summary::<AnyMatch>::new(dfa.clone(), config(5, 100, StrategyKind::Fifo, Aggregate::Count, None));
    evs.iter().for_each(|e| f.observe(*e).unwrap());
    let plain = |e: &[Ev]| e.iter().map(|x| (x.sym, x.t, x.v)).collect::<Vec<_>>();
    assert_eq!(plain(&f.elems), plain(&evs[35..]));
    // random is a pure function of the seed.
    let run = |seed| {
        let mut c = config(5, 100, StrategyKind::Random, Aggregate::Count, None);
        c.seed = seed;
        let mut r = Summary::<AnyMatch>::new(dfa.clone(), c);
        evs.iter().for_each(|e| r.observe(*e).unwrap());
        r.elems
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
    // present never lets a new element in unless it beats the cheapest retained one.
    let mut p = Summary::<AnyMatch>::new(dfa.clone(), config(5, 100, StrategyKind::Present, Aggregate::Count, None));
    for e in &evs {
        let before = p.elems.clone();
        let full = before.len() == 5;
        let locals = p.exact_locals().unwrap();
        p.observe(*e).unwrap();
        if full && p.evictions > 0 && p.elems != before {
            let gone = before.iter().position(|x| !p.elems.contains(x)).unwrap();
            let min = locals.iter().map(|d| d.c.clone()).min().unwrap();
            assert_eq!(locals[gone].c, min, "evicted a cheapest element");
        }
    }
}

/// `n` elements of the paper's query, one per time unit, letters drawn by a fixed
/// pseudo-random sequence from `seed` out of `letters` (repeats weigh them), each with the value
/// `value(t, draw)`.
fn drawn_stream(seed: u64, n: i64, letters: &[u8], value: impl Fn(i64, u64) -> u64) -> Vec<Ev> {
    let mut x = seed;
    (0..n)
        .map(|t| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            Ev { sym: letters[(x >> 33) as usize % letters.len()], t, v: value(t, x), gap: 0 }
        })
        .collect()
}

/// Letters of the paper's query rich in the loops, so counts pass 2^128 at (200, 200).
const LOOP_HEAVY: [u8; 11] = [0, 1, 1, 1, 2, 2, 2, 2, 3, 4, 6];

#[test]
fn paper_stream_keeps_its_counters_exact_through_every_tier() {
    // (|S|, τ) = (200, 200) over the paper's query: counts pass 2^128 and the ladder widens.
    let dfa = Arc::new(paper());
    let mut s = Summary::<AnyMatch>::new(dfa, config(200, 200, StrategyKind::Suse, Aggregate::Count, None));
    let mut tiers = std::collections::BTreeSet::new();
    for ev in drawn_stream(12345, 400, &LOOP_HEAVY, |_, _| 1) {
        s.observe(ev).unwrap();
        tiers.insert(s.tier());
        if ev.t % 50 == 0 {
            let (kept, fresh) = s.active_check().unwrap();
            assert_eq!(kept, fresh);
        }
    }
    let g = Window::<BigUint, AnyMatch>::run(s.dfa.clone(), s.cfg.tau, &s.elems).unwrap().totals;
    assert_eq!(s.readout().g, g);
    assert!(tiers.len() >= 2, "expected promotion, saw {tiers:?}");
}


/// On the paper's query at (|S|, τ) = (60, 60), 600 events: extending in the recomputation
/// agrees with recomputing and then extending, and the kernels compiled for its 5 states with
/// the ones reading the size at run time, for `suse` and `adaptive` under COUNT and SUM.
#[test]
fn paper_stream_extends_in_the_recomputation_as_before() {
    let dfa = Arc::new(paper());
    for (strategy, aggregate) in [(StrategyKind::Suse, Aggregate::Count), (StrategyKind::Suse, Aggregate::Sum), (StrategyKind::Adaptive, Aggregate::Count)] {
        let evs = drawn_stream(99, 600, &[0, 0, 0, 1, 1, 2, 2, 3, 4, 5, 6], |_, x| 1 + (x >> 40) % 7);
        same_unfused::<AnyMatch>(&dfa, &evs, config(60, 60, strategy, aggregate, None)).unwrap();
        same_runtime_width::<AnyMatch>(&dfa, &evs, config(60, 60, strategy, aggregate, None)).unwrap();
    }
}

/// Past 2^128 (exact counters on `U256`) the estimates stay `f64` in a summary of at most
/// `NARROW_SPAN` elements, and give, step for step, what `Xf` gives: the same elements,
/// estimates and evictions, under every aggregate's estimates and the strategies that read them.
#[test]
fn narrow_estimates_past_2_128_agree_with_wide_ones() {
    let dfa = Arc::new(paper());
    for (strategy, aggregate) in [(StrategyKind::Suse, Aggregate::Count), (StrategyKind::Suse, Aggregate::Sum), (StrategyKind::Adaptive, Aggregate::Count)] {
        let cfg = config(200, 200, strategy, aggregate, None);
        let (mut narrow, mut wide) = (Summary::<AnyMatch>::new(dfa.clone(), cfg.clone()), Summary::<AnyMatch>::new(dfa.clone(), cfg));
        wide.forced.wide = true;
        let mut narrow_at_u256 = 0;
        for ev in drawn_stream(12345, 400, &LOOP_HEAVY, |t, _| 1 + t as u64 % 5) {
            let t = ev.t;
            narrow.observe(ev).unwrap();
            wide.observe(ev).unwrap();
            assert_eq!(narrow.elems, wide.elems, "{strategy:?} {aggregate:?} at {t}");
            if narrow.tier() == "u256" && !narrow.is_deferred() {
                assert!(!narrow.est.is_wide(), "f64 estimates on u256 counters");
                narrow_at_u256 += 1;
            }
            assert_eq!(narrow.estimates(), wide.estimates(), "{strategy:?} {aggregate:?} at {t}");
        }
        assert!(narrow_at_u256 > 50, "the stream keeps the counters on u256 ({narrow_at_u256} steps)");
        assert_eq!((narrow.evictions, narrow.readout().detected), (wide.evictions, wide.readout().detected));
    }
    // Larger summaries take products over more elements than `f64` holds with certainty.
    assert!(crate::numbers::xf::narrow_fits(Some(128), 100_000) && crate::numbers::xf::narrow_fits(Some(256), crate::numbers::xf::NARROW_SPAN));
    assert!(!crate::numbers::xf::narrow_fits(Some(256), crate::numbers::xf::NARROW_SPAN + 1) && !crate::numbers::xf::narrow_fits(None, 1));
}

/// `evs` (in time order) in an arrival order where each event is at most `lateness` behind
/// the latest before it: sorted by timestamp plus a jitter in `0..=lateness`.
fn disordered(evs: &[Ev], lateness: i64, jitter: &[i64]) -> Vec<Ev> {
    let mut keyed: Vec<(i64, usize, Ev)> = evs.iter().enumerate().map(|(i, e)| (e.t + jitter[i % jitter.len()] % (lateness + 1), i, *e)).collect();
    keyed.sort_by_key(|k| (k.0, k.1));
    keyed.into_iter().map(|k| k.2).collect()
}

proptest! {
    /// Late elements go in at their place: after every step the counters equal a
    /// recomputation from the retained elements and the estimates the exact local counters;
    /// a summary that keeps everything ends with the sorted stream's counts and `detected`.
    #[test]
    fn late_elements_go_in_at_their_place(evs in stream(), size in 1usize..7, tau in 0i64..12, strat in 0usize..5,
                                          lateness in 0i64..8, jitter in proptest::collection::vec(0i64..100, 1..8), sum in any::<bool>()) {
        let dfa = Arc::new(paper());
        let agg = if sum { Aggregate::Sum } else { Aggregate::Count };
        let arrival = disordered(&evs, lateness, &jitter);
        let mut s = Summary::<AnyMatch>::new(dfa.clone(), config(size, tau, strategy_of(strat), agg, None));
        let mut all = Summary::<AnyMatch>::new(dfa.clone(), config(64, tau, strategy_of(strat), agg, None));
        for e in &arrival {
            s.observe_late(*e).unwrap();
            all.observe_late(*e).unwrap();
            prop_assert!(s.elems.len() <= size && s.elems.windows(2).all(|w| w[0].t <= w[1].t));
            check_invariants(&mut s)?;
            check_invariants(&mut all)?;
        }
        // The reference: (timestamp, arrival) order.
        let mut in_order = arrival.clone();
        in_order.sort_by_key(|e| e.t);
        let mut sorted = Summary::<AnyMatch>::new(dfa.clone(), config(64, tau, StrategyKind::Suse, agg, None));
        for e in &in_order {
            sorted.observe(*e).unwrap();
        }
        prop_assert_eq!(all.readout().g, sorted.readout().g);
        prop_assert_eq!(all.readout().detected, sorted.readout().detected);
        prop_assert_eq!(s.events, evs.len() as u64);
    }

    /// Only skip-till-any-match without negation takes late elements; the others refuse
    /// clearly and stay as they were.
    #[test]
    fn late_elements_are_refused_where_gaps_matter(evs in stream(), tau in 0i64..12) {
        let dfa = Arc::new(paper());
        let mut s = Summary::<Contiguous>::new(dfa.clone(), config(4, tau, StrategyKind::Suse, Aggregate::Count, None));
        for e in &evs {
            s.observe(*e).unwrap();
        }
        if let Some(last) = evs.last().filter(|e| e.t > 0) {
            let before = (s.elems.clone(), s.readout().g);
            let late = Ev { t: last.t - 1, ..*last };
            prop_assert!(matches!(s.observe_late(late), Err(crate::engine::error::Error::Input(_))));
            prop_assert_eq!((s.elems.clone(), s.readout().g), before);
        }
    }
}
