//! The programs a fakekube container runs: what a BusyBox image's `/bin` holds (`sh`, `cat`,
//! `ls`, `sed`, `awk`, `tar`, `nc`, `wget`, ...) and the servers of the agent-sandbox images
//! (`python-runtime-sandbox`, `sandbox-router`), each written against the container runtime of
//! [`fakekube_runtime`] (its filesystem, processes, streams and pod network). Upstream, this is
//! the userland of the images a kubelet pulls: BusyBox and the images' own binaries.
//!
//! [`registry`] gives the [`Programs`] every container starts with: [`TABLE`], one entry per
//! program (name → handler), from which the runtime fills `/bin` and finds a program by name.
//! Adding a program is writing its handler in the file of its family and adding its entry to
//! the table; [`manual`] lists every program and shell builtin with the options it takes.
//!
//! ```
//! use fakekube_runtime::{ExecIo, ExecSpec, ExitStatus, ProcessTable, exec};
//! use tokio::sync::mpsc;
//!
//! # fn main() -> std::io::Result<()> {
//! # tokio::runtime::Builder::new_current_thread().build()?.block_on(async {
//! let programs = fakekube_programs::registry();
//! let spec = ExecSpec {
//!     argv: vec!["sh".into(), "-c".into(), "echo hello | wc -c".into()],
//!     env: vec![],
//!     cwd: "/".into(),
//!     fs: programs.pod_fs(vec![]),
//!     programs,
//!     processes: ProcessTable::new(),
//!     cancel: Default::default(),
//!     network: Default::default(),
//! };
//! let (stdout, mut out) = mpsc::channel(8);
//! let (stderr, _err) = mpsc::channel(8);
//! let status = exec(spec, ExecIo { stdin: None, stdout, stderr, tty: None }).await;
//! assert_eq!(status, ExitStatus::Code(0));
//! assert_eq!(out.recv().await.as_deref(), Some(&b"6\n"[..]));
//! # });
//! # Ok(()) }
//! ```
//!
//! # Layout
//!
//! One module per family of programs:
//!
//! - [`content`]: `cat`, `head`, `tail`, `wc`, `tee`;
//! - [`listing`]: `ls`, `stat`;
//! - [`files`]: `mkdir`, `rmdir`, `rm`, `touch`, `chmod`, `cp`, `mv`, `truncate`, `install`;
//! - [`links`]: `ln`, `readlink`, `realpath`; [`temp`]: `mktemp`;
//! - [`print`]: `echo`, `printf`;
//! - [`sequence`]: `yes`, `seq`;
//! - [`paths`]: `dirname`, `basename`, `which`;
//! - [`condition`]: `test`, `[`;
//! - [`env`]: `env`, `printenv`, `pwd`;
//! - [`timing`]: `sleep`, `timeout`, `usleep`, `watch`;
//! - [`system`]: `uname`, `id`, `whoami`, `hostname`, `date`, `uptime`, `du`, `df`, `nproc`,
//!   `sync`;
//! - [`text`]: `sort`, `uniq`, `tr`, `cut`; [`sed`]: `sed`; [`grep`]: `grep`, `egrep`, `fgrep`;
//!   [`awk`]: `awk`;
//! - [`archive`]: `gzip`, `gunzip`, `zcat`, `base64`; [`tar`]: `tar`; [`digest`]: `md5sum`,
//!   `sha1sum`, `sha256sum`;
//! - [`dd`]: `dd`; [`od`]: `od`; [`inspect`]: `cmp`, `strings`, `hexdump`, `xxd`; [`diff`]:
//!   `diff`;
//! - [`lines`]: `tac`, `rev`, `nl`, `fold`, `paste`, `comm`, `split`; [`expr`]: `expr`;
//! - [`search`]: `find`, `xargs`;
//! - [`processes`]: `ps`, `kill`;
//! - [`terminal`]: `tty`, `stty`;
//! - [`net`]: `nc`, `httpd`, `wget`, over the pod's [`PodNetwork`](fakekube_runtime::PodNetwork);
//! - [`sandbox`]: `python-runtime-sandbox` and `sandbox-router`, the agent-sandbox images'
//!   servers (the kubelet runs them for those images);
//! - `true` and `false`, in the table itself; `sh`, the runtime's shell.
//!
//! [`manual`] is the table of every program and builtin with the options it takes; `fuzzing`
//! (the `fuzzing` feature, for `fuzz/` only; not an API) runs scripts as a fuzz target.
//!
//! [`cli`] holds what they share: GNU-style options, usage errors, writing to stdout;
//! [`posix_regex`] the POSIX regular expressions of `sed`, `grep` and `awk`. Messages
//! and exit codes follow GNU coreutils where the tools differ from BusyBox.
//!
//! # Known limitations
//!
//! - Programs take the options the adapter and common scripts use, not every GNU or BusyBox
//!   option ([`manual`] lists them); `sed` has no back references inside patterns.
//! - `httpd` has no CGI, configuration file or authentication; `wget` has no TLS.
//! - A program that cannot exist in a hermetic runtime (`ping`, `ssh`, `mount`, `curl`, `apk`)
//!   is missing, as on an image without it: 127 from a shell.

mod archive;
mod awk;
mod cli;
mod condition;
mod content;
mod dd;
mod diff;
mod digest;
mod env;
mod expr;
mod files;
mod grep;
mod inspect;
mod lines;
mod links;
mod listing;
mod net;
mod od;
mod paths;
mod posix_regex;
mod print;
mod processes;
mod sandbox;
mod search;
mod sed;
mod sequence;
mod system;
mod tar;
mod temp;
mod terminal;
mod text;
mod timing;

pub use fakekube_runtime::Programs;
use fakekube_runtime::process::Program;
use fakekube_runtime::shell;

/// The program table: every program a container has, each with its `/bin` entry.
pub static TABLE: &[Program] = &[
    Program::new("sh", |p| Box::pin(shell::sh_main(p))),
    // content
    Program::new("cat", |p| Box::pin(content::cat(p))),
    Program::new("head", |p| Box::pin(content::head(p))),
    Program::new("tail", |p| Box::pin(content::tail(p))),
    Program::new("wc", |p| Box::pin(content::wc(p))),
    Program::new("tee", |p| Box::pin(content::tee(p))),
    // listing
    Program::new("ls", |p| Box::pin(listing::ls(p))),
    Program::new("stat", |p| Box::pin(listing::stat(p))),
    // files
    Program::new("mkdir", |p| Box::pin(files::mkdir(p))),
    Program::new("rmdir", |p| Box::pin(files::rmdir(p))),
    Program::new("rm", |p| Box::pin(files::rm(p))),
    Program::new("touch", |p| Box::pin(files::touch(p))),
    Program::new("chmod", |p| Box::pin(files::chmod(p))),
    Program::new("cp", |p| Box::pin(files::cp(p))),
    Program::new("mv", |p| Box::pin(files::mv(p))),
    Program::new("truncate", |p| Box::pin(files::truncate(p))),
    Program::new("install", |p| Box::pin(files::install(p))),
    // links
    Program::new("ln", |p| Box::pin(links::ln(p))),
    Program::new("readlink", |p| Box::pin(links::readlink(p))),
    Program::new("realpath", |p| Box::pin(links::realpath(p))),
    // temp
    Program::new("mktemp", |p| Box::pin(temp::mktemp(p))),
    // print
    Program::new("echo", |p| Box::pin(print::echo(p))),
    Program::new("printf", |p| Box::pin(print::printf(p))),
    // sequence
    Program::new("yes", |p| Box::pin(sequence::yes(p))),
    Program::new("seq", |p| Box::pin(sequence::seq(p))),
    // paths
    Program::new("dirname", |p| Box::pin(paths::dirname(p))),
    Program::new("basename", |p| Box::pin(paths::basename(p))),
    Program::new("which", |p| Box::pin(paths::which(p))),
    // condition
    Program::new("test", |p| Box::pin(condition::test(p))),
    Program::new("[", |p| Box::pin(condition::test(p))),
    Program::new("true", |_| Box::pin(async { 0 })),
    Program::new("false", |_| Box::pin(async { 1 })),
    // env
    Program::new("env", |p| Box::pin(env::env(p))).in_dirs(&["/bin", "/usr/bin"]),
    Program::new("printenv", |p| Box::pin(env::printenv(p))),
    Program::new("pwd", |p| Box::pin(env::pwd(p))),
    // timing
    Program::new("sleep", |p| Box::pin(timing::sleep(p))),
    Program::new("timeout", |p| Box::pin(timing::timeout(p))),
    Program::new("usleep", |p| Box::pin(timing::usleep(p))),
    Program::new("watch", |p| Box::pin(timing::watch(p))),
    // system
    Program::new("uname", |p| Box::pin(system::uname(p))),
    Program::new("id", |p| Box::pin(system::id(p))),
    Program::new("whoami", |p| Box::pin(system::whoami(p))),
    Program::new("hostname", |p| Box::pin(system::hostname(p))),
    Program::new("date", |p| Box::pin(system::date(p))),
    Program::new("uptime", |p| Box::pin(system::uptime(p))),
    Program::new("du", |p| Box::pin(system::du(p))),
    Program::new("df", |p| Box::pin(system::df(p))),
    Program::new("nproc", |p| Box::pin(system::nproc(p))),
    Program::new("sync", |p| Box::pin(system::sync(p))),
    // text
    Program::new("sort", |p| Box::pin(text::sort(p))),
    Program::new("uniq", |p| Box::pin(text::uniq(p))),
    Program::new("tr", |p| Box::pin(text::tr(p))),
    Program::new("cut", |p| Box::pin(text::cut(p))),
    // lines
    Program::new("tac", |p| Box::pin(lines::tac(p))),
    Program::new("rev", |p| Box::pin(lines::rev(p))),
    Program::new("nl", |p| Box::pin(lines::nl(p))),
    Program::new("fold", |p| Box::pin(lines::fold(p))),
    Program::new("paste", |p| Box::pin(lines::paste(p))),
    Program::new("comm", |p| Box::pin(lines::comm(p))),
    Program::new("split", |p| Box::pin(lines::split(p))),
    // expr
    Program::new("expr", |p| Box::pin(expr::expr(p))),
    Program::new("sed", |p| Box::pin(sed::sed(p))),
    Program::new("awk", |p| Box::pin(awk::awk(p))),
    Program::new("grep", |p| Box::pin(grep::grep(p))),
    Program::new("egrep", |p| Box::pin(grep::grep(p))),
    Program::new("fgrep", |p| Box::pin(grep::grep(p))),
    // archive
    Program::new("gzip", |p| Box::pin(archive::gzip(p))),
    Program::new("gunzip", |p| Box::pin(archive::gzip(p))),
    Program::new("zcat", |p| Box::pin(archive::gzip(p))),
    Program::new("tar", |p| Box::pin(tar::tar(p))),
    Program::new("base64", |p| Box::pin(archive::base64(p))),
    Program::new("sha256sum", |p| Box::pin(digest::sum(p))),
    Program::new("sha1sum", |p| Box::pin(digest::sum(p))),
    Program::new("md5sum", |p| Box::pin(digest::sum(p))),
    // dd, od
    Program::new("dd", |p| Box::pin(dd::dd(p))),
    Program::new("od", |p| Box::pin(od::od(p))),
    // inspect
    Program::new("diff", |p| Box::pin(diff::diff(p))),
    Program::new("cmp", |p| Box::pin(inspect::cmp(p))),
    Program::new("strings", |p| Box::pin(inspect::strings(p))),
    Program::new("hexdump", |p| Box::pin(inspect::hexdump(p))),
    Program::new("xxd", |p| Box::pin(inspect::xxd(p))),
    // search
    Program::new("find", |p| Box::pin(search::find(p))),
    Program::new("xargs", |p| Box::pin(search::xargs(p))),
    // processes
    Program::new("ps", |p| Box::pin(processes::ps(p))),
    Program::new("kill", |p| Box::pin(processes::kill(p))),
    // terminal
    Program::new("tty", |p| Box::pin(terminal::tty(p))),
    Program::new("stty", |p| Box::pin(terminal::stty(p))),
    // net
    Program::new("nc", |p| Box::pin(net::nc::nc(p))),
    Program::new("httpd", |p| Box::pin(net::httpd::httpd(p))),
    Program::new("wget", |p| Box::pin(net::wget::wget(p))),
    // the agent-sandbox images
    Program::new("python-runtime-sandbox", |p| {
        Box::pin(sandbox::runtime::python_runtime_sandbox(p))
    }),
    Program::new("sandbox-router", |p| {
        Box::pin(sandbox::router::sandbox_router(p))
    }),
];

/// Every program of [`TABLE`] (`sh`, `cat`, `ls`, ...), with nothing registered yet: what a
/// container's `/bin` holds.
pub fn registry() -> Programs {
    Programs::with_table(TABLE)
}

#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod manual;
#[cfg(test)]
mod tests;
