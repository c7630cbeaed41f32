//! ANSI colours, on only for a terminal and only when `NO_COLOR` is unset.

use std::io::IsTerminal;

/// Colours and emphasis, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    color: bool,
    terminal: bool,
}

impl Style {
    /// The style for standard output: colour on a terminal unless `NO_COLOR` is set.
    pub fn for_stdout() -> Self {
        let terminal = std::io::stdout().is_terminal();
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            color: terminal && !no_color,
            terminal,
        }
    }

    /// No colour (piped output, tests).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn plain() -> Self {
        Style {
            color: false,
            terminal: false,
        }
    }

    /// Whether standard output is a terminal.
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// Whether standard error is a terminal (where the spinner goes).
    pub fn stderr_is_terminal() -> bool {
        std::io::stderr().is_terminal()
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// Bold.
    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Dimmed.
    pub fn dim(&self, text: &str) -> String {
        self.paint("2", text)
    }

    /// Red.
    pub fn red(&self, text: &str) -> String {
        self.paint("31", text)
    }

    /// Green.
    pub fn green(&self, text: &str) -> String {
        self.paint("32", text)
    }

    /// Yellow.
    pub fn yellow(&self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Cyan.
    pub fn cyan(&self, text: &str) -> String {
        self.paint("36", text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_style_adds_nothing() {
        let style = Style::plain();
        assert_eq!(style.red("x"), "x");
        assert_eq!(style.bold("x"), "x");
    }

    #[test]
    fn colour_wraps_in_escapes() {
        let style = Style {
            color: true,
            terminal: true,
        };
        assert_eq!(style.green("ok"), "\x1b[32mok\x1b[0m");
    }
}
