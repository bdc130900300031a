//! Spans as the OpenTelemetry project's own OTLP messages (`opentelemetry-proto`), encoded as
//! protobuf or as OTLP/JSON.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{
    span, status, ResourceSpans, ScopeSpans, Span, Status,
};
use prost::Message as _;

use crate::telemetry::config::{Config, Protocol};
use crate::telemetry::{Attr, SpanRecord};

/// The instrumentation scope's name.
pub const SCOPE: &str = "levelcode-hooks";

/// The request body for `spans`, in the configured protocol. The spans are taken, not copied.
pub fn body(config: &Config, spans: Vec<SpanRecord>) -> Vec<u8> {
    let request = request(config, spans);
    match config.protocol {
        Protocol::Protobuf => request.encode_to_vec(),
        Protocol::Json => serde_json::to_vec(&request).unwrap_or_default(),
    }
}

pub fn request(config: &Config, spans: Vec<SpanRecord>) -> ExportTraceServiceRequest {
    let resource = Resource {
        attributes: config
            .resource
            .iter()
            .map(|(k, v)| key_value(k, Attr::Str(v.clone())))
            .collect(),
        ..Resource::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: SCOPE.into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..InstrumentationScope::default()
                }),
                spans: spans.into_iter().map(span).collect(),
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

fn span(record: SpanRecord) -> Span {
    Span {
        trace_id: record.trace_id.to_vec(),
        span_id: record.span_id.to_vec(),
        parent_span_id: record.parent.map(|p| p.to_vec()).unwrap_or_default(),
        name: record.name,
        kind: span::SpanKind::Internal as i32,
        start_time_unix_nano: record.start,
        end_time_unix_nano: record.end.max(record.start),
        attributes: record
            .attributes
            .into_iter()
            .map(|(k, v)| key_value(k, v))
            .collect(),
        // The W3C flags (sampled), and whether the parent is known to be remote.
        flags: 0x01 | 0x100 | if record.remote_parent { 0x200 } else { 0 },
        status: Some(match record.error {
            Some(message) => Status {
                code: status::StatusCode::Error as i32,
                message,
            },
            None => Status::default(),
        }),
        ..Span::default()
    }
}

fn key_value(key: &str, value: Attr) -> KeyValue {
    let value = match value {
        Attr::Str(s) => any_value::Value::StringValue(s),
        Attr::Int(i) => any_value::Value::IntValue(i),
        Attr::Bool(b) => any_value::Value::BoolValue(b),
        Attr::Double(d) => any_value::Value::DoubleValue(d),
    };
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}
