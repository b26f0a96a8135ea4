//! The OpenCode task driver (design §0.2, §2.3): starts a task as an
//! OpenCode session (`POST /session` titled like the task, then
//! `prompt_async`) and follows it to its end through the server's shared
//! event stream and a status poll, the last assistant message deciding the
//! outcome. Servers are an operator's (`baseUrl`, password from a secret,
//! through the outbound guard) or started and supervised here
//! (`command`). The password is revealed at use and lives no longer than
//! the client that sends it; errors never quote it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use rtc_core::placeholders;
use rtc_protocol::{OpencodeSettings, TaskBackend};
use rtc_store::Store;
use rtc_tools::net_guard::AddressPolicy;
use rtc_tools::opencode::{
    EventHub, HubEvent, OpencodeClient, OpencodeError, OpencodeEvent, PINNED_VERSION, Password,
    SessionState, SupervisedServer, SupervisorSettings, TaskOutcome, TaskPrompt, task_outcome,
};
use rtc_tools::scrub::Scrubber;
use rtc_tools::upstream::UpstreamLimits;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio::sync::{OnceCell, broadcast};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The status poll that backs up the event stream.
const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// How long a server may stay unreachable during a task before the task
/// fails.
const UNREACHABLE_BUDGET: Duration = Duration::from_secs(10);

/// How long a session may sit idle without an answer (say after its server
/// restarted mid-run, or when its error event was missed) before the task
/// fails.
const IDLE_WITHOUT_ANSWER: Duration = Duration::from_secs(10);

/// Why an OpenCode server could not be used for a task, in words the
/// model and the host may read (the password scrubbed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BackendError(pub String);

impl From<String> for BackendError {
    fn from(message: String) -> Self {
        Self(message)
    }
}

impl From<&str> for BackendError {
    fn from(message: &str) -> Self {
        Self(message.to_owned())
    }
}

/// How a followed task ended.
pub(crate) enum TaskEnd {
    Completed(String),
    Failed(String),
    Cancelled,
}

/// Where a backend's server is.
enum Endpoint {
    /// An operator's server; its password is revealed at each use.
    Operator { base_url: String },
    /// A server started here.
    Supervised(Box<SupervisedServer>),
}

/// One backend's server and its shared event subscription.
struct Server {
    endpoint: Endpoint,
    hub: EventHub,
}

/// A backend's entry: its version (which configuration and password it was
/// made from) and the server, made once.
struct Slot {
    version: String,
    server: OnceCell<Arc<Server>>,
}

/// The OpenCode servers of every backend in use: one client configuration
/// and event hub per server (keyed by workspace and backend id, remade when
/// the backend's `updatedAt` or password changes), and the processes of
/// started servers.
pub(crate) struct OpencodeServers {
    policy: AddressPolicy,
    limits: UpstreamLimits,
    data_dir: Option<PathBuf>,
    slots: Mutex<HashMap<(String, String), Arc<Slot>>>,
    /// Versions of started servers whose backend was deleted: never
    /// started again (a task still following one fails instead).
    retired: Mutex<std::collections::HashSet<String>>,
}

/// A started OpenCode task, as [`OpencodeServers::follow_task`] follows it.
pub(crate) struct Followed<'a> {
    pub store: &'a Store,
    pub workspace: &'a str,
    pub backend: &'a TaskBackend,
    /// Its OpenCode session.
    pub external_id: &'a str,
    pub deadline: Instant,
    /// Told each progress line.
    pub progress: &'a (dyn Fn(String) + Send + Sync),
}

impl OpencodeServers {
    pub fn new(policy: AddressPolicy, limits: UpstreamLimits, data_dir: Option<PathBuf>) -> Self {
        Self {
            policy,
            limits,
            data_dir,
            slots: Mutex::default(),
            retired: Mutex::default(),
        }
    }

    /// Create the OpenCode session (titled like the task) and send the
    /// instruction with `prompt_async`: the OpenCode session id, or an
    /// error the model can read, at once (bounded by the connect timeout).
    pub async fn start_task(
        &self,
        store: &Store,
        workspace: &str,
        backend: &TaskBackend,
        title: &str,
        instruction: &str,
    ) -> Result<String, BackendError> {
        let settings = settings(backend)?;
        let (server, client, scrubber) = self.connect(store, workspace, backend).await?;
        let scrub = |e: OpencodeError| scrubber.scrub_str(&e.to_string());
        let version = client.health(Duration::from_secs(5)).await.map_err(scrub)?;
        if version != PINNED_VERSION {
            tracing::warn!(%version, pinned = PINNED_VERSION, server = client.base_url(), "the OpenCode server is not the tested version");
        }
        let session = client
            .create_session(title, &settings.model)
            .await
            .map_err(scrub)?;
        let prompt = TaskPrompt {
            text: instruction,
            model: &settings.model,
            agent: settings.agent.as_deref(),
        };
        client
            .prompt_async(&session, &prompt)
            .await
            .map_err(scrub)?;
        // Events sent before its follower listens are not missed: the
        // follower looks at the status first.
        drop(server);
        Ok(session)
    }

    /// Follow a started task (also after a restart: only its OpenCode
    /// session id is known) until it ends.
    pub async fn follow_task(&self, task: Followed<'_>, cancel: CancellationToken) -> TaskEnd {
        let Followed {
            store,
            workspace,
            backend,
            external_id,
            deadline,
            progress,
        } = task;
        let mut follower = Follower {
            servers: self,
            store,
            workspace,
            backend,
            session: external_id,
            first_error: None,
            last_retry: None,
            unreachable_since: None,
            idle_since: None,
        };
        follower.run(deadline, cancel, progress).await
    }

    /// A backend was deleted: forget its server, and stop it if it was
    /// started here (a task still following it fails as unreachable).
    pub async fn forget(&self, workspace: &str, backend_id: &str) {
        let key = (workspace.to_owned(), backend_id.to_owned());
        let slot = self.slots.lock().remove(&key);
        if let Some(slot) = slot
            && let Some(server) = slot.server.get()
            && let Endpoint::Supervised(process) = &server.endpoint
        {
            self.retired.lock().insert(slot.version.clone());
            process.stop().await;
        }
    }

    /// Stop the servers started here (SIGTERM, then SIGKILL after 5 s).
    pub async fn shutdown(&self) {
        let slots: Vec<Arc<Slot>> = self.slots.lock().drain().map(|(_, v)| v).collect();
        for slot in slots {
            if let Some(server) = slot.server.get()
                && let Endpoint::Supervised(process) = &server.endpoint
            {
                process.stop().await;
            }
        }
    }

    /// The backend's server (made on first use), a client of it (the
    /// password just revealed) and the scrubber of that password.
    async fn connect(
        &self,
        store: &Store,
        workspace: &str,
        backend: &TaskBackend,
    ) -> Result<(Arc<Server>, OpencodeClient, Scrubber), BackendError> {
        let settings = settings(backend)?;
        let password = match &settings.password {
            Some(reference) if settings.base_url.is_some() => {
                Some(reveal(store, workspace, reference).await?)
            }
            _ => None,
        };
        let scrubber = Scrubber::new(password.iter().map(Password::expose));
        let server = self
            .server(store, workspace, backend, settings, password.as_ref())
            .await
            .map_err(|e| scrubber.scrub_str(&e.0))?;
        let client = match &server.endpoint {
            Endpoint::Operator { base_url } => OpencodeClient::new(
                base_url,
                password.as_ref(),
                settings.directory.clone(),
                self.policy,
            ),
            Endpoint::Supervised(process) => process.client(settings.directory.clone()).await,
        }
        .map(|client| client.with_limits(self.limits))
        .map_err(|e| scrubber.scrub_str(&e.to_string()))?;
        Ok((server, client, scrubber))
    }

    async fn server(
        &self,
        store: &Store,
        workspace: &str,
        backend: &TaskBackend,
        settings: &OpencodeSettings,
        password: Option<&Password>,
    ) -> Result<Arc<Server>, BackendError> {
        let key = (workspace.to_owned(), backend.id.clone().unwrap_or_default());
        let version = slot_version(backend, password);
        if self.retired.lock().contains(&version) {
            return Err("the task backend was deleted".into());
        }
        let (slot, replaced) = {
            let mut slots = self.slots.lock();
            match slots.get(&key) {
                Some(slot) if slot.version == version => (Arc::clone(slot), None),
                _ => {
                    let slot = Arc::new(Slot {
                        version,
                        server: OnceCell::new(),
                    });
                    let old = slots.insert(key.clone(), Arc::clone(&slot));
                    (slot, old)
                }
            }
        };
        if let Some(old) = replaced
            && let Some(server) = old.server.get()
            && let Endpoint::Supervised(process) = &server.endpoint
        {
            // The backend changed: its old server gives way to the new one
            // (same HOME, so sessions survive).
            process.stop().await;
        }
        let server = slot
            .server
            .get_or_try_init(|| self.make_server(store, workspace, &key.1, settings, password))
            .await?;
        Ok(Arc::clone(server))
    }

    async fn make_server(
        &self,
        store: &Store,
        workspace: &str,
        backend_id: &str,
        settings: &OpencodeSettings,
        password: Option<&Password>,
    ) -> Result<Arc<Server>, BackendError> {
        if let Some(base_url) = &settings.base_url {
            let hub_client =
                OpencodeClient::new(base_url, password, settings.directory.clone(), self.policy)
                    .map_err(|e| e.to_string())?
                    .with_limits(self.limits);
            return Ok(Arc::new(Server {
                endpoint: Endpoint::Operator {
                    base_url: base_url.clone(),
                },
                hub: EventHub::new(hub_client),
            }));
        }
        let Some(command) = &settings.command else {
            return Err("the OpenCode backend has neither baseUrl nor command".into());
        };
        let (config, secrets) = render_config(store, workspace, settings.config.as_ref()).await?;
        let home = self.home(workspace, backend_id);
        let process = SupervisorSettings {
            command: command.clone(),
            config,
            home,
            secrets: secrets.clone(),
        };
        let process = SupervisedServer::start(process)
            .await
            .map_err(|e| Scrubber::new(&secrets).scrub_str(&e.to_string()))?;
        let hub_client = process
            .client_unchecked(settings.directory.clone())
            .map_err(|e| e.to_string())?
            .with_limits(self.limits);
        Ok(Arc::new(Server {
            endpoint: Endpoint::Supervised(Box::new(process)),
            hub: EventHub::new(hub_client),
        }))
    }

    /// A started server's HOME: under the data directory when there is
    /// one (its sessions then outlive the platform), else a temporary one.
    fn home(&self, workspace: &str, backend_id: &str) -> PathBuf {
        let name = format!("{}-{}", file_safe(workspace), file_safe(backend_id));
        match &self.data_dir {
            Some(dir) => dir.join("opencode").join(name),
            None => std::env::temp_dir()
                .join(format!("rtc-opencode-{}", std::process::id()))
                .join(name),
        }
    }
}

/// The state of one followed task.
struct Follower<'a> {
    servers: &'a OpencodeServers,
    store: &'a Store,
    workspace: &'a str,
    backend: &'a TaskBackend,
    session: &'a str,
    /// The first `session.error` seen (later ones repeat it with a trace).
    first_error: Option<String>,
    /// The latest retry message (the model endpoint failing).
    last_retry: Option<String>,
    unreachable_since: Option<Instant>,
    idle_since: Option<Instant>,
}

/// What one look at the task found.
enum Look {
    Ended(TaskEnd),
    Running,
}

impl Follower<'_> {
    async fn run(
        &mut self,
        deadline: Instant,
        cancel: CancellationToken,
        progress: &(dyn Fn(String) + Send + Sync),
    ) -> TaskEnd {
        let mut events = match self
            .servers
            .connect(self.store, self.workspace, self.backend)
            .await
        {
            Ok((server, _, _)) => Some(server.hub.subscribe()),
            Err(_) => None,
        };
        loop {
            if cancel.is_cancelled() {
                return self.abort_then(TaskEnd::Cancelled).await;
            }
            if Instant::now() >= deadline {
                return self.timed_out().await;
            }
            if let Look::Ended(end) = self.look(progress).await {
                return end;
            }
            // Wait for an event about this session, the next poll, the
            // deadline or a cancellation.
            let next_poll = Instant::now() + POLL_INTERVAL;
            loop {
                let event = async {
                    match events.as_mut() {
                        Some(rx) => Some(rx.recv().await),
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = tokio::time::sleep_until(deadline) => break,
                    () = tokio::time::sleep_until(next_poll) => break,
                    received = event => match received {
                        Some(Ok(HubEvent::Event(event))) => {
                            if self.heed(&event, progress) {
                                break;
                            }
                        }
                        // Missed events or a dropped stream: look again.
                        Some(Ok(HubEvent::Disconnected(_)) | Err(broadcast::error::RecvError::Lagged(_))) => break,
                        Some(Err(broadcast::error::RecvError::Closed)) | None => {
                            events = None;
                        }
                    },
                }
            }
        }
    }

    /// Note an event; whether it calls for a look at the task now.
    fn heed(&mut self, event: &OpencodeEvent, progress: &(dyn Fn(String) + Send + Sync)) -> bool {
        match event {
            OpencodeEvent::Connected => true,
            _ if event.session() != Some(self.session) => false,
            OpencodeEvent::Idle { .. } => true,
            OpencodeEvent::Error { message, .. } => {
                self.first_error.get_or_insert_with(|| message.clone());
                true
            }
            OpencodeEvent::Status { state, .. } => {
                self.note_state(state, progress);
                matches!(state, SessionState::Idle)
            }
        }
    }

    fn note_state(&mut self, state: &SessionState, progress: &(dyn Fn(String) + Send + Sync)) {
        if let SessionState::Retry { message, .. } = state
            && self.last_retry.as_deref() != Some(message.as_str())
        {
            self.last_retry = Some(message.clone());
            progress(format!("OpenCode is retrying its model: {message}"));
        }
    }

    /// Poll the status and, when the session is idle, its messages.
    async fn look(&mut self, progress: &(dyn Fn(String) + Send + Sync)) -> Look {
        match self.try_look(progress).await {
            Ok(look) => {
                self.unreachable_since = None;
                look
            }
            Err(LookError::Fatal(message)) => Look::Ended(TaskEnd::Failed(message)),
            Err(LookError::Unreachable(message)) => {
                let since = *self.unreachable_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= UNREACHABLE_BUDGET {
                    return Look::Ended(TaskEnd::Failed(format!(
                        "{message} (the server stopped answering during the task)"
                    )));
                }
                Look::Running
            }
        }
    }

    async fn try_look(
        &mut self,
        progress: &(dyn Fn(String) + Send + Sync),
    ) -> Result<Look, LookError> {
        let (_, client, scrubber) = self
            .servers
            .connect(self.store, self.workspace, self.backend)
            .await
            // A missing password secret, a refused address, a started
            // server that cannot start again: nothing to wait for.
            .map_err(|e| LookError::Fatal(e.0))?;
        let fail = |e: OpencodeError| {
            let text = scrubber.scrub_str(&e.to_string());
            if e.is_unreachable() {
                LookError::Unreachable(text)
            } else if matches!(e, OpencodeError::NotFound { .. }) {
                LookError::Fatal(format!(
                    "the OpenCode session {} is gone: {text}",
                    self.session
                ))
            } else {
                LookError::Fatal(text)
            }
        };
        let status = client.status().await.map_err(fail)?;
        if let Some(state) = status
            .get(self.session)
            .filter(|s| **s != SessionState::Idle)
        {
            self.note_state(state, progress);
            self.idle_since = None;
            return Ok(Look::Running);
        }
        let messages = client.messages(self.session).await.map_err(fail)?;
        let outcome = task_outcome(&messages);
        Ok(match outcome {
            TaskOutcome::Completed(text) => Look::Ended(TaskEnd::Completed(text)),
            TaskOutcome::Failed(message) => Look::Ended(TaskEnd::Failed(message)),
            TaskOutcome::Aborted => Look::Ended(TaskEnd::Failed(
                "the OpenCode session was aborted on the server".to_owned(),
            )),
            TaskOutcome::NoReply if self.first_error.is_some() => Look::Ended(TaskEnd::Failed(
                self.first_error.clone().unwrap_or_default(),
            )),
            TaskOutcome::Working | TaskOutcome::NoReply => {
                let since = *self.idle_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= IDLE_WITHOUT_ANSWER {
                    Look::Ended(TaskEnd::Failed(
                        "the OpenCode session stopped without an answer".to_owned(),
                    ))
                } else {
                    Look::Running
                }
            }
        })
    }

    /// The deadline passed: abort, and say what OpenCode was doing.
    async fn timed_out(&mut self) -> TaskEnd {
        let seconds = self.backend.timeout_seconds;
        let mut message = format!("the task did not finish within {seconds} s");
        if let Some(retry) = &self.last_retry {
            message.push_str(&format!("; OpenCode was retrying its model: {retry}"));
        }
        self.abort_then(TaskEnd::Failed(message)).await
    }

    /// Abort the OpenCode session (best effort), then end.
    async fn abort_then(&self, end: TaskEnd) -> TaskEnd {
        match self
            .servers
            .connect(self.store, self.workspace, self.backend)
            .await
        {
            Ok((_, client, scrubber)) => {
                if let Err(e) = client.abort(self.session).await {
                    let error = scrubber.scrub_str(&e.to_string());
                    tracing::warn!(session = self.session, %error, "aborting the OpenCode session failed");
                }
            }
            Err(error) => {
                tracing::warn!(session = self.session, %error, "aborting the OpenCode session failed");
            }
        }
        end
    }
}

enum LookError {
    /// The server did not answer (counted against the budget).
    Unreachable(String),
    /// The task cannot go on (session gone, wrong password, ...).
    Fatal(String),
}

fn settings(backend: &TaskBackend) -> Result<&OpencodeSettings, BackendError> {
    backend
        .opencode
        .as_ref()
        .ok_or_else(|| "the task backend has no OpenCode settings".into())
}

/// The secret a `{{secret__name}}` reference names, revealed.
async fn reveal(store: &Store, workspace: &str, reference: &str) -> Result<Password, BackendError> {
    let Some(name) = placeholders::secrets_in([&reference.to_owned()])
        .into_iter()
        .next()
    else {
        return Err("the OpenCode password must be a {{secret__…}} reference".into());
    };
    match store.reveal_secret(workspace, &name).await {
        Ok(Some(value)) => Ok(Password::new(value.expose())),
        Ok(None) => Err(format!(
            "task backend \"opencode\": its password secret `{name}` does not exist"
        )
        .into()),
        Err(e) => {
            Err(format!("task backend \"opencode\": reading its password failed: {e}").into())
        }
    }
}

/// A started server's configuration with its `{{secret__…}}` references
/// rendered, and the values revealed (to scrub from errors).
async fn render_config(
    store: &Store,
    workspace: &str,
    config: Option<&Value>,
) -> Result<(Value, Vec<String>), BackendError> {
    let Some(config) = config else {
        return Ok((Value::Object(serde_json::Map::new()), Vec::new()));
    };
    let mut names = Vec::new();
    collect_strings(config, &mut names);
    let mut revealed = HashMap::new();
    for name in placeholders::secrets_in(names.iter()) {
        let Some(value) = store.reveal_secret(workspace, &name).await.map_err(|e| {
            format!("reading the OpenCode configuration's secret `{name}` failed: {e}")
        })?
        else {
            return Err(
                format!("the OpenCode configuration's secret `{name}` does not exist").into(),
            );
        };
        revealed.insert(name, value.expose().to_owned());
    }
    let rendered = render_value(config, &|name| revealed.get(name).cloned());
    Ok((rendered, revealed.into_values().collect()))
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// `value` with `{{secret__…}}` placeholders in its strings rendered;
/// other placeholders are left as written.
fn render_value(value: &Value, lookup: &dyn Fn(&str) -> Option<String>) -> Value {
    match value {
        Value::String(s) if s.contains("{{") => Value::String(placeholders::render(s, |name| {
            if name.starts_with(rtc_core::names::SECRET_PREFIX) {
                lookup(name)
            } else {
                Some(format!("{{{{{name}}}}}"))
            }
        })),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| render_value(v, lookup)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), render_value(v, lookup)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Which configuration (and password) a server entry was made from.
fn slot_version(backend: &TaskBackend, password: Option<&Password>) -> String {
    let mut hash = Sha256::new();
    hash.update(backend.updated_at.as_deref().unwrap_or_default());
    hash.update([0]);
    if let Ok(settings) = serde_json::to_vec(&backend.opencode) {
        hash.update(settings);
    }
    hash.update([0]);
    if let Some(p) = password {
        hash.update(p.expose());
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn file_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "opencode_tests.rs"]
mod tests;
