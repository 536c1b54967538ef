//! OpenTelemetry for `tern serve` and `tern proxy`: when the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! is set, every request (one round of a flow) is exported as a span over
//! OTLP/HTTP, joined to the caller's trace by the `traceparent` in its
//! `_meta` (META-3). Nothing is exported, and nothing costs, otherwise.

use std::collections::HashMap;
use std::sync::OnceLock;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The provider, kept to flush its last spans at exit.
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Whether an OTLP endpoint is configured in the environment.
fn configured() -> bool {
    [
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    ]
    .iter()
    .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()))
}

/// The exporting layer, when an endpoint is configured. The exporter reads
/// the standard variables itself (endpoint, headers, timeout; the batch
/// delay from `OTEL_BSP_SCHEDULE_DELAY`).
pub(crate) fn layer<S>(service: &'static str) -> Result<Option<impl Layer<S>>, String>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    if !configured() {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| format!("cannot set up the OTLP exporter: {e}"))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(service)
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("tern");
    let _ = PROVIDER.set(provider);
    tern::server::on_trace_parent(join);
    let only_requests = tracing_subscriber::filter::filter_fn(|m| {
        m.is_span() && m.name() == "request" && m.target().starts_with("tern")
    });
    Ok(Some(
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(only_requests),
    ))
}

/// Makes `span` a child of the caller's span named by `traceparent`.
fn join(span: &tracing::Span, traceparent: &str) {
    let mut carrier = HashMap::new();
    carrier.insert("traceparent".to_owned(), traceparent.to_owned());
    let parent = TraceContextPropagator::new().extract(&carrier);
    let _ = span.set_parent(parent);
}

/// Sends the spans still buffered (at exit).
pub(crate) fn flush() {
    if let Some(p) = PROVIDER.get() {
        let _ = p.force_flush();
        let _ = p.shutdown();
    }
}
