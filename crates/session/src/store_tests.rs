//! The store the kernel's unit tests run on: one workspace, one session.

use rtc_store::{MasterKey, NewSession, SecretBox, Store};
use serde_json::Map;

/// An SQLite store in `dir` with workspace `ws` and session `s`.
pub(crate) async fn store_with_session(dir: &tempfile::TempDir) -> Store {
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let store = Store::connect(&url, SecretBox::new(&MasterKey::generate()))
        .await
        .unwrap();
    store.migrate().await.unwrap();
    store.create_workspace("ws", "w", "k").await.unwrap();
    store
        .create_session(NewSession {
            id: "s",
            workspace_id: "ws",
            assistant_id: "a",
            parent_id: None,
            root_id: "s",
            user_id: None,
            title: None,
            variables: &Map::new(),
            config: "{}",
            client_token: "t",
            workflow_id: None,
            owner: None,
        })
        .await
        .unwrap();
    store
}
