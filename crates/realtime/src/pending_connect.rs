//! TEMPORARY (replaced by the adapters' `connect` before merging).
use super::*;
pub async fn connect(
    _cfg: &ProviderCfg,
) -> Result<(
    Box<dyn RealtimeAdapter>,
    tokio::sync::mpsc::Receiver<RtEvent>,
)> {
    Err(RealtimeError::Unsupported("connecting"))
}
