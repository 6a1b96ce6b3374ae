//! The scripted model server: the Messages API on 127.0.0.1 answering the agent loop from a
//! queue of [`Turn`]s, side requests and the start-up probe with fixed answers, and a log of
//! everything the CLI sent. Which request belongs to the agent loop is decided by
//! [`classify`]; the module docs of `agent_support` say what the CLI sends.
//!
//! One server can also answer several CLI runs at once ([`Conversations`]): each run is a
//! conversation of its own (the CLI's session id, sent in every request's `metadata`), told
//! apart from the others by what it has seen, and answered from its own script.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::Response;
use serde_json::{Value, json};

/// What a side request (one outside the agent loop) is answered with.
pub const SIDE_REQUEST_ANSWER: &str = "ok";
/// What the agent loop is answered with once the script is used up.
pub const SCRIPT_EXHAUSTED_ANSWER: &str = "done";

/// One scripted answer of the model to the agent loop.
#[derive(Clone, Debug)]
pub struct Turn {
    reply: Reply,
    delay: Duration,
    usage: Usage,
}

/// The token usage an answer reports (`message_start`'s input tokens, `message_delta`'s output
/// tokens), from which the CLI counts what a run cost.
#[derive(Clone, Copy, Debug)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
}

/// What an answer reports unless its turn says otherwise: a few tokens, next to nothing spent.
const SMALL_USAGE: Usage = Usage {
    input_tokens: 10,
    output_tokens: 5,
};

/// A turn made from the request it answers.
#[derive(Clone)]
struct Computed(Arc<dyn Fn(&ModelRequest) -> Turn + Send + Sync>);

impl std::fmt::Debug for Computed {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("<a turn made from its request>")
    }
}

#[derive(Clone, Debug)]
enum Reply {
    /// The turn `make` returns for the request being answered.
    Computed(Computed),
    /// Assistant text; `stop_reason: end_turn`.
    Text(String),
    /// One `tool_use` block for the `Bash` tool; `stop_reason: tool_use`.
    Bash {
        command: String,
        description: String,
    },
    /// One `tool_use` block for another tool, with its input; `stop_reason: tool_use`.
    Tool { name: String, input: Value },
}

impl Turn {
    /// The model ends its turn with this text.
    pub fn text(text: impl Into<String>) -> Turn {
        Turn {
            reply: Reply::Text(text.into()),
            delay: Duration::ZERO,
            usage: SMALL_USAGE,
        }
    }

    /// The model asks the CLI to run `command` with its `Bash` tool.
    pub fn bash(command: impl Into<String>, description: impl Into<String>) -> Turn {
        Turn {
            reply: Reply::Bash {
                command: command.into(),
                description: description.into(),
            },
            delay: Duration::ZERO,
            usage: SMALL_USAGE,
        }
    }

    /// The model calls the tool `name` with `input` (e.g. `StructuredOutput`, the tool the CLI
    /// offers for `--json-schema`).
    pub fn tool(name: impl Into<String>, input: Value) -> Turn {
        Turn {
            reply: Reply::Tool {
                name: name.into(),
                input,
            },
            delay: Duration::ZERO,
            usage: SMALL_USAGE,
        }
    }

    /// The turn `make` returns for the request it answers: what the model says may depend on
    /// what it was told (a path the prompt names, the output of an earlier command).
    pub fn from_request(make: impl Fn(&ModelRequest) -> Turn + Send + Sync + 'static) -> Turn {
        Turn {
            reply: Reply::Computed(Computed(Arc::new(make))),
            delay: Duration::ZERO,
            usage: SMALL_USAGE,
        }
    }

    /// The same turn, answered only after `delay` (nothing is sent before).
    pub fn delay(self, delay: Duration) -> Turn {
        Turn { delay, ..self }
    }

    /// The same turn, its answer reporting this many input and output tokens (what the run
    /// costs follows: a large count makes one turn expensive).
    pub fn usage(self, input_tokens: u64, output_tokens: u64) -> Turn {
        Turn {
            usage: Usage {
                input_tokens,
                output_tokens,
            },
            ..self
        }
    }

    /// The turn as answered to `request`: a computed turn made, keeping this turn's delay when
    /// it has one (and the made turn's usage).
    fn resolve(self, request: &ModelRequest) -> (Reply, Duration, Usage) {
        match self.reply {
            Reply::Computed(Computed(make)) => {
                let (reply, delay, usage) = make(request).resolve(request);
                (
                    reply,
                    if self.delay.is_zero() {
                        delay
                    } else {
                        self.delay
                    },
                    usage,
                )
            }
            reply => (reply, self.delay, self.usage),
        }
    }
}

/// Scripts for several CLI runs served at once. A conversation is one CLI session; each is
/// answered the `opening` turns first, and then follows the first script not yet taken whose
/// key occurs in one of the conversation's non-assistant texts (e.g. an id in the output of a
/// command an opening turn ran). A conversation that matches no script is answered
/// [`SCRIPT_EXHAUSTED_ANSWER`] and counted ([`ModelServer::unmatched_conversations`]).
#[derive(Clone, Debug, Default)]
pub struct Conversations {
    opening: Vec<Turn>,
    scripts: Vec<(String, Vec<Turn>)>,
}

impl Conversations {
    /// The turns every conversation starts with.
    pub fn opening(turns: impl IntoIterator<Item = Turn>) -> Conversations {
        Conversations {
            opening: turns.into_iter().collect(),
            scripts: Vec::new(),
        }
    }

    /// The script of the conversation whose texts hold `key`.
    pub fn script(mut self, key: impl Into<String>, turns: impl IntoIterator<Item = Turn>) -> Self {
        self.scripts.push((key.into(), turns.into_iter().collect()));
        self
    }
}

/// How the server read one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// A `POST /v1/messages` of the agent loop: answered from the script.
    AgentLoop,
    /// A `POST /v1/messages` outside the agent loop (no tools offered, or another system
    /// prompt: a prompt hook's evaluation, a subagent): answered with [`SIDE_REQUEST_ANSWER`].
    Side,
    /// `HEAD /api/hello`, the reachability probe the CLI sends at start: answered 200.
    Probe,
    /// Anything else: answered 404 with an API error body.
    Unknown,
}

/// One request as received.
#[derive(Clone, Debug)]
pub struct LoggedRequest {
    pub method: String,
    /// Path and query, e.g. `/v1/messages?beta=true`.
    pub uri: String,
    pub kind: RequestKind,
    /// The body as JSON (`Value::Null` when empty or not JSON).
    pub body: Value,
}

/// The body of one `POST /v1/messages`, with readers for what tests look at.
#[derive(Clone, Debug)]
pub struct ModelRequest {
    pub body: Value,
}

impl ModelRequest {
    /// The CLI's session id (`metadata.user_id`, itself JSON, holds it), or empty.
    pub fn session_id(&self) -> String {
        self.body["metadata"]["user_id"]
            .as_str()
            .and_then(|user| serde_json::from_str::<Value>(user).ok())
            .and_then(|user| user["session_id"].as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// The text of the last `tool_result` block sent (a string content, or its `text` blocks
    /// joined), or empty.
    pub fn last_tool_result(&self) -> String {
        let block = self
            .messages()
            .iter()
            .filter(|message| message["role"] == "user")
            .filter_map(|message| message["content"].as_array())
            .flatten()
            .rfind(|block| block["type"] == "tool_result");
        let mut texts = Vec::new();
        if let Some(block) = block {
            push_texts(&block["content"], &mut texts);
        }
        texts.join("\n")
    }

    /// The conversation as sent: `user`, `assistant` and (mid-conversation) `system` messages.
    pub fn messages(&self) -> &[Value] {
        self.body["messages"].as_array().map_or(&[], Vec::as_slice)
    }

    /// Every text on the non-assistant side of the conversation, in order: the `user` and
    /// `system` messages' string contents and `text` blocks, and the content of each
    /// `tool_result` block (a string, or its `text` blocks one by one).
    pub fn user_texts(&self) -> Vec<String> {
        let mut texts = Vec::new();
        for message in self.messages() {
            if message["role"] == "assistant" {
                continue;
            }
            push_texts(&message["content"], &mut texts);
        }
        texts
    }

    /// The `tool_use` blocks of the assistant messages sent back, in order.
    pub fn tool_uses(&self) -> Vec<Value> {
        self.messages()
            .iter()
            .filter(|message| message["role"] == "assistant")
            .filter_map(|message| message["content"].as_array())
            .flatten()
            .filter(|block| block["type"] == "tool_use")
            .cloned()
            .collect()
    }

    /// The system prompt's text (its blocks' texts joined by newlines).
    pub fn system_text(&self) -> String {
        system_text(&self.body)
    }
}

fn push_texts(content: &Value, texts: &mut Vec<String>) {
    match content {
        Value::String(text) => texts.push(text.clone()),
        Value::Array(blocks) => {
            for block in blocks {
                match block["type"].as_str() {
                    Some("text") => {
                        texts.push(block["text"].as_str().unwrap_or_default().to_string())
                    }
                    Some("tool_result") => push_texts(&block["content"], texts),
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

fn system_text(body: &Value) -> String {
    match &body["system"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn offers_tools(body: &Value) -> bool {
    body["tools"]
        .as_array()
        .is_some_and(|tools| !tools.is_empty())
}

/// Reads a `POST /v1/messages` body as the agent loop's or a side request. The agent loop's
/// first request is the first one that offers tools (the CLI starts the loop before anything
/// else asks the model); its system prompt, which the CLI sends unchanged on every request of
/// the loop, tells the later ones apart from subagents (same tools, their own prompt).
/// `agent_loop_system` is that prompt once known.
pub fn classify(body: &Value, agent_loop_system: Option<&str>) -> RequestKind {
    if !offers_tools(body) {
        return RequestKind::Side;
    }
    match agent_loop_system {
        None => RequestKind::AgentLoop,
        Some(system) if system == system_text(body) => RequestKind::AgentLoop,
        Some(_) => RequestKind::Side,
    }
}

/// One script and the conversation that took it.
struct Script {
    /// `None` for the one script of [`ModelServer::start`], which every request follows.
    key: Option<String>,
    turns: VecDeque<Turn>,
    taken_by: Option<String>,
}

/// One conversation (a CLI session): its agent loop's system prompt once known, how many
/// opening turns it was given, and the script it follows once matched.
#[derive(Default)]
struct Conversation {
    agent_loop_system: Option<String>,
    opened: usize,
    script: Option<usize>,
}

#[derive(Default)]
struct Recorded {
    /// Conversations by session id; all requests are one conversation unless `by_session`.
    by_session: bool,
    opening: Vec<Turn>,
    scripts: Vec<Script>,
    conversations: BTreeMap<String, Conversation>,
    log: Vec<LoggedRequest>,
    agent_loop: Vec<ModelRequest>,
    side: Vec<ModelRequest>,
    answers_after_script: usize,
    unmatched: Vec<String>,
}

impl Recorded {
    /// The next turn of the conversation `session` for its agent-loop request `request`.
    fn next_turn(&mut self, session: &str, request: &ModelRequest) -> Turn {
        let conversation = self.conversations.entry(session.to_string()).or_default();
        if conversation.opened < self.opening.len() {
            conversation.opened += 1;
            return self.opening[conversation.opened - 1].clone();
        }
        if conversation.script.is_none() {
            let texts = request.user_texts();
            conversation.script = self.scripts.iter().position(|script| {
                script.taken_by.is_none()
                    && script
                        .key
                        .as_deref()
                        .is_some_and(|key| texts.iter().any(|text| text.contains(key)))
            });
            match conversation.script {
                Some(index) => self.scripts[index].taken_by = Some(session.to_string()),
                None => {
                    if !self.unmatched.iter().any(|seen| seen == session) {
                        self.unmatched.push(session.to_string());
                    }
                    return Turn::text(SCRIPT_EXHAUSTED_ANSWER);
                }
            }
        }
        let index = conversation.script.expect("a matched conversation");
        match self.scripts[index].turns.pop_front() {
            Some(turn) => turn,
            None => {
                self.answers_after_script += 1;
                Turn::text(SCRIPT_EXHAUSTED_ANSWER)
            }
        }
    }
}

#[derive(Clone)]
struct Shared(Arc<Mutex<Recorded>>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A running model server; dropping it stops the server (answers still being delayed are
/// abandoned).
pub struct ModelServer {
    base_url: String,
    shared: Shared,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ModelServer {
    /// Serves the Messages API on 127.0.0.1 at a free port, the agent loop answered by `script`
    /// in order.
    pub fn start(script: impl IntoIterator<Item = Turn>) -> ModelServer {
        let mut conversations = BTreeMap::new();
        conversations.insert(
            String::new(),
            Conversation {
                script: Some(0),
                ..Conversation::default()
            },
        );
        ModelServer::serve(Recorded {
            scripts: vec![Script {
                key: None,
                turns: script.into_iter().collect(),
                taken_by: Some(String::new()),
            }],
            conversations,
            ..Recorded::default()
        })
    }

    /// Serves the Messages API on 127.0.0.1 at a free port for several CLI runs at once, each
    /// answered from its own script (see [`Conversations`]).
    pub fn start_conversations(conversations: Conversations) -> ModelServer {
        ModelServer::serve(Recorded {
            by_session: true,
            opening: conversations.opening,
            scripts: conversations
                .scripts
                .into_iter()
                .map(|(key, turns)| Script {
                    key: Some(key),
                    turns: turns.into_iter().collect(),
                    taken_by: None,
                })
                .collect(),
            ..Recorded::default()
        })
    }

    fn serve(recorded: Recorded) -> ModelServer {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let address = listener.local_addr().expect("the listener's address");
        let shared = Shared(Arc::new(Mutex::new(recorded)));
        let app = Router::new().fallback(answer).with_state(shared.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("model-server-{}", address.port()))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a tokio runtime for the model server");
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .expect("the listener joins the runtime");
                    // Not a graceful shutdown: a delayed answer must not hold the test up.
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime here drops the connection tasks still running.
            })
            .expect("spawn the model server thread");
        ModelServer {
            base_url: format!("http://{address}"),
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`, the CLI's `ANTHROPIC_BASE_URL`.
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// Every request received, in order.
    pub fn request_log(&self) -> Vec<LoggedRequest> {
        self.shared.lock().log.clone()
    }

    /// Requests the server did not recognize (answered 404), as `METHOD uri`.
    pub fn unknown_requests(&self) -> Vec<String> {
        self.request_log()
            .into_iter()
            .filter(|request| request.kind == RequestKind::Unknown)
            .map(|request| format!("{} {}", request.method, request.uri))
            .collect()
    }

    /// The agent loop's requests, in order (one per model turn).
    pub fn agent_loop_requests(&self) -> Vec<ModelRequest> {
        self.shared.lock().agent_loop.clone()
    }

    /// The `POST /v1/messages` requests outside the agent loop, in order.
    pub fn side_requests(&self) -> Vec<ModelRequest> {
        self.shared.lock().side.clone()
    }

    /// The non-assistant texts of the whole conversation, in order (each request of the loop
    /// re-sends the conversation, so these are the last request's; see
    /// [`ModelRequest::user_texts`]). Empty before the first request.
    pub fn user_texts(&self) -> Vec<String> {
        self.agent_loop_requests()
            .last()
            .map(ModelRequest::user_texts)
            .unwrap_or_default()
    }

    /// The agent-loop requests of the conversation that took the script `key` (its opening
    /// ones included), in order; empty when none did.
    pub fn conversation_requests(&self, key: &str) -> Vec<ModelRequest> {
        let recorded = self.shared.lock();
        let Some(session) = recorded
            .scripts
            .iter()
            .find(|script| script.key.as_deref() == Some(key))
            .and_then(|script| script.taken_by.clone())
        else {
            return Vec::new();
        };
        recorded
            .agent_loop
            .iter()
            .filter(|request| request.session_id() == session)
            .cloned()
            .collect()
    }

    /// Scripted turns not yet used (opening turns not counted).
    pub fn turns_left(&self) -> usize {
        let recorded = self.shared.lock();
        recorded
            .scripts
            .iter()
            .map(|script| script.turns.len())
            .sum()
    }

    /// Session ids of the conversations that matched no script.
    pub fn unmatched_conversations(&self) -> Vec<String> {
        self.shared.lock().unmatched.clone()
    }

    /// How often the agent loop asked after the script was used up (each answered
    /// [`SCRIPT_EXHAUSTED_ANSWER`]).
    pub fn answers_after_script(&self) -> usize {
        self.shared.lock().answers_after_script
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn answer(State(shared): State<Shared>, method: Method, uri: Uri, body: Bytes) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri.path();
    let is_messages = method == Method::POST && path == "/v1/messages";
    let is_probe = (method == Method::HEAD || method == Method::GET) && path == "/api/hello";
    let (kind, turn, sequence) = {
        let mut recorded = shared.lock();
        let request = ModelRequest { body: body.clone() };
        let session = if recorded.by_session {
            request.session_id()
        } else {
            String::new()
        };
        let kind = if is_messages {
            let system = recorded
                .conversations
                .get(&session)
                .and_then(|conversation| conversation.agent_loop_system.clone());
            classify(&body, system.as_deref())
        } else if is_probe {
            RequestKind::Probe
        } else {
            RequestKind::Unknown
        };
        let turn = match kind {
            RequestKind::AgentLoop => {
                let conversation = recorded.conversations.entry(session.clone()).or_default();
                if conversation.agent_loop_system.is_none() {
                    conversation.agent_loop_system = Some(system_text(&body));
                }
                recorded.agent_loop.push(request.clone());
                Some(recorded.next_turn(&session, &request).resolve(&request))
            }
            RequestKind::Side => {
                recorded.side.push(request.clone());
                Some(Turn::text(SIDE_REQUEST_ANSWER).resolve(&request))
            }
            RequestKind::Probe | RequestKind::Unknown => None,
        };
        recorded.log.push(LoggedRequest {
            method: method.to_string(),
            uri: uri.to_string(),
            kind,
            body: body.clone(),
        });
        (kind, turn, recorded.log.len())
    };
    match (kind, turn) {
        (_, Some((reply, delay, usage))) => {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            message_response(&reply, usage, &body, sequence)
        }
        (RequestKind::Probe, None) => response(StatusCode::OK, "text/plain", Body::empty()),
        _ => response(
            StatusCode::NOT_FOUND,
            "application/json",
            Body::from(
                json!({
                    "type": "error",
                    "error": {"type": "not_found_error", "message": format!("no route for {method} {uri}")}
                })
                .to_string(),
            ),
        ),
    }
}

fn response(status: StatusCode, content_type: &str, body: Body) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(body)
        .expect("a valid response")
}

/// The assistant message for `reply`, as server-sent events when the request asked for a
/// stream (the CLI always does) and as one JSON message otherwise. `sequence` makes the
/// message and tool-use ids unique within the server.
fn message_response(reply: &Reply, usage: Usage, request: &Value, sequence: usize) -> Response {
    let model = request["model"].as_str().unwrap_or("scripted-model");
    let (block, stop_reason) = match reply {
        Reply::Text(text) => (json!({"type": "text", "text": text}), "end_turn"),
        Reply::Bash {
            command,
            description,
        } => (
            json!({
                "type": "tool_use",
                "id": format!("toolu_scripted_{sequence}"),
                "name": "Bash",
                "input": {"command": command, "description": description},
            }),
            "tool_use",
        ),
        Reply::Tool { name, input } => (
            json!({
                "type": "tool_use",
                "id": format!("toolu_scripted_{sequence}"),
                "name": name,
                "input": input,
            }),
            "tool_use",
        ),
        Reply::Computed(_) => unreachable!("a computed turn is made before it is answered"),
    };
    let id = format!("msg_scripted_{sequence}");
    let Usage {
        input_tokens,
        output_tokens,
    } = usage;
    if request["stream"] != true {
        let message = json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop_reason, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        });
        return response(
            StatusCode::OK,
            "application/json",
            Body::from(message.to_string()),
        );
    }
    let (start_block, delta) = match reply {
        Reply::Text(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
        ),
        Reply::Computed(_) => unreachable!("a computed turn is made before it is answered"),
        Reply::Bash { .. } | Reply::Tool { .. } => {
            let input = block["input"].to_string();
            let mut start = block.clone();
            start["input"] = json!({});
            (
                start,
                json!({"type": "input_json_delta", "partial_json": input}),
            )
        }
    };
    let events = [
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1},
        }}),
        json!({"type": "content_block_start", "index": 0, "content_block": start_block}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": null},
            "usage": {"output_tokens": output_tokens}}),
        json!({"type": "message_stop"}),
    ];
    let stream: String = events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().expect("every event has a type")
            )
        })
        .collect();
    response(StatusCode::OK, "text/event-stream", Body::from(stream))
}
