//! Reciprocal rank fusion: results from the lexical and the vector index are
//! put in one order by `Σ 1 / (k + rank)` over the lists each appears in (rank
//! from 1). Scores of the two indexes are not comparable (BM25 against cosine
//! similarity); ranks are. `k = 60` is the value of the method's paper, which
//! later studies found hard to beat.

use std::collections::HashMap;
use std::hash::Hash;

pub const K: f64 = 60.0;

/// The items of `rankings` (each best first) in fused order, best first, with
/// their fused scores. Ties keep the order of first appearance.
pub fn reciprocal_rank<T: Clone + Eq + Hash>(rankings: &[Vec<T>]) -> Vec<(T, f64)> {
    let mut scores: HashMap<T, (f64, usize)> = HashMap::new();
    let mut order = 0;
    for ranking in rankings {
        for (rank, item) in ranking.iter().enumerate() {
            let entry = scores.entry(item.clone()).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            entry.0 += 1.0 / (K + rank as f64 + 1.0);
        }
    }
    let mut out: Vec<(T, f64, usize)> = scores.into_iter().map(|(t, (s, o))| (t, s, o)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    out.into_iter().map(|(t, s, _)| (t, s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_in_both_lists_beats_one_first_in_only_one() {
        let lexical = vec!["a", "b", "c"];
        let vector = vec!["d", "b", "a"];
        let fused: Vec<&str> = reciprocal_rank(&[lexical, vector])
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert_eq!(fused, ["a", "b", "d", "c"]);
    }

    #[test]
    fn one_list_keeps_its_order() {
        let fused = reciprocal_rank(&[vec![3, 1, 2]]);
        assert_eq!(fused.iter().map(|(t, _)| *t).collect::<Vec<_>>(), [3, 1, 2]);
        assert!(reciprocal_rank::<u8>(&[]).is_empty());
    }
}
