//! The kernel's host: [`Inner`] embeds the session kernel with what only
//! the runtime has (its configuration, the MCP connections, the slots of
//! conversation tests) and derefs to it. It carries no feature's
//! methods: each feature works through its own `feature::Service`. Built
//! once, here: the features in their order (`features::registered`),
//! their services, and the executors behind the kernel's `RemoteTools`
//! port.

use std::ops::Deref;
use std::sync::Arc;

use rtc_session::extensions::Extensions;
use rtc_session::{Host, Kernel, KernelParts};
use rtc_store::Store;
use rtc_tools::mcp::McpPool;

use crate::RuntimeConfig;
use crate::executor::Executors;
use crate::fair_gate::FairGate;

/// The kernel with the runtime's own parts.
pub(crate) struct Inner {
    kernel: Kernel<Inner>,
    pub config: RuntimeConfig,
    /// How HTTP and MCP tools run (also the kernel's `RemoteTools`).
    pub executors: Arc<Executors>,
    /// Slots of conversation test runs (`RuntimeConfig::tests`).
    pub test_slots: Arc<FairGate>,
    /// Slots of tool tests (`tool_test::TOOL_TEST_LIMITS`).
    pub tool_test_slots: Arc<FairGate>,
    /// The server's espeak-ng processes (`RTC_ESPEAK_MAX`, half of them
    /// per workspace), shared by voice sessions and interface checks.
    pub espeak: rtc_speech::EspeakLimiter,
}

impl Deref for Inner {
    type Target = Kernel<Inner>;

    fn deref(&self) -> &Kernel<Inner> {
        &self.kernel
    }
}

impl Host for Inner {
    type Config = RuntimeConfig;

    fn config(&self) -> &RuntimeConfig {
        &self.config
    }
}

impl Inner {
    /// The runtime's host with its kernel started.
    pub(crate) fn build(store: Store, config: RuntimeConfig) -> Arc<Self> {
        let features = crate::features::registered();
        let mut services = Extensions::default();
        for feature in &features {
            feature.services(&config, &mut services);
        }
        let executors = Arc::new(Executors {
            store: store.clone(),
            http: config.http.clone(),
            mcp: config.mcp,
            mcp_pool: McpPool::default(),
            mcp_call_timeout: config.mcp_call_timeout,
        });
        let inner = Arc::new_cyclic(|host| Inner {
            kernel: Kernel::new(
                host.clone(),
                KernelParts {
                    store,
                    settings: config.kernel.clone(),
                    features,
                    services,
                    remote_tools: executors.clone(),
                },
            ),
            test_slots: FairGate::new(config.tests),
            tool_test_slots: FairGate::new(crate::tool_test::TOOL_TEST_LIMITS),
            espeak: rtc_speech::EspeakLimiter::from_env(),
            config,
            executors,
        });
        inner.start();
        inner
    }
}
