//! What a background run came to (contract §21), as it waits in a spool or a server's memory
//! and as the answer that hands it on shows it (`"background"`): its handler, its outcome, and
//! what it gives the agent, each text bounded so that no handler's output can make a record
//! large, whatever it prints.

use serde::{Deserialize, Serialize};

/// The most of each text a record keeps (its context, its message for the person, its warning,
/// its note): a record's JSON stays within [`MAX_RECORD`] even when every character of them
/// must be escaped.
pub const MAX_TEXT: usize = 8 << 10;

/// The most bytes of one record's JSON: four texts of [`MAX_TEXT`] and seven of a quarter of it,
/// each character escaped in at most six bytes, and the rest.
pub const MAX_RECORD: usize = 6 * (4 * MAX_TEXT + 7 * (MAX_TEXT / 4)) + (4 << 10);

/// The end of a background run, and what it hands on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Ended {
    pub label: String,
    pub layer: String,
    pub source: String,
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub matcher: Option<String>,
    /// The outcome's name, as a handler's entry writes it.
    pub outcome: String,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub signal: Option<i32>,
    pub duration_ms: f64,
    #[serde(default)]
    pub message: Option<String>,
    /// Its `additionalContext`, for the model.
    #[serde(
        default,
        rename = "additionalContext",
        skip_serializing_if = "Option::is_none"
    )]
    pub context: Option<String>,
    /// Its `systemMessage`, for the person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_message: Option<String>,
    /// Its failure, as a warning: an exit other than 0, a timeout, a spawn error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl Ended {
    /// The record with each text cut to [`MAX_TEXT`].
    pub fn bounded(mut self) -> Ended {
        for text in [
            &mut self.label,
            &mut self.source,
            &mut self.event,
            &mut self.layer,
            &mut self.outcome,
        ]
        .into_iter()
        .chain(self.tool_name.as_mut())
        .chain(self.matcher.as_mut())
        {
            cut(text, MAX_TEXT / 4);
        }
        for text in [
            self.message.as_mut(),
            self.context.as_mut(),
            self.system_message.as_mut(),
            self.warning.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            cut(text, MAX_TEXT);
        }
        self
    }

    /// What the agent is told of it: its context, labelled with the handler (contract §21).
    pub fn labelled(&self, text: &str) -> String {
        format!(
            "from the background {} hook {}: {text}",
            self.event, self.label
        )
    }
}

/// Cuts `text` to at most `max` bytes at a character boundary, saying how much was left out.
fn cut(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let note = format!(" [cut: {} more bytes]", text.len() - max);
    let mut end = max.saturating_sub(note.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&note);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_stays_within_its_bound_whatever_its_texts_hold() {
        let huge = "\u{1}é".repeat(1 << 20);
        let ended = Ended {
            label: huge.clone(),
            layer: huge.clone(),
            source: huge.clone(),
            event: huge.clone(),
            tool_name: Some(huge.clone()),
            matcher: Some(huge.clone()),
            outcome: "proceed".into(),
            message: Some(huge.clone()),
            context: Some(huge.clone()),
            system_message: Some(huge.clone()),
            warning: Some(huge),
            ..Ended::default()
        }
        .bounded();
        let json = serde_json::to_vec(&ended).unwrap();
        assert!(json.len() <= MAX_RECORD, "{}", json.len());
        let context = ended.context.unwrap();
        assert!(context.len() <= MAX_TEXT, "{}", context.len());
        assert!(
            context.ends_with("more bytes]"),
            "{}",
            &context[context.len() - 40..]
        );
    }

    #[test]
    fn a_short_text_is_kept_as_it_is() {
        let mut text = "abc".to_string();
        cut(&mut text, 3);
        assert_eq!(text, "abc");
    }
}
