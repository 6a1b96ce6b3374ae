//! The HTTP server: starting it on 127.0.0.1 in its own thread, the handle tests hold, and the
//! middleware that gives every GitHub route GitHub's cross-cutting behaviour — authentication by
//! token, the primary rate limit and its headers, injected latency and faults, the repository
//! check, and the request log. Beside it, on a port of its own (another origin, as GitHub's blob
//! storage is another host), the blob server of job logs (`blobs.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Router, ServiceExt};
use serde::{Deserialize, Serialize};
use tower_layer::Layer;

use super::clock::Timestamp;
use super::errors::{ApiError, docs, json_response};
use super::faults::{
    FaultConfig, FaultEngine, FaultKind, FaultTiming, PlannedFault, RateLimitConfig, RateWindow,
    fault_body, is_write,
};
use super::graphql::OperationSummary;
use super::prng::user_id;
use super::state::RepoState;

/// Who is calling, under which base URL the server was reached (for absolute URLs), and the
/// repository's name and id (for the `Link` headers that name it by id).
#[derive(Clone, Debug)]
pub struct RequestContext {
    pub login: String,
    pub api: String,
    /// `owner/name`.
    pub full_name: String,
    pub repository_id: u64,
}

impl RequestContext {
    /// The absolute URL of `path` in a `Link` header: GitHub names the repository by its id
    /// there (`/repos/o/r/issues` pages as `/repositories/{id}/issues`).
    pub fn link_url(&self, path: &str) -> String {
        let by_name = format!("/repos/{}", self.full_name);
        let rest = path
            .get(..by_name.len())
            .filter(|prefix| prefix.eq_ignore_ascii_case(&by_name))
            .map(|_| &path[by_name.len()..])
            .filter(|rest| rest.is_empty() || rest.starts_with('/'));
        match rest {
            Some(rest) => format!("{}/repositories/{}{rest}", self.api, self.repository_id),
            None => format!("{}{path}", self.api),
        }
    }
}

/// A fault the server injected into one answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InjectedFault {
    pub kind: FaultKind,
    pub status: u16,
    /// The request was handled (a write took effect) before the answer was replaced.
    pub after_handling: bool,
}

/// One request as the server saw and answered it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LoggedRequest {
    pub sequence: u64,
    pub method: String,
    /// Path and query, as sent; a `/repositories/{id}/…` URL (GitHub's `Link` headers name the
    /// repository by id) is logged as the `/repos/{owner}/{repo}/…` one it stands for.
    pub path: String,
    pub status: u16,
    pub fault: Option<InjectedFault>,
    /// The token's login; `None` for a missing or unknown token.
    pub login: Option<String>,
    /// The request body as sent (lossy UTF-8; empty for none).
    #[serde(default)]
    pub body: String,
}

impl LoggedRequest {
    /// Whether the request changes something: any REST method but GET, HEAD and OPTIONS; on
    /// `POST /graphql`, a mutation (a query is a read).
    pub fn is_write(&self) -> bool {
        match self.graphql() {
            Some(operation) => operation.mutation,
            None if self.is_graphql() => false,
            None => is_write(&self.method),
        }
    }

    /// A `POST /graphql`.
    pub fn is_graphql(&self) -> bool {
        self.method.eq_ignore_ascii_case("POST") && self.path.split('?').next() == Some("/graphql")
    }

    /// What a GraphQL request asked: a query or a mutation, and its top-level fields.
    pub fn graphql(&self) -> Option<OperationSummary> {
        self.is_graphql()
            .then(|| OperationSummary::of_body(&self.body))
            .flatten()
    }
}

/// Counters over the request log.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestCounts {
    pub total: u64,
    pub reads: u64,
    pub writes: u64,
    /// Answers replaced by an injected fault (the primary rate limit included).
    pub faulted: u64,
}

impl RequestCounts {
    pub fn of(log: &[LoggedRequest]) -> Self {
        let mut counts = RequestCounts::default();
        for request in log {
            counts.total += 1;
            if request.is_write() {
                counts.writes += 1;
            } else {
                counts.reads += 1;
            }
            if request.fault.is_some() {
                counts.faulted += 1;
            }
        }
        counts
    }
}

/// Faults, rate-limit windows and the request log.
#[derive(Debug)]
pub struct Control {
    pub faults: FaultEngine,
    pub rate_limit: RateLimitConfig,
    windows: HashMap<&'static str, RateWindow>,
    pub log: Vec<LoggedRequest>,
    /// Changes made to the state just before the first request they match is handled.
    pub hooks: Vec<RequestHook>,
    /// The blob server's origin (`http://127.0.0.1:PORT`), once it listens.
    pub blob_base: Option<String>,
    /// Signature → the job whose log it opens: the short-lived URLs handed out.
    pub blob_grants: HashMap<String, u64>,
    /// Every request the blob server answered, in order.
    pub blob_log: Vec<super::blobs::BlobRequest>,
}

/// A change of the state someone makes at the moment a request arrives.
pub type StateChange = Arc<dyn Fn(&mut RepoState) + Send + Sync>;

/// Someone acting at the moment a request arrives: `change` runs once, just before the first
/// `method` request to `path` (without its query) is handled; with `graphql_field`, only a
/// GraphQL request whose operation has that top-level field (`updateRefs`, `repository`).
#[derive(Clone)]
pub struct RequestHook {
    pub method: String,
    pub path: String,
    pub graphql_field: Option<String>,
    pub change: StateChange,
}

impl RequestHook {
    fn matches(&self, method: &str, path: &str, graphql: Option<&OperationSummary>) -> bool {
        self.method.eq_ignore_ascii_case(method)
            && self.path == path
            && self.graphql_field.as_ref().is_none_or(|wanted| {
                graphql.is_some_and(|operation| operation.fields.contains(wanted))
            })
    }
}

impl std::fmt::Debug for RequestHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.graphql_field {
            Some(field) => write!(f, "RequestHook({} {} {field})", self.method, self.path),
            None => write!(f, "RequestHook({} {})", self.method, self.path),
        }
    }
}

impl Control {
    fn new() -> Self {
        Control {
            faults: FaultEngine::new(FaultConfig::default()),
            rate_limit: RateLimitConfig::default(),
            windows: HashMap::new(),
            log: Vec::new(),
            hooks: Vec::new(),
            blob_base: None,
            blob_grants: HashMap::new(),
            blob_log: Vec::new(),
        }
    }

    pub fn set_faults(&mut self, config: FaultConfig) {
        self.faults = FaultEngine::new(config);
    }

    pub fn set_rate_limit(&mut self, config: RateLimitConfig) {
        self.rate_limit = config;
        self.windows.clear();
    }

    /// The resource's current window, renewed once its reset time has passed.
    fn window(&mut self, resource: &'static str) -> &mut RateWindow {
        let now = Timestamp::system_now().0;
        let config = self.rate_limit.clone();
        let window = self
            .windows
            .entry(resource)
            .or_insert_with(|| RateWindow::new(&config, now));
        if now >= window.reset_epoch {
            *window = RateWindow::new(
                &RateLimitConfig {
                    remaining: config.limit,
                    ..config
                },
                now,
            );
        }
        window
    }
}

/// State shared by the routes.
#[derive(Clone)]
pub struct Shared {
    repo: Arc<Mutex<RepoState>>,
    control: Arc<Mutex<Control>>,
}

impl Shared {
    pub fn new(state: RepoState) -> Self {
        Shared {
            repo: Arc::new(Mutex::new(state)),
            control: Arc::new(Mutex::new(Control::new())),
        }
    }

    pub fn repo(&self) -> MutexGuard<'_, RepoState> {
        self.repo
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn control(&self) -> MutexGuard<'_, Control> {
        self.control
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Starts fake GitHub servers.
pub struct FakeGitHub;

impl FakeGitHub {
    /// Serves `state` on 127.0.0.1 at a free port until the handle is dropped.
    pub fn start(state: RepoState) -> FakeGitHubHandle {
        FakeGitHub::start_on_port(state, 0).expect("the fake GitHub binds 127.0.0.1")
    }

    /// Serves `state` on 127.0.0.1:`port` (0 picks a free port).
    pub fn start_on_port(state: RepoState, port: u16) -> std::io::Result<FakeGitHubHandle> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let blob_listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        blob_listener.set_nonblocking(true)?;
        let shared = Shared::new(state);
        shared.control().blob_base = Some(format!("http://{}", blob_listener.local_addr()?));
        let app = middleware::map_request_with_state(shared.clone(), by_repository_name)
            .layer(router(shared.clone()))
            .into_make_service();
        let blob_app = super::blobs::router(shared.clone());
        let (stop_sender, stop_receiver) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name(format!("fake-github-{}", address.port()))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a tokio runtime for the fake GitHub");
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .expect("the listener joins the runtime");
                    let blob_listener = tokio::net::TcpListener::from_std(blob_listener)
                        .expect("the blob listener joins the runtime");
                    let (blob_stop, blob_stopped) = tokio::sync::oneshot::channel::<()>();
                    let stopped = async {
                        let _ = stop_receiver.await;
                        let _ = blob_stop.send(());
                    };
                    let blobs =
                        axum::serve(blob_listener, blob_app).with_graceful_shutdown(async {
                            let _ = blob_stopped.await;
                        });
                    let api = axum::serve(listener, app).with_graceful_shutdown(stopped);
                    let _ = tokio::join!(api, blobs);
                });
            })?;
        Ok(FakeGitHubHandle {
            base_url: format!("http://{address}"),
            shared,
            stop: Some(stop_sender),
        })
    }
}

/// A running fake GitHub; dropping it stops the server.
pub struct FakeGitHubHandle {
    base_url: String,
    shared: Shared,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl FakeGitHubHandle {
    /// `http://127.0.0.1:PORT` — the REST base (`GITHUB_API_URL`).
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// `http://127.0.0.1:PORT/graphql` (`GITHUB_GRAPHQL_URL`).
    pub fn graphql_url(&self) -> String {
        format!("{}/graphql", self.base_url)
    }

    /// Reads or changes the repository state in place.
    pub fn with_state<R>(&self, change: impl FnOnce(&mut RepoState) -> R) -> R {
        change(&mut self.shared.repo())
    }

    /// A copy of the repository state.
    pub fn state(&self) -> RepoState {
        self.shared.repo().clone()
    }

    pub fn replace_state(&self, state: RepoState) {
        *self.shared.repo() = state;
    }

    pub fn request_log(&self) -> Vec<LoggedRequest> {
        self.shared.control().log.clone()
    }

    pub fn clear_request_log(&self) {
        self.shared.control().log.clear();
    }

    /// The requests the blob server of job logs answered, in order.
    pub fn blob_log(&self) -> Vec<super::blobs::BlobRequest> {
        self.shared.control().blob_log.clone()
    }

    pub fn request_counts(&self) -> RequestCounts {
        RequestCounts::of(&self.shared.control().log)
    }

    /// Replaces the fault configuration (and restarts its counters).
    pub fn set_faults(&self, config: FaultConfig) {
        self.shared.control().set_faults(config);
    }

    pub fn set_rate_limit(&self, config: RateLimitConfig) {
        self.shared.control().set_rate_limit(config);
    }

    /// Runs `change` on the state just before the first `method` request to `path` is handled
    /// (e.g. a maintainer acting between a re-check and the write that follows it).
    pub fn before_request(
        &self,
        method: &str,
        path: &str,
        change: impl Fn(&mut RepoState) + Send + Sync + 'static,
    ) {
        self.shared.control().hooks.push(RequestHook {
            method: method.to_string(),
            path: path.to_string(),
            graphql_field: None,
            change: Arc::new(change),
        });
    }

    /// Runs `change` on the state just before the first GraphQL request whose operation has
    /// the top-level field `field` is handled: `before_graphql("updateRefs", …)` acts between
    /// klaud's reads (queries, which do not trigger it) and its ref deletion.
    pub fn before_graphql(
        &self,
        field: &str,
        change: impl Fn(&mut RepoState) + Send + Sync + 'static,
    ) {
        self.shared.control().hooks.push(RequestHook {
            method: "POST".to_string(),
            path: "/graphql".to_string(),
            graphql_field: Some(field.to_string()),
            change: Arc::new(change),
        });
    }

    /// Offers GraphQL's `updateRefs`, or (false) serves GraphQL as an older GitHub Enterprise
    /// Server does, where the mutation does not exist.
    pub fn set_update_refs_available(&self, available: bool) {
        self.shared.repo().update_refs_available = available;
    }

    /// Forgets the hooks no request has met.
    pub fn clear_request_hooks(&self) {
        self.shared.control().hooks.clear();
    }
}

impl Drop for FakeGitHubHandle {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Every route, behind the GitHub middleware (which lets `/_fake/…` through untouched). A method
/// a path does not take is GitHub's 404, not a 405.
pub fn router(shared: Shared) -> Router {
    Router::new()
        .merge(super::routes_repository::routes())
        .merge(super::routes_pulls::routes())
        .merge(super::routes_issues::routes())
        .merge(super::routes_labels::routes())
        .merge(super::routes_statuses::routes())
        .merge(super::routes_git::routes())
        .merge(super::routes_contents::routes())
        .merge(super::routes_actions::routes())
        .merge(super::routes_graphql::routes())
        .merge(super::routes_admin::routes())
        .fallback(|| async { ApiError::not_found(docs::REST) })
        .method_not_allowed_fallback(|| async { ApiError::not_found(docs::REST) })
        .layer(middleware::from_fn_with_state(
            shared.clone(),
            github_semantics,
        ))
        .with_state(shared)
}

/// A request to `/repositories/{id}/…` of this repository's id, as GitHub's `Link` headers name
/// it, routed as the `/repos/{owner}/{repo}/…` request it stands for (before routing, so every
/// route, fault rule and hook sees the one path). Another id is left to answer 404.
async fn by_repository_name(State(shared): State<Shared>, mut request: Request) -> Request {
    let Some(by_id) = request.uri().path().strip_prefix("/repositories/") else {
        return request;
    };
    let (id, rest) = by_id.split_once('/').unwrap_or((by_id, ""));
    let (repository_id, full_name) = {
        let state = shared.repo();
        (state.repository_id, state.full_name())
    };
    if id.parse() != Ok(repository_id) {
        return request;
    }
    let rest = if rest.is_empty() {
        String::new()
    } else {
        format!("/{rest}")
    };
    let query = request
        .uri()
        .query()
        .map(|query| format!("?{query}"))
        .unwrap_or_default();
    if let Ok(uri) = format!("/repos/{full_name}{rest}{query}").parse::<Uri>() {
        *request.uri_mut() = uri;
    }
    request
}

fn bearer_token(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = value.split_once(' ')?;
    let scheme = scheme.to_ascii_lowercase();
    (scheme == "bearer" || scheme == "token").then(|| token.trim().to_string())
}

fn api_base(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

/// Requests under `/repos/{owner}/{repo}` must name this repository.
fn names_this_repository(state: &RepoState, path: &str) -> bool {
    let mut segments = path.trim_start_matches('/').split('/');
    if segments.next() != Some("repos") {
        return true;
    }
    let owner = segments.next().unwrap_or("");
    let name = segments.next().unwrap_or("");
    owner.eq_ignore_ascii_case(&state.owner) && name.eq_ignore_ascii_case(&state.name)
}

fn fault_answer(fault: &PlannedFault) -> Response {
    let mut response = json_response(fault.status, &fault_body(fault));
    if let Some(seconds) = fault.retry_after_seconds {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

fn primary_limit_answer(login: &str) -> Response {
    let message = format!(
        "API rate limit exceeded for user ID {}. If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000000:0000000:00000000 and timestamp {} UTC.",
        user_id(login),
        Timestamp::system_now()
    );
    ApiError::new(403, message, docs::RATE_LIMITS).into_response()
}

/// GitHub's cross-cutting behaviour around every route.
async fn github_semantics(State(shared): State<Shared>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    if path.starts_with("/_fake") {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let request_body = String::from_utf8_lossy(&body).into_owned();
    let mut request = Request::from_parts(parts, axum::body::Body::from(body));
    let method = request.method().as_str().to_string();
    let path_and_query = request
        .uri()
        .path_and_query()
        .map(|value| value.as_str().to_string())
        .unwrap_or_else(|| path.clone());
    let api = api_base(request.headers());
    let token = bearer_token(request.headers());
    let (login, right_repository) = {
        let repo = shared.repo();
        let login = token
            .as_deref()
            .and_then(|token| repo.login_for_token(token))
            .map(str::to_string);
        (login, names_this_repository(&repo, &path))
    };
    let resource = if path == "/graphql" {
        "graphql"
    } else {
        "core"
    };
    let graphql = (path == "/graphql" && method == "POST")
        .then(|| OperationSummary::of_body(&request_body))
        .flatten();
    let write = match &graphql {
        Some(operation) => operation.mutation,
        None if path == "/graphql" => false,
        None => is_write(&method),
    };
    let plan = shared
        .control()
        .faults
        .plan(&method, &path, &path_and_query, write);
    if plan.latency_ms > 0 {
        tokio::time::sleep(Duration::from_millis(plan.latency_ms)).await;
    }
    let mut injected = None;
    let mut response = 'answer: {
        let Some(caller) = login.clone() else {
            let message = if token.is_some() {
                "Bad credentials"
            } else {
                "Requires authentication"
            };
            break 'answer ApiError::new(401, message, docs::REST).into_response();
        };
        if !shared.control().window(resource).consume() {
            injected = Some(InjectedFault {
                kind: FaultKind::PrimaryRateLimit,
                status: 403,
                after_handling: false,
            });
            break 'answer primary_limit_answer(&caller);
        }
        if let Some(fault) = plan
            .fault
            .as_ref()
            .filter(|fault| fault.timing == FaultTiming::BeforeHandling)
        {
            injected = Some(InjectedFault {
                kind: fault.kind,
                status: fault.status,
                after_handling: false,
            });
            break 'answer fault_answer(fault);
        }
        if !right_repository {
            break 'answer ApiError::not_found(docs::REST).into_response();
        }
        let (full_name, repository_id) = {
            let repo = shared.repo();
            (repo.full_name(), repo.repository_id)
        };
        request.extensions_mut().insert(RequestContext {
            login: caller,
            api,
            full_name,
            repository_id,
        });
        let hook = {
            let mut control = shared.control();
            let found = control
                .hooks
                .iter()
                .position(|hook| hook.matches(&method, &path, graphql.as_ref()));
            found.map(|index| control.hooks.remove(index))
        };
        if let Some(hook) = hook {
            (hook.change)(&mut shared.repo());
        }
        let handled = next.run(request).await;
        match plan
            .fault
            .as_ref()
            .filter(|fault| fault.timing == FaultTiming::AfterHandling)
        {
            Some(fault) => {
                injected = Some(InjectedFault {
                    kind: fault.kind,
                    status: fault.status,
                    after_handling: true,
                });
                fault_answer(fault)
            }
            None => handled,
        }
    };
    let mut control = shared.control();
    let window = control.window(resource).clone();
    let headers = response.headers_mut();
    headers.insert("x-ratelimit-limit", HeaderValue::from(window.limit));
    headers.insert(
        "x-ratelimit-remaining",
        HeaderValue::from(window.remaining()),
    );
    headers.insert("x-ratelimit-used", HeaderValue::from(window.used));
    headers.insert("x-ratelimit-reset", HeaderValue::from(window.reset_epoch));
    headers.insert("x-ratelimit-resource", HeaderValue::from_static(resource));
    let sequence = control.log.len() as u64 + 1;
    control.log.push(LoggedRequest {
        sequence,
        method,
        path: path_and_query,
        status: response.status().as_u16(),
        fault: injected,
        login,
        body: request_body,
    });
    response
}
