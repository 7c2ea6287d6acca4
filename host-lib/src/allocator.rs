//! The `Allocator`: a pool's configuration, its credit state and the policy, advanced
//! one quantum at a time. Users may join and leave between quanta; the whole state can
//! be exported and imported (checkpoints, moving between backends).

use crate::config::{KarmaParams, PoolConfig, UserConfig};
use crate::credits::{Credits, SCALE};
use crate::error::{Error, Result};
use crate::policy::{self, Implementation, Outcome, Policy, Workspace};
use serde::{Deserialize, Serialize};

/// What happens to the pool when a user joins or leaves (paper section 3.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PoolChange {
    /// The pool grows (join) or shrinks (leave) by that user's fair share; the other
    /// users keep their shares.
    Resize,
    /// The pool keeps exactly its `C` slices: the fair shares (the newcomer's included)
    /// are rescaled to sum to `C` by largest remainder (each user gets the floor of its
    /// exact quota `f C / sum f`, and the slices left go one each to the largest
    /// remainders, ties to the lowest index); guaranteed shares follow as
    /// `g' = floor(g f' / f)`. Equal shares may then differ by one slice, and the pool
    /// runs by Algorithm 2. A user whose share would round to 0 makes the change fail.
    KeepPool,
}

/// A pool allocator: build it from a [`PoolConfig`], call [`Allocator::allocate`] once
/// per quantum with the demand vector, read allocations and credits.
///
/// ```
/// use fairshare::{Allocator, AllocatorState, Alpha, PoolConfig, Policy};
/// let config = PoolConfig::equal(3, 2, Alpha::new(1, 2)?, 6)?; // 3 users, f = 2, alpha = 1/2, 6 credits
/// let mut pool = Allocator::new(config, Policy::Karma)?;
/// assert_eq!(pool.allocate(&[3, 2, 1])?, &[3, 2, 1]); // one call per quantum
/// assert_eq!(pool.credits()[0].to_string(), "5");
/// // Checkpoint and resume: the resumed pool continues bit for bit.
/// let checkpoint = serde_json::to_string(&pool.export_state())?;
/// let mut resumed = Allocator::from_state(serde_json::from_str::<AllocatorState>(&checkpoint)?)?;
/// assert_eq!(resumed.allocate(&[3, 0, 0])?, pool.allocate(&[3, 0, 0])?);
/// assert_eq!(resumed.credits(), pool.credits());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Allocator {
    policy: Policy,
    implementation: Implementation,
    config: PoolConfig,
    params: KarmaParams,
    credits: Vec<Credits>,
    alloc: Vec<u64>,
    quantum: u64,
    /// Changes of the users (joins, leaves, new shares) so far: a savepoint belongs to
    /// one generation.
    generation: u64,
    /// Buffers of the batched policies and the next quantum's result, reused every
    /// quantum: the steady state allocates nothing.
    workspace: Workspace,
    next: Outcome,
}

impl Allocator {
    /// A pool in its initial state (every user at its initial credits).
    pub fn new(config: PoolConfig, policy: Policy) -> Result<Self> {
        let params = KarmaParams::from_config(&config)?;
        let credits = config.users.iter().map(|u| u.initial_credits).collect();
        let alloc = vec![0; config.users.len()];
        Ok(Allocator {
            policy,
            implementation: Implementation::Batched,
            config,
            params,
            credits,
            alloc,
            quantum: 0,
            generation: 0,
            workspace: Workspace::default(),
            next: Outcome::default(),
        })
    }

    /// Chooses the software implementation (batched by default; literal is the oracle).
    pub fn with_implementation(mut self, implementation: Implementation) -> Self {
        self.implementation = implementation;
        self
    }

    /// Runs one quantum: `demand[u]` slices for user `u`, in index order. Returns the
    /// allocations. On error nothing changes (credits, quantum counter, last allocation).
    pub fn allocate(&mut self, demand: &[u64]) -> Result<&[u64]> {
        let (workspace, next) = (&mut self.workspace, &mut self.next);
        policy::run_into(self.policy, self.implementation, &self.params, demand, &self.credits, workspace, next)?;
        std::mem::swap(&mut self.alloc, &mut self.next.alloc);
        std::mem::swap(&mut self.credits, &mut self.next.credits);
        self.quantum += 1;
        Ok(&self.alloc)
    }

    /// Accepts a quantum computed elsewhere, in device words (a checked device result,
    /// see [`crate::offload`]), as if `allocate` had computed it. Reuses the buffers.
    pub(crate) fn commit_words(&mut self, alloc: &[u32], credits: &[u32]) {
        self.alloc.clear();
        self.alloc.extend(alloc.iter().map(|&a| a as u64));
        self.credits.clear();
        self.credits.extend(credits.iter().map(|&c| Credits::from_raw((c as i64) << crate::credits::FRAC_BITS)));
        self.quantum += 1;
    }

    /// Counts a quantum that changed nothing (one the offload's verifier could not
    /// recompute, though the device issued it).
    pub(crate) fn skip_quantum(&mut self) {
        self.quantum += 1;
    }

    /// Puts the pool where it was before quantum `quantum` with balances `credits`, in
    /// device words (the verifier's replay of a sampled device quantum).
    pub(crate) fn restore_words(&mut self, quantum: u64, credits: &[u32]) {
        self.credits.clear();
        self.credits.extend(credits.iter().map(|&c| Credits::from_raw((c as i64) << crate::credits::FRAC_BITS)));
        self.quantum = quantum;
    }

    /// Allocations of the last quantum (zeros before the first; a user who joined since
    /// has 0, and a join or leave leaves the others' as they were).
    pub fn allocations(&self) -> &[u64] {
        &self.alloc
    }

    /// Current credit balances, in user index order.
    pub fn credits(&self) -> &[Credits] {
        &self.credits
    }

    /// The users, in index order, with their current shares.
    pub fn users(&self) -> &[UserConfig] {
        &self.config.users
    }

    /// Index of the user called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.config.users.iter().position(|u| u.name == name)
    }

    /// Prices, free credits and pool size derived from the current users.
    pub fn params(&self) -> &KarmaParams {
        &self.params
    }

    /// The policy this pool runs.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Quanta run so far.
    pub fn quantum(&self) -> u64 {
        self.quantum
    }

    /// Adds a user between quanta. It starts with the floor of the mean credits of the
    /// existing users (whole credits); its `initial_credits` field is ignored. Returns
    /// its index (the last one).
    pub fn join(&mut self, user: UserConfig, change: PoolChange) -> Result<usize> {
        if self.index_of(&user.name).is_some() {
            return Err(Error::DuplicateUser(user.name));
        }
        let total: i128 = self.credits.iter().map(|c| c.raw() as i128).sum();
        let mean_whole = total.div_euclid(self.credits.len() as i128 * SCALE as i128);
        let start = i64::try_from(mean_whole)
            .ok()
            .and_then(Credits::from_int)
            .ok_or(Error::CreditOverflow { user: self.credits.len(), before: Credits::ZERO })?;
        let mut users = self.config.users.clone();
        users.push(UserConfig { initial_credits: start, ..user });
        if change == PoolChange::KeepPool {
            apportion(&mut users, self.params.capacity);
        }
        let mut credits = self.credits.clone();
        credits.push(start);
        let mut alloc = self.alloc.clone();
        alloc.push(0);
        self.replace_users(users, credits, alloc)?;
        Ok(self.credits.len() - 1)
    }

    /// Removes the user called `name` between quanta; its credits are dropped and the
    /// others' do not change.
    pub fn leave(&mut self, name: &str, change: PoolChange) -> Result<()> {
        let index = self.index_of(name).ok_or_else(|| Error::UnknownUser(name.to_string()))?;
        if self.config.users.len() == 1 {
            return Err(Error::LastUser);
        }
        let mut users = self.config.users.clone();
        users.remove(index);
        if change == PoolChange::KeepPool {
            apportion(&mut users, self.params.capacity);
        }
        let mut credits = self.credits.clone();
        credits.remove(index);
        let mut alloc = self.alloc.clone();
        alloc.remove(index);
        self.replace_users(users, credits, alloc)
    }

    /// Sets every user's fair and guaranteed shares, `(f, g)` in index order, between
    /// quanta; names and credits stay. For pools whose shares follow outside weights
    /// (a user joins with [`PoolChange::Resize`], then the shares are set from the
    /// weights). Nothing changes on error.
    pub fn set_shares(&mut self, shares: &[(u64, u64)]) -> Result<()> {
        if shares.len() != self.config.users.len() {
            return Err(Error::SharesLength { expected: self.config.users.len(), got: shares.len() });
        }
        let users = self
            .config
            .users
            .iter()
            .zip(shares)
            .map(|(u, &(fair_share, guaranteed))| UserConfig { fair_share, guaranteed, ..u.clone() })
            .collect();
        self.replace_users(users, self.credits.clone(), self.alloc.clone())
    }

    /// Validates and installs a new user list with its credits and last allocations;
    /// nothing changes on error.
    fn replace_users(&mut self, users: Vec<UserConfig>, credits: Vec<Credits>, alloc: Vec<u64>) -> Result<()> {
        let config = PoolConfig { users };
        let params = KarmaParams::from_config(&config)?;
        self.alloc = alloc;
        self.config = config;
        self.params = params;
        self.credits = credits;
        self.generation += 1;
        Ok(())
    }

    /// Where the pool is between quanta (quanta run, last allocations, credits), to
    /// come back to with [`Allocator::roll_back`] if a quantum's result cannot be kept
    /// (e.g. its commit to a ledger failed). Copies two vectors of the users' length.
    pub fn savepoint(&self) -> Savepoint {
        Savepoint {
            quantum: self.quantum,
            generation: self.generation,
            alloc: self.alloc.clone(),
            credits: self.credits.clone(),
        }
    }

    /// Puts the pool back where it was at `savepoint`, taken from this pool since its
    /// users last changed. A savepoint taken before a join, a leave or new shares (or of
    /// another pool) is refused and changes nothing.
    pub fn roll_back(&mut self, savepoint: Savepoint) -> Result<()> {
        let n = self.config.users.len();
        if savepoint.generation != self.generation || savepoint.alloc.len() != n || savepoint.credits.len() != n {
            return Err(Error::InvalidState(format!(
                "a savepoint of users' generation {} ({} users) on a pool of generation {} ({n} users)",
                savepoint.generation,
                savepoint.credits.len(),
                self.generation
            )));
        }
        self.quantum = savepoint.quantum;
        self.alloc = savepoint.alloc;
        self.credits = savepoint.credits;
        Ok(())
    }

    /// The complete state: enough to continue elsewhere with the same results.
    pub fn export_state(&self) -> AllocatorState {
        AllocatorState {
            format: AllocatorState::FORMAT,
            policy: self.policy,
            quantum: self.quantum,
            users: self
                .config
                .users
                .iter()
                .zip(&self.credits)
                .zip(&self.alloc)
                .map(|((u, &credits), &alloc)| UserState {
                    name: u.name.clone(),
                    fair_share: u.fair_share,
                    guaranteed: u.guaranteed,
                    credits,
                    alloc,
                })
                .collect(),
        }
    }

    /// Continues from an exported state: the same users, credits, quantum counter and
    /// last allocations. The software implementation is a runtime choice, not state
    /// (batched unless [`Allocator::with_implementation`] says otherwise).
    pub fn from_state(state: AllocatorState) -> Result<Self> {
        if state.format != AllocatorState::FORMAT {
            return Err(Error::InvalidState(format!(
                "format {} is not supported (expected {})",
                state.format,
                AllocatorState::FORMAT
            )));
        }
        let users = state
            .users
            .iter()
            .map(|u| UserConfig {
                name: u.name.clone(),
                fair_share: u.fair_share,
                guaranteed: u.guaranteed,
                initial_credits: u.credits,
            })
            .collect();
        let mut pool = Allocator::new(PoolConfig { users }, state.policy)?;
        pool.quantum = state.quantum;
        pool.alloc = state.users.iter().map(|u| u.alloc).collect();
        Ok(pool)
    }
}

/// A pool's place between quanta ([`Allocator::savepoint`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Savepoint {
    quantum: u64,
    generation: u64,
    alloc: Vec<u64>,
    credits: Vec<Credits>,
}

impl Savepoint {
    /// Quanta the pool had run.
    pub fn quantum(&self) -> u64 {
        self.quantum
    }
}

/// Divides `total` slices in proportion to `weights` by largest remainder: each gets the
/// floor of its exact quota `w total / sum w`, and the slices left go one each to the
/// largest remainders, ties to the lowest index. All zeros when the weights sum to 0.
pub fn largest_remainder(total: u64, weights: &[u64]) -> Vec<u64> {
    let sum: u128 = weights.iter().map(|&w| w as u128).sum();
    if sum == 0 {
        return vec![0; weights.len()];
    }
    let quota = |w: u64| w as u128 * total as u128;
    let mut shares: Vec<u64> = weights.iter().map(|&w| (quota(w) / sum) as u64).collect();
    let left = total - shares.iter().sum::<u64>();
    let mut by_remainder: Vec<usize> = (0..weights.len()).collect();
    by_remainder.sort_by_key(|&i| (std::cmp::Reverse(quota(weights[i]) % sum), i));
    // Fewer slices are left than there are weights (each floor lost less than one).
    for &i in by_remainder.iter().take(left as usize) {
        shares[i] += 1;
    }
    shares
}

/// Rescales the fair shares to sum to `pool` by [`largest_remainder`] and the guaranteed
/// shares to `floor(g f' / f)`.
fn apportion(users: &mut [UserConfig], pool: u64) {
    let weights: Vec<u64> = users.iter().map(|u| u.fair_share).collect();
    if weights.iter().all(|&w| w == 0) {
        return;
    }
    let shares = largest_remainder(pool, &weights);
    for (u, f) in users.iter_mut().zip(shares) {
        u.guaranteed = (u.guaranteed as u128 * f as u128 / u.fair_share as u128) as u64;
        u.fair_share = f;
    }
}

/// A checkpoint of an [`Allocator`] (JSON via serde; credits as exact decimal strings).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocatorState {
    /// Version of this layout.
    pub format: u32,
    /// The policy.
    pub policy: Policy,
    /// Quanta run so far.
    pub quantum: u64,
    /// Users in index order with their credits.
    pub users: Vec<UserState>,
}

impl AllocatorState {
    /// The current layout version.
    pub const FORMAT: u32 = 1;
}

/// One user in an [`AllocatorState`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserState {
    /// Unique name.
    pub name: String,
    /// Fair share in slices.
    pub fair_share: u64,
    /// Guaranteed share in slices.
    pub guaranteed: u64,
    /// Credit balance.
    pub credits: Credits,
    /// Allocation of the last quantum (0 before the first).
    #[serde(default)]
    pub alloc: u64,
}
