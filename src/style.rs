//! Colors for people reading a terminal: on only when the stream is a terminal, never when
//! `NO_COLOR` is set (<https://no-color.org>), and forced on by `CLICOLOR_FORCE` for tools that
//! capture colored output.

use std::fmt;

/// Returns true if and only if text written to a stream should be colored: `NO_COLOR` set to
/// anything non-empty turns colors off, then `CLICOLOR_FORCE` set to anything but `0` turns them
/// on, else they follow `is_terminal`.
pub fn colors_wanted(is_terminal: bool) -> bool {
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        return false;
    }
    if std::env::var_os("CLICOLOR_FORCE").is_some_and(|v| !v.is_empty() && v != "0") {
        return true;
    }
    is_terminal
}

/// The few styles the commands use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Ran and let the tool call proceed; no problem.
    Good,
    /// Blocked, or a problem that makes `validate` fail.
    Bad,
    /// Failed open, or a warning.
    Warn,
    /// Not run, or secondary detail.
    Dim,
    /// Headings.
    Bold,
}

impl Style {
    fn code(self) -> &'static str {
        match self {
            Style::Good => "32",
            Style::Bad => "31;1",
            Style::Warn => "33",
            Style::Dim => "2",
            Style::Bold => "1",
        }
    }
}

/// Paints text for one stream, or leaves it alone when colors are off.
#[derive(Clone, Copy, Debug)]
pub struct Painter {
    color: bool,
}

impl Painter {
    pub fn new(color: bool) -> Painter {
        Painter { color }
    }

    /// A painter for stdout, following [`colors_wanted`].
    pub fn stdout() -> Painter {
        use std::io::IsTerminal;
        Painter::new(colors_wanted(std::io::stdout().is_terminal()))
    }

    pub fn paint<T: fmt::Display>(self, style: Style, text: T) -> Painted<T> {
        Painted {
            style: self.color.then_some(style),
            text,
        }
    }
}

/// Text with an optional style, written with its escape codes when it has one.
pub struct Painted<T> {
    style: Option<Style>,
    text: T,
}

impl<T: fmt::Display> fmt::Display for Painted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.style {
            // Format the text first so that width and alignment apply to the visible text.
            Some(style) => {
                let text = self.text.to_string();
                let padded = match f.width() {
                    Some(width) if f.align() == Some(fmt::Alignment::Right) => {
                        format!("{text:>width$}")
                    }
                    Some(width) => format!("{text:<width$}"),
                    None => text,
                };
                write!(f, "\x1b[{}m{padded}\x1b[0m", style.code())
            }
            None => fmt::Display::fmt(&self.text, f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padding_counts_only_visible_text() {
        let on = Painter::new(true);
        assert_eq!(
            format!("[{:<6}]", on.paint(Style::Good, "ok")),
            "[\x1b[32mok    \x1b[0m]"
        );
        let off = Painter::new(false);
        assert_eq!(format!("[{:>4}]", off.paint(Style::Bad, "x")), "[   x]");
    }
}
