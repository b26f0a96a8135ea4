//! OpenTelemetry traces over OTLP (HTTP, protobuf), switched on by the
//! standard environment variables: `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), with `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` and the `OTEL_BSP_*`
//! batch settings read by the SDK. The runtime's spans (target `gen_ai`,
//! see `rtc_runtime::telemetry`) go to the exporter only; the log does not
//! show them.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

/// The exporter's provider, flushed at exit.
#[derive(Default)]
pub struct Telemetry(Option<SdkTracerProvider>);

impl Telemetry {
    /// Export what is still batched, then stop.
    pub fn shutdown(&self) {
        if let Some(p) = &self.0
            && let Err(e) = p.shutdown()
        {
            eprintln!("OpenTelemetry: the last spans were not exported: {e}");
        }
    }
}

fn set(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether the environment asks for OTLP trace export.
pub fn wanted() -> bool {
    let endpoint =
        set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT"));
    let disabled = set("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || set("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
    endpoint.is_some() && !disabled
}

/// The layer exporting the runtime's spans, when the environment asks.
pub fn layer<S>() -> anyhow::Result<(Option<impl Layer<S>>, Telemetry)>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    if !wanted() {
        return Ok((None, Telemetry::default()));
    }
    if let Some(p) = set("OTEL_EXPORTER_OTLP_PROTOCOL").filter(|p| p != "http/protobuf") {
        eprintln!(
            "OpenTelemetry: OTEL_EXPORTER_OTLP_PROTOCOL={p} is not supported; exporting over http/protobuf"
        );
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .build()?;
    let mut resource = Resource::builder();
    if set("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("rtc-agent");
    }
    let resource = resource
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("rtc-agent");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(Targets::new().with_target(rtc_runtime::SPAN_TARGET, tracing::Level::TRACE));
    Ok((Some(layer), Telemetry(Some(provider))))
}
