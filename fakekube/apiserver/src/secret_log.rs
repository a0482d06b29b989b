//! For the credential scan of CI (`ci/credential-scan.sh`): with `FAKEKUBE_SECRET_LOG` set to
//! a path, every admin token fakekube generates or writes into a kubeconfig, the signature of
//! every service-account token it signs, and every client key it issues, is appended there,
//! one a line, so the scan knows what to look for. Unset, nothing is written.

use std::io::Write;
use std::sync::Mutex;

/// The variable naming the file.
const VARIABLE: &str = "FAKEKUBE_SECRET_LOG";

/// Appends `secret` to the log, when there is one.
pub fn record(secret: &str) {
    static LOCK: Mutex<()> = Mutex::new(());
    let Some(path) = std::env::var_os(VARIABLE) else {
        return;
    };
    let secret = secret.trim();
    if secret.is_empty() || secret.contains('\n') {
        return;
    }
    let _guard = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{secret}");
    }
}

/// Appends the distinctive lines of a PEM private key (its base64 body, 64 characters a line).
pub fn record_key(pem: &str) {
    for line in pem
        .lines()
        .filter(|l| l.len() >= 40 && !l.starts_with("-----"))
    {
        record(line);
    }
}
