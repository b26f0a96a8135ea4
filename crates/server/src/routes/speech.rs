//! Speech interfaces (R-RT-8, design `voice-pipeline.md` §4(a)): the
//! speech-to-text and text-to-speech providers a pipeline assistant's
//! `speech` block names, and `check`, one request to the provider. The
//! key is stored and shown as its `{{secret__…}}` reference only. An
//! `espeak` interface starts local processes, so only the admin token may
//! create, change (to or from one) or delete it, as for stdio MCP servers;
//! an interface an assistant names is not deleted nor changed to the
//! other kind (409 `in_use`).

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use rtc_core::speech_rules::{check_speech, referenced_interfaces, validate_speech_interface};
use rtc_protocol::{
    Assistant, ErrorResponse, ListResponse, SpeechCheck, SpeechDialect, SpeechInterface,
};
use rtc_store::ResourceKind;

use super::{chosen_id, delete_doc, load, replace_doc};
use crate::extract::{ApiJson, ApiPath, Scope};
use crate::{ApiError, ApiResult, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/speech-interfaces", post(create).get(list))
        .route(
            "/v1/speech-interfaces/{id}",
            get(read).put(replace).delete(remove),
        )
        .route("/v1/speech-interfaces/{id}/check", post(check))
}

fn is_espeak(iface: &SpeechInterface) -> bool {
    iface.connection.dialect == SpeechDialect::Espeak
}

/// An espeak interface is the admin's to create, change or delete.
fn espeak_needs_admin(scope: &Scope, iface: &SpeechInterface, what: &str) -> ApiResult<()> {
    if is_espeak(iface) && !scope.is_admin {
        return Err(ApiError::forbidden(
            "stdio_requires_admin",
            format!(
                "only the admin token may {what} an espeak interface (each utterance starts a local espeak-ng process)"
            ),
        ));
    }
    Ok(())
}

/// The interface's rules with the workspace's secrets; espeak-ng present
/// for an espeak interface; its URL against the outbound guard (an
/// address it would refuse is refused at save already).
async fn validate(s: &AppState, workspace: &str, iface: &SpeechInterface) -> ApiResult<()> {
    let secrets = s.store.secret_names(workspace).await?;
    validate_speech_interface(iface, &|n| secrets.contains(n))?;
    if is_espeak(iface) && !rtc_runtime::espeak_installed() {
        return Err(ApiError::new(
            StatusCode::FAILED_DEPENDENCY,
            "speech_engine_unavailable",
            "espeak-ng is not installed on this server (set RTC_ESPEAK_BIN or put `espeak-ng` on PATH; Debian: apt-get install espeak-ng)",
        )
        .with_field("connection.dialect"));
    }
    let Some(raw) = &iface.connection.url else {
        return Ok(());
    };
    super::save_warnings::refuse_private_url(s, "connection.url", raw)
}

/// Declare a speech interface. An `espeak` one needs the admin token
/// (acting in a workspace with `X-Rtc-Workspace`) and espeak-ng on the
/// server.
#[utoipa::path(post, operation_id = "createSpeechInterface", path = "/v1/speech-interfaces", tag = "speech-interfaces", request_body = SpeechInterface, security(("bearer" = [])),
    responses((status = 201, body = SpeechInterface),
        (status = 403, body = ErrorResponse, description = "`stdio_requires_admin`: only the admin token may create an espeak interface"),
        (status = 409, body = ErrorResponse), (status = 422, body = ErrorResponse),
        (status = 424, body = ErrorResponse, description = "`speech_engine_unavailable`: espeak-ng is not installed on this server")))]
pub async fn create(
    scope: Scope,
    State(s): State<AppState>,
    ApiJson(iface): ApiJson<SpeechInterface>,
) -> ApiResult<(StatusCode, Json<SpeechInterface>)> {
    let id = chosen_id(iface.id.clone())?;
    espeak_needs_admin(&scope, &iface, "create")?;
    validate(&s, &scope.workspace, &iface).await?;
    Ok((
        StatusCode::CREATED,
        Json(s.store.insert(&scope.workspace, id, iface).await?),
    ))
}

/// The workspace's speech interfaces, oldest first.
#[utoipa::path(get, operation_id = "listSpeechInterfaces", path = "/v1/speech-interfaces", tag = "speech-interfaces", security(("bearer" = [])),
    responses((status = 200, body = ListResponse<SpeechInterface>)))]
pub async fn list(
    scope: Scope,
    State(s): State<AppState>,
) -> ApiResult<Json<ListResponse<SpeechInterface>>> {
    Ok(Json(ListResponse::new(
        s.store.list(&scope.workspace).await?,
    )))
}

#[utoipa::path(get, operation_id = "getSpeechInterface", path = "/v1/speech-interfaces/{id}", tag = "speech-interfaces", security(("bearer" = [])),
    responses((status = 200, body = SpeechInterface), (status = 404, body = ErrorResponse)))]
pub async fn read(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<SpeechInterface>> {
    load(&s, &scope.workspace, &id).await.map(Json)
}

/// The assistants naming interface `id` that `iface` would leave invalid:
/// a change of kind is 409 `in_use`; another change that breaks one (an
/// STT without endpointing under turn detection `stt`) is 409
/// `breaks_assistant`.
async fn keeps_assistants(
    s: &AppState,
    workspace: &str,
    id: &str,
    existing: &SpeechInterface,
    iface: &SpeechInterface,
) -> ApiResult<()> {
    let referrers = s
        .store
        .referrers(workspace, ResourceKind::SpeechInterface, id)
        .await?;
    if referrers.is_empty() {
        return Ok(());
    }
    if existing.kind != iface.kind {
        let list: Vec<String> = referrers
            .iter()
            .map(|r| format!("{} `{}`", r.kind.as_str(), r.id))
            .collect();
        return Err(ApiError::conflict(
            "in_use",
            format!(
                "the interface's kind cannot change while it is used: still used by {}",
                list.join(", ")
            ),
        ));
    }
    for r in referrers
        .iter()
        .filter(|r| r.kind == ResourceKind::Assistant)
    {
        let Some(a) = s.store.get::<Assistant>(workspace, &r.id).await? else {
            continue;
        };
        let mut named: BTreeMap<String, SpeechInterface> = s
            .store
            .get_many(workspace, referenced_interfaces(&a))
            .await?;
        named.insert(id.to_owned(), iface.clone());
        if let Err(e) = check_speech(a.run_mode, a.speech.as_ref(), &named) {
            return Err(ApiError::conflict(
                "breaks_assistant",
                format!(
                    "this change would make assistant `{}` invalid at `{}`: {}",
                    r.id, e.field, e.message
                ),
            ));
        }
    }
    Ok(())
}

/// Replace a speech interface. Changing one to or from `espeak` needs the
/// admin token; the kind of an interface in use does not change (409).
#[utoipa::path(put, operation_id = "replaceSpeechInterface", path = "/v1/speech-interfaces/{id}", tag = "speech-interfaces", request_body = SpeechInterface, security(("bearer" = [])),
    responses((status = 200, body = SpeechInterface),
        (status = 403, body = ErrorResponse, description = "`stdio_requires_admin`: only the admin token may change an interface to or from espeak"),
        (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse, description = "`in_use`: an assistant uses the interface and the kind changed; `breaks_assistant`: the change would make an assistant naming it invalid"),
        (status = 422, body = ErrorResponse),
        (status = 424, body = ErrorResponse, description = "`speech_engine_unavailable`: espeak-ng is not installed on this server")))]
pub async fn replace(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(iface): ApiJson<SpeechInterface>,
) -> ApiResult<Json<SpeechInterface>> {
    let existing: SpeechInterface = load(&s, &scope.workspace, &id).await?;
    espeak_needs_admin(&scope, &existing, "change")?;
    espeak_needs_admin(&scope, &iface, "change")?;
    validate(&s, &scope.workspace, &iface).await?;
    keeps_assistants(&s, &scope.workspace, &id, &existing, &iface).await?;
    replace_doc(&s, &scope.workspace, &id, iface).await
}

/// Delete a speech interface no assistant names. Deleting an espeak one
/// needs the admin token.
#[utoipa::path(delete, operation_id = "deleteSpeechInterface", path = "/v1/speech-interfaces/{id}", tag = "speech-interfaces", security(("bearer" = [])),
    responses((status = 204),
        (status = 403, body = ErrorResponse, description = "`stdio_requires_admin`: only the admin token may delete an espeak interface"),
        (status = 404, body = ErrorResponse),
        (status = 409, body = ErrorResponse, description = "`in_use`: an assistant names the interface")))]
pub async fn remove(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    let existing: SpeechInterface = load(&s, &scope.workspace, &id).await?;
    espeak_needs_admin(&scope, &existing, "delete")?;
    delete_doc::<SpeechInterface>(&s, &scope.workspace, &id).await
}

/// Send the provider one request: a TTS speaks "This is a test.", an STT
/// hears 1 s of silence. `ok` with the latency to the first audio byte or
/// the transcript (and the audio spoken), or the provider's error (still a
/// 200: the check ran). A few per minute per workspace.
#[utoipa::path(post, operation_id = "checkSpeechInterface", path = "/v1/speech-interfaces/{id}/check", tag = "speech-interfaces", security(("bearer" = [])),
    responses((status = 200, body = SpeechCheck), (status = 404, body = ErrorResponse),
        (status = 422, body = ErrorResponse, description = "`unknown_secret`: the interface's key secret no longer exists"),
        (status = 429, body = ErrorResponse, description = "`too_many_speech_checks`: the workspace ran its speech checks of this minute")))]
pub async fn check(
    scope: Scope,
    State(s): State<AppState>,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<SpeechCheck>> {
    let iface: SpeechInterface = load(&s, &scope.workspace, &id).await?;
    if let Err(wait) = s
        .speech_checks
        .admit(&scope.workspace, std::time::Instant::now())
    {
        let secs = wait.as_secs().max(1);
        return Err(ApiError {
            retry_after: Some(secs),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_speech_checks",
                format!(
                    "a workspace runs at most {} speech interface checks a minute; try again in {secs} s",
                    s.speech_checks.per_minute()
                ),
            )
        });
    }
    Ok(Json(
        s.runtime
            .check_speech_interface(&scope.workspace, &iface)
            .await?,
    ))
}
