//! The HTTP JSON API (axum routes; [`crate::server`] runs the connections).
//!
//! `PUT /v1/tenants/{name}/demand`, `GET /v1/allocations`, `POST /v1/tenants`,
//! `DELETE /v1/tenants/{name}`, `POST /v1/quantum` (manual clock), `GET /v1/status`,
//! `GET /metrics`, `GET /healthz`. Every request but `/healthz` passes access control
//! ([`crate::auth`]) first. Every answer that is not a success is JSON,
//! `{"error": "..."}`, naming the field or the cause, and changes nothing.
//!
//! Reads load the published values ([`crate::publish`]) and never lock the pool;
//! changes lock it off the runtime's threads (they may wait for an fsync or a device).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use arc_swap::ArcSwap;
use axum::body::{Body, Bytes};
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::auth::{self, Action, Denied, Keys};
use crate::metrics::Format;
use crate::pool::{Demand, LivePool, SharedPool};
use crate::publish::{self, Published};
use crate::replica::ReplicaError;
use crate::ServiceError;

/// What drives quanta.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// One quantum per period of the configuration.
    Wall,
    /// One quantum per `POST /v1/quantum`.
    Manual,
}

/// The largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 64 << 10;

/// How long a request's body may take to arrive.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// Changes of the pool (demands, joins, leaves, manual quanta) run at most this many at
/// once; the others wait their turn on the runtime, not on the pool's lock, so the clock
/// is never behind more than these.
pub const CONCURRENT_CHANGES: usize = 4;

/// What the routes share.
pub struct App {
    /// The pool: changes lock it.
    pub pool: SharedPool,
    /// Turns for changes ([`CONCURRENT_CHANGES`]).
    pub changes: tokio::sync::Semaphore,
    /// What readers read.
    pub published: Arc<Published>,
    /// Every caller's token (swapped on a join, a leave, or a reload).
    pub keys: ArcSwap<Keys>,
    /// The clock.
    pub clock: Clock,
}

type AppState = Arc<App>;

impl IntoResponse for ServiceError {
    fn into_response(self) -> Response {
        let status = match &self {
            ServiceError::UnknownTenant(_) | ServiceError::NoRoute(_) => StatusCode::NOT_FOUND,
            ServiceError::BadRequest(_) | ServiceError::Pool(_) => StatusCode::BAD_REQUEST,
            ServiceError::Conflict(_) => StatusCode::CONFLICT,
            ServiceError::Denied(Denied::Forbidden(_)) => StatusCode::FORBIDDEN,
            ServiceError::Denied(_) => StatusCode::UNAUTHORIZED,
            ServiceError::NotCommitted { .. } => StatusCode::SERVICE_UNAVAILABLE,
            ServiceError::Replica(ReplicaError::NotLeader { .. } | ReplicaError::Fenced(_)) => StatusCode::CONFLICT,
            ServiceError::Replica(_) => StatusCode::SERVICE_UNAVAILABLE,
            ServiceError::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ServiceError::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            ServiceError::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let mut response = (status, Json(json!({ "error": self.to_string() }))).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// Lets the request's caller do `action`, or refuses it (401, 403).
fn allow(s: &App, headers: &HeaderMap, action: Action<'_>) -> Result<(), ServiceError> {
    let authorization = headers.get(header::AUTHORIZATION).map(|v| v.as_bytes());
    s.keys.load().allow(authorization, action).map(|_| ()).map_err(ServiceError::Denied)
}

/// The body, whole: at most [`MAX_BODY_BYTES`], within [`BODY_TIMEOUT`].
async fn body(body: Body) -> Result<Bytes, ServiceError> {
    match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, MAX_BODY_BYTES)).await {
        Err(_) => Err(ServiceError::BodyTimeout),
        Ok(Err(_)) => Err(ServiceError::BodyTooLarge),
        Ok(Ok(b)) => Ok(b),
    }
}

/// The JSON body of a request, or a 400 naming what is wrong.
fn object(body: &[u8]) -> Result<serde_json::Map<String, Value>, ServiceError> {
    match serde_json::from_slice::<Value>(body) {
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

/// Runs a change on the pool off the runtime's threads, in its turn.
async fn change<T: Send + 'static>(
    s: &AppState,
    f: impl FnOnce(&mut LivePool) -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    let _turn = s.changes.acquire().await.map_err(|_| ServiceError::Conflict("the service is stopping".into()))?;
    let pool = Arc::clone(&s.pool);
    tokio::task::spawn_blocking(move || f(&mut pool.lock())).await.map_err(ServiceError::ChangeStopped)?
}

/// A view's JSON as a response.
fn view_json(view: &publish::View) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], view.json()).into_response()
}

/// The tenant named in the path, or a 400 (a JSON one, not axum's text).
fn tenant(path: Result<Path<String>, PathRejection>) -> Result<String, ServiceError> {
    path.map(|Path(name)| name).map_err(|e| ServiceError::BadRequest(format!("the tenant in the path: {e}")))
}

async fn put_demand(
    State(s): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    request: Request,
) -> Result<StatusCode, ServiceError> {
    let name = tenant(path)?;
    allow(&s, &headers, Action::SetDemand(&name))?;
    let map = object(&body(request.into_body()).await?)?;
    only(&map, &["bps", "slices"])?;
    let demand = match (whole(&map, "bps")?, whole(&map, "slices")?) {
        (Some(b), None) => Demand::Bps(b),
        (None, Some(n)) => Demand::Slices(n),
        _ => return Err(ServiceError::BadRequest("give exactly one of bps and slices".into())),
    };
    change(&s, move |p| p.set_demand(&name, demand)).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn allocations(State(s): State<AppState>, headers: HeaderMap) -> Result<Response, ServiceError> {
    allow(&s, &headers, Action::Read)?;
    Ok(view_json(&s.published.view.load()))
}

async fn quantum(State(s): State<AppState>, headers: HeaderMap) -> Result<Response, ServiceError> {
    allow(&s, &headers, Action::Admin("POST /v1/quantum"))?;
    if s.clock != Clock::Manual {
        return Err(ServiceError::Conflict(
            "POST /v1/quantum needs --clock manual; the wall clock drives quanta".into(),
        ));
    }
    let view = change(&s, |p| p.run_quantum()).await?;
    Ok(view_json(&view))
}

async fn join(State(s): State<AppState>, headers: HeaderMap, request: Request) -> Result<Response, ServiceError> {
    allow(&s, &headers, Action::Admin("POST /v1/tenants"))?;
    let map = object(&body(request.into_body()).await?)?;
    only(&map, &["name", "weight", "token_sha256", "match"])?;
    let name = match map.get("name") {
        Some(Value::String(n)) => n.clone(),
        Some(v) => return Err(ServiceError::BadRequest(format!("name: {v} is not a string"))),
        None => return Err(ServiceError::BadRequest("name: missing".into())),
    };
    let weight = whole(&map, "weight")?.unwrap_or(1);
    let token = match map.get("token_sha256") {
        None => None,
        Some(Value::String(hex)) => {
            Some(auth::from_hex(hex).map_err(|m| ServiceError::BadRequest(format!("token_sha256: {m}")))?)
        }
        Some(_) => return Err(ServiceError::BadRequest("token_sha256: is not a string".into())),
    };
    if token.is_some() && !s.keys.load().enabled() {
        return Err(ServiceError::BadRequest("token_sha256: the pool has no [auth]".into()));
    }
    let selector = match map.get("match") {
        None => None,
        Some(v) => Some(
            serde_json::from_value::<crate::config::Match>(v.clone())
                .map_err(|e| ServiceError::BadRequest(format!("match: {e}")))?,
        ),
    };
    let app = Arc::clone(&s);
    let view = change(&s, move |p| {
        // The keys change only under the pool's lock: what is checked here still holds
        // when the tenant is committed.
        let mut keys = Keys::clone(&app.keys.load());
        if let Some(d) = token {
            if keys.taken(&d) {
                return Err(ServiceError::BadRequest("token_sha256: that token is already a caller's".into()));
            }
        }
        let view = p.join(&name, weight, token, selector)?;
        if let Some(d) = token {
            keys.insert(&name, d).map_err(|m| ServiceError::BadRequest(format!("token_sha256: {m}")))?;
            app.keys.store(Arc::new(keys));
        }
        Ok((view, p.is_replica()))
    })
    .await?;
    Ok(applied(view, StatusCode::CREATED))
}

async fn leave(
    State(s): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Result<Response, ServiceError> {
    let name = tenant(path)?;
    allow(&s, &headers, Action::Admin("DELETE /v1/tenants"))?;
    let app = Arc::clone(&s);
    let view = change(&s, move |p| {
        let view = p.leave(&name)?;
        if !p.is_replica() {
            let mut keys = Keys::clone(&app.keys.load());
            keys.remove(&name);
            app.keys.store(Arc::new(keys));
        }
        Ok((view, p.is_replica()))
    })
    .await?;
    Ok(applied(view, StatusCode::OK))
}

/// The answer to a join or a leave: `done` with the view it made, or on a replica (the
/// controller) 202 with the view as it is: the leader applies it at its next quantum.
fn applied((view, queued): (Arc<publish::View>, bool), done: StatusCode) -> Response {
    if queued {
        return (StatusCode::ACCEPTED, view_json(&view)).into_response();
    }
    (done, view_json(&view)).into_response()
}

async fn status(State(s): State<AppState>, headers: HeaderMap) -> Result<Json<Value>, ServiceError> {
    allow(&s, &headers, Action::Read)?;
    Ok(Json(publish::status_json(&s.published)))
}

async fn metrics(State(s): State<AppState>, headers: HeaderMap) -> Result<Response, ServiceError> {
    allow(&s, &headers, Action::Read)?;
    let format = Format::from_accept(headers.get(header::ACCEPT).and_then(|a| a.to_str().ok()));
    let (view, status) = (s.published.view.load(), s.published.status.load());
    // The per-tenant part is the view's, shared by every scrape of it (a slow scraper
    // holds a reference, not a copy); the counters are rendered now.
    let rest = s.published.metrics.render(&view, &status, format);
    let body = Chunks(VecDeque::from([view.tenant_metrics(), Bytes::from(rest)]));
    Ok(([(header::CONTENT_TYPE, format.content_type())], Body::new(body)).into_response())
}

/// A body of a few shared chunks, sent in order.
struct Chunks(VecDeque<Bytes>);

impl http_body::Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.pop_front().map(|b| Ok(http_body::Frame::data(b))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_empty()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        http_body::SizeHint::with_exact(self.0.iter().map(|b| b.len() as u64).sum())
    }
}

async fn healthz(State(s): State<AppState>) -> Response {
    match s.published.status.load().problem() {
        None => Json(json!({ "status": "ok" })).into_response(),
        Some(problem) => (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "error": problem }))).into_response(),
    }
}

async fn no_route(request: Request) -> ServiceError {
    ServiceError::NoRoute(format!("{} {}", request.method(), request.uri().path()))
}

/// The API's routes on `state`.
pub fn router(state: AppState) -> Router {
    let not_allowed = || async { ServiceError::MethodNotAllowed };
    Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route("/v1/allocations", get(allocations))
        .route("/v1/status", get(status))
        .route("/v1/quantum", post(quantum))
        .route("/v1/tenants", post(join))
        .route("/v1/tenants/{name}", axum::routing::delete(leave))
        .route("/v1/tenants/{name}/demand", put(put_demand))
        .fallback(no_route)
        .method_not_allowed_fallback(not_allowed)
        .with_state(state)
}
