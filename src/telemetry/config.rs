//! The export's configuration from the OpenTelemetry specification's variables
//! (`OTEL_EXPORTER_OTLP_*`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), each traces-specific
//! variable winning over its general one, as the specification says.

use std::path::PathBuf;
use std::time::Duration;

use crate::environment::OtelVars;
use crate::http::{Roots, Url};

/// How long a dispatch of `run` waits for the collector at most. docs/organisations.md promises
/// 250 ms of added delay: this wait, and a margin for a loaded machine's scheduling.
/// `OTEL_EXPORTER_OTLP_TIMEOUT` may make it shorter, never longer.
pub const FOREGROUND_BOUND: Duration = Duration::from_millis(200);

/// The specification's default timeout of one export, for `serve`'s exports in the background.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The service name when neither variable gives one.
pub const DEFAULT_SERVICE: &str = "levelcode-hooks";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Protobuf,
    Json,
}

impl Protocol {
    pub fn content_type(self) -> &'static str {
        match self {
            Protocol::Protobuf => "application/x-protobuf",
            Protocol::Json => "application/json",
        }
    }
}

/// Everything an export needs.
#[derive(Clone, Debug)]
pub struct Config {
    /// The URL the spans are posted to.
    pub endpoint: String,
    /// The certificates an `https://` endpoint is verified against: the system's, or those of
    /// `OTEL_EXPORTER_OTLP_CERTIFICATE`.
    pub roots: Roots,
    /// `OTEL_EXPORTER_OTLP_COMPRESSION=gzip`: the body is sent gzipped.
    pub gzip: bool,
    pub protocol: Protocol,
    pub headers: Vec<(String, String)>,
    /// One export's timeout (the background's); the foreground waits at most
    /// [`Config::foreground_bound`].
    pub timeout: Duration,
    /// `service.name` first, then the other resource attributes.
    pub resource: Vec<(String, String)>,
}

impl Config {
    pub fn foreground_bound(&self) -> Duration {
        self.timeout.min(FOREGROUND_BOUND)
    }
}

/// The configuration, or why there is no export: `Ok(None)` when it is off, `Err` with the one
/// warning when it is asked for but cannot be done.
pub fn from_vars(vars: &OtelVars) -> Result<Option<Config>, String> {
    let off = |v: &Option<String>, word: &str| {
        v.as_deref()
            .is_some_and(|v| v.trim().eq_ignore_ascii_case(word))
    };
    if off(&vars.sdk_disabled, "true") || off(&vars.traces_exporter, "none") {
        return Ok(None);
    }
    let (variable, url) = match (&vars.traces_endpoint, &vars.endpoint) {
        (Some(url), _) => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url.trim().to_string()),
        (None, Some(base)) => {
            let base = base.trim();
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("{}/v1/traces", base.trim_end_matches('/')),
            )
        }
        (None, None) => return Ok(None),
    };
    Url::parse(&url).map_err(|e| {
        format!("OpenTelemetry export is off: {variable}: {e}; set it to the collector's OTLP/HTTP address, such as http://127.0.0.1:4318 or https://collector.example.com:4318")
    })?;
    let roots = match (&vars.traces_certificate, &vars.certificate) {
        (Some(file), _) | (None, Some(file)) => Roots::File(PathBuf::from(file.trim())),
        (None, None) => Roots::System,
    };
    let (variable, compression) = match (&vars.traces_compression, &vars.compression) {
        (Some(c), _) => ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", Some(c.trim())),
        (None, Some(c)) => ("OTEL_EXPORTER_OTLP_COMPRESSION", Some(c.trim())),
        (None, None) => ("", None),
    };
    let gzip = match compression {
        None | Some("none") => false,
        Some("gzip") => true,
        Some(other) => {
            return Err(format!(
                "OpenTelemetry export is off: {variable} is {other:?}, which this dispatcher does not send; set {variable} to gzip or none"
            ))
        }
    };
    let (variable, protocol) = match (&vars.traces_protocol, &vars.protocol) {
        (Some(p), _) => ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", Some(p.trim())),
        (None, Some(p)) => ("OTEL_EXPORTER_OTLP_PROTOCOL", Some(p.trim())),
        (None, None) => ("", None),
    };
    let protocol = match protocol {
        None | Some("http/protobuf") => Protocol::Protobuf,
        Some("http/json") => Protocol::Json,
        Some(other) => {
            return Err(format!(
                "OpenTelemetry export is off: {variable} is {other:?}, which this dispatcher does not speak (OTLP over HTTP only); set {variable} to http/protobuf (the default) or http/json, with the endpoint at the collector's OTLP/HTTP port (4318, not gRPC's 4317)"
            ))
        }
    };
    let mut headers = Vec::new();
    for list in [&vars.headers, &vars.traces_headers].into_iter().flatten() {
        for (key, value) in pairs(list) {
            headers.retain(|(k, _): &(String, String)| !k.eq_ignore_ascii_case(&key));
            headers.push((key, value));
        }
    }
    headers.retain(|(k, v)| valid_header(k, v));
    let timeout = vars
        .traces_timeout
        .as_deref()
        .or(vars.timeout.as_deref())
        .and_then(|ms| ms.trim().parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map_or(DEFAULT_TIMEOUT, Duration::from_millis);
    let mut resource: Vec<(String, String)> = vars
        .resource_attributes
        .as_deref()
        .map(pairs)
        .unwrap_or_default();
    let service = vars
        .service_name
        .clone()
        .or_else(|| {
            resource
                .iter()
                .find(|(k, _)| k == "service.name")
                .map(|(_, v)| v.clone())
        })
        .unwrap_or_else(|| DEFAULT_SERVICE.to_string());
    resource.retain(|(k, _)| k != "service.name");
    resource.insert(0, ("service.name".into(), service));
    resource.push(("service.version".into(), env!("CARGO_PKG_VERSION").into()));
    Ok(Some(Config {
        endpoint: url,
        roots,
        gzip,
        protocol,
        headers,
        timeout,
        resource,
    }))
}

/// `key=value,key2=value2` with values percent-decoded (the specification's W3C Baggage-like
/// form); entries without `=` or with an empty key are left out.
pub fn pairs(list: &str) -> Vec<(String, String)> {
    list.split(',')
        .filter_map(|item| {
            let (key, value) = item.split_once('=')?;
            let key = key.trim();
            (!key.is_empty()).then(|| (percent_decode(key), percent_decode(value.trim())))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A header that cannot break the request: a token for a name, no line breaks in the value.
fn valid_header(key: &str, value: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        && !value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(endpoint: &str) -> OtelVars {
        OtelVars {
            endpoint: Some(endpoint.into()),
            ..OtelVars::default()
        }
    }

    #[test]
    fn the_traces_endpoint_is_used_as_given_and_the_general_one_gets_the_path() {
        let config = from_vars(&vars("http://127.0.0.1:4318/")).unwrap().unwrap();
        assert_eq!(config.endpoint, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(config.roots, Roots::System);
        assert!(!config.gzip);
        let mut v = vars("http://127.0.0.1:4318");
        v.traces_endpoint = Some("https://collector:9/custom".into());
        v.certificate = Some("/etc/ca.pem".into());
        v.compression = Some("gzip".into());
        let config = from_vars(&v).unwrap().unwrap();
        assert_eq!(config.endpoint, "https://collector:9/custom");
        assert_eq!(config.roots, Roots::File("/etc/ca.pem".into()));
        assert!(config.gzip);
        assert_eq!(config.protocol, Protocol::Protobuf);
    }

    #[test]
    fn protocol_headers_resource_and_timeout_follow_the_specification() {
        let mut v = vars("http://localhost:4318");
        v.protocol = Some("http/protobuf".into());
        v.traces_protocol = Some("http/json".into());
        v.headers = Some("api-key=a%20b, x-team=core,broken".into());
        v.traces_headers = Some("API-KEY=c".into());
        v.resource_attributes =
            Some("service.name=from-resource,deployment.environment=prod".into());
        v.timeout = Some("50".into());
        let config = from_vars(&v).unwrap().unwrap();
        assert_eq!(config.protocol, Protocol::Json);
        assert_eq!(
            config.headers,
            [
                ("x-team".into(), "core".into()),
                ("API-KEY".into(), "c".into())
            ]
        );
        assert_eq!(
            config.resource[0],
            ("service.name".into(), "from-resource".into())
        );
        assert!(config
            .resource
            .contains(&("deployment.environment".into(), "prod".into())));
        assert_eq!(config.foreground_bound(), Duration::from_millis(50));
        v.service_name = Some("svc".into());
        v.timeout = None;
        let config = from_vars(&v).unwrap().unwrap();
        assert_eq!(config.resource[0].1, "svc");
        assert_eq!(config.foreground_bound(), FOREGROUND_BOUND);
        assert_eq!(percent_decode("a%2Cb%zz%"), "a,b%zz%");
    }

    #[test]
    fn what_cannot_be_done_is_one_warning_and_what_is_off_is_none() {
        let mut v = vars("http://localhost:4318");
        v.protocol = Some("grpc".into());
        assert!(from_vars(&v).unwrap_err().contains("grpc"));
        assert!(from_vars(&vars("ftp://collector:4318"))
            .unwrap_err()
            .contains("not an http:// or https:// URL"));
        let mut v = vars("http://localhost:4318");
        v.traces_compression = Some("zstd".into());
        assert!(from_vars(&v).unwrap_err().contains("zstd"));
        let mut v = vars("http://localhost:4318");
        v.sdk_disabled = Some("TRUE".into());
        assert!(from_vars(&v).unwrap().is_none());
        let mut v = vars("http://localhost:4318");
        v.traces_exporter = Some("none".into());
        assert!(from_vars(&v).unwrap().is_none());
    }
}
