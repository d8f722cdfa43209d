//! The trace settings (the `otel_*` keys of the settings model, read from the standard `OTEL_*`
//! variables), checked and turned into what the SDK takes.

use std::collections::HashMap;

/// The `otel_*` settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceSettings {
    pub otel_exporter_otlp_endpoint: Option<String>,
    pub otel_exporter_otlp_traces_endpoint: Option<String>,
    pub otel_exporter_otlp_metrics_endpoint: Option<String>,
    pub otel_exporter_otlp_protocol: String,
    pub otel_exporter_otlp_headers: Option<String>,
    pub otel_service_name: String,
    pub otel_traces_sampler: String,
    pub otel_traces_sampler_arg: Option<String>,
    pub otel_instrumentation_genai_capture_message_content: bool,
    pub otel_semconv_stability_opt_in: String,
}

/// Where spans and metrics go.
#[derive(Debug)]
pub struct Endpoints {
    pub traces: String,
    pub metrics: String,
}

/// The sampler (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampler {
    AlwaysOn,
    AlwaysOff,
    Ratio(f64),
    ParentBasedAlwaysOn,
    ParentBasedAlwaysOff,
    ParentBasedRatio(f64),
}

impl Sampler {
    pub fn into_sdk(self) -> opentelemetry_sdk::trace::Sampler {
        use opentelemetry_sdk::trace::Sampler as S;
        match self {
            Sampler::AlwaysOn => S::AlwaysOn,
            Sampler::AlwaysOff => S::AlwaysOff,
            Sampler::Ratio(r) => S::TraceIdRatioBased(r),
            Sampler::ParentBasedAlwaysOn => S::ParentBased(Box::new(S::AlwaysOn)),
            Sampler::ParentBasedAlwaysOff => S::ParentBased(Box::new(S::AlwaysOff)),
            Sampler::ParentBasedRatio(r) => S::ParentBased(Box::new(S::TraceIdRatioBased(r))),
        }
    }
}

impl TraceSettings {
    /// The OTLP/HTTP endpoints, `None` when none is set (traces are off). An endpoint of all
    /// signals gets `/v1/traces` and `/v1/metrics` appended; a signal's own is taken as it is.
    pub fn endpoints(&self) -> Result<Option<Endpoints>, String> {
        let base = self.otel_exporter_otlp_endpoint.as_deref().filter(|s| !s.is_empty());
        let traces = self.otel_exporter_otlp_traces_endpoint.as_deref().filter(|s| !s.is_empty());
        let metrics = self.otel_exporter_otlp_metrics_endpoint.as_deref().filter(|s| !s.is_empty());
        if base.is_none() && traces.is_none() {
            return Ok(None);
        }
        match self.otel_exporter_otlp_protocol.as_str() {
            "http/protobuf" => {}
            other => {
                return Err(format!(
                    "otel_exporter_otlp_protocol '{other}' is not supported: agentd exports OTLP over \
                     http/protobuf (OTLP/HTTP, port 4318 by convention)"
                ))
            }
        }
        let join = |base: &str, path: &str| format!("{}/{path}", base.trim_end_matches('/'));
        let traces = match (traces, base) {
            (Some(traces), _) => traces.to_owned(),
            (None, Some(base)) => join(base, "v1/traces"),
            (None, None) => return Ok(None),
        };
        let metrics = match (metrics, base) {
            (Some(metrics), _) => metrics.to_owned(),
            (None, Some(base)) => join(base, "v1/metrics"),
            (None, None) => traces.replace("/v1/traces", "/v1/metrics"),
        };
        for url in [&traces, &metrics] {
            let parsed =
                url::Url::parse(url).map_err(|e| format!("otel_exporter_otlp_endpoint: '{url}': {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(format!("otel_exporter_otlp_endpoint: '{url}' must be an http(s) URL"));
            }
        }
        Ok(Some(Endpoints { traces, metrics }))
    }

    /// `OTEL_EXPORTER_OTLP_HEADERS`: `key=value` pairs, comma-separated, values percent-encoded.
    pub fn headers(&self) -> Result<HashMap<String, String>, String> {
        let mut headers = HashMap::new();
        let Some(list) = self.otel_exporter_otlp_headers.as_deref() else { return Ok(headers) };
        for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = pair.split_once('=') else {
                return Err(
                    "otel_exporter_otlp_headers: each header is key=value (its value not shown)".into()
                );
            };
            let value = url::form_urlencoded::parse(format!("v={value}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
            headers.insert(key.trim().to_owned(), value.trim().to_owned());
        }
        Ok(headers)
    }

    pub fn service_name(&self) -> String {
        match self.otel_service_name.trim() {
            "" => "agentd".to_owned(),
            name => name.to_owned(),
        }
    }

    pub fn sampler(&self) -> Result<Sampler, String> {
        let ratio = || -> Result<f64, String> {
            let arg = self.otel_traces_sampler_arg.as_deref().unwrap_or("1.0");
            match arg.trim().parse::<f64>() {
                Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
                _ => Err(format!("otel_traces_sampler_arg '{arg}' must be a ratio from 0 to 1")),
            }
        };
        Ok(match self.otel_traces_sampler.as_str() {
            "always_on" => Sampler::AlwaysOn,
            "always_off" => Sampler::AlwaysOff,
            "traceidratio" => Sampler::Ratio(ratio()?),
            "" | "parentbased_always_on" => Sampler::ParentBasedAlwaysOn,
            "parentbased_always_off" => Sampler::ParentBasedAlwaysOff,
            "parentbased_traceidratio" => Sampler::ParentBasedRatio(ratio()?),
            other => {
                return Err(format!(
                    "otel_traces_sampler '{other}' is not one of always_on, always_off, traceidratio, \
                     parentbased_always_on, parentbased_always_off, parentbased_traceidratio"
                ))
            }
        })
    }

    /// `OTEL_SEMCONV_STABILITY_OPT_IN` names `gen_ai_latest_experimental`: only the latest GenAI
    /// conventions' attributes (no `gen_ai.system` beside `gen_ai.provider.name`).
    pub fn latest_only(&self) -> bool {
        self.otel_semconv_stability_opt_in.split(',').any(|v| v.trim() == "gen_ai_latest_experimental")
    }

    /// Every problem of these settings, checked at start-up.
    pub fn check(&self) -> Result<(), String> {
        self.endpoints()?;
        self.headers()?;
        self.sampler()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_endpoint(endpoint: &str) -> TraceSettings {
        TraceSettings {
            otel_exporter_otlp_endpoint: Some(endpoint.to_owned()),
            otel_exporter_otlp_protocol: "http/protobuf".into(),
            ..TraceSettings::default()
        }
    }

    #[test]
    fn endpoints_follow_the_otlp_rules() {
        assert!(TraceSettings::default().endpoints().unwrap().is_none());
        let e = with_endpoint("http://collector:4318/").endpoints().unwrap().unwrap();
        assert_eq!(e.traces, "http://collector:4318/v1/traces");
        assert_eq!(e.metrics, "http://collector:4318/v1/metrics");
        let own = TraceSettings {
            otel_exporter_otlp_traces_endpoint: Some("http://x:1/custom".into()),
            ..with_endpoint("http://collector:4318")
        };
        assert_eq!(own.endpoints().unwrap().unwrap().traces, "http://x:1/custom");
        let grpc =
            TraceSettings { otel_exporter_otlp_protocol: "grpc".into(), ..with_endpoint("http://c:4317") };
        assert!(grpc.endpoints().unwrap_err().contains("http/protobuf"));
        assert!(with_endpoint("ftp://c").endpoints().is_err());
    }

    #[test]
    fn headers_samplers_and_opt_in_parse() {
        let s = TraceSettings {
            otel_exporter_otlp_headers: Some("api_key=a%20b, x=1".into()),
            otel_traces_sampler: "parentbased_traceidratio".into(),
            otel_traces_sampler_arg: Some("0.25".into()),
            otel_semconv_stability_opt_in: "http,gen_ai_latest_experimental".into(),
            ..TraceSettings::default()
        };
        let headers = s.headers().unwrap();
        assert_eq!(headers["api_key"], "a b");
        assert_eq!(headers["x"], "1");
        assert_eq!(s.sampler().unwrap(), Sampler::ParentBasedRatio(0.25));
        assert!(s.latest_only());
        let bad = TraceSettings { otel_exporter_otlp_headers: Some("secretvalue".into()), ..s.clone() };
        assert!(!bad.headers().unwrap_err().contains("secretvalue"));
        let bad = TraceSettings { otel_traces_sampler: "sometimes".into(), ..s };
        assert!(bad.sampler().is_err());
    }
}
