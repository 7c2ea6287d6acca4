//! A pool replicated through a store elsewhere (the controller's etcd): what the pool
//! asks of it. One replica leads and runs quanta; every replica takes demands (made
//! durable in the store before they are acknowledged) and shows the last committed
//! quantum. The service knows no store: `fairshare-cluster` implements [`Replica`].

/// Who leads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Role {
    /// This replica leads: it may run quanta.
    pub leader: bool,
    /// The leader's API address, as it advertised it (when one is known).
    pub leader_api: Option<String>,
}

/// A change of the pool's members taken by a replica, applied by the leader at its
/// next quantum (and committed with it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "change", rename_all = "snake_case", deny_unknown_fields)]
pub enum Membership {
    /// A tenant joins.
    Join {
        /// Its name.
        name: String,
        /// Its weight.
        weight: u64,
        /// What selects its traffic, if anything.
        #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
        selector: Option<crate::config::Match>,
    },
    /// A tenant leaves.
    Leave {
        /// Its name.
        name: String,
    },
}

impl Membership {
    /// The tenant it is about.
    pub fn name(&self) -> &str {
        match self {
            Membership::Join { name, .. } | Membership::Leave { name } => name,
        }
    }
}

/// What was committed or acknowledged elsewhere since a replica last looked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Synced {
    /// A newer whole state of the pool (the JSON a ledger keeps), if there is one.
    pub state: Option<Vec<u8>>,
    /// Joins and leaves acknowledged after that state, in the order they were (applied
    /// before the demands).
    pub members: Vec<Membership>,
    /// Demands acknowledged after that state, in the order they were: (tenant, slices).
    pub demands: Vec<(String, u64)>,
    /// On the leader, what the hosts' agents measure now, summed over the hosts:
    /// (tenant, slices), tenants no host measures left out.
    pub measured: Option<Vec<(String, u64)>>,
}

/// A committed quantum as the hosts' agents need it: each tenant's allocation (to be
/// split among its hosts), its guaranteed share and match, and how to shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Publication {
    /// The quantum committed.
    pub quantum: u64,
    /// Its period.
    pub period: std::time::Duration,
    /// Bits per second of a slice.
    pub slice_bps: u64,
    /// Slices in the pool.
    pub slices: u64,
    /// The agents' settings.
    pub agents: crate::config::AgentSettings,
    /// The TTL of the leases (the leader's, and each agent's on its demand).
    pub lease_ttl: std::time::Duration,
    /// The tenants, in index order.
    pub tenants: Vec<Allotted>,
}

/// One tenant's part of a [`Publication`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allotted {
    /// Its name.
    pub name: String,
    /// Its allocation in the quantum, in slices, over all its hosts.
    pub slices: u64,
    /// Its guaranteed share (alpha x fair share), in slices.
    pub guaranteed: u64,
    /// What selects its traffic.
    pub selector: Option<crate::config::Match>,
}

/// Why the store refused or could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    /// Only the leader runs quanta.
    #[error("this replica does not lead; the leader's API is {}", leader_api.as_deref().unwrap_or("not known yet"))]
    NotLeader {
        /// Where the leader answers.
        leader_api: Option<String>,
    },
    /// The store holds another quantum than this replica's, or another replica leads
    /// now: the commit was refused, nothing of it is visible.
    #[error("the commit was refused: {0}")]
    Fenced(String),
    /// The store could not be reached, or answered an error.
    #[error("{store}: {call}: {source}")]
    Store {
        /// Which store (`etcd`).
        store: &'static str,
        /// What was asked of it.
        call: String,
        /// Its error, or the lack of an answer.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Something is larger than the store takes in one request.
    #[error("{what} is {bytes} bytes, over the {limit} one request to the store may carry")]
    TooLarge {
        /// What.
        what: &'static str,
        /// Its size.
        bytes: usize,
        /// The most the store takes.
        limit: usize,
    },
    /// The store holds something this replica cannot read.
    #[error("the store holds {0}")]
    Damaged(String),
}

/// What a replicated pool asks of its store. Calls block; they are made under the
/// pool's lock, between quanta.
pub trait Replica: Send {
    /// Starts taking part (campaigning to lead, under a lease of `lease_ttl`),
    /// advertising `api` as this replica's API address.
    fn start(&mut self, api: &str, lease_ttl: std::time::Duration);
    /// Who leads now.
    fn role(&mut self) -> Role;
    /// What was committed and acknowledged since this replica last synced (or since it
    /// started).
    fn sync(&mut self) -> Result<Synced, ReplicaError>;
    /// Forgets what this replica took from the store (the pool could not install it):
    /// the next sync reads the committed state again.
    fn reset(&mut self);
    /// Commits the pool's whole `state` after a quantum that started from quantum `from`:
    /// refused unless this replica leads and the store is at `from`. Exactly once: an
    /// answer lost on the way is resolved by reading back, never by writing again.
    fn commit(&mut self, from: u64, state: &[u8]) -> Result<(), ReplicaError>;
    /// Publishes a committed quantum to the hosts' agents (the leader, after the
    /// commit): each tenant's allocation split among its hosts.
    fn publish(&mut self, publication: &Publication) -> Result<(), ReplicaError>;
    /// Makes a tenant's demand durable (on any replica) before it is acknowledged.
    fn put_demand(&mut self, tenant: &str, slices: u64) -> Result<(), ReplicaError>;
    /// Makes a join or a leave durable (on any replica) before it is acknowledged; the
    /// leader applies it at its next quantum.
    fn put_member(&mut self, change: &Membership) -> Result<(), ReplicaError>;
}
