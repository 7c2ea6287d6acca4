//! The HTTP JSON API (axum on tokio) and the clock that drives quanta.
//!
//! `PUT /v1/tenants/{name}/demand`, `GET /v1/allocations`, `POST /v1/tenants`,
//! `DELETE /v1/tenants/{name}`, `POST /v1/quantum` (manual clock), `GET /v1/status`,
//! `GET /metrics`, `GET /healthz`. A bad request gets a 4xx status and `{"error": ...}`
//! naming the field, and changes nothing.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use fairshare_backends::{Backend, DeviceOptions};

use crate::metrics::Metrics;
use serde_json::{json, Value};

use crate::config::ServeConfig;
use crate::pool::{Demand, LivePool};
use crate::ServiceError;

/// What drives quanta.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// One quantum per period of the configuration.
    Wall,
    /// One quantum per `POST /v1/quantum`.
    Manual,
}

/// Where the API listens: a TCP address, or a Unix socket (`unix:PATH`), which a
/// controller in another network namespace can reach by its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A Unix socket's path.
    Unix(PathBuf),
}

impl std::str::FromStr for Listen {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.strip_prefix("unix:") {
            Some("") => Err("unix: needs a path, e.g. unix:/run/fairshare.sock".into()),
            Some(path) => Ok(Listen::Unix(PathBuf::from(path))),
            None => s.parse().map(Listen::Tcp).map_err(|_| format!("`{s}` is not ADDRESS:PORT or unix:PATH")),
        }
    }
}

impl std::fmt::Display for Listen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Listen::Tcp(a) => write!(f, "http://{a}"),
            Listen::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// `fairshare serve`'s options.
pub struct ServeOptions {
    /// The configuration file.
    pub config: PathBuf,
    /// Where to listen.
    pub listen: Listen,
    /// The ledger folder.
    pub state: Option<PathBuf>,
    /// The backend.
    pub backend: Backend,
    /// How the backend is used.
    pub device: DeviceOptions,
    /// The clock.
    pub clock: Clock,
}

struct Shared {
    pool: Mutex<LivePool>,
    /// The pool's metrics, outside its lock: atomic, and a scrape must not wait for a
    /// quantum on a slow device.
    metrics: Arc<Metrics>,
    clock: Clock,
}

type AppState = Arc<Shared>;

fn lock(s: &Shared) -> MutexGuard<'_, LivePool> {
    s.pool.lock().unwrap_or_else(|p| p.into_inner())
}

impl IntoResponse for ServiceError {
    fn into_response(self) -> Response {
        let status = match &self {
            ServiceError::UnknownTenant(_) => StatusCode::NOT_FOUND,
            ServiceError::BadRequest(_) | ServiceError::Pool(_) => StatusCode::BAD_REQUEST,
            ServiceError::Conflict(_) => StatusCode::CONFLICT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        (status, Json(json!({ "error": self.to_string() }))).into_response()
    }
}

/// The JSON body of a request, or a 400 naming what is wrong.
fn object(body: &str) -> Result<serde_json::Map<String, Value>, ServiceError> {
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ServiceError::BadRequest("the body must be a JSON object".into())),
        Err(e) => Err(ServiceError::BadRequest(format!("the body is not JSON: {e}"))),
    }
}

/// `field` of `map` as a whole number `>= 0`.
fn whole(map: &serde_json::Map<String, Value>, field: &str) -> Result<Option<u64>, ServiceError> {
    match map.get(field) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| ServiceError::BadRequest(format!("{field}: {v} is not a whole number from 0 to 2^64 - 1"))),
    }
}

fn only(map: &serde_json::Map<String, Value>, allowed: &[&str]) -> Result<(), ServiceError> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(ServiceError::BadRequest(format!("{k}: unknown field (expected {})", allowed.join(" or ")))),
        None => Ok(()),
    }
}

async fn put_demand(
    State(s): State<AppState>,
    Path(name): Path<String>,
    body: String,
) -> Result<StatusCode, ServiceError> {
    let map = object(&body)?;
    only(&map, &["bps", "slices"])?;
    let demand = match (whole(&map, "bps")?, whole(&map, "slices")?) {
        (Some(b), None) => Demand::Bps(b),
        (None, Some(n)) => Demand::Slices(n),
        _ => return Err(ServiceError::BadRequest("give exactly one of bps and slices".into())),
    };
    lock(&s).set_demand(&name, demand)?;
    Ok(StatusCode::NO_CONTENT)
}

async fn allocations(State(s): State<AppState>) -> Json<Value> {
    Json(json!(lock(&s).snapshot()))
}

async fn quantum(State(s): State<AppState>) -> Result<Json<Value>, ServiceError> {
    if s.clock != Clock::Manual {
        return Err(ServiceError::Conflict(
            "POST /v1/quantum needs --clock manual; the wall clock drives quanta".into(),
        ));
    }
    let snapshot = lock(&s).run_quantum()?;
    Ok(Json(json!(snapshot)))
}

async fn join(State(s): State<AppState>, body: String) -> Result<(StatusCode, Json<Value>), ServiceError> {
    let map = object(&body)?;
    only(&map, &["name", "weight"])?;
    let name = match map.get("name") {
        Some(Value::String(n)) => n.clone(),
        Some(v) => return Err(ServiceError::BadRequest(format!("name: {v} is not a string"))),
        None => return Err(ServiceError::BadRequest("name: missing".into())),
    };
    let weight = whole(&map, "weight")?.unwrap_or(1);
    let snapshot = lock(&s).join(&name, weight)?;
    Ok((StatusCode::CREATED, Json(json!(snapshot))))
}

async fn leave(State(s): State<AppState>, Path(name): Path<String>) -> Result<Json<Value>, ServiceError> {
    Ok(Json(json!(lock(&s).leave(&name)?)))
}

async fn status(State(s): State<AppState>) -> Json<Value> {
    Json(lock(&s).status())
}

async fn metrics(State(s): State<AppState>) -> Response {
    let text = s.metrics.encode();
    ([("content-type", "application/openmetrics-text; version=1.0.0; charset=utf-8")], text).into_response()
}

/// The API's routes on `state`.
fn router(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .route("/v1/allocations", get(allocations))
        .route("/v1/status", get(status))
        .route("/v1/quantum", post(quantum))
        .route("/v1/tenants", post(join))
        .route("/v1/tenants/{name}", axum::routing::delete(leave))
        .route("/v1/tenants/{name}/demand", put(put_demand))
        .with_state(state)
}

/// The wall clock: one quantum per period, never two at once; ticks missed while a
/// quantum overran are counted and skipped.
async fn tick(state: AppState, period: Duration) {
    let mut interval = tokio::time::interval(period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut last: Option<Instant> = None;
    loop {
        interval.tick().await;
        let now = Instant::now();
        if let Some(prev) = last {
            let late = now.duration_since(prev).as_nanos() / period.as_nanos().max(1);
            if late > 1 {
                state.metrics.missed(u64::try_from(late - 1).unwrap_or(u64::MAX));
            }
        }
        last = Some(now);
        let s = state.clone();
        // The quantum may wait on a device: off the runtime's threads, and awaited, so
        // the next tick cannot start before it ends.
        let result = tokio::task::spawn_blocking(move || lock(&s).run_quantum().map(|_| ())).await;
        if let Ok(Err(e)) = result {
            eprintln!("fairshare serve: quantum failed: {e}");
        }
    }
}

/// Runs the service until SIGINT or SIGTERM. `ready` is called with the bound address.
pub fn serve(options: ServeOptions, ready: impl FnOnce(&Listen)) -> Result<(), ServiceError> {
    let config = ServeConfig::load(&options.config)?;
    let period = config.quantum;
    let pool = LivePool::start(config, options.backend, options.device, options.state.as_deref())?;
    let metrics = Arc::clone(&pool.metrics);
    let state = Arc::new(Shared { pool: Mutex::new(pool), metrics, clock: options.clock });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| ServiceError::Io(format!("starting the runtime: {e}")))?;
    runtime.block_on(async move {
        if options.clock == Clock::Wall {
            tokio::spawn(tick(state.clone(), period));
        }
        let app = router(state);
        match &options.listen {
            Listen::Tcp(addr) => {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| ServiceError::Io(format!("--listen {addr}: {e}")))?;
                let bound = listener.local_addr().map_err(|e| ServiceError::Io(e.to_string()))?;
                ready(&Listen::Tcp(bound));
                axum::serve(listener, app).with_graceful_shutdown(shutdown()).await
            }
            Listen::Unix(path) => {
                let listener = tokio::net::UnixListener::bind(path)
                    .map_err(|e| ServiceError::Io(format!("--listen unix:{}: {e}", path.display())))?;
                ready(&options.listen);
                let served = axum::serve(listener, app).with_graceful_shutdown(shutdown()).await;
                let _ = std::fs::remove_file(path);
                served
            }
        }
        .map_err(|e| ServiceError::Io(format!("serving: {e}")))
    })
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown() {
    let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
