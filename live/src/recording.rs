//! `LIVE_RECORD=PATH`: the run's clients (the adapter's pools and the observer) go through
//! recording proxies that write one cassette (`fakekube-cassette`), so that a replay
//! (`fakekube replay PATH --kubeconfig-dir DIR`) can later stand in for the cluster. The
//! adapter's exchanges are recorded as the client `default`, the observer's as `observer`.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use fakekube_cassette::format::DEFAULT_CLIENT;
use fakekube_cassette::{Kubeconfig, Proxy, RecordSummary, Recorder};

/// The client name of the observer's exchanges.
pub const OBSERVER_CLIENT: &str = "observer";

/// A recording in progress.
pub struct Recording {
    recorder: Recorder,
    proxies: Vec<Proxy>,
    dir: PathBuf,
    kubeconfig: PathBuf,
    observer: Option<PathBuf>,
}

impl Recording {
    /// Starts recording into `cassette` the exchanges made through `kubeconfig` (and through
    /// `observer`, when it is another kubeconfig).
    pub async fn start(
        cassette: &Path,
        kubeconfig: &Path,
        observer: Option<&Path>,
    ) -> Result<Recording, String> {
        let recorder =
            Recorder::create(cassette).map_err(|e| format!("LIVE_RECORD: {}", causes(&e)))?;
        let dir = std::env::temp_dir().join(format!("live-record-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("LIVE_RECORD: creating {}: {e}", dir.display()))?;
        let mut recording = Recording {
            recorder,
            proxies: Vec::new(),
            kubeconfig: dir.join("default.kubeconfig"),
            observer: None,
            dir,
        };
        recording
            .proxy(kubeconfig, DEFAULT_CLIENT, &recording.kubeconfig.clone())
            .await?;
        if let Some(observer) = observer.filter(|o| *o != kubeconfig) {
            let path = recording.dir.join("observer.kubeconfig");
            recording.proxy(observer, OBSERVER_CLIENT, &path).await?;
            recording.observer = Some(path);
        }
        Ok(recording)
    }

    /// Starts a proxy for the cluster of `upstream`, writing its client kubeconfig to `out`.
    async fn proxy(&mut self, upstream: &Path, client: &str, out: &Path) -> Result<(), String> {
        let kubeconfig = Kubeconfig::from_path(upstream)
            .map_err(|e| format!("LIVE_RECORD: {}: {}", upstream.display(), causes(&e)))?;
        let bind = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let proxy = Proxy::start(&kubeconfig, &self.recorder, client, bind)
            .await
            .map_err(|e| format!("LIVE_RECORD: {}", causes(&e)))?;
        std::fs::write(out, proxy.kubeconfig())
            .map_err(|e| format!("LIVE_RECORD: writing {}: {e}", out.display()))?;
        self.proxies.push(proxy);
        Ok(())
    }

    /// The kubeconfig the adapter uses while recording.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The kubeconfig the observer uses while recording, when it has its own.
    pub fn observer(&self) -> Option<&Path> {
        self.observer.as_deref()
    }

    /// Stops the proxies and closes the cassette.
    pub async fn finish(self) -> Result<RecordSummary, String> {
        for proxy in self.proxies {
            proxy.shutdown().await;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        self.recorder
            .finish()
            .map_err(|e| format!("LIVE_RECORD: {}", causes(&e)))
    }
}

/// An error and its causes on one line.
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}
