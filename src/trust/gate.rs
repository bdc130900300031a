//! The gate of one dispatch's layers: what the user and data layers say of the others (whether
//! every project is trusted, which agents' own files are read), and each layer inside the
//! project let in or held back by its own trust (contract §12, §13).

use std::path::{Path, PathBuf};

use super::{assess_read, trust_all_in, Assessment, ProjectTrust, State};
use crate::settings::layers::{self, LayerKind, LayerPath};
use crate::settings::sandbox;

/// Applies the user and data layers' settings and each project layer's trust to the layers of
/// one dispatch, in layer order.
#[derive(Debug)]
pub struct Gate {
    root: PathBuf,
    trust_all: bool,
    /// The agents' switches the user or data layer turned on (`claudeCodeHooks`).
    switches: Vec<&'static str>,
    /// The user or data layer's file that sets `sandboxProjectHooks` (contract §20).
    sandbox_projects: Option<PathBuf>,
    /// The assessment of each layer inside the project that had hooks to assess, in layer
    /// order.
    pub assessments: Vec<Assessment>,
}

impl Gate {
    pub fn new(root: &Path) -> Gate {
        Gate {
            root: root.to_path_buf(),
            trust_all: false,
            switches: Vec::new(),
            sandbox_projects: None,
            assessments: Vec::new(),
        }
    }

    /// Returns true if and only if a layer of `kind` is read at all: an agent's own file only
    /// when a user or data layer read before it turns it on (contract §12).
    pub fn opens(&self, kind: LayerKind) -> bool {
        kind.switch().is_none_or(|s| self.switches.contains(&s))
    }

    /// The user or data layer's file that puts the project's handlers in a sandbox
    /// (`sandboxProjectHooks`), once one read so far does.
    pub fn sandboxes_projects(&self) -> Option<&Path> {
        self.sandbox_projects.as_deref()
    }

    /// The agents' switches turned on so far.
    pub fn switches(&self) -> &[&'static str] {
        &self.switches
    }

    /// Returns true if and only if the layer's contents may be used; a layer held back gets
    /// its warning in `warnings`.
    pub fn admit(
        &mut self,
        layer: &LayerPath,
        bytes: &[u8],
        read: &std::fs::Metadata,
        warnings: &mut Vec<String>,
    ) -> bool {
        match layer.kind {
            LayerKind::User | LayerKind::Data => {
                if !layers::may_name_personal_settings(bytes) {
                    return true;
                }
                match trust_all_in(bytes) {
                    Ok(Some(on)) => self.trust_all |= on,
                    Ok(None) => {}
                    Err(problem) => warnings.push(format!("{}: {problem}", layer.path.display())),
                }
                layers::switches_in(bytes, &layer.path, &mut self.switches, warnings);
                if self.sandbox_projects.is_none()
                    && sandbox::projects_sandboxed(bytes, &layer.path, warnings)
                {
                    self.sandbox_projects = Some(layer.path.clone());
                }
                true
            }
            kind if kind.project_file().is_some() => {
                let assessment =
                    assess_read(&self.root, kind, bytes, Some(read), self.trust_all, false);
                let admitted = assessment.state.admits();
                warnings.extend(assessment.warnings.iter().cloned());
                if !admitted {
                    warnings.push(assessment.warning());
                }
                if assessment.state != State::NoHooks {
                    self.assessments.push(assessment);
                }
                admitted
            }
            _ => true,
        }
    }

    /// The project root the layers were read for, as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `project_trust` of the dispatch: the first layer inside the project that was held
    /// back, when one was.
    pub fn held_back(&self) -> Option<ProjectTrust> {
        self.assessments
            .iter()
            .find(|a| !a.state.admits())
            .map(Assessment::report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one search that spares the others finds every setting they look for.
    #[test]
    fn every_personal_setting_is_found_by_the_first_search() {
        let mut names = vec![super::super::TRUST_ALL, sandbox::PROJECT_SWITCH];
        names.extend(layers::agent_layers().filter_map(|(kind, _)| kind.switch()));
        for name in names {
            let text = format!("{{\"{name}\": true}}");
            assert!(
                layers::may_name_personal_settings(text.as_bytes()),
                "{name}"
            );
        }
        assert!(!layers::may_name_personal_settings(
            br#"{"hooks":{"Stop":[]}}"#
        ));
    }
}
