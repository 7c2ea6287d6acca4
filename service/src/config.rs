//! The service's configuration file (TOML): the pool, where demands come from, how
//! allocations are enforced, the tenants, access control (`[auth]`) and TLS (`[tls]`).
//! Every field is documented in docs/serve.md; unknown fields, bad units, a
//! zero-capacity pool, duplicate names and names outside the safe charset are errors
//! that name the field. Paths in the file are relative to the file's folder. Reading
//! the files it names (tokens, certificates) is [`crate::auth`]'s.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fairshare::allocator::largest_remainder;
use fairshare::{Alpha, Credits, Policy, PoolConfig, UserConfig};
use serde::Deserialize;

/// Why a configuration cannot be used. The message names the file and the field.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ConfigError {
    /// The file.
    pub file: String,
    /// What is wrong, with the field.
    pub message: String,
}

/// A capacity: slices, or a rate with its unit ("100mbit").
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Amount {
    Slices(u64),
    Rate(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPool {
    capacity: Amount,
    slice: Option<String>,
    quantum: String,
    #[serde(default = "default_policy")]
    policy: String,
    #[serde(default = "default_alpha")]
    alpha: f64,
    initial_credits: Option<i64>,
    max_tenants: Option<usize>,
}

fn default_policy() -> String {
    "karma".into()
}
fn default_alpha() -> f64 {
    0.5
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDemand {
    source: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEnforce {
    kind: String,
    dev: Option<String>,
    max_packet: Option<u32>,
}

/// What selects a tenant's traffic (for enforcement).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Match {
    /// Destination port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dport: Option<u16>,
    /// Source address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<String>,
    /// Firewall mark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fwmark: Option<u32>,
    /// With `dport` or `src`: only this IP protocol (`tcp` or `udp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTenant {
    name: String,
    #[serde(default = "default_weight")]
    weight: u64,
    #[serde(rename = "match")]
    selector: Option<Match>,
    token_file: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuth {
    admin_token_file: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTls {
    cert: String,
    key: String,
}

fn default_weight() -> u64 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawController {
    lease_ttl: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgents {
    stale_after: Option<String>,
    fallback_after: Option<String>,
    max_packet: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    pool: RawPool,
    demand: RawDemand,
    enforce: RawEnforce,
    tenants: Vec<RawTenant>,
    auth: Option<RawAuth>,
    tls: Option<RawTls>,
    controller: Option<RawController>,
    agents: Option<RawAgents>,
}

/// The pool's slices and the bits per second of one: a count of bare slices, or a rate
/// and a slice's rate.
fn pool_size(p: &RawPool) -> Result<(u64, u64), String> {
    let (slices, slice_bps) = match (&p.capacity, &p.slice) {
        (Amount::Slices(n), None) => (*n, 1),
        (Amount::Slices(_), Some(_)) => {
            return Err("pool.slice: a pool in bare slices (capacity = N) takes no slice size".into())
        }
        (Amount::Rate(r), Some(s)) => {
            let cap = parse_rate(r).map_err(|m| format!("pool.capacity: {m}"))?;
            let slice = parse_rate(s).map_err(|m| format!("pool.slice: {m}"))?;
            (cap / slice, slice)
        }
        (Amount::Rate(r), None) => {
            return Err(format!("pool.capacity: `{r}` is a rate; give pool.slice too (e.g. slice = \"1mbit\")"))
        }
    };
    if slices == 0 {
        return Err("pool.capacity: the pool has no slices".into());
    }
    Ok((slices, slice_bps))
}

/// `controller.lease_ttl`: whole seconds from 1 to 60, [`DEFAULT_LEASE_TTL`] if not given.
fn lease_ttl(raw: Option<&RawController>) -> Result<Duration, String> {
    let Some(text) = raw.and_then(|c| c.lease_ttl.as_deref()) else { return Ok(DEFAULT_LEASE_TTL) };
    let ttl = parse_period(text).map_err(|m| format!("controller.lease_ttl: {m}"))?;
    if ttl.subsec_nanos() != 0 || !(1..=60).contains(&ttl.as_secs()) {
        return Err(format!(
            "controller.lease_ttl: `{text}` is not a whole number of seconds from 1 to 60 (etcd's leases are)"
        ));
    }
    Ok(ttl)
}

/// `[enforce]`, checked.
fn enforcement(raw: RawEnforce) -> Result<Enforce, String> {
    match raw.kind.as_str() {
        "none" => {
            if raw.dev.is_some() || raw.max_packet.is_some() {
                return Err("enforce.dev, enforce.max_packet: only with kind = \"htb\"".into());
            }
            Ok(Enforce::None)
        }
        "htb" => match raw.dev {
            Some(dev)
                if !dev.is_empty()
                    && dev.len() < 16
                    && dev.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) =>
            {
                let max_packet = raw.max_packet.unwrap_or(crate::enforce::DEFAULT_MAX_PACKET);
                if !(1514..=65536).contains(&max_packet) {
                    return Err(format!("enforce.max_packet: {max_packet} bytes is outside 1514 to 65536"));
                }
                Ok(Enforce::Htb { dev, max_packet })
            }
            Some(dev) => Err(format!("enforce.dev: `{dev}` is not a network device name")),
            None => Err("enforce.dev: missing (the device whose egress is shaped)".into()),
        },
        other => Err(format!("enforce.kind: `{other}` (use none or htb)")),
    }
}

/// `[[tenants]]`, checked: at least one and at most `max`, names valid and once each,
/// token files only with `[auth]`, weights in range, a match each if `needs_match`.
fn tenants(
    raw: Vec<RawTenant>,
    max: usize,
    auth: bool,
    needs_match: bool,
    path: &dyn Fn(&str, &str) -> Result<PathBuf, String>,
) -> Result<Vec<Tenant>, String> {
    if raw.is_empty() {
        return Err("tenants: at least one [[tenants]] is needed".into());
    }
    if raw.len() > max {
        return Err(format!("tenants: {} tenants, more than pool.max_tenants ({max})", raw.len()));
    }
    let mut tenants: Vec<Tenant> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, t) in raw.into_iter().enumerate() {
        check_name(&t.name).map_err(|m| format!("tenants[{i}].name {m}"))?;
        if !seen.insert(t.name.clone()) {
            return Err(format!("tenants[{i}].name: `{}` appears twice", t.name));
        }
        let token_file = match &t.token_file {
            Some(_) if !auth => return Err(format!("tenants[{i}].token_file: needs [auth] (admin_token_file)")),
            Some(f) => Some(path(&format!("tenants[{i}].token_file"), f)?),
            None => None,
        };
        if t.weight == 0 || t.weight > 1_000_000 {
            return Err(format!("tenants[{i}].weight: {} is outside 1 to 1000000", t.weight));
        }
        if needs_match {
            let Some(m) = &t.selector else {
                return Err(format!(
                    "tenants[{i}].match: missing; enforce = htb and demand from agents need one per tenant"
                ));
            };
            check_match(m).map_err(|m| format!("tenants[{i}].match{m}"))?;
        }
        tenants.push(Tenant { name: t.name, weight: t.weight, selector: t.selector, token_file });
    }
    Ok(tenants)
}

/// `[agents]`, checked: `stale_after` by default the lease's TTL and a second (an
/// election), `fallback_after` by default 30 s and never before `stale_after`.
fn agent_settings(raw: Option<&RawAgents>, lease_ttl: Duration) -> Result<AgentSettings, String> {
    let period = |field: &str, text: Option<&str>, default: Duration| match text {
        None => Ok(default),
        Some(t) => parse_period(t).map_err(|m| format!("agents.{field}: {m}")),
    };
    let stale_after =
        period("stale_after", raw.and_then(|r| r.stale_after.as_deref()), lease_ttl + Duration::from_secs(1))?;
    let fallback_after = period(
        "fallback_after",
        raw.and_then(|r| r.fallback_after.as_deref()),
        DEFAULT_FALLBACK_AFTER.max(stale_after),
    )?;
    if fallback_after < stale_after {
        return Err(format!(
            "agents.fallback_after: {fallback_after:?} is before agents.stale_after ({stale_after:?})"
        ));
    }
    let max_packet = raw.and_then(|r| r.max_packet).unwrap_or(crate::enforce::DEFAULT_MAX_PACKET);
    if !(1514..=65536).contains(&max_packet) {
        return Err(format!("agents.max_packet: {max_packet} bytes is outside 1514 to 65536"));
    }
    Ok(AgentSettings { stale_after, fallback_after, max_packet })
}

/// How long the hosts' agents keep the last allocation before they fall back to the
/// guaranteed shares, when `agents.fallback_after` is not given.
pub const DEFAULT_FALLBACK_AFTER: Duration = Duration::from_secs(30);

/// The leader's lease when `controller.lease_ttl` is not given.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(3);

/// Credits every tenant starts with when `pool.initial_credits` is not given: 2^30.
/// Karma's credits only order tenants, so a large start changes no ranking; what it
/// changes is how long a tenant can borrow before it runs out, and a tenant out of
/// credits cannot take the slices others leave idle: with 0 a fresh pool idles the link
/// while tenants want more (docs/serve.md#initial-credits). 2^30 lets a tenant borrow a
/// whole pool of 100 slices every 200 ms quantum for 25 days, and leaves a device's
/// 31-bit credit words as much again to grow.
pub const DEFAULT_INITIAL_CREDITS: i64 = 1 << 30;

/// The most tenants a pool takes when `pool.max_tenants` is not given.
pub const DEFAULT_MAX_TENANTS: usize = 100_000;

/// The longest tenant name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;

/// Whether `name` may name a tenant: 1 to [`MAX_NAME_BYTES`] bytes of ASCII letters,
/// digits, `.`, `_` and `-`. Names go into URLs, metric labels, logs and the HTB tree's
/// comments unescaped, so the charset is kept where none of them needs escaping.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is empty".into());
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(format!("is {} bytes long; at most {MAX_NAME_BYTES}", name.len()));
    }
    match name.chars().find(|c| !(c.is_ascii_alphanumeric() || "._-".contains(*c))) {
        Some(c) => {
            Err(format!("`{}` has the character {c:?}; use letters, digits, `.`, `_` and `-`", name.escape_debug()))
        }
        None => Ok(()),
    }
}

/// Whether `m` selects traffic the enforcer can classify: exactly one of a destination
/// port, a source address (IPv4) and a firewall mark, and a protocol (`tcp` or `udp`)
/// only with the first two. The error names the field after `match`.
pub fn check_match(m: &Match) -> Result<(), String> {
    let given = usize::from(m.dport.is_some()) + usize::from(m.src.is_some()) + usize::from(m.fwmark.is_some());
    if given != 1 {
        return Err(": give exactly one of dport, src and fwmark".into());
    }
    if let Some(p) = &m.protocol {
        if m.fwmark.is_some() || !["tcp", "udp"].contains(&p.as_str()) {
            return Err(format!(".protocol: `{p}` (use tcp or udp, with dport or src)"));
        }
    }
    if let Some(src) = &m.src {
        if src.parse::<std::net::Ipv4Addr>().is_err() {
            return Err(format!(".src: `{src}` is not an IPv4 address"));
        }
    }
    Ok(())
}

/// Access control: the files holding the tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    /// The admin's token file.
    pub admin_token_file: PathBuf,
}

/// TLS: the certificate chain and the private key, PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    /// The certificate chain.
    pub cert: PathBuf,
    /// The private key.
    pub key: PathBuf,
}

/// Where demands come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DemandSource {
    /// Tenants post them through the API.
    Declared,
    /// Estimated each quantum from the HTB classes' counters (needs `enforce = htb`).
    Measured,
    /// Measured by the hosts' agents (`fairshare agent`), a tenant's demand the sum over
    /// its hosts: a controller's pool only.
    Agents,
}

/// What the hosts' agents of a controller's pool do when the leader is silent, and
/// what they shape with (`[agents]`; docs/agents.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentSettings {
    /// Without a new quantum for this long an agent says it is stale (and keeps the
    /// last allocation).
    pub stale_after: Duration,
    /// Without a new quantum for this long an agent holds each tenant to its
    /// guaranteed share, split as its last allocation was.
    pub fallback_after: Duration,
    /// The largest packet HTB is charged for on the hosts, bytes.
    pub max_packet: u32,
}

/// How allocations are enforced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enforce {
    /// Not at all: the allocation is published (API, metrics) only.
    None,
    /// An HTB tree on this network device ([`crate::enforce`]).
    Htb {
        /// The device.
        dev: String,
        /// The largest packet HTB is charged for (the device's GSO size is capped at it
        /// while the service runs), bytes.
        max_packet: u32,
    },
}

/// A tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    /// Its name.
    pub name: String,
    /// Its weight: fair shares are proportional to it.
    pub weight: u64,
    /// What selects its traffic.
    pub selector: Option<Match>,
    /// The file holding its token (with `[auth]`).
    pub token_file: Option<PathBuf>,
}

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Slices in the pool.
    pub slices: u64,
    /// Bits per second of a slice (1 when the pool is in bare slices).
    pub slice_bps: u64,
    /// The period of a quantum.
    pub quantum: Duration,
    /// The policy.
    pub policy: Policy,
    /// The guaranteed fraction of each fair share.
    pub alpha: Alpha,
    /// Credits every tenant starts with.
    pub initial_credits: i64,
    /// The most tenants the pool takes (the file's and those who join).
    pub max_tenants: usize,
    /// Where demands come from.
    pub demand: DemandSource,
    /// How allocations are enforced.
    pub enforce: Enforce,
    /// The tenants, in index order.
    pub tenants: Vec<Tenant>,
    /// Access control, if any.
    pub auth: Option<Auth>,
    /// TLS, if any.
    pub tls: Option<Tls>,
    /// The leader's lease of `fairshare controller` (whole seconds, as etcd's are).
    pub lease_ttl: Duration,
    /// The hosts' agents of a controller's pool.
    pub agents: AgentSettings,
}

/// A rate in bits per second: a number and a unit (`bit`, `kbit`, `mbit`, `gbit`, `tbit`;
/// decimal, as `tc` reads them).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let scale: u64 = match unit.trim() {
        "bit" | "bps" => 1,
        "kbit" => 1_000,
        "mbit" => 1_000_000,
        "gbit" => 1_000_000_000,
        "tbit" => 1_000_000_000_000,
        "" => return Err(format!("`{text}` has no unit; write it as e.g. \"100mbit\"")),
        other => return Err(format!("`{text}`: unknown unit `{other}` (use bit, kbit, mbit, gbit or tbit)")),
    };
    let value: f64 = number.parse().map_err(|_| format!("`{text}` does not start with a number"))?;
    let bps = value * scale as f64;
    if !(1.0..1e18).contains(&bps) || bps.fract() != 0.0 {
        return Err(format!("`{text}` is not a whole number of bits per second from 1 to 10^18"));
    }
    Ok(bps as u64)
}

/// A period: a number and a unit (`us`, `ms`, `s`).
pub fn parse_period(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: u64 = number.parse().map_err(|_| format!("`{text}` does not start with a whole number"))?;
    let d = match unit.trim() {
        "us" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        other => return Err(format!("`{text}`: unknown unit `{other}` (use us, ms or s)")),
    };
    if d < Duration::from_micros(100) || d > Duration::from_secs(3600) {
        return Err(format!("`{text}` is outside 100us to 3600s"));
    }
    Ok(d)
}

impl ServeConfig {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|e| ConfigError { file: file.clone(), message: e.to_string() })?;
        Self::parse(&file, &text)
    }

    /// Parses and checks the text of a configuration (`file` names it in errors).
    pub fn parse(file: &str, text: &str) -> Result<Self, ConfigError> {
        let err = |message: String| ConfigError { file: file.to_string(), message };
        let raw: RawConfig = toml::from_str(text).map_err(|e| err(e.to_string().trim_end().to_string()))?;
        // Paths in the file are relative to its folder.
        let folder = Path::new(file).parent().unwrap_or(Path::new(""));
        let config = Self::check(raw, folder).map_err(err)?;
        config.pool_config().map_err(|e| err(format!("tenants: {e}")))?;
        Ok(config)
    }

    /// The file's tables checked, each error naming its field.
    fn check(raw: RawConfig, folder: &Path) -> Result<Self, String> {
        let path = |field: &str, p: &str| {
            if p.is_empty() {
                return Err(format!("{field}: is empty"));
            }
            Ok(folder.join(p))
        };
        let p = &raw.pool;
        let (slices, slice_bps) = pool_size(p)?;
        let quantum = parse_period(&p.quantum).map_err(|m| format!("pool.quantum: {m}"))?;
        let policy: Policy = p.policy.parse().map_err(|m| format!("pool.policy: {m}"))?;
        let alpha = Alpha::from_f64(p.alpha).map_err(|e| format!("pool.alpha: {e}"))?;
        let initial_credits = p.initial_credits.unwrap_or(DEFAULT_INITIAL_CREDITS);
        if Credits::from_int(initial_credits).is_none() {
            return Err(format!("pool.initial_credits: {initial_credits} is out of range"));
        }
        let max_tenants = p.max_tenants.unwrap_or(DEFAULT_MAX_TENANTS);
        if max_tenants == 0 {
            return Err("pool.max_tenants: is 0; a pool needs at least one tenant".into());
        }
        let auth = match &raw.auth {
            Some(a) => Some(Auth { admin_token_file: path("auth.admin_token_file", &a.admin_token_file)? }),
            None => None,
        };
        let tls = match &raw.tls {
            Some(t) => Some(Tls { cert: path("tls.cert", &t.cert)?, key: path("tls.key", &t.key)? }),
            None => None,
        };
        let lease_ttl = lease_ttl(raw.controller.as_ref())?;
        let demand = match raw.demand.source.as_str() {
            "declared" => DemandSource::Declared,
            "measured" => DemandSource::Measured,
            "agents" => DemandSource::Agents,
            other => return Err(format!("demand.source: `{other}` (use declared, measured or agents)")),
        };
        let enforce = enforcement(raw.enforce)?;
        if demand == DemandSource::Measured && enforce == Enforce::None {
            return Err("demand.source: `measured` reads the HTB classes: it needs enforce.kind = \"htb\"".into());
        }
        let needs_match = matches!(enforce, Enforce::Htb { .. }) || demand == DemandSource::Agents;
        let tenants = tenants(raw.tenants, max_tenants, auth.is_some(), needs_match, &path)?;
        let agents = agent_settings(raw.agents.as_ref(), lease_ttl)?;
        Ok(ServeConfig {
            slices,
            slice_bps,
            quantum,
            policy,
            alpha,
            initial_credits,
            max_tenants,
            demand,
            enforce,
            tenants,
            auth,
            tls,
            lease_ttl,
            agents,
        })
    }

    /// Fair and guaranteed shares `(f, floor(alpha f))` of tenants with these weights:
    /// the pool's slices divided in proportion to the weights by largest remainder (each
    /// tenant the floor of its quota, the slices left one each to the largest remainders,
    /// ties to the lower index). The start, join and leave all use it.
    pub fn shares(&self, weights: &[u64]) -> Vec<(u64, u64)> {
        largest_remainder(self.slices, weights).into_iter().map(|f| (f, self.alpha.guaranteed(f))).collect()
    }

    /// The pool the allocator runs.
    pub fn pool_config(&self) -> Result<PoolConfig, fairshare::Error> {
        let credits = Credits::from_int(self.initial_credits).unwrap_or_default();
        let weights: Vec<u64> = self.tenants.iter().map(|t| t.weight).collect();
        let users = self
            .tenants
            .iter()
            .zip(self.shares(&weights))
            .map(|(t, (fair_share, guaranteed))| UserConfig {
                name: t.name.clone(),
                fair_share,
                guaranteed,
                initial_credits: credits,
            })
            .collect();
        let config = PoolConfig { users };
        config.validate()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
[pool]
capacity = 6
quantum = "100ms"
policy = "karma"
alpha = 0.5
initial_credits = 6
[demand]
source = "declared"
[enforce]
kind = "none"
[[tenants]]
name = "A"
weight = 1
[[tenants]]
name = "B"
weight = 1
"#;

    #[test]
    fn the_issue_example_parses_as_written() {
        let c = ServeConfig::parse("x.toml", EXAMPLE).expect("valid");
        assert_eq!((c.slices, c.slice_bps), (6, 1));
        assert_eq!(c.quantum, Duration::from_millis(100));
        assert_eq!(c.shares(&[1, 1]), [(3, 1), (3, 1)]);
        assert_eq!(c.pool_config().expect("pool").users[0].guaranteed, 1);
    }

    #[test]
    fn auth_and_tls_paths_are_relative_to_the_file_and_credits_default_large() {
        let text = EXAMPLE.replace("initial_credits = 6\n", "")
            + "[auth]\nadmin_token_file = \"admin.token\"\n[tls]\ncert = \"/etc/c.pem\"\nkey = \"k.pem\"\n";
        let text = text.replace("name = \"A\"\n", "name = \"A\"\ntoken_file = \"tokens/a\"\n");
        let c = ServeConfig::parse("/etc/fairshare/x.toml", &text).expect("valid");
        assert_eq!(c.auth.unwrap().admin_token_file, Path::new("/etc/fairshare/admin.token"));
        let tls = c.tls.unwrap();
        assert_eq!(
            (tls.cert.as_path(), tls.key.as_path()),
            (Path::new("/etc/c.pem"), Path::new("/etc/fairshare/k.pem"))
        );
        assert_eq!(c.tenants[0].token_file.as_deref(), Some(Path::new("/etc/fairshare/tokens/a")));
        assert_eq!(c.initial_credits, DEFAULT_INITIAL_CREDITS);
        assert_eq!(c.max_tenants, DEFAULT_MAX_TENANTS);
        assert!(check_name("a-Z_0.9").is_ok() && check_name(&"x".repeat(65)).is_err());
    }

    #[test]
    fn the_controller_lease_is_whole_seconds_three_by_default() {
        assert_eq!(ServeConfig::parse("x.toml", EXAMPLE).expect("valid").lease_ttl, DEFAULT_LEASE_TTL);
        let with = |ttl: &str| ServeConfig::parse("x.toml", &format!("{EXAMPLE}[controller]\nlease_ttl = \"{ttl}\"\n"));
        assert_eq!(with("5s").expect("valid").lease_ttl, Duration::from_secs(5));
        for bad in ["2500ms", "0s", "61s"] {
            let e = with(bad).expect_err(bad).to_string();
            assert!(e.contains("controller.lease_ttl") && e.contains(bad), "{e}");
        }
        let e = ServeConfig::parse("x.toml", &format!("{EXAMPLE}[controller]\nttl = 3\n"))
            .expect_err("unknown")
            .to_string();
        assert!(e.contains("ttl"), "{e}");
    }

    #[test]
    fn agents_wait_a_lease_and_an_election_then_fall_back_after_30_s_by_default() {
        let c = ServeConfig::parse("x.toml", EXAMPLE).expect("valid");
        assert_eq!(c.agents.stale_after, DEFAULT_LEASE_TTL + Duration::from_secs(1));
        assert_eq!(c.agents.fallback_after, DEFAULT_FALLBACK_AFTER);
        assert_eq!(c.agents.max_packet, crate::enforce::DEFAULT_MAX_PACKET);
        let with = |table: &str| ServeConfig::parse("x.toml", &format!("{EXAMPLE}[agents]\n{table}\n"));
        let c = with("stale_after = \"2s\"\nfallback_after = \"5s\"\nmax_packet = 9000").expect("valid");
        assert_eq!(
            (c.agents.stale_after, c.agents.fallback_after, c.agents.max_packet),
            (Duration::from_secs(2), Duration::from_secs(5), 9000)
        );
        for (table, field) in [
            ("stale_after = \"5s\"\nfallback_after = \"2s\"", "agents.fallback_after"),
            ("stale_after = \"soon\"", "agents.stale_after"),
            ("max_packet = 100", "agents.max_packet"),
            ("grace = \"1s\"", "grace"),
        ] {
            let e = with(table).expect_err(table).to_string();
            assert!(e.contains(field), "{table}: {e}");
        }
        // Demands from the agents need a match per tenant (the agents enforce them).
        let agents = EXAMPLE.replace("source = \"declared\"", "source = \"agents\"");
        let e = ServeConfig::parse("x.toml", &agents).expect_err("no match").to_string();
        assert!(e.contains("tenants[0].match: missing"), "{e}");
        let matched = agents.replace("weight = 1\n", "weight = 1\nmatch = { fwmark = 7 }\n");
        assert_eq!(ServeConfig::parse("x.toml", &matched).expect("valid").demand, DemandSource::Agents);
    }

    #[test]
    fn rates_and_units() {
        let text = EXAMPLE.replace("capacity = 6", "capacity = \"100mbit\"\nslice = \"1mbit\"");
        let c = ServeConfig::parse("x.toml", &text).expect("valid");
        assert_eq!((c.slices, c.slice_bps), (100, 1_000_000));
        assert_eq!(parse_rate("10gbit"), Ok(10_000_000_000));
        assert_eq!(parse_rate("1.5kbit"), Ok(1_500));
    }

    #[test]
    fn bad_configurations_name_the_field() {
        for (from, to, expect) in [
            ("capacity = 6", "capacity = 0", "pool.capacity: the pool has no slices"),
            ("capacity = 6", "capacity = \"100mbit\"", "give pool.slice too"),
            ("capacity = 6", "capacity = \"100mbps\"\nslice = \"1mbit\"", "unknown unit `mbps`"),
            ("quantum = \"100ms\"", "quantum = \"100\"", "pool.quantum"),
            ("policy = \"karma\"", "policy = \"fifo\"", "pool.policy"),
            ("alpha = 0.5", "alpha = 1.5", "pool.alpha"),
            ("name = \"B\"", "name = \"A\"", "`A` appears twice"),
            (
                "weight = 1\n[[tenants]]\nname = \"B\"",
                "wieght = 1\n[[tenants]]\nname = \"B\"",
                "unknown field `wieght`",
            ),
            ("kind = \"none\"", "kind = \"tbf\"", "enforce.kind"),
            ("source = \"declared\"", "source = \"guessed\"", "demand.source"),
            ("source = \"declared\"", "source = \"measured\"", "needs enforce.kind = \"htb\""),
            ("kind = \"none\"", "kind = \"htb\"", "enforce.dev: missing"),
            ("kind = \"none\"", "kind = \"htb\"\ndev = \"eth0\"", "tenants[0].match: missing"),
            ("name = \"B\"", "name = \"B b\"", "tenants[1].name `B b` has the character ' '"),
            ("name = \"B\"", "name = \"\"", "tenants[1].name is empty"),
            ("initial_credits = 6", "initial_credits = 6\nmax_tenants = 0", "pool.max_tenants: is 0"),
            (
                "weight = 1\n[[tenants]]\nname = \"B\"",
                "weight = 1\ntoken_file = \"a.token\"\n[[tenants]]\nname = \"B\"",
                "tenants[0].token_file: needs [auth]",
            ),
            ("kind = \"none\"", "kind = \"none\"\n[tls]\ncert = \"\"\nkey = \"k\"", "tls.cert: is empty"),
        ] {
            assert!(EXAMPLE.contains(from), "{from}");
            let e = ServeConfig::parse("x.toml", &EXAMPLE.replacen(from, to, 1)).expect_err(to);
            assert!(e.to_string().contains(expect) && e.to_string().starts_with("x.toml: "), "{to}: {e}");
        }
    }
}
