//! Strict partitioning: every user gets its demand up to its fair share, nothing more.

/// `alloc_u = min(d_u, f_u)`.
pub fn allocate(fair_share: &[u64], demand: &[u64]) -> Vec<u64> {
    fair_share.iter().zip(demand).map(|(&f, &d)| d.min(f)).collect()
}
