//! Enumeration and sampling against brute force over index subsets of the raw stream.
use super::*;
use crate::engine::batch::Raw;
use crate::automaton::dfa::tests::{letter_negated, negation, paper};
use crate::automaton::dfa::{DfaSpec, Skip};
use crate::automaton::semantics::walk_runs;
use crate::exact::window::tests::{brute_matches, RawEv};
use proptest::prelude::*;
use std::collections::BTreeSet;

/// The elements of a raw stream with their gaps, and each one's raw position.
fn elements(dfa: &Dfa, raw: &[RawEv]) -> (Vec<Ev>, Vec<u32>) {
    let (mut pending, mut out, mut pos) = (0, Vec::new(), Vec::new());
    for (p, &(b, t, v)) in raw.iter().enumerate() {
        match Raw::classify(dfa, b, t, v) {
            Raw::Element(ev) => {
                out.push(Ev { gap: std::mem::take(&mut pending), ..ev });
                pos.push(p as u32);
            }
            Raw::Gap(bit) => pending |= bit,
        }
    }
    (out, pos)
}

/// Every match as raw positions with its final state, by brute force over index subsets
/// (`window::tests::brute_matches`); under skip-till-next-match the final prefixes of each
/// initiator's run.
fn brute(dfa: &Dfa, tau: i64, policy: Policy, raw: &[RawEv]) -> BTreeSet<(Vec<u32>, u32)> {
    let mut out = BTreeSet::new();
    if policy == Policy::Next {
        let (elems, pos) = elements(dfa, raw);
        walk_runs(dfa, tau, &elems, |run| {
            let mut q = dfa.start;
            for (k, &e) in run.taken.iter().enumerate() {
                q = dfa.take(q, elems[e].sym, if k == 0 { 0 } else { elems[e].gap }, Skip::Keep);
                if run.complete[k] {
                    out.insert((run.taken[..=k].iter().map(|&e| pos[e]).collect(), q));
                }
            }
        });
        return out;
    }
    let skip = if policy == Policy::Contiguous { Skip::Kill } else { Skip::Keep };
    out.extend(brute_matches(dfa, tau, skip, raw).into_iter().map(|(idx, q)| (idx.iter().map(|&i| i as u32).collect(), q)));
    out
}

fn set_of(dfa: &Dfa, tau: i64, policy: Policy, raw: &[RawEv]) -> (MatchSet, Vec<u32>) {
    let (elems, pos) = elements(dfa, raw);
    (MatchSet::new(Arc::new(dfa.clone()), tau, policy, elems).unwrap(), pos)
}

fn at_raw(m: &Match, pos: &[u32]) -> (Vec<u32>, u32) {
    (m.elements.iter().map(|&e| pos[e as usize]).collect(), m.state)
}

fn check(dfa: &Dfa, raw: &[RawEv], tau: i64) -> Result<(), TestCaseError> {
    for policy in Policy::ALL {
        let want = brute(dfa, tau, policy, raw);
        let (set, pos) = set_of(dfa, tau, policy, raw);
        let got: Vec<(Vec<u32>, u32)> = set.iter().map(|m| at_raw(&m, &pos)).collect();
        // Each once, in lexicographic order, and exactly the brute force's.
        prop_assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "{:?}: not in order or repeated: {:?}", policy, got);
        prop_assert_eq!(&got.iter().cloned().collect::<BTreeSet<_>>(), &want, "{:?}", policy);
        prop_assert_eq!(set.count().unwrap(), BigUint::from(want.len()), "{:?}", policy);
        // Through each element: the brute force's matches that contain it.
        for c in 0..set.len() as u32 {
            let mut cur = set.cursor(Some(c)).unwrap();
            let mut through = Vec::new();
            while let Some(m) = cur.next(&set) {
                through.push(at_raw(&m, &pos));
            }
            let want_c: Vec<_> = want.iter().filter(|(p, _)| p.contains(&pos[c as usize])).cloned().collect();
            prop_assert_eq!(through, want_c, "{:?} through {}", policy, c);
        }
        // The delay: search steps between two matches stay within a few windows' elements.
        let w = (0..set.len()).map(|i| set.last[i] as usize + 1 - i).max().unwrap_or(0) as u64;
        for c in [None, Some(0)].into_iter().filter(|c| c.is_none() || !set.is_empty()) {
            let mut cur = set.cursor(c).unwrap();
            let mut before = 0;
            while cur.next(&set).is_some() {
                prop_assert!(cur.steps() - before <= 3 * w + 4, "{:?}: {} steps for one match, window of {} elements", policy, cur.steps() - before, w);
                before = cur.steps();
            }
        }
        // Rank r of each first element is its r-th match in enumeration order.
        let all: Vec<Match> = set.iter().collect();
        for (i, c) in set.counts().unwrap().iter().enumerate() {
            let mine: Vec<&Match> = all.iter().filter(|m| m.elements[0] == i as u32).collect();
            prop_assert_eq!(c, &BigUint::from(mine.len()));
            if mine.is_empty() {
                continue;
            }
            let table = set.table::<u128>(i).unwrap();
            for (r, m) in mine.iter().enumerate() {
                prop_assert_eq!(&table.unrank(&set, i, &BigUint::from(r)).unwrap(), *m);
            }
        }
        // Samples are matches.
        if !all.is_empty() {
            for m in set.sample(20, 7).unwrap() {
                prop_assert!(want.contains(&at_raw(&m, &pos)));
            }
        } else {
            prop_assert!(set.sample(1, 7).is_err());
            prop_assert!(set.sample(0, 7).unwrap().is_empty());
        }
    }
    Ok(())
}

fn stream(bytes: &'static [u8]) -> impl Strategy<Value = Vec<RawEv>> {
    prop::collection::vec((prop::sample::select(bytes), 0i64..3), 0..11).prop_map(|v| {
        let mut t = 0;
        v.into_iter()
            .map(|(b, dt)| {
                t += dt;
                (b, t, 1)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn matches_equal_brute_force(raw in stream(b"abcdefgx"), tau in 0i64..6) {
        check(&paper(), &raw, tau)?;
    }

    #[test]
    fn matches_with_negation_equal_brute_force(raw in stream(b"abcdegx"), tau in 0i64..6) {
        check(&negation(), &raw, tau)?;
        check(&letter_negated(), &raw, tau)?;
    }
}

/// `(ab|a)b*` as a DFA: over a0 b1 b2 it has 4 matches, not the 7 runs of an NFA.
#[test]
fn an_ambiguous_pattern_gives_each_set_once() {
    // states: 0 start, 1 after a (final), 2 after ab.. (final)
    let spec = DfaSpec { n: 3, alphabet: b"ab".to_vec(), negated: Vec::new(), start: 0, finals: vec![false, true, true], table: vec![1, -1, -1, 2, -1, 2] };
    let dfa = Dfa::new(spec).unwrap();
    let (set, _) = set_of(&dfa, 10, Policy::Any, &[(b'a', 0, 1), (b'b', 1, 1), (b'b', 2, 1)]);
    let got: Vec<Vec<u32>> = set.iter().map(|m| m.elements).collect();
    assert_eq!(got, vec![vec![0], vec![0, 1], vec![0, 1, 2], vec![0, 2]]);
}

/// `ab*` over a then 700 b's: 2^700 matches, counted exactly and sampled at once.
#[test]
fn astronomically_many_matches_are_counted_and_sampled() {
    let spec = DfaSpec { n: 2, alphabet: b"ab".to_vec(), negated: Vec::new(), start: 0, finals: vec![false, true], table: vec![1, -1, -1, 1] };
    let dfa = Dfa::new(spec).unwrap();
    let raw: Vec<RawEv> = std::iter::once((b'a', 0, 1)).chain((1..=700).map(|t| (b'b', t, 1))).collect();
    let (set, _) = set_of(&dfa, 1000, Policy::Any, &raw);
    assert_eq!(set.count().unwrap(), BigUint::from(1u8) << 700);
    let draws = set.sample(50, 3).unwrap();
    assert_eq!(draws, set.sample(50, 3).unwrap(), "the same seed draws the same matches");
    assert_ne!(draws, set.sample(50, 4).unwrap());
    // Each b is in a uniform match with probability 1/2: 50 draws of 700 b's, 35,000 coin flips.
    let taken: usize = draws.iter().map(|m| m.elements.len() - 1).sum();
    assert!((taken as f64 - 17_500.0).abs() < 500.0, "{taken}");
    // The first matches come at once, in order.
    let first: Vec<Vec<u32>> = set.iter().take(3).map(|m| m.elements).collect();
    assert_eq!(first, vec![vec![0], vec![0, 1], vec![0, 1, 2]]);
}

/// Over a stream with a few matches, each is drawn about equally often.
#[test]
fn samples_are_uniform() {
    let dfa = paper();
    let raw: Vec<RawEv> = b"abbcdeaffbcdg".iter().enumerate().map(|(t, &b)| (b, t as i64, 1)).collect();
    let (set, _) = set_of(&dfa, 100, Policy::Any, &raw);
    let all: Vec<Match> = set.iter().collect();
    let n = all.len();
    assert!(n > 10, "{n}");
    let k = 400 * n;
    let mut seen = std::collections::HashMap::new();
    for m in set.sample(k, 11).unwrap() {
        *seen.entry(m.elements).or_insert(0usize) += 1;
    }
    assert_eq!(seen.len(), n);
    let chi2: f64 = seen.values().map(|&o| (o as f64 - 400.0).powi(2) / 400.0).sum();
    // n − 1 degrees of freedom; mean n − 1, far below 2n for a uniform sampler.
    assert!(chi2 < 2.0 * n as f64, "chi2 {chi2} over {n} matches");
}

#[test]
fn refuses_what_it_cannot_take() {
    let dfa = Arc::new(paper());
    let e = |t| Ev { sym: 0, t, v: 1, gap: 0 };
    assert!(MatchSet::new(dfa.clone(), 3, Policy::Any, vec![e(2), e(1)]).is_err());
    let set = MatchSet::new(dfa, 3, Policy::Any, vec![e(1)]).unwrap();
    assert!(set.cursor(Some(1)).is_err());
    assert_eq!(set.iter().count(), 0);
}

/// `a c b^16 d e` under `a(b*c)*d(e|f)g*`: the sets that take a b can never take the d (a c
/// must come first), 2^16 dead branches. The search never enters them: the steps between two
/// matches stay within a few window lengths.
#[test]
fn the_search_never_enters_a_dead_branch() {
    let dfa = paper();
    let word: Vec<u8> = [b"ac".as_slice(), &[b'b'; 16], b"de"].concat();
    let raw: Vec<RawEv> = word.iter().enumerate().map(|(t, &b)| (b, t as i64, 1)).collect();
    let (set, _) = set_of(&dfa, 100, Policy::Any, &raw);
    let mut cur = set.cursor(None).unwrap();
    let (mut before, mut found) = (0, Vec::new());
    while let Some(m) = cur.next(&set) {
        assert!(cur.steps() - before <= 3 * raw.len() as u64 + 4, "{} steps", cur.steps() - before);
        before = cur.steps();
        found.push(m.elements);
    }
    assert_eq!(found, vec![vec![0, 1, 18, 19], vec![0, 18, 19]]);
}

/// `A B+ !C` (the exact engine's automaton, `window::tests::absence`): the sets spelling
/// `A B+` inside the window with no C after the last element (in arrival order) up to the
/// first element's time plus the window, by brute force over index subsets.
fn brute_closed(raw: &[RawEv], tau: i64) -> BTreeSet<Vec<u32>> {
    let letters: Vec<usize> = (0..raw.len()).filter(|&i| matches!(raw[i].0, b'A' | b'B')).collect();
    let mut out = BTreeSet::new();
    for mask in 1u32..(1 << letters.len()) {
        let idx: Vec<usize> = (0..letters.len()).filter(|k| mask >> k & 1 == 1).map(|k| letters[k]).collect();
        let (first, last) = (idx[0], *idx.last().unwrap());
        let spelled = raw[first].0 == b'A' && idx.len() >= 2 && idx[1..].iter().all(|&i| raw[i].0 == b'B');
        let closes = raw[first].1 + tau;
        if spelled && !expired(raw[first].1, raw[last].1, tau) && !raw[last + 1..].iter().any(|e| e.0 == b'C' && e.1 <= closes) {
            out.insert(idx.iter().map(|&i| i as u32).collect());
        }
    }
    out
}

fn closing_set(raw: &[RawEv], tau: i64) -> (MatchSet, Vec<u32>) {
    let dfa = crate::exact::window::tests::absence();
    let (elems, pos) = elements(&dfa, raw);
    (MatchSet::with_closing(dfa, tau, Policy::Any, elems, Some(&[2])).unwrap(), pos)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn matches_with_a_negation_at_the_end_equal_brute_force(raw in stream(b"ABCx"), tau in 0i64..6) {
        let want = brute_closed(&raw, tau);
        let (set, pos) = closing_set(&raw, tau);
        let mut cur = set.cursor(None).unwrap();
        let (mut got, mut before) = (Vec::new(), 0);
        let w = (0..set.len()).map(|i| set.last[i] as usize + 1 - i).max().unwrap_or(0) as u64;
        while let Some(m) = cur.next(&set) {
            prop_assert!(cur.steps() - before <= 3 * w + 4, "{} steps for one match, window of {} elements", cur.steps() - before, w);
            before = cur.steps();
            got.push(m);
        }
        let at: Vec<Vec<u32>> = got.iter().map(|m| at_raw(m, &pos).0).collect();
        prop_assert!(at.windows(2).all(|w| w[0] < w[1]), "not in order or repeated: {:?}", at);
        prop_assert_eq!(&at.iter().cloned().collect::<BTreeSet<_>>(), &want);
        prop_assert_eq!(set.count().unwrap(), BigUint::from(want.len()));
        // The first elements found through the sliding product are those with a match.
        prop_assert_eq!(&set.starts, &set.starts_by_ends());
        let firsts: BTreeSet<u32> = got.iter().map(|m| m.elements[0]).collect();
        prop_assert_eq!(set.starts.iter().copied().collect::<BTreeSet<_>>(), firsts);
        for (i, c) in set.counts().unwrap().iter().enumerate() {
            let mine: Vec<&Match> = got.iter().filter(|m| m.elements[0] == i as u32).collect();
            prop_assert_eq!(c, &BigUint::from(mine.len()));
            if !mine.is_empty() {
                let table = set.table::<u128>(i).unwrap();
                for (r, m) in mine.iter().enumerate() {
                    prop_assert_eq!(&table.unrank(&set, i, &BigUint::from(r)).unwrap(), *m);
                }
            }
        }
        if want.is_empty() {
            prop_assert!(set.sample(1, 7).is_err());
        } else {
            for m in set.sample(20, 7).unwrap() {
                prop_assert!(want.contains(&at_raw(&m, &pos).0));
            }
        }
    }
}

#[test]
fn a_negation_at_the_end_refuses_what_it_cannot_take() {
    let dfa = crate::exact::window::tests::absence();
    let e = |t| Ev { sym: 0, t, v: 1, gap: 0 };
    assert!(MatchSet::with_closing(dfa.clone(), 3, Policy::Next, vec![e(1)], Some(&[2])).is_err());
    assert!(MatchSet::with_closing(dfa.clone(), 3, Policy::Any, vec![e(1)], Some(&[3])).is_err());
    let set = MatchSet::with_closing(dfa, 3, Policy::Any, vec![e(1)], Some(&[2])).unwrap();
    assert!(set.cursor(Some(0)).is_err());
}
