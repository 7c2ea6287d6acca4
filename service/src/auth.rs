//! Access control: who a request's `Authorization: Bearer TOKEN` names, and what they
//! may do.
//!
//! The admin (`[auth] admin_token_file`) may do everything. A tenant (`token_file` in
//! its `[[tenants]]`, or the `token_sha256` it joined with) may set its own demand and
//! read (`GET` of the allocations, the status and the metrics). `/healthz` needs no
//! token. Without `[auth]` every request is let in (the listener is then loopback or a
//! Unix socket, or the operator said `--insecure`: see [`crate::server`]).
//!
//! A token is the first line of its file, at least [`MIN_TOKEN_BYTES`] bytes of visible
//! ASCII; a file readable by group or others is refused. Tokens are kept only as their
//! SHA-256 digests. A presented token is hashed, then compared with the admin's digest
//! and looked up among the tenants' by its digest: every comparison is on digests, and
//! the admin's and the named tenant's are compared in constant time, so the time a
//! request takes tells nothing about the secret. Tokens are never logged.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use sha2::{Digest as _, Sha256};

use crate::config::{ConfigError, ServeConfig};

/// A token's SHA-256 digest.
pub type Digest = [u8; 32];

/// The shortest token accepted, in bytes.
pub const MIN_TOKEN_BYTES: usize = 16;

/// The longest token accepted, in bytes.
pub const MAX_TOKEN_BYTES: usize = 4096;

/// The digest of `token`.
pub fn digest(token: &[u8]) -> Digest {
    Sha256::digest(token).into()
}

/// `a == b`, in a time that does not depend on where they differ.
pub fn same(a: &Digest, b: &Digest) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// A digest as 64 lowercase hexadecimal digits (how the ledger keeps joined tenants').
pub fn to_hex(d: &Digest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// 64 hexadecimal digits as a digest.
pub fn from_hex(text: &str) -> Result<Digest, String> {
    if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        // Not echoed: a token pasted here by mistake must not come back in an answer.
        return Err(format!("is not 64 hexadecimal digits (a SHA-256 digest; {} characters given)", text.len()));
    }
    let mut d = [0u8; 32];
    for (i, byte) in d.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
    }
    Ok(d)
}

/// Reads the token of `path`: its first line, from a file only its owner can read.
pub fn read_token_file(path: &Path) -> Result<Digest, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{}: the token file is readable by group or others (mode {mode:04o}); `chmod 600` it",
            path.display()
        ));
    }
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let line = text.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() < MIN_TOKEN_BYTES || line.len() > MAX_TOKEN_BYTES {
        return Err(format!(
            "{}: the token (its first line) is {} bytes; use {MIN_TOKEN_BYTES} to {MAX_TOKEN_BYTES} \
             (e.g. `openssl rand -hex 32`)",
            path.display(),
            line.len()
        ));
    }
    if !line.iter().all(|b| b.is_ascii_graphic()) {
        return Err(format!(
            "{}: the token has a character that is not visible ASCII (an HTTP header carries it)",
            path.display()
        ));
    }
    Ok(digest(line))
}

/// Who sent a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// No access control is configured: anyone may do anything.
    Anyone,
    /// The admin.
    Admin,
    /// A tenant, by name.
    Tenant(String),
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// No `Authorization: Bearer` header (401).
    #[error("this request needs a token: send `Authorization: Bearer TOKEN`")]
    NoToken,
    /// A token that is nobody's (401).
    #[error("the token is not valid")]
    BadToken,
    /// A valid token that may not do this (403).
    #[error("{0}")]
    Forbidden(String),
}

/// What a request asks for, as far as access goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action<'a> {
    /// Reads (allocations, status, metrics).
    Read,
    /// Sets this tenant's demand.
    SetDemand(&'a str),
    /// Joins, leaves, runs a quantum.
    Admin(&'a str),
}

/// Every token's digest, and whose it is.
#[derive(Debug, Clone, Default)]
pub struct Keys {
    /// `None`: no access control.
    admin: Option<Digest>,
    tenants: HashMap<Digest, String>,
    by_name: HashMap<String, Digest>,
}

impl Keys {
    /// The keys of the pool's `members`: a member who joined with a token (`joined`:
    /// name to digest) has that one, any other the `token_file` of its `[[tenants]]` in
    /// `config`, if it has one. A tenant of the file who left has none. An unreadable or
    /// unsafe file is an error naming it.
    pub fn load(
        config: &ServeConfig,
        joined: &BTreeMap<String, Digest>,
        members: &[String],
    ) -> Result<Keys, ConfigError> {
        let Some(auth) = &config.auth else { return Ok(Keys::default()) };
        let err = |message: String| ConfigError { file: "auth".into(), message };
        let admin = read_token_file(&auth.admin_token_file).map_err(|m| err(format!("auth.admin_token_file: {m}")))?;
        let mut keys = Keys { admin: Some(admin), ..Keys::default() };
        for name in members {
            if let Some(d) = joined.get(name) {
                keys.insert(name, *d).map_err(|m| err(format!("the token of `{name}`: {m}")))?;
            }
        }
        for (i, t) in config.tenants.iter().enumerate() {
            // Every file is read (a bad one is an error), whoever is a member now.
            let Some(file) = &t.token_file else { continue };
            let d = read_token_file(file).map_err(|m| err(format!("tenants[{i}].token_file: {m}")))?;
            if members.contains(&t.name) && !joined.contains_key(&t.name) {
                keys.insert(&t.name, d).map_err(|m| err(format!("tenants[{i}].token_file: {m}")))?;
            }
        }
        Ok(keys)
    }

    /// Gives `name` the token of digest `d`; a token already someone's is refused (it
    /// would name two callers).
    pub fn insert(&mut self, name: &str, d: Digest) -> Result<(), String> {
        if self.admin.is_some_and(|a| same(&a, &d)) {
            return Err("it is the admin's token".into());
        }
        if let Some(other) = self.tenants.get(&d).filter(|o| *o != name) {
            return Err(format!("it is also the token of `{other}`"));
        }
        if let Some(old) = self.by_name.insert(name.to_string(), d) {
            self.tenants.remove(&old);
        }
        self.tenants.insert(d, name.to_string());
        Ok(())
    }

    /// Forgets `name`'s token.
    pub fn remove(&mut self, name: &str) {
        if let Some(d) = self.by_name.remove(name) {
            self.tenants.remove(&d);
        }
    }

    /// Whether access control is on.
    pub fn enabled(&self) -> bool {
        self.admin.is_some()
    }

    /// Whether `d` is already a caller's token.
    pub fn taken(&self, d: &Digest) -> bool {
        self.admin.is_some_and(|a| same(&a, d)) || self.tenants.contains_key(d)
    }

    /// Who the `Authorization` header's value names.
    pub fn caller(&self, authorization: Option<&[u8]>) -> Result<Caller, Denied> {
        let Some(admin) = &self.admin else { return Ok(Caller::Anyone) };
        let header = authorization.ok_or(Denied::NoToken)?;
        // The scheme's name is case-insensitive (RFC 9110).
        let token = match header.split_at_checked(7) {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case(b"bearer ") => token,
            _ => return Err(Denied::NoToken),
        };
        let d = digest(token.trim_ascii());
        if same(admin, &d) {
            return Ok(Caller::Admin);
        }
        // Looked up by the digest: what the lookup's time depends on is the digest,
        // which tells nothing about a token that would match.
        match self.tenants.get(&d) {
            Some(name) => Ok(Caller::Tenant(name.clone())),
            None => Err(Denied::BadToken),
        }
    }

    /// Whether the caller of `authorization` may do `action`.
    pub fn allow(&self, authorization: Option<&[u8]>, action: Action<'_>) -> Result<Caller, Denied> {
        let caller = self.caller(authorization)?;
        match (&caller, action) {
            (Caller::Anyone | Caller::Admin, _) | (Caller::Tenant(_), Action::Read) => Ok(caller),
            (Caller::Tenant(me), Action::SetDemand(of)) if me == of => Ok(caller),
            (Caller::Tenant(me), Action::SetDemand(of)) => {
                Err(Denied::Forbidden(format!("tenant `{me}` may set its own demand only, not `{of}`'s")))
            }
            (Caller::Tenant(me), Action::Admin(what)) => {
                Err(Denied::Forbidden(format!("{what} needs the admin's token; tenant `{me}` may not")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn token_file(dir: &Path, name: &str, text: &str, mode: u32) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn token_files_must_be_private_long_enough_and_visible_ascii() {
        let dir = tempfile::tempdir().unwrap();
        let good = token_file(dir.path(), "good", "0123456789abcdef0123\nsecond line ignored\n", 0o600);
        assert_eq!(read_token_file(&good).unwrap(), digest(b"0123456789abcdef0123"));
        let open = token_file(dir.path(), "open", "0123456789abcdef0123\n", 0o640);
        let e = read_token_file(&open).unwrap_err();
        assert!(e.contains("readable by group or others (mode 0640)") && e.contains("open"), "{e}");
        let short = token_file(dir.path(), "short", "abc\n", 0o600);
        assert!(read_token_file(&short).unwrap_err().contains("is 3 bytes"));
        let spaced = token_file(dir.path(), "spaced", "0123456789 abcdef0123\n", 0o600);
        assert!(read_token_file(&spaced).unwrap_err().contains("visible ASCII"));
        let crlf = token_file(dir.path(), "crlf", "0123456789abcdef0123\r\n", 0o400);
        assert_eq!(read_token_file(&crlf).unwrap(), digest(b"0123456789abcdef0123"));
        assert!(read_token_file(&dir.path().join("none")).unwrap_err().contains("none"));
    }

    #[test]
    fn the_access_matrix() {
        let mut keys = Keys { admin: Some(digest(b"admin-token-0123456")), ..Keys::default() };
        keys.insert("A", digest(b"token-of-A-0123456")).unwrap();
        keys.insert("B", digest(b"token-of-B-0123456")).unwrap();
        let h = |t: &str| format!("Bearer {t}").into_bytes();
        let (admin, a) = (h("admin-token-0123456"), h("token-of-A-0123456"));
        assert_eq!(keys.allow(None, Action::Read), Err(Denied::NoToken));
        assert_eq!(keys.allow(Some(b"Basic xyz"), Action::Read), Err(Denied::NoToken));
        assert_eq!(keys.allow(Some(b"BEARER token-of-A-0123456"), Action::Read), Ok(Caller::Tenant("A".into())));
        assert_eq!(keys.allow(Some(&h("nobody's-token-123")), Action::Read), Err(Denied::BadToken));
        assert_eq!(keys.allow(Some(&a), Action::Read), Ok(Caller::Tenant("A".into())));
        assert_eq!(keys.allow(Some(&a), Action::SetDemand("A")), Ok(Caller::Tenant("A".into())));
        assert!(matches!(keys.allow(Some(&a), Action::SetDemand("B")), Err(Denied::Forbidden(m)) if m.contains("`B`")));
        assert!(matches!(keys.allow(Some(&a), Action::Admin("POST /v1/quantum")), Err(Denied::Forbidden(_))));
        for action in [Action::Read, Action::SetDemand("B"), Action::Admin("join")] {
            assert_eq!(keys.allow(Some(&admin), action), Ok(Caller::Admin));
        }
        // A token is one caller's: the admin's or another tenant's is refused.
        assert!(keys.insert("C", digest(b"admin-token-0123456")).is_err());
        assert!(keys.insert("C", digest(b"token-of-A-0123456")).unwrap_err().contains("`A`"));
        // A tenant that leaves takes its token with it.
        keys.remove("A");
        assert_eq!(keys.allow(Some(&a), Action::Read), Err(Denied::BadToken));
        // Without [auth], anyone.
        assert_eq!(Keys::default().allow(None, Action::Admin("join")), Ok(Caller::Anyone));
    }

    #[test]
    fn digests_go_to_hex_and_back() {
        let d = digest(b"x");
        assert_eq!(from_hex(&to_hex(&d)).unwrap(), d);
        assert!(from_hex("abc").is_err());
        assert!(from_hex(&"g".repeat(64)).is_err());
        assert!(same(&d, &d) && !same(&d, &digest(b"y")));
    }
}
