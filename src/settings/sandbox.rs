//! A handler's sandbox as settings write it (contract §20): `"sandbox"` on a handler, on a group
//! (then for each of its handlers), or at the top of a levelcode settings file (then for each of
//! its handlers); a handler's own value wins over its group's, a group's over the layer's. And
//! `"sandboxProjectHooks"`, with which a user, data or managed layer puts every handler of the
//! project's layers in at least the default policy.
//!
//! Nothing here enforces anything: the pipeline makes the runner's rules of a [`Policy`]
//! (`dispatch/confine.rs`) and the runner applies them (`runner/confine.rs`).
//!
//! The values: `true` is the default policy; `false` (or no value) none; `"best-effort"` the
//! default policy run with whatever the kernel can enforce; an object `{"write": [paths],
//! "network": bool, "bestEffort": bool}` the default policy widened. A value this cannot read
//! never leaves a handler unconfined by mistake: the handler (or group, or layer) is skipped,
//! with a warning.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::settings::{short_json, Group};

/// The key, on a handler, a group or a layer.
pub const KEY: &str = "sandbox";
/// The string value that asks for the default policy, run with what the kernel can enforce.
pub const BEST_EFFORT: &str = "best-effort";
/// The setting of a user, data or managed layer that sandboxes every project handler.
pub const PROJECT_SWITCH: &str = "sandboxProjectHooks";
/// The keys of the object form.
const OBJECT_KEYS: [&str; 3] = ["write", "network", "bestEffort"];

/// A sandbox's policy: the default one, widened by what it says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Policy {
    /// Paths it may also write beneath, as written: absolute, relative to the project root, or
    /// `~/…`.
    pub write: Vec<String>,
    /// IP and Unix sockets are allowed.
    pub network: bool,
    /// It runs with what the kernel can enforce, naming what was left out, instead of not at all.
    pub best_effort: bool,
}

/// Where a handler's sandbox was said.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Origin {
    /// Nowhere: the handler runs with the person's rights.
    #[default]
    Unset,
    Handler,
    Group,
    /// The top-level `"sandbox"` of its settings file.
    Layer,
    /// `"sandboxProjectHooks"` in a user, data or managed layer, over a project handler.
    Switch,
}

/// A handler's sandbox: its policy, if it has one, and where that was said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sandbox {
    /// `None`: it runs with every right of the person who started the agent.
    pub policy: Option<Policy>,
    pub origin: Origin,
}

/// A `"sandbox"` value as read: `None` when it says nothing (`null`), else the policy (`None`
/// for `false`).
pub type Setting = Option<Option<Policy>>;

impl Sandbox {
    /// The sandbox of a handler whose own value is `own` and whose group's is `group`.
    pub fn resolve(own: Setting, group: Setting) -> Sandbox {
        match (own, group) {
            (Some(policy), _) => Sandbox {
                policy,
                origin: Origin::Handler,
            },
            (None, Some(policy)) => Sandbox {
                policy,
                origin: Origin::Group,
            },
            (None, None) => Sandbox::default(),
        }
    }

    /// This sandbox, unless neither the handler nor its group said anything: then the layer's
    /// `layer`.
    pub fn or_layer(&mut self, layer: &Option<Policy>) {
        if self.origin == Origin::Unset {
            self.policy.clone_from(layer);
            self.origin = Origin::Layer;
        }
    }

    /// The sandbox of a project handler under `sandboxProjectHooks`: the default policy,
    /// whatever the project said, and what of the project's own was left out, if anything.
    pub fn floored(&self) -> (Sandbox, Option<String>) {
        let floored = Sandbox {
            policy: Some(Policy::default()),
            origin: Origin::Switch,
        };
        let ignored = match &self.policy {
            Some(policy) => policy.widening(),
            None if self.origin != Origin::Unset => Some(format!("\"{KEY}\": false")),
            None => None,
        };
        (floored, ignored)
    }

    /// The sandbox as people read it: its policy, and where it was said.
    pub fn describe(&self) -> String {
        let text = match &self.policy {
            None => "none".to_string(),
            Some(policy) => policy.describe(),
        };
        match self.origin {
            Origin::Unset | Origin::Handler => text,
            Origin::Group => format!("{text} (from its group)"),
            Origin::Layer => format!("{text} (from its settings file's \"{KEY}\")"),
            Origin::Switch => format!("{text} ({PROJECT_SWITCH})"),
        }
    }
}

impl Origin {
    /// The name `list --json` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Origin::Unset => "unset",
            Origin::Handler => "handler",
            Origin::Group => "group",
            Origin::Layer => "layer",
            Origin::Switch => PROJECT_SWITCH,
        }
    }
}

impl Policy {
    /// The policy as people read it.
    pub fn describe(&self) -> String {
        let mut places = vec!["the project", "the temporary folder", "/dev/null"];
        places.extend(self.write.iter().map(String::as_str));
        let last = places.pop().unwrap_or_default();
        let mut text = format!("writes only in {} and {last}", places.join(", "));
        text.push_str(if self.network {
            "; network allowed (IP and Unix sockets)"
        } else {
            "; no network, no Unix socket outside it"
        });
        text.push_str("; no signal outside it");
        if self.best_effort {
            text.push_str("; best effort (runs with what the kernel enforces)");
        }
        text
    }

    /// What this policy adds to the default one, in words; `None` when nothing.
    pub fn widening(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.write.is_empty() {
            parts.push(format!("\"write\": {:?}", self.write));
        }
        if self.network {
            parts.push("\"network\": true".to_string());
        }
        if self.best_effort {
            parts.push(format!("\"{BEST_EFFORT}\""));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// The paths it may write beneath beside the default ones, made absolute: relative ones
    /// under `root`, `~/…` under `home` (left out when there is no home).
    pub fn write_paths(&self, root: &Path, home: Option<&Path>) -> Vec<PathBuf> {
        self.write
            .iter()
            .filter_map(|written| resolve(written, root, home))
            .collect()
    }

    /// The JSON `list --json`, `validate --json` and the trust status give a policy.
    pub fn json(&self) -> Value {
        serde_json::json!({
            "write": self.write,
            "network": self.network,
            "best_effort": self.best_effort,
        })
    }
}

/// A written path made absolute: relative to `root`, `~` and `~/…` under `home`.
pub fn resolve(written: &str, root: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if written == "~" {
        return home.map(Path::to_path_buf);
    }
    if let Some(rest) = written.strip_prefix("~/") {
        return home.map(|home| home.join(rest));
    }
    let path = Path::new(written);
    Some(if path.is_absolute() {
        path.to_path_buf()
    } else {
        root.join(path)
    })
}

/// Whether `bytes`, a user, data or managed layer's file, sets `sandboxProjectHooks` (contract
/// §20); a value that is not a boolean is a warning naming `file`, and counts as not set.
pub fn projects_sandboxed(bytes: &[u8], file: &Path, warnings: &mut Vec<String>) -> bool {
    match crate::settings::layers::boolean_setting(bytes, PROJECT_SWITCH) {
        Ok(on) => on.unwrap_or(false),
        Err(problem) => {
            warnings.push(format!("{}: {problem}", file.display()));
            false
        }
    }
}

/// Puts every handler of `groups`, a project layer's, in at least the default policy, because
/// the file `by` sets `sandboxProjectHooks`: what the project's own settings widened is left
/// out, with a warning naming the handler, what was left out and `by`.
pub fn floor_groups(groups: &mut [Group], by: &Path, warnings: &mut Vec<String>) {
    for group in groups.iter_mut() {
        let group_path = group.path();
        for handler in &mut group.handlers {
            let (floored, ignored) = handler.sandbox.floored();
            if let Some(ignored) = ignored {
                warnings.push(ignored_warning(
                    &group.source.file,
                    &format!("{group_path}.hooks[{}]", handler.index),
                    &ignored,
                    by,
                ));
            }
            handler.sandbox = floored;
        }
    }
}

/// The warning of a project handler whose own sandbox `sandboxProjectHooks` overrode.
pub fn ignored_warning(file: &Path, path: &str, ignored: &str, by: &Path) -> String {
    format!(
        "{}: {path}.{KEY}: {ignored} ignored: {} sets {PROJECT_SWITCH}, so the project's handlers run in the default sandbox, which the project cannot widen",
        file.display(),
        by.display()
    )
}

/// Reads a `"sandbox"` value (contract §20); the problem, for the caller to word what is
/// skipped, when it is not one this reads.
pub fn parse(value: &Value) -> Result<Setting, String> {
    match value {
        Value::Null => Ok(None),
        Value::Bool(true) => Ok(Some(Some(Policy::default()))),
        Value::Bool(false) => Ok(Some(None)),
        Value::String(text) if text == BEST_EFFORT => Ok(Some(Some(Policy {
            best_effort: true,
            ..Policy::default()
        }))),
        Value::Object(fields) => {
            if let Some(key) = fields.keys().find(|k| !OBJECT_KEYS.contains(&k.as_str())) {
                return Err(format!(
                    "has no key {key:?} (its keys are \"write\", \"network\" and \"bestEffort\"), and a sandbox it cannot read is not run"
                ));
            }
            let mut policy = Policy::default();
            match fields.get("write") {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        match item.as_str() {
                            Some(path) if is_path(path) => policy.write.push(path.to_string()),
                            _ => return Err(format!(
                                "write[{i}]: {} is not a path: write it absolute, relative to the project root, or as ~/...",
                                short_json(item)
                            )),
                        }
                    }
                }
                Some(other) => {
                    return Err(format!(
                        "write must be an array of paths such as [\"build\", \"~/.cache/tool\"], not {}",
                        short_json(other)
                    ))
                }
            }
            for (key, flag) in [
                ("network", &mut policy.network),
                ("bestEffort", &mut policy.best_effort),
            ] {
                match fields.get(key) {
                    None | Some(Value::Null) => {}
                    Some(Value::Bool(on)) => *flag = *on,
                    Some(other) => {
                        return Err(format!(
                            "{key} must be true or false, not {}",
                            short_json(other)
                        ))
                    }
                }
            }
            Ok(Some(Some(policy)))
        }
        other => Err(format!(
            "must be true, false, \"{BEST_EFFORT}\" or an object such as {{\"write\": [\"build\"], \"network\": false}}, not {}",
            short_json(other)
        )),
    }
}

/// Returns true if and only if `written` is a path this reads: not empty, no NUL byte, and a
/// `~` only as `~` or `~/…` (another user's `~name` is not read).
fn is_path(written: &str) -> bool {
    !written.is_empty()
        && !written.contains('\0')
        && (!written.starts_with('~') || written == "~" || written.starts_with("~/"))
}

/// A `"sandbox"` value the fast reader took, a boolean or a string: the setting, or `None` for
/// a string that is not `"best-effort"` (the general path warns about it).
pub(super) fn from_word(word: Word<'_>) -> Option<Setting> {
    match word {
        Word::Bool(true) => Some(Some(Some(Policy::default()))),
        Word::Bool(false) => Some(Some(None)),
        Word::Text(text) if text == BEST_EFFORT => Some(Some(Some(Policy {
            best_effort: true,
            ..Policy::default()
        }))),
        Word::Text(_) => None,
    }
}

/// A `"sandbox"` value as the fast reader takes it: a boolean or a string; an object goes the
/// general way.
#[derive(Debug)]
pub(super) enum Word<'a> {
    Bool(bool),
    Text(std::borrow::Cow<'a, str>),
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for Word<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct WordVisitor;
        impl<'de> serde::de::Visitor<'de> for WordVisitor {
            type Value = Word<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a boolean or a string")
            }
            fn visit_bool<E>(self, b: bool) -> Result<Word<'de>, E> {
                Ok(Word::Bool(b))
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Word<'de>, E> {
                Ok(Word::Text(std::borrow::Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Word<'de>, E> {
                Ok(Word::Text(std::borrow::Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Word<'de>, E> {
                Ok(Word::Text(std::borrow::Cow::Owned(s)))
            }
        }
        deserializer.deserialize_any(WordVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_form_reads_as_documented() {
        assert_eq!(parse(&json!(null)), Ok(None));
        assert_eq!(parse(&json!(true)), Ok(Some(Some(Policy::default()))));
        assert_eq!(parse(&json!(false)), Ok(Some(None)));
        let best = parse(&json!("best-effort")).unwrap().unwrap().unwrap();
        assert!(best.best_effort && !best.network && best.write.is_empty());
        let wide = parse(&json!({"write": ["build", "~/.cache", "/opt/x"], "network": true}))
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(wide.write, ["build", "~/.cache", "/opt/x"]);
        assert!(wide.network && !wide.best_effort);
        let object_best = parse(&json!({"bestEffort": true}))
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(object_best.best_effort);
    }

    #[test]
    fn a_value_it_cannot_read_is_a_problem_never_a_policy() {
        for (value, says) in [
            (json!(1), "must be true, false"),
            (json!("Best-Effort"), "must be true, false"),
            (json!([]), "must be true, false"),
            (json!({"read": ["x"]}), "has no key \"read\""),
            (json!({"write": "build"}), "write must be an array"),
            (json!({"write": [1]}), "write[0]: 1 is not a path"),
            (json!({"write": [""]}), "write[0]"),
            (json!({"write": ["~bob/x"]}), "write[0]"),
            (json!({"network": "yes"}), "network must be true or false"),
            (json!({"bestEffort": 1}), "bestEffort must be true or false"),
        ] {
            let problem = parse(&value).expect_err(&value.to_string());
            assert!(problem.contains(says), "{value}: {problem}");
        }
    }

    #[test]
    fn the_handler_wins_over_its_group_and_the_group_over_the_layer() {
        let on = Some(Some(Policy::default()));
        let off = Some(None);
        assert_eq!(Sandbox::resolve(off.clone(), on.clone()).policy, None);
        assert_eq!(Sandbox::resolve(off, on.clone()).origin, Origin::Handler);
        let from_group = Sandbox::resolve(None, on.clone());
        assert_eq!(from_group.origin, Origin::Group);
        let mut unset = Sandbox::resolve(None, None);
        unset.or_layer(&Some(Policy::default()));
        assert_eq!(unset.origin, Origin::Layer);
        assert!(unset.policy.is_some());
        // A handler that said false keeps it against the layer.
        let mut own_off = Sandbox::resolve(Some(None), None);
        own_off.or_layer(&Some(Policy::default()));
        assert_eq!(own_off.policy, None);
    }

    #[test]
    fn the_switch_floors_a_project_handler_and_names_what_it_left_out() {
        let wide = Sandbox {
            policy: Some(Policy {
                write: vec!["~".into()],
                network: true,
                best_effort: true,
            }),
            origin: Origin::Handler,
        };
        let (floored, ignored) = wide.floored();
        assert_eq!(floored.policy, Some(Policy::default()));
        assert_eq!(floored.origin, Origin::Switch);
        let ignored = ignored.unwrap();
        assert!(ignored.contains("\"network\": true"), "{ignored}");
        assert!(ignored.contains("best-effort"), "{ignored}");
        let (_, nothing) = Sandbox::default().floored();
        assert_eq!(nothing, None);
    }

    #[test]
    fn paths_resolve_against_the_root_and_the_home() {
        let root = Path::new("/p");
        let home = Some(Path::new("/h"));
        assert_eq!(
            resolve("build", root, home),
            Some(PathBuf::from("/p/build"))
        );
        assert_eq!(
            resolve("~/.cache", root, home),
            Some(PathBuf::from("/h/.cache"))
        );
        assert_eq!(resolve("~", root, home), Some(PathBuf::from("/h")));
        assert_eq!(resolve("/opt", root, home), Some(PathBuf::from("/opt")));
        assert_eq!(resolve("~/x", root, None), None);
    }

    #[test]
    fn people_read_the_policy_and_where_it_was_said() {
        let on = Sandbox {
            policy: Some(Policy::default()),
            origin: Origin::Group,
        };
        let text = on.describe();
        assert!(
            text.starts_with(
                "writes only in the project, the temporary folder and /dev/null; no network"
            ),
            "{text}"
        );
        assert!(text.ends_with("(from its group)"), "{text}");
        assert_eq!(Sandbox::default().describe(), "none");
        let wide = Policy {
            write: vec!["build".into()],
            network: true,
            best_effort: false,
        };
        assert!(wide
            .describe()
            .contains("/dev/null and build; network allowed"));
    }
}
