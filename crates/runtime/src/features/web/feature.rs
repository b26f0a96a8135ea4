//! The web: `webSearch` and `webFetch`, offered when the server has them.

use std::sync::Arc;

use crate::Inner;
use crate::feature::Feature;
use crate::tool::ToolHandler;

pub(crate) struct Web;

impl Feature<Inner> for Web {
    fn name(&self) -> &'static str {
        "web"
    }

    fn tools(&self) -> Vec<Arc<dyn ToolHandler<Inner>>> {
        vec![
            Arc::new(crate::features::web::web_search::WebSearch),
            Arc::new(crate::features::web::web_fetch::WebFetch),
        ]
    }
}
