//! The suite's command line: `--quick`, `--only NAME,NAME...`.

/// The rules the scenarios are judged by, and which scenarios run without `--only`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Every scenario; fails on a makespan error beyond the wild error; rewrites
    /// `docs/validation.md`.
    Full,
    /// The gate: four scenarios; fails on a median makespan outside
    /// `[0.90 best, 1.10 worst]`.
    Quick,
}

impl Mode {
    /// Its name in the document ("full mode", "quick mode").
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Full => "full",
            Mode::Quick => "quick",
        }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Options {
    /// Full or quick rules.
    pub(crate) mode: Mode,
    /// `--only`: these scenarios alone, in this order.
    pub(crate) only: Option<Vec<String>>,
}

/// The usage line of a command line that is not understood.
pub(crate) const USAGE: &str = "usage: scripts/validate.sh [--quick] [--only NAME,NAME...]";

/// A command line not understood: what to say, and the exit status (the script's: 2 for an
/// unknown word, 1 for `--only` without its list, as bash's `${2:?}` ended it).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BadCommandLine {
    /// The message.
    pub(crate) message: &'static str,
    /// The exit status.
    pub(crate) status: u8,
}

/// The options of `args` (the words after `validate`).
pub(crate) fn parse(args: &[String]) -> Result<Options, BadCommandLine> {
    let mut mode = Mode::Full;
    let mut only = None;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        match word.as_str() {
            "--quick" => mode = Mode::Quick,
            "--only" => {
                let list = words
                    .next()
                    .filter(|list| !list.is_empty())
                    .ok_or(BadCommandLine {
                        message: "validate: --only needs a comma-separated list of scenarios",
                        status: 1,
                    })?;
                only = Some(split_list(list));
            }
            _ => {
                return Err(BadCommandLine {
                    message: USAGE,
                    status: 2,
                })
            }
        }
    }
    Ok(Options { mode, only })
}

/// `A,B` as bash's `IFS=, read -a` splits it: on every comma, a single empty last field
/// dropped (`A,B,` is two names; `A,,B` three, the second empty).
fn split_list(list: &str) -> Vec<String> {
    let mut names: Vec<String> = list.split(',').map(str::to_owned).collect();
    if names.last().is_some_and(String::is_empty) {
        names.pop();
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn modes_and_lists() {
        assert_eq!(
            parse(&args(&[])),
            Ok(Options {
                mode: Mode::Full,
                only: None
            })
        );
        assert_eq!(
            parse(&args(&["--only", "a,b", "--quick"])),
            Ok(Options {
                mode: Mode::Quick,
                only: Some(args(&["a", "b"]))
            })
        );
        // The last --only wins, as the script's loop kept the last.
        assert_eq!(
            parse(&args(&["--only", "a", "--only", "b"])).map(|o| o.only),
            Ok(Some(args(&["b"])))
        );
    }

    #[test]
    fn lists_split_as_bash_read_does() {
        assert_eq!(split_list("a,b,"), args(&["a", "b"]));
        assert_eq!(split_list("a,b,,"), args(&["a", "b", ""]));
        assert_eq!(split_list(",a"), args(&["", "a"]));
        assert_eq!(split_list("a,,b"), args(&["a", "", "b"]));
        assert_eq!(split_list(","), args(&[""]));
    }

    #[test]
    fn bad_command_lines() {
        assert_eq!(
            parse(&args(&["--full"])),
            Err(BadCommandLine {
                message: USAGE,
                status: 2
            })
        );
        let missing = parse(&args(&["--only"])).unwrap_err();
        assert!(missing.message.contains("--only needs") && missing.status == 1);
        assert_eq!(parse(&args(&["--only", ""])).unwrap_err().status, 1);
    }
}
