//! TEMPORARY: replaced by the OpenCode driver (branch tbopencode).

use std::path::PathBuf;

pub(crate) struct OpencodeServers;

pub(crate) enum TaskEnd {
    #[allow(dead_code)]
    Completed(String),
    Failed(String),
    #[allow(dead_code)]
    Cancelled,
}

impl OpencodeServers {
    pub fn new(_policy: rtc_tools::net_guard::AddressPolicy, _data_dir: Option<PathBuf>) -> Self {
        Self
    }

    pub async fn start_task(
        &self,
        _store: &rtc_store::Store,
        _workspace: &str,
        _backend: &rtc_protocol::TaskBackend,
        _title: &str,
        _instruction: &str,
    ) -> Result<String, String> {
        Err("OpenCode backends are not wired in yet".into())
    }

    #[allow(clippy::too_many_arguments)]
    pub async fn follow_task(
        &self,
        _store: &rtc_store::Store,
        _workspace: &str,
        _backend: &rtc_protocol::TaskBackend,
        _external_id: &str,
        _deadline: tokio::time::Instant,
        _cancel: tokio_util::sync::CancellationToken,
        _progress: &(dyn Fn(String) + Send + Sync),
    ) -> TaskEnd {
        TaskEnd::Failed("OpenCode backends are not wired in yet".into())
    }

    pub async fn shutdown(&self) {}
}
