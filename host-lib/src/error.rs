//! Typed errors of the library. Every error leaves the allocator's state unchanged.

use crate::Credits;

/// Everything that can go wrong configuring or running an allocator. Fields are
/// named for what they hold: `user` is the user's index, `name` its name.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A pool must have at least one user.
    #[error("the pool has no users")]
    NoUsers,
    /// Fair shares are whole slices, at least one.
    #[error("user {user} (`{name}`): fair share is 0; it must be at least 1 slice")]
    ZeroFairShare { user: usize, name: String },
    /// `g_u <= f_u` is required by the model.
    #[error("user {user} (`{name}`): guaranteed share {guaranteed} is above its fair share {fair_share}")]
    GuaranteedAboveFair { user: usize, name: String, guaranteed: u64, fair_share: u64 },
    /// Alpha is the guaranteed fraction of the fair share.
    #[error("alpha `{0}` is not a number in [0, 1]")]
    BadAlpha(String),
    /// Two users with one name.
    #[error("user name `{0}` appears twice")]
    DuplicateUser(String),
    /// A user name or index that the pool does not have.
    #[error("unknown user `{0}`")]
    UnknownUser(String),
    /// The sum of fair shares (or a price derived from it) does not fit 64 bits.
    #[error("the pool is too large: {0}")]
    PoolTooLarge(String),
    /// The demand vector must have one entry per user.
    #[error("demand vector has {got} entries but the pool has {expected} users")]
    DemandLength { expected: usize, got: usize },
    /// New shares must have one entry per user.
    #[error("{got} shares given but the pool has {expected} users")]
    SharesLength { expected: usize, got: usize },
    /// A credit balance would leave the 64-bit fixed-point range. Nothing was changed.
    #[error("credits of user {user} would leave the representable range (64-bit, 16 fractional bits; balance before this quantum: {before})")]
    CreditOverflow { user: usize, before: Credits },
    /// The last user cannot leave; a pool needs one.
    #[error("the last user of a pool cannot leave")]
    LastUser,
    /// An imported state is inconsistent.
    #[error("invalid allocator state: {0}")]
    InvalidState(String),
}

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
