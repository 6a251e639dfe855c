use super::*;

const A: u32 = 0;
const B: u32 = 1;

/// `A B+` with B greedy (or reluctant): VAR A; VAR B; SPLIT loop/exit; JMP back; MATCH.
fn a_b_plus(greedy: bool) -> Program {
    let (take, leave) = if greedy { (3, 4) } else { (4, 3) };
    Program { code: vec![(VAR, A, 0), (VAR, B, 0), (SPLIT, take, leave), (JMP, 1, 0), (MATCH, 0, 0)], registers: 0 }
}

fn flags(word: &str) -> (Vec<u8>, Vec<u8>) {
    (word.bytes().map(|c| (c == b'a') as u8).collect(), word.bytes().map(|c| (c == b'b') as u8).collect())
}

fn options(skip: SkipMode) -> Options {
    Options { memo: MemoScope::Partition, max_steps: 1000, base: 0, skip }
}

fn matches_of(program: &Program, word: &str, skip: SkipMode) -> (Vec<Item>, End<()>) {
    let (a, b) = flags(word);
    let rows = [&a[..], &b[..]];
    let (items, end, _) = run::<()>(program, word.len(), &mut Table { rows: &rows }, &options(skip), Cursor::default());
    (items.into_iter().map(|(item, _)| item).collect(), end)
}

fn m(number: u64, start: usize, labels: &[u32]) -> Item {
    Item::Match { number, start, labels: labels.to_vec(), excluded: vec![false; labels.len()] }
}

#[test]
fn greedy_takes_every_b_and_reluctant_one() {
    let (items, end) = matches_of(&a_b_plus(true), "abbxab", SkipMode::PastLastRow);
    assert!(matches!(end, End::Done));
    assert_eq!(items, vec![m(1, 0, &[A, B, B]), Item::Unmatched { row: 3 }, m(2, 4, &[A, B])]);
    let (items, _) = matches_of(&a_b_plus(false), "abb", SkipMode::PastLastRow);
    assert_eq!(items, vec![m(1, 0, &[A, B]), Item::Unmatched { row: 2 }]);
}

#[test]
fn a_skip_to_the_first_row_is_refused_by_name() {
    let skip = SkipMode::ToFirst { targets: vec![A], name: "A".into() };
    let (items, end) = matches_of(&a_b_plus(true), "ab", skip);
    assert!(items.is_empty());
    assert!(matches!(end, End::Failed(Failure::Skip(m)) if m.contains("would resume at its own first row")));
}

#[test]
fn without_the_memo_the_steps_are_bounded() {
    // (A|A)* A* ... exponential without the memo: a loop of two alternatives that both take A
    let code = vec![(SPLIT, 1, 6), (SPLIT, 2, 4), (VAR, A, 0), (JMP, 5, 0), (VAR, A, 0), (JMP, 0, 0), (VAR, B, 0), (MATCH, 0, 0)];
    let program = Program { code, registers: 0 };
    let word = "a".repeat(40);
    let (a, b) = flags(&word);
    let rows = [&a[..], &b[..]];
    let opts = Options { memo: MemoScope::None, max_steps: 10_000, base: 0, skip: SkipMode::PastLastRow };
    let (_, end, _) = run::<()>(&program, word.len(), &mut Table { rows: &rows }, &opts, Cursor::default());
    assert!(matches!(end, End::Failed(Failure::Limit(m)) if m.contains("more than 10000 backtracking steps")));
    let memo = Options { memo: MemoScope::Partition, ..opts };
    let (items, end, last) = run::<()>(&program, word.len(), &mut Table { rows: &rows }, &memo, Cursor::default());
    assert!(matches!(end, End::Done) && items.len() == 40 && last.pos == 40);
}

#[test]
fn nav_position_counts_the_rows_of_the_qualifier_from_either_end() {
    let labels = [A, B, B, A, B];
    let of = |var: u32| move |i: usize| Ok::<bool, ()>(labels[i] == var);
    assert_eq!(nav_position(5, true, 0, of(B)), Ok(Some(1)));
    assert_eq!(nav_position(5, true, 2, of(B)), Ok(Some(4)));
    assert_eq!(nav_position(5, false, 0, of(B)), Ok(Some(4)));
    assert_eq!(nav_position(5, false, 1, of(A)), Ok(Some(0)));
    assert_eq!(nav_position(5, false, 2, of(A)), Ok(None));
    assert_eq!(nav_position(3, false, 0, of(A)), Ok(Some(0))); // running: only the first 3 rows
    assert_eq!(nav_position(0, true, 0, |_| Ok::<bool, ()>(true)), Ok(None));
    assert_eq!(nav_position(5, false, 4, |_| Ok::<bool, ()>(true)), Ok(Some(0)));
    assert_eq!(nav_position(5, true, 5, |_| Ok::<bool, ()>(true)), Ok(None));
}

mod stretches {
    use super::*;
    use crate::recognize::stretch::{run_stretch, Measure, Output, Reads, Shape, KIND_EMPTY, KIND_MATCH, KIND_UNMATCHED};

    fn row(first: bool, physical: i64, members: Option<Vec<u32>>, whole: bool) -> Measure {
        Measure { what: Reads::Row { first, index: 0, physical }, members, whole }
    }

    /// LAST(B) row, FIRST(A) row one row back, count(B.*), CLASSIFIER(): over the match so far.
    fn measures(whole: bool) -> Vec<Measure> {
        vec![
            row(false, 0, Some(vec![B]), whole),
            row(true, -1, Some(vec![A]), whole),
            Measure { what: Reads::Count, members: Some(vec![B]), whole },
            Measure { what: Reads::Classifier, members: None, whole },
        ]
    }

    fn stretch_of(program: &Program, words: &[&str], shape: Shape, measures: &[Measure]) -> Output {
        let text: String = words.concat();
        let (a, b) = flags(&text);
        let mut bounds = vec![0];
        for w in words {
            bounds.push(bounds.last().unwrap() + w.len());
        }
        run_stretch(program, &[&a, &b], &bounds, &options(SkipMode::PastLastRow), shape, measures).unwrap()
    }

    #[test]
    fn one_row_per_match_reads_the_whole_match_in_each_partition() {
        // partitions "abbxab" (rows 0..6) and "xab" (rows 6..9)
        let out = stretch_of(&a_b_plus(true), &["abbxab", "xab"], Shape::OneRow, &measures(false));
        assert_eq!(out.rows, vec![0, 0, 6]); // the partition's first row
        assert_eq!(out.kinds, vec![KIND_MATCH; 3]);
        assert_eq!(out.numbers, vec![1, 2, 1]); // numbered within each partition
        assert_eq!(out.measures[0], vec![2, 5, 8]);
        assert_eq!(out.measures[1], vec![-1, 3, 6]); // row -1 is outside the first partition
        assert_eq!(out.measures[2], vec![2, 1, 1]);
        assert_eq!(out.measures[3], vec![B as i64; 3]);
    }

    #[test]
    fn all_rows_per_match_reads_running_or_final_values_and_shows_unmatched_rows_when_asked() {
        let all = Shape::AllRows { show_empty: true, unmatched: true };
        let out = stretch_of(&a_b_plus(true), &["abbxab"], all, &measures(false));
        assert_eq!(out.rows, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(out.kinds, vec![KIND_MATCH, KIND_MATCH, KIND_MATCH, KIND_UNMATCHED, KIND_MATCH, KIND_MATCH]);
        assert_eq!(out.numbers, vec![1, 1, 1, -1, 2, 2]);
        assert_eq!(out.measures[0], vec![-1, 1, 2, -1, -1, 5]); // running LAST(B): none yet at the A row
        assert_eq!(out.measures[2], vec![0, 1, 2, -1, 0, 1]);
        assert_eq!(out.measures[3], vec![A as i64, B as i64, B as i64, -1, A as i64, B as i64]);
        let out = stretch_of(&a_b_plus(true), &["abbxab"], Shape::AllRows { show_empty: true, unmatched: false }, &measures(true));
        assert_eq!(out.rows, vec![0, 1, 2, 4, 5]); // no unmatched row
        assert_eq!(out.measures[0], vec![2, 2, 2, 5, 5]); // FINAL LAST(B)
        assert_eq!(out.measures[2], vec![2, 2, 2, 1, 1]);
    }

    #[test]
    fn empty_matches_are_shown_or_omitted_and_excluded_rows_left_out() {
        // B*: an empty match at each a, a match of the b's
        let b_star = Program { code: vec![(SPLIT, 1, 3), (VAR, B, 0), (JMP, 0, 0), (MATCH, 0, 0)], registers: 0 };
        let count = [Measure { what: Reads::Count, members: None, whole: false }];
        let out = stretch_of(&b_star, &["abb"], Shape::OneRow, &count);
        assert_eq!((out.rows, out.kinds, out.numbers, out.measures[0].clone()),
                   (vec![0, 0], vec![KIND_EMPTY, KIND_MATCH], vec![1, 2], vec![0, 2]));
        let out = stretch_of(&b_star, &["abb"], Shape::AllRows { show_empty: true, unmatched: false }, &count);
        assert_eq!((out.rows, out.kinds), (vec![0, 1, 2], vec![KIND_EMPTY, KIND_MATCH, KIND_MATCH]));
        let out = stretch_of(&b_star, &["abb"], Shape::AllRows { show_empty: false, unmatched: false }, &count);
        assert_eq!((out.rows, out.numbers), (vec![1, 2], vec![2, 2]));
        // A {- B+ -}: the B rows are excluded from ALL ROWS PER MATCH, still counted
        let code = vec![(VAR, A, 0), (EXCL_ON, 0, 0), (VAR, B, 0), (SPLIT, 4, 5), (JMP, 2, 0), (EXCL_OFF, 0, 0), (MATCH, 0, 0)];
        let excl = Program { code, registers: 0 };
        let out = stretch_of(&excl, &["abb"], Shape::AllRows { show_empty: true, unmatched: false }, &measures(true));
        assert_eq!((out.rows, out.measures[2].clone()), (vec![0], vec![2]));
    }

    #[test]
    fn a_failure_names_the_first_row_of_its_partition() {
        let (a, b) = flags("abab");
        let skip = SkipMode::ToFirst { targets: vec![A], name: "A".into() };
        let opts = Options { skip, ..options(SkipMode::PastLastRow) };
        let failed = run_stretch(&a_b_plus(true), &[&a, &b], &[0, 1, 4], &opts, Shape::OneRow, &[]).unwrap_err();
        assert!(matches!(failed, (1, Failure::Skip(m)) if m.contains("own first row")));
    }
}
