//! The public face of a command registered by a test: what one call of it sees and may do.

use bytes::Bytes;
use fakekube_runtime::{FsError, Process, WriteError};

/// Why a registered command's stream or file operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The reader of the stream has gone (the exec client left); a real process would get
    /// SIGPIPE.
    #[error("Broken pipe")]
    BrokenPipe,
    /// A file operation failed, with the error text `errno` would give.
    #[error("{path}: {message}")]
    File {
        /// The path, made absolute.
        path: String,
        /// `No such file or directory`, `Is a directory`...
        message: String,
    },
}

impl CommandError {
    fn from_write(e: WriteError) -> Self {
        match e {
            WriteError::BrokenPipe => CommandError::BrokenPipe,
            WriteError::Fs(fe) => CommandError::File {
                path: String::new(),
                message: fe.to_string(),
            },
        }
    }
}

/// One call of a command registered with
/// `fakekube::FakeKube::register_command`: its arguments,
/// environment and working directory, its standard streams, and the files of the pod it runs
/// in (the container's own root and its volumes). The call ends when the handler returns its
/// exit status, or earlier when it is killed (exec client gone, container stopped, pod
/// deleted): then the handler's future is dropped.
pub struct CommandCall {
    /// The runtime process of the call.
    process: Process,
}

impl std::fmt::Debug for CommandCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandCall")
            .field("argv", &self.process.argv())
            .field("cwd", &self.process.cwd())
            .finish_non_exhaustive()
    }
}

impl CommandCall {
    /// Wraps the runtime's context.
    pub fn new(process: Process) -> Self {
        CommandCall { process }
    }

    /// The whole command line, the command's name first.
    pub fn argv(&self) -> &[String] {
        self.process.argv()
    }

    /// The arguments after the command's name.
    pub fn args(&self) -> &[String] {
        self.process.args()
    }

    /// The environment, in order (a name set twice: the last one counts).
    pub fn env(&self) -> &[(String, String)] {
        self.process.env()
    }

    /// One environment variable.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.process.var(name)
    }

    /// The absolute working directory.
    pub fn cwd(&self) -> &str {
        self.process.cwd()
    }

    /// The next chunk of standard input, or `None` at end of input.
    pub async fn read_stdin(&self) -> Option<Vec<u8>> {
        self.process.stdin().read().await.map(|b| b.to_vec())
    }

    /// Standard input up to its end, at most `max` bytes (the rest stays unread).
    pub async fn read_stdin_to_end(&self, max: usize) -> Vec<u8> {
        self.process.stdin().read_to_end(max).await
    }

    /// Writes to standard output, waiting while the reader is behind.
    pub async fn write_stdout(&self, data: impl AsRef<[u8]>) -> Result<(), CommandError> {
        self.process
            .stdout()
            .write(Bytes::copy_from_slice(data.as_ref()))
            .await
            .map_err(CommandError::from_write)
    }

    /// Writes to standard error, waiting while the reader is behind.
    pub async fn write_stderr(&self, data: impl AsRef<[u8]>) -> Result<(), CommandError> {
        self.process
            .stderr()
            .write(Bytes::copy_from_slice(data.as_ref()))
            .await
            .map_err(CommandError::from_write)
    }

    /// The contents of a file (a relative path is taken from the working directory).
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>, CommandError> {
        let abs = self.process.path(path);
        self.process
            .fs()
            .read(&abs)
            .map(|b| b.to_vec())
            .map_err(|e| file_error(abs, e))
    }

    /// Creates or replaces a file; its directory must exist.
    pub fn write_file(&self, path: &str, data: &[u8]) -> Result<(), CommandError> {
        let abs = self.process.path(path);
        self.process
            .fs()
            .write(&abs, data)
            .map_err(|e| file_error(abs, e))
    }

    /// Creates a directory and its missing parents.
    pub fn create_dir_all(&self, path: &str) -> Result<(), CommandError> {
        let abs = self.process.path(path);
        self.process
            .fs()
            .mkdir_all(&abs, 0o755)
            .map_err(|e| file_error(abs, e))
    }

    /// Whether the call has been killed.
    pub fn is_cancelled(&self) -> bool {
        self.process.cancellation().is_cancelled()
    }

    /// Resolves when the call is killed; for handlers that run until then (a keep-alive loop).
    pub async fn cancelled(&self) {
        self.process.cancellation().cancelled().await;
    }
}

fn file_error(path: String, e: FsError) -> CommandError {
    CommandError::File {
        path,
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fakekube_runtime::{Input, Output, PodFs, Stdio};
    use tokio::sync::mpsc;
    use tokio_util::sync::CancellationToken;

    fn process(stdin: &'static [u8]) -> (Process, mpsc::Receiver<Bytes>) {
        let (tx, rx) = mpsc::channel(4);
        let stdio = Stdio {
            stdin: Input::bytes(Bytes::from_static(stdin)),
            stdout: Output::channel(tx),
            stderr: Output::null(),
        };
        let process = Process::new(
            vec!["tool".into(), "a".into(), "b".into()],
            vec![("K".into(), "1".into()), ("K".into(), "2".into())],
            "/tmp".into(),
            PodFs::new(vec![]),
            fakekube_programs::registry(),
            stdio,
            CancellationToken::new(),
        );
        (process, rx)
    }

    #[tokio::test]
    async fn a_call_sees_its_arguments_environment_and_stdin() {
        let (c, _rx) = process(b"input");
        let call = CommandCall::new(c);
        assert_eq!(call.args(), ["a", "b"]);
        assert_eq!(call.argv().first().map(String::as_str), Some("tool"));
        assert_eq!(call.var("K"), Some("2"));
        assert_eq!(call.cwd(), "/tmp");
        assert_eq!(call.read_stdin_to_end(100).await, b"input");
        assert_eq!(call.read_stdin().await, None);
    }

    #[tokio::test]
    async fn stdout_writes_reach_the_stream_and_fail_once_it_is_gone() {
        let (c, mut rx) = process(b"");
        let call = CommandCall::new(c);
        assert_eq!(call.write_stdout("hi").await, Ok(()));
        assert_eq!(rx.recv().await, Some(Bytes::from_static(b"hi")));
        drop(rx);
        assert_eq!(call.write_stdout("x").await, Err(CommandError::BrokenPipe));
    }

    #[tokio::test]
    async fn files_are_relative_to_the_working_directory() {
        let (c, _rx) = process(b"");
        let call = CommandCall::new(c);
        assert_eq!(call.create_dir_all("d/e"), Ok(()));
        assert_eq!(call.write_file("d/e/f", b"data"), Ok(()));
        assert_eq!(call.read_file("/tmp/d/e/f"), Ok(b"data".to_vec()));
        assert_eq!(
            call.read_file("nope"),
            Err(CommandError::File {
                path: "/tmp/nope".into(),
                message: "No such file or directory".into()
            })
        );
    }
}
