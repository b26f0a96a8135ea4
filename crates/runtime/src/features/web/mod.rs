//! The web tools (R-WS, R-WF): webSearch over the configured engines and
//! webFetch with extraction by the small model.
//!
//! `feature`: its hooks in the lifecycle; `service`: what its tools and the API do; `web_fetch`: the webFetch tool; `web_search`: the webSearch tool.

mod feature;
pub(crate) mod service;
pub(crate) mod web_fetch;
pub(crate) mod web_search;

pub(crate) use feature::Web;

/// The web feature's operations on its host.
pub(crate) type WebService<'a> = crate::feature::Service<'a, feature::Web>;
