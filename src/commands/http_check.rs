//! Would an http handler be sent as its settings write it (contract §19): what `validate` says
//! of one, as `command_check` says whether a handler's program would start.

use crate::settings::{HttpHook, ALLOW_PLAIN_HTTP};

/// One problem of an http handler: the field it is in, its kind (for `validate --json`) and
/// what to do.
pub struct Problem {
    pub field: &'static str,
    pub kind: &'static str,
    pub message: String,
}

/// The problems its settings alone show: a header naming a variable `allowedEnvVars` does not
/// list (it is sent empty), plain `http://` to another machine without `"allowPlainHttp":
/// true` (it is not sent), and characters people cannot see.
pub fn check(hook: &HttpHook) -> Vec<Problem> {
    let mut problems = Vec::new();
    for var in hook.unlisted_variables() {
        problems.push(Problem {
            field: "headers",
            kind: "http_unlisted_variable",
            message: format!(
                "a header names ${var}, which allowedEnvVars does not list, so it is sent as the empty string; add {var:?} to allowedEnvVars if its value is meant to be sent"
            ),
        });
    }
    if let Ok(url) = crate::http::Url::parse(&hook.url) {
        if !url.https && !url.is_loopback() && !hook.plain_allowed {
            problems.push(Problem {
                field: "url",
                kind: "http_plain",
                message: format!(
                    "plain http:// to {}, which is not this machine: the handler is not sent, since the event would travel unprotected; use https://, or set \"{ALLOW_PLAIN_HTTP}\": true at the top of this settings file",
                    url.host
                ),
            });
        }
    }
    let texts = std::iter::once(hook.url.as_str())
        .chain(
            hook.headers
                .iter()
                .flat_map(|(n, v)| [n.as_str(), v.as_str()]),
        )
        .chain(hook.allowed_env_vars.iter().map(String::as_str));
    let shown: Vec<&str> = texts.collect();
    if shown
        .iter()
        .any(|t| crate::commands::visible::needs_warning(t))
    {
        problems.push(Problem {
            field: "url",
            kind: "invisible_characters",
            message: format!(
                "{}: {}",
                crate::commands::visible::warning("this handler"),
                crate::commands::visible::escape(&shown.join(" "))
            ),
        });
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hook(url: &str, headers: &[(&str, &str)], allowed: &[&str], plain: bool) -> HttpHook {
        HttpHook {
            url: url.into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            allowed_env_vars: allowed.iter().map(|a| a.to_string()).collect(),
            plain_allowed: plain,
        }
    }

    #[test]
    fn unlisted_variables_and_plain_http_elsewhere_are_named() {
        let kinds = |h: &HttpHook| check(h).into_iter().map(|p| p.kind).collect::<Vec<_>>();
        let ok = hook("https://p.example/", &[("A", "$TOKEN")], &["TOKEN"], false);
        assert!(kinds(&ok).is_empty());
        let unlisted = hook(
            "https://p.example/",
            &[("A", "$TOKEN ${HOME}")],
            &["TOKEN"],
            false,
        );
        let problems = check(&unlisted);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.contains("$HOME"),
            "{}",
            problems[0].message
        );
        assert_eq!(
            kinds(&hook("http://p.example/", &[], &[], false)),
            ["http_plain"]
        );
        assert!(kinds(&hook("http://p.example/", &[], &[], true)).is_empty());
        assert!(kinds(&hook("http://127.0.0.1:9/", &[], &[], false)).is_empty());
        assert_eq!(
            kinds(&hook("https://p.example/\u{202e}x", &[], &[], false)),
            ["invisible_characters"]
        );
    }
}
