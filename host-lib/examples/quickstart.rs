//! The README's library example: one pool, one quantum, a checkpoint and a resume.
//! Run with `cargo run -p fairshare --example quickstart`.

use fairshare::{Allocator, AllocatorState, Alpha, Policy, PoolConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = PoolConfig::equal(3, 2, Alpha::new(1, 2)?, 6)?; // 3 users, f = 2, alpha = 1/2, 6 credits
    let mut pool = Allocator::new(config, Policy::Karma)?;
    let alloc = pool.allocate(&[3, 2, 1])?; // one call per quantum
    assert_eq!(alloc, &[3, 2, 1]);
    println!("credits after quantum 1: {:?}", pool.credits().iter().map(|c| c.to_string()).collect::<Vec<_>>());
    let checkpoint = serde_json::to_string(&pool.export_state())?;
    let mut resumed = Allocator::from_state(serde_json::from_str::<AllocatorState>(&checkpoint)?)?;
    assert_eq!(resumed.allocate(&[3, 0, 0])?, pool.allocate(&[3, 0, 0])?);
    println!("checkpoint: {checkpoint}");
    Ok(())
}
