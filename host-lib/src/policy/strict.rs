//! Strict partitioning: every user gets its demand up to its fair share, nothing more.

/// `alloc_u = min(d_u, f_u)`.
pub fn allocate(fair_share: &[u64], demand: &[u64]) -> Vec<u64> {
    let mut alloc = Vec::with_capacity(demand.len());
    allocate_into(fair_share, demand, &mut alloc);
    alloc
}

/// [`allocate`] into a reused buffer (overwritten).
pub fn allocate_into(fair_share: &[u64], demand: &[u64], alloc: &mut Vec<u64>) {
    alloc.clear();
    alloc.extend(fair_share.iter().zip(demand).map(|(&f, &d)| d.min(f)));
}
