//! A handler's sandbox made the runner's confinement (contract §20): the rules of its policy
//! for this project (the root, the temporary folder, `/dev/null` and the paths the policy adds),
//! refused when the kernel cannot enforce them, and prepared once per dispatch for each
//! distinct policy, so that a chain of sandboxed handlers builds one ruleset. A dispatch with no
//! sandboxed handler never comes here.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::environment;
use crate::runner::confine::{self, Prepared, Rules};
use crate::settings::sandbox::{self, Policy, Sandbox};
use crate::settings::{Group, Handler};

/// The sandbox `handler` of `group` runs in: its own, or, when the managed file `floor` sets
/// `sandboxProjectHooks` and the handler is a project layer's, the default policy, with the
/// warning of what of its own that left out. (A user or data layer's switch was applied when
/// the groups were read, `dispatch::load`; the managed layer is read afresh by every dispatch,
/// so its switch is applied here, where `serve`'s cached groups pass too.)
pub(super) fn effective<'h>(
    handler: &'h Handler,
    group: &Group,
    floor: Option<&Path>,
) -> (Cow<'h, Sandbox>, Option<String>) {
    match floor {
        Some(by) if group.source.layer.project_file().is_some() => {
            let (floored, ignored) = handler.sandbox.floored();
            let warning = ignored.map(|ignored| {
                sandbox::ignored_warning(&group.source.file, &handler.path(group), &ignored, by)
            });
            (Cow::Owned(floored), warning)
        }
        _ => (Cow::Borrowed(&handler.sandbox), None),
    }
}

/// What one run is confined by.
pub enum Confine<'a> {
    /// Nothing: it runs with the rights of the person who started the agent.
    None,
    /// This confinement.
    In(&'a Prepared),
    /// Its policy cannot be enforced here: it is not run, and the text says why.
    Refused(String),
}

/// The confinements of one dispatch, each prepared once, in the order first asked for.
#[derive(Default)]
pub(super) struct Confinements {
    built: Vec<(Rules, Result<Prepared, String>)>,
}

impl Confinements {
    /// The confinement of a handler whose policy is `policy`, in the project at `root`, and the
    /// note its entry gets when best effort left something out.
    pub(super) fn of(
        &mut self,
        policy: Option<&Policy>,
        root: &Path,
    ) -> (Confine<'_>, Option<String>) {
        let Some(policy) = policy else {
            return (Confine::None, None);
        };
        let (rules, temp_note) =
            match rules(policy, root, environment::temp_dir(), environment::home()) {
                Ok(made) => made,
                Err(why) => return (Confine::Refused(refused(&why)), None),
            };
        let at = match self.built.iter().position(|(built, _)| *built == rules) {
            Some(at) => at,
            None => {
                let prepared = confine::prepare(&rules);
                self.built.push((rules, prepared));
                self.built.len() - 1
            }
        };
        match &self.built[at].1 {
            Err(why) => (Confine::Refused(refused(why)), None),
            Ok(prepared) => {
                let mut left: Vec<String> = prepared
                    .left_out
                    .iter()
                    .map(|part| format!("{} (needs {})", part.name(), part.needs()))
                    .collect();
                left.extend(temp_note);
                let note = (!left.is_empty()).then(|| {
                    format!(
                        "sandboxed as far as this system goes (\"best-effort\"); left out: {}",
                        left.join(", ")
                    )
                });
                (Confine::In(prepared), note)
            }
        }
    }
}

/// The runner's rules of `policy` in the project at `root`, as [`Confinements::of`] makes
/// them: what a process started later (a background handler's supervisor, contract §21)
/// prepares again. `None` when they cannot be had, as `of` refuses.
pub(super) fn rules_for(policy: &Policy, root: &Path) -> Option<Rules> {
    rules(policy, root, environment::temp_dir(), environment::home())
        .ok()
        .map(|(rules, _)| rules)
}

/// The message of a handler not run because its sandbox cannot be had.
fn refused(why: &str) -> String {
    format!(
        "not run: its sandbox cannot be enforced here: {why}; levelcode-hooks sandbox --check shows what can be, and \"sandbox\": \"best-effort\" runs it with that"
    )
}

/// The runner's rules of `policy` in the project at `root`, with `temp` as the temporary
/// folder and `home` for `~/…`: writes beneath the root, the temporary folder, `/dev/null` and
/// the policy's own paths. A temporary folder that holds the home directory (a `TMPDIR` of `/`
/// or of the home itself) would let the handler write `~/.bashrc`: such a policy is refused,
/// or under best effort runs without the temporary folder, which the note then says.
fn rules(
    policy: &Policy,
    root: &Path,
    temp: &Path,
    home: Option<&Path>,
) -> Result<(Rules, Option<String>), String> {
    let mut write: Vec<PathBuf> = vec![root.to_path_buf()];
    let mut note = None;
    let holds_home = home.is_some_and(|home| home.starts_with(temp)) || temp == Path::new("/");
    if !holds_home {
        write.push(temp.to_path_buf());
    } else if policy.best_effort {
        note = Some(format!(
            "the temporary folder {}, which holds the home directory",
            temp.display()
        ));
    } else {
        return Err(format!(
            "the temporary folder {} holds the home directory, and writing there would reach it; set TMPDIR to a folder of its own",
            temp.display()
        ));
    }
    write.push(PathBuf::from("/dev/null"));
    write.extend(policy.write_paths(root, home));
    Ok((
        Rules {
            write,
            network: policy.network,
            best_effort: policy.best_effort,
        },
        note,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_are_the_root_the_temporary_folder_dev_null_and_the_policys_own() {
        let policy = Policy {
            write: vec!["build".into(), "~/.cache".into()],
            network: true,
            best_effort: false,
        };
        let (rules, note) = rules(
            &policy,
            Path::new("/p"),
            Path::new("/tmp"),
            Some(Path::new("/home/me")),
        )
        .unwrap();
        let write: Vec<&str> = rules.write.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(
            write,
            ["/p", "/tmp", "/dev/null", "/p/build", "/home/me/.cache"]
        );
        assert!(rules.network && !rules.best_effort);
        assert_eq!(note, None);
    }

    #[test]
    fn a_temporary_folder_that_holds_the_home_is_refused_or_left_out() {
        let home = Some(Path::new("/tmp/me"));
        for temp in ["/tmp", "/"] {
            let strict = rules(&Policy::default(), Path::new("/p"), Path::new(temp), home);
            let why = strict.err().unwrap();
            assert!(why.contains("holds the home directory"), "{why}");
            let best = Policy {
                best_effort: true,
                ..Policy::default()
            };
            let (rules, note) = rules(&best, Path::new("/p"), Path::new(temp), home).unwrap();
            assert!(
                !rules.write.contains(&PathBuf::from(temp)),
                "{:?}",
                rules.write
            );
            assert!(note.unwrap().contains(temp));
        }
    }
}
