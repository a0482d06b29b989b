//! The binary's own flags. Everything else is handed to libtest-mimic untouched.

use std::ffi::OsString;
use std::path::PathBuf;

/// The usage text, printed before libtest's own on `--help` and after a bad flag.
pub(crate) const USAGE: &str = "\
conformance: the capability conformance suite against the agent-sandbox adapter

USAGE: conformance [--kubeconfig PATH] [--json PATH] [--junit PATH] [--record PATH]
                   [LIBTEST OPTIONS] [FILTERS]
       conformance compare A.json B.json

  --kubeconfig PATH  run against this cluster instead of an embedded fakekube (also KUBECONFIG
                     when set; --fake forces the embedded fakekube)
  --fake             use the embedded fakekube even when KUBECONFIG is set
  --fast             with --kubeconfig: the cluster is a fakekube process, so use its short
                     waits (TTL backstop, timeouts); its faults cannot be switched from here
  --json PATH        write the JSON report
  --junit PATH       write the JUnit XML report
  --record PATH      record every exchange with the cluster (or the embedded fakekube) in a
                     cassette that `fakekube replay PATH` serves back; use --test-threads 1,
                     since a replay follows the recorded order
  compare A B        compare two runs' JSON reports trial by trial; exit 1 when they differ
  -h, --help         this text, then libtest's options

Without --kubeconfig the run needs nothing but this binary. Exit status 0 means every trial that
ran passed.
";

/// This binary's own options; the rest go to libtest.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Options {
    /// `--kubeconfig`: the cluster to run against.
    pub(crate) kubeconfig: Option<PathBuf>,
    /// `--fake`: the embedded fakekube even when `KUBECONFIG` is set.
    pub(crate) fake: bool,
    /// `--fast`: the cluster is a fakekube process; use its short waits.
    pub(crate) fast: bool,
    /// `--json`: where to write the JSON report.
    pub(crate) json: Option<PathBuf>,
    /// `--junit`: where to write the JUnit report.
    pub(crate) junit: Option<PathBuf>,
    /// `--record`: where to record the run's exchanges as a cassette.
    pub(crate) record: Option<PathBuf>,
    /// Everything else, in order, for libtest.
    pub(crate) rest: Vec<String>,
}

impl Options {
    /// Takes this binary's flags out of `args` (without the program name), as `--flag VALUE`
    /// or `--flag=VALUE`; the error names a flag that lacks its value.
    pub(crate) fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
        let mut o = Options::default();
        let mut args = args.peekable();
        while let Some(a) = args.next() {
            let (flag, inline) = match a.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
                _ => (a.clone(), None),
            };
            let mut value = |name: &str| {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match flag.as_str() {
                "--kubeconfig" => o.kubeconfig = Some(PathBuf::from(value("--kubeconfig")?)),
                "--json" => o.json = Some(PathBuf::from(value("--json")?)),
                "--junit" => o.junit = Some(PathBuf::from(value("--junit")?)),
                "--record" => o.record = Some(PathBuf::from(value("--record")?)),
                "--fake" => o.fake = true,
                "--fast" => o.fast = true,
                _ => o.rest.push(a),
            }
        }
        Ok(o)
    }

    /// Whether libtest's arguments ask for help (this binary prints its usage first).
    pub(crate) fn wants_help(&self) -> bool {
        self.rest.iter().any(|a| a == "-h" || a == "--help")
    }

    /// The kubeconfig of the cluster to run against: `--kubeconfig`, else a non-empty
    /// `KUBECONFIG` unless `--fake`; `None` means the embedded fakekube.
    pub(crate) fn cluster_kubeconfig(
        &self,
        env: impl Fn(&str) -> Option<OsString>,
    ) -> Option<PathBuf> {
        match (&self.kubeconfig, self.fake) {
            (Some(p), _) => Some(p.clone()),
            (None, false) => env("KUBECONFIG")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            (None, true) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        Options::parse(args.iter().map(|a| (*a).to_owned()))
    }

    #[test]
    fn own_flags_take_their_value_inline_or_next_and_the_rest_goes_to_libtest() {
        let o = parse(&[
            "--json=r.json",
            "exec::",
            "--junit",
            "r.xml",
            "--fast",
            "--record",
            "run.jsonl",
            "--exact",
        ])
        .unwrap();
        assert_eq!(
            o,
            Options {
                json: Some("r.json".into()),
                junit: Some("r.xml".into()),
                fast: true,
                record: Some("run.jsonl".into()),
                rest: vec!["exec::".into(), "--exact".into()],
                ..Options::default()
            }
        );
    }

    #[test]
    fn a_flag_without_its_value_is_refused_by_name() {
        assert_eq!(
            parse(&["--kubeconfig"]),
            Err("--kubeconfig needs a value".into())
        );
    }

    #[test]
    fn kubeconfig_env_picks_the_cluster_unless_fake_or_empty() {
        let env = |value: &'static str| {
            move |name: &str| (name == "KUBECONFIG").then(|| OsString::from(value))
        };
        let plain = parse(&[]).unwrap();
        assert_eq!(
            plain.cluster_kubeconfig(env("/k")),
            Some(PathBuf::from("/k"))
        );
        assert_eq!(plain.cluster_kubeconfig(env("")), None);
        assert_eq!(
            parse(&["--fake"]).unwrap().cluster_kubeconfig(env("/k")),
            None
        );
        assert_eq!(
            parse(&["--fake", "--kubeconfig", "/c"])
                .unwrap()
                .cluster_kubeconfig(env("/k")),
            Some(PathBuf::from("/c")),
            "an explicit --kubeconfig wins"
        );
    }

    #[test]
    fn help_is_seen_among_libtest_arguments() {
        assert!(parse(&["exec::", "--help"]).unwrap().wants_help());
        assert!(!parse(&["exec::"]).unwrap().wants_help());
    }
}
