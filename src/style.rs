//! Colors for people reading a terminal. `anstream` decides when (a terminal, unless `NO_COLOR`
//! is set, `CLICOLOR=0` or `TERM=dumb`; forced on by `CLICOLOR_FORCE` for tools that capture
//! colored output), `anstyle` draws them; this module only names the few styles the commands use.

use std::fmt;

/// Returns true if and only if text written to `stream` should be colored.
pub fn colors_wanted(stream: &impl anstream::stream::RawStream) -> bool {
    anstream::AutoStream::choice(stream) != anstream::ColorChoice::Never
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
    fn look(self) -> anstyle::Style {
        use anstyle::{AnsiColor, Effects};
        match self {
            Style::Good => AnsiColor::Green.on_default(),
            Style::Bad => AnsiColor::Red.on_default().effects(Effects::BOLD),
            Style::Warn => AnsiColor::Yellow.on_default(),
            Style::Dim => anstyle::Style::new().effects(Effects::DIMMED),
            Style::Bold => anstyle::Style::new().effects(Effects::BOLD),
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
        Painter::new(colors_wanted(&std::io::stdout()))
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
                let look = style.look();
                write!(f, "{}{padded}{}", look.render(), look.render_reset())
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
