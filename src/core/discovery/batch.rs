//! The last steps every discovery source shares: the run's order (a shuffle seeded by the
//! planner run, for a source without an order of its own), the cut to the review batch
//! (`discovery.review-batch-size`) with its reason, and the counts of the reports.

use std::collections::BTreeMap;

/// Shuffles `items` with `seed` (Fisher–Yates over SplitMix64): the same seed, the same order.
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for index in (1..items.len()).rev() {
        let other = (next() % (index as u64 + 1)) as usize;
        items.swap(index, other);
    }
}

/// One item the batch left out, with why.
#[derive(Debug, Clone, PartialEq)]
pub struct CutItem<T> {
    pub item: T,
    pub reason: String,
}

/// The first `size` of `ordered`, and the rest, each with its position in the run's order.
pub fn cut_to_batch<T>(ordered: Vec<T>, size: usize) -> (Vec<T>, Vec<CutItem<T>>) {
    let mut kept = Vec::new();
    let mut cut = Vec::new();
    for (position, item) in ordered.into_iter().enumerate() {
        if position < size {
            kept.push(item);
        } else {
            cut.push(CutItem {
                item,
                reason: format!(
                    "cut by the review batch size {size} (position {} of the run's order)",
                    position + 1
                ),
            });
        }
    }
    (kept, cut)
}

/// How many reports met each fate.
pub fn count<F: Ord>(fates: impl IntoIterator<Item = F>) -> BTreeMap<F, usize> {
    let mut counts = BTreeMap::new();
    for fate in fates {
        *counts.entry(fate).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batch_keeps_the_first_and_says_where_each_cut_one_stood() {
        let (kept, cut) = cut_to_batch(vec!['a', 'b', 'c'], 1);
        assert_eq!(kept, ['a']);
        let cut: Vec<(char, &str)> = cut.iter().map(|c| (c.item, c.reason.as_str())).collect();
        assert_eq!(
            cut,
            [
                (
                    'b',
                    "cut by the review batch size 1 (position 2 of the run's order)"
                ),
                (
                    'c',
                    "cut by the review batch size 1 (position 3 of the run's order)"
                ),
            ]
        );
        assert_eq!(count(['x', 'y', 'x']), BTreeMap::from([('x', 2), ('y', 1)]));
    }
}
