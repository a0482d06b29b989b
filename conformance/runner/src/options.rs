//! The binary's own flags and what they aim the run at. Everything else is handed to
//! libtest-mimic untouched.

use sandbox_conformance::explained::Explained;
use std::path::PathBuf;

/// The usage text, printed before libtest's own on `--help` and after a bad flag.
pub(crate) const USAGE: &str = "\
conformance: the capability conformance suite against a sandbox provider

USAGE: conformance [TARGET] [OPTIONS] [LIBTEST OPTIONS] [FILTERS]
       conformance compare A.json B.json [--known FILE]

TARGET (default: the agent-sandbox adapter on an embedded fakekube; KUBECONFIG is ignored)
  --provider-cmd 'CMD ARGS'  a provider in any language speaking the provider protocol on its
                             stdin and stdout (conformance/protocol/PROTOCOL.md); its stderr
                             passes through, and it is killed when the run ends
  --provider-url URL         a provider listening for the protocol at ws://127.0.0.1:PORT
  --kubeconfig PATH          the agent-sandbox adapter on the cluster of this kubeconfig
  --cluster                  the agent-sandbox adapter on the cluster of KUBECONFIG, or the
                             in-cluster service account when KUBECONFIG is unset
  --context NAME             with --kubeconfig or --cluster: this context, not the current one

OPTIONS
  --pools FILE        with a cluster: the pools to run, in the server config's format (a
                      `pools:` list); default: the fixtures' direct and warm pools
  --fast              with a cluster: it is a fakekube process, so use its short waits
  --stream-gap MS     with a cluster: the pause between the outputs a streaming trial must
                      tell apart (100 with --fast, 500 otherwise); a stack whose API server
                      relays exec streams on a loaded machine needs more than --fast's
  --json PATH         write the JSON report
  --junit PATH        write the JUnit XML report
  --markdown PATH     write the capability table as Markdown (a provider page's section)
  --chaos-seed N      with the embedded fakekube: inject a seeded random mix of faults
                      while the suite runs (resets, 429, 500, 503, slow answers, exec streams
                      dropped, watch 410s; ci/soak.sh deletes pods under execs); a trial may
                      then fail only with a code a fault explains, a reconcile deletes what
                      cleanups could not, and the leak check must find nothing
  --chaos-rate R      with --chaos-seed: each fault's probability per occasion (default 0.02)
  --chaos             with --kubeconfig or --cluster: the cluster injects faults this run
                      neither controls nor sees (a fakekube process started with
                      --chaos-seed prints them when it stops); as with --chaos-seed, calls
                      are counted, a trial may fail only with a code a fault explains, a
                      reconcile deletes what cleanups could not, and the leak check must
                      find nothing
  --chaos-explains CODE[,CODE]
                      with --chaos or --chaos-seed: contract codes a fault also explains,
                      beside unavailable, rate_limited, internal, sandbox_failed, not_found
                      and conflict (a run that kills kube-apiserver adds permission_denied:
                      started again, it answers 403 until its RBAC caches have synced)
  --pods-ignore-sigterm
                      with the embedded fakekube: a stand-in for a mutating admission
                      webhook rewrites each pod's command to a loop that ignores SIGTERM, so
                      every stop waits out the pod's grace period (the fake's clock skips it;
                      the adapter reads that clock, so expiries keep their meaning)
  -h, --help          this text, then libtest's options

Before any trial against a cluster, a preflight checks each pool's namespace, warm pool and
template, and permissions. Exit status: 0 every trial that ran passed and nothing was left
behind; 1 a trial failed or something was left; 2 a bad flag, a failed preflight, or a setup
that failed before any trial.
";

/// What the run is aimed at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// The adapter on an in-process fakekube.
    Embedded,
    /// The adapter on a cluster.
    Cluster {
        /// The kubeconfig; `None` reads `KUBECONFIG` or the in-cluster service account.
        kubeconfig: Option<PathBuf>,
        /// The context to use instead of the current one.
        context: Option<String>,
    },
    /// A provider speaking the protocol, started as a command.
    Command(String),
    /// A provider speaking the protocol at a WebSocket URL.
    Url(String),
}

/// This binary's own options; the rest go to libtest.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Options {
    /// `--kubeconfig`.
    pub(crate) kubeconfig: Option<PathBuf>,
    /// `--cluster`.
    pub(crate) cluster: bool,
    /// `--context`.
    pub(crate) context: Option<String>,
    /// `--provider-cmd`.
    pub(crate) provider_cmd: Option<String>,
    /// `--provider-url`.
    pub(crate) provider_url: Option<String>,
    /// `--pools`.
    pub(crate) pools: Option<PathBuf>,
    /// `--fast`: the cluster is a fakekube process; use its short waits.
    pub(crate) fast: bool,
    /// `--stream-gap`: the streaming trials' gap, in place of the fixtures'.
    pub(crate) stream_gap: Option<std::time::Duration>,
    /// `--json`: where to write the JSON report.
    pub(crate) json: Option<PathBuf>,
    /// `--junit`: where to write the JUnit report.
    pub(crate) junit: Option<PathBuf>,
    /// `--markdown`: where to write the capability table.
    pub(crate) markdown: Option<PathBuf>,
    /// `--record`: where to record the run's exchanges as a cassette.
    pub(crate) record: Option<PathBuf>,
    /// `--chaos-seed`: run under chaos with this seed.
    pub(crate) chaos_seed: Option<u64>,
    /// `--chaos-rate`.
    pub(crate) chaos_rate: Option<f64>,
    /// `--chaos`: the cluster injects faults the run does not control.
    pub(crate) chaos: bool,
    /// `--chaos-explains`: the codes a fault explains, the defaults and those the flag adds.
    pub(crate) chaos_explains: Explained,
    /// Whether `--chaos-explains` was given.
    chaos_explains_given: bool,
    /// `--pods-ignore-sigterm`: the embedded fakekube's pods ignore SIGTERM.
    pub(crate) pods_ignore_sigterm: bool,
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
                "--context" => o.context = Some(value("--context")?),
                "--provider-cmd" => o.provider_cmd = Some(value("--provider-cmd")?),
                "--provider-url" => o.provider_url = Some(value("--provider-url")?),
                "--pools" => o.pools = Some(PathBuf::from(value("--pools")?)),
                "--json" => o.json = Some(PathBuf::from(value("--json")?)),
                "--junit" => o.junit = Some(PathBuf::from(value("--junit")?)),
                "--record" => o.record = Some(PathBuf::from(value("--record")?)),
                "--markdown" => o.markdown = Some(PathBuf::from(value("--markdown")?)),
                "--chaos-seed" => {
                    let v = value("--chaos-seed")?;
                    o.chaos_seed = Some(v.parse().map_err(|_| {
                        format!("--chaos-seed takes a whole number from 0 to 2^64-1, not {v:?}")
                    })?);
                }
                "--chaos-rate" => {
                    let v = value("--chaos-rate")?;
                    let rate: f64 = v.parse().unwrap_or(f64::NAN);
                    if !(0.0..=1.0).contains(&rate) {
                        return Err(format!(
                            "--chaos-rate takes a probability from 0 to 1, not {v:?}"
                        ));
                    }
                    o.chaos_rate = Some(rate);
                }
                "--cluster" => o.cluster = true,
                "--chaos" => o.chaos = true,
                "--chaos-explains" => {
                    let v = value("--chaos-explains")?;
                    o.chaos_explains =
                        Explained::parse(&v).map_err(|e| format!("--chaos-explains: {e}"))?;
                    o.chaos_explains_given = true;
                }
                "--pods-ignore-sigterm" => o.pods_ignore_sigterm = true,
                // The embedded fakekube is the default now; the flag stays for old scripts.
                "--fake" => {}
                "--fast" => o.fast = true,
                "--stream-gap" => {
                    let v = value("--stream-gap")?;
                    let ms: u64 = v
                        .parse()
                        .ok()
                        .filter(|ms| (1..=60_000).contains(ms))
                        .ok_or_else(|| {
                            format!("--stream-gap takes milliseconds from 1 to 60000, not {v:?}")
                        })?;
                    o.stream_gap = Some(std::time::Duration::from_millis(ms));
                }
                _ => o.rest.push(a),
            }
        }
        Ok(o)
    }

    /// Whether libtest's arguments ask for help (this binary prints its usage first).
    pub(crate) fn wants_help(&self) -> bool {
        self.rest.iter().any(|a| a == "-h" || a == "--help")
    }

    /// What the flags aim the run at; the error says which flags do not go together.
    ///
    /// The environment plays no part: `KUBECONFIG` is read only when `--cluster` asks for it.
    pub(crate) fn target(&self) -> Result<Target, String> {
        let cluster = self.kubeconfig.is_some() || self.cluster;
        let chosen = [
            (self.provider_cmd.is_some(), "--provider-cmd"),
            (self.provider_url.is_some(), "--provider-url"),
            (cluster, "--kubeconfig or --cluster"),
        ];
        let named: Vec<&str> = chosen
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, n)| *n)
            .collect();
        if named.len() > 1 {
            return Err(format!("{} do not go together", named.join(" and ")));
        }
        if self.record.is_some() && (self.provider_cmd.is_some() || self.provider_url.is_some()) {
            return Err("--record records the adapter's exchanges: it needs no --provider-cmd or --provider-url".to_owned());
        }
        if self.kubeconfig.is_some() && self.cluster {
            return Err("--kubeconfig and --cluster do not go together".to_owned());
        }
        if self.chaos_rate.is_some() && self.chaos_seed.is_none() {
            return Err("--chaos-rate needs --chaos-seed".to_owned());
        }
        if self.chaos_explains_given && !self.chaos && self.chaos_seed.is_none() {
            return Err("--chaos-explains needs --chaos or --chaos-seed".to_owned());
        }
        if self.chaos_seed.is_some()
            && (cluster || self.provider_cmd.is_some() || self.provider_url.is_some())
        {
            return Err(
                "--chaos-seed switches the embedded fakekube's faults: it needs no other target"
                    .to_owned(),
            );
        }
        if self.chaos && !cluster {
            return Err(
                "--chaos explains the faults of a cluster: it needs --kubeconfig or --cluster (the embedded fakekube takes --chaos-seed)"
                    .to_owned(),
            );
        }
        if self.pods_ignore_sigterm
            && (cluster || self.provider_cmd.is_some() || self.provider_url.is_some())
        {
            return Err(
                "--pods-ignore-sigterm rewrites the embedded fakekube's pods: it needs no other target"
                    .to_owned(),
            );
        }
        if !cluster {
            for (set, flag) in [
                (self.context.is_some(), "--context"),
                (self.pools.is_some(), "--pools"),
                (self.fast, "--fast"),
                (self.stream_gap.is_some(), "--stream-gap"),
            ] {
                if set {
                    return Err(format!("{flag} needs --kubeconfig or --cluster"));
                }
            }
        }
        Ok(if let Some(cmd) = &self.provider_cmd {
            Target::Command(cmd.clone())
        } else if let Some(url) = &self.provider_url {
            Target::Url(url.clone())
        } else if cluster {
            Target::Cluster {
                kubeconfig: self.kubeconfig.clone(),
                context: self.context.clone(),
            }
        } else {
            Target::Embedded
        })
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
            "--markdown",
            "caps.md",
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
                markdown: Some("caps.md".into()),
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
        assert_eq!(
            parse(&["--provider-cmd"]),
            Err("--provider-cmd needs a value".into())
        );
    }

    #[test]
    fn no_flag_means_the_embedded_fakekube_whatever_the_environment() {
        assert_eq!(parse(&[]).unwrap().target(), Ok(Target::Embedded));
        assert_eq!(parse(&["--fake"]).unwrap().target(), Ok(Target::Embedded));
    }

    #[test]
    fn cluster_flags_aim_at_a_cluster_with_an_optional_context() {
        assert_eq!(
            parse(&["--kubeconfig", "/k", "--context", "kind"])
                .unwrap()
                .target(),
            Ok(Target::Cluster {
                kubeconfig: Some("/k".into()),
                context: Some("kind".into())
            })
        );
        assert_eq!(
            parse(&["--cluster"]).unwrap().target(),
            Ok(Target::Cluster {
                kubeconfig: None,
                context: None
            })
        );
    }

    #[test]
    fn provider_flags_aim_at_a_remote_provider() {
        assert_eq!(
            parse(&["--provider-cmd", "python3 p.py"]).unwrap().target(),
            Ok(Target::Command("python3 p.py".into()))
        );
        assert_eq!(
            parse(&["--provider-url=ws://127.0.0.1:9"])
                .unwrap()
                .target(),
            Ok(Target::Url("ws://127.0.0.1:9".into()))
        );
    }

    #[test]
    fn flags_that_do_not_go_together_are_refused() {
        for args in [
            &["--provider-cmd", "x", "--provider-url", "ws://h:1"][..],
            &["--provider-cmd", "x", "--cluster"],
            &["--kubeconfig", "/k", "--cluster"],
            &["--context", "kind"],
            &["--pools", "p.yaml"],
            &["--provider-url", "ws://h:1", "--pools", "p.yaml"],
        ] {
            assert!(parse(args).unwrap().target().is_err(), "{args:?}");
        }
    }

    #[test]
    fn chaos_takes_a_seed_and_a_rate_for_the_embedded_fakekube_only() {
        let o = parse(&["--chaos-seed", "42", "--chaos-rate=0.1"]).unwrap();
        assert_eq!((o.chaos_seed, o.chaos_rate), (Some(42), Some(0.1)));
        assert_eq!(o.target(), Ok(Target::Embedded));
        assert!(parse(&["--chaos-seed", "-1"]).is_err());
        assert!(parse(&["--chaos-seed", "1", "--chaos-rate", "1.5"]).is_err());
        assert!(parse(&["--chaos-seed", "1", "--chaos-rate", "NaN"]).is_err());
        assert!(parse(&["--chaos-rate", "0.1"]).unwrap().target().is_err());
        assert!(
            parse(&["--chaos-seed", "1", "--kubeconfig", "/k"])
                .unwrap()
                .target()
                .is_err()
        );
    }

    #[test]
    fn chaos_without_a_seed_is_for_a_cluster_only() {
        let o = parse(&["--kubeconfig", "/k", "--chaos"]).unwrap();
        assert!(o.chaos);
        assert!(o.target().is_ok());
        assert!(parse(&["--cluster", "--chaos"]).unwrap().target().is_ok());
        for args in [
            &["--chaos"][..],
            &["--chaos", "--provider-url", "ws://127.0.0.1:1"],
            &["--chaos", "--chaos-seed", "1"],
        ] {
            assert!(parse(args).unwrap().target().is_err(), "{args:?}");
        }
    }

    #[test]
    fn chaos_explains_adds_contract_codes_under_chaos_only() {
        let o = parse(&[
            "--kubeconfig",
            "/k",
            "--chaos",
            "--chaos-explains=permission_denied",
        ])
        .unwrap();
        assert_eq!(
            o.chaos_explains,
            Explained::with(&[sandbox_contract::ErrorCode::PermissionDenied])
        );
        assert!(o.target().is_ok());
        let err = parse(&["--chaos-explains", "denied"]).unwrap_err();
        assert!(
            err.contains("\"denied\" is not a contract error code"),
            "{err}"
        );
        let alone = parse(&["--kubeconfig", "/k", "--chaos-explains", "conflict"]).unwrap();
        assert_eq!(
            alone.target(),
            Err("--chaos-explains needs --chaos or --chaos-seed".to_owned())
        );
    }

    #[test]
    fn stream_gap_takes_milliseconds_for_a_cluster() {
        let o = parse(&["--kubeconfig", "/k", "--fast", "--stream-gap", "400"]).unwrap();
        assert_eq!(o.stream_gap, Some(std::time::Duration::from_millis(400)));
        assert!(o.target().is_ok());
        for bad in ["0", "-5", "1s", "60001"] {
            let err = parse(&["--kubeconfig", "/k", "--stream-gap", bad]).unwrap_err();
            assert!(err.contains("milliseconds from 1 to 60000"), "{bad}: {err}");
        }
        assert_eq!(
            parse(&["--stream-gap", "400"]).unwrap().target(),
            Err("--stream-gap needs --kubeconfig or --cluster".to_owned())
        );
    }

    #[test]
    fn pods_ignore_sigterm_is_for_the_embedded_fakekube_only() {
        let o = parse(&["--pods-ignore-sigterm", "lifecycle"]).unwrap();
        assert!(o.pods_ignore_sigterm);
        assert_eq!(o.rest, ["lifecycle"]);
        assert_eq!(o.target(), Ok(Target::Embedded));
        for other in [
            &["--kubeconfig", "/k"][..],
            &["--cluster"],
            &["--provider-url", "ws://127.0.0.1:1"],
        ] {
            let mut args = vec!["--pods-ignore-sigterm"];
            args.extend_from_slice(other);
            assert!(parse(&args).unwrap().target().is_err(), "{args:?}");
        }
    }

    #[test]
    fn help_is_seen_among_libtest_arguments() {
        assert!(parse(&["exec::", "--help"]).unwrap().wants_help());
        assert!(!parse(&["exec::"]).unwrap().wants_help());
    }
}
