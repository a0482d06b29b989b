//! A provider run as a child process: the command line split into words, the child spawned
//! with its stdin and stdout as the transport and its stderr passed through, and killed when
//! the handle goes.

use std::process::Stdio;

use tokio::process::{Child, Command};

use crate::transport::Transport;

/// Why a provider command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The command line is empty or has an unclosed quote.
    #[error("the provider command line {0}")]
    BadCommandLine(&'static str),
    /// The program could not be started.
    #[error("starting the provider command `{program}`")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A provider running as a child process. Dropping it kills the child.
#[derive(Debug)]
pub struct ProviderProcess {
    /// The child.
    child: Child,
}

impl ProviderProcess {
    /// Starts `command_line` (`CMD ARGS`, split as [`split_command_line`] does) with piped
    /// stdin and stdout and the caller's stderr, and returns the child with the transport over
    /// its stdio.
    pub fn spawn(command_line: &str) -> Result<(ProviderProcess, Transport), SpawnError> {
        let words = split_command_line(command_line)?;
        let Some((program, args)) = words.split_first() else {
            return Err(SpawnError::BadCommandLine("is empty"));
        };
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SpawnError::Spawn {
                program: program.clone(),
                source,
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(SpawnError::Spawn {
                program: program.clone(),
                source: std::io::Error::other("the child has no piped stdin or stdout"),
            });
        };
        Ok((ProviderProcess { child }, Transport::lines(stdout, stdin)))
    }

    /// Returns the child's process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits for the child to exit.
    pub async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.child.wait().await
    }

    /// Kills the child and waits for it.
    pub async fn kill(&mut self) -> std::io::Result<()> {
        self.child.kill().await
    }
}

/// Splits a command line into words as a POSIX shell would, without expanding anything:
/// whitespace separates words, `'…'` keeps everything literally, `"…"` keeps everything but
/// `\"` and `\\`, and a backslash outside quotes keeps the next character.
pub fn split_command_line(line: &str) -> Result<Vec<String>, SpawnError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(ch) = chars.next() {
        match ch {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(SpawnError::BadCommandLine("has an unclosed '")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(SpawnError::BadCommandLine("has an unclosed \"")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(SpawnError::BadCommandLine("has an unclosed \"")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err(SpawnError::BadCommandLine("is empty"));
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_like_a_shell_without_expansion() {
        assert_eq!(
            split_command_line(r#"python3  -u 'my provider.py' "a \"b\"" c\ d '' $HOME"#).unwrap(),
            [
                "python3",
                "-u",
                "my provider.py",
                "a \"b\"",
                "c d",
                "",
                "$HOME"
            ]
        );
    }

    #[test]
    fn empty_and_unclosed_command_lines_are_refused() {
        for line in ["", "   ", "python3 'x", "python3 \"x"] {
            assert!(
                matches!(split_command_line(line), Err(SpawnError::BadCommandLine(_))),
                "{line:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_error_naming_it() {
        let error = ProviderProcess::spawn("/nonexistent/provider --stdio").unwrap_err();
        assert_eq!(
            error.to_string(),
            "starting the provider command `/nonexistent/provider`"
        );
    }
}
