//! The fake image registry: every image exists and starts unless a test marked it missing or
//! crashing. Names are compared as a container runtime resolves them, so `busybox`,
//! `busybox:latest` and `docker.io/library/busybox:latest` are one image.
//!
//! An image is a program of the runtime: a container that gives no `command` or `args` runs
//! its image's program. The agent-sandbox images run theirs whatever registry and tag they
//! come from (a repository named `sandbox-router` runs `sandbox-router`, one named
//! `python-runtime-sandbox` runs `python-runtime-sandbox`); [`Images::set_program`] (the
//! `--image-program IMAGE=PROGRAM` flag) maps any other image; every other image runs the
//! keep-alive default ([`crate::env::DEFAULT_COMMAND`]).

use std::collections::HashMap;
use std::sync::Mutex;
use tokio::sync::watch;

/// What a test made of an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The registry does not have it: pulls fail (`ErrImagePull`, then `ImagePullBackOff`).
    Missing,
    /// Its entrypoint exits 1 at once, every time (`CrashLoopBackOff`).
    Crashing,
}

/// The images of the fake registry that do not simply work. Obtained from
/// `fakekube::FakeKube::images`; changes apply to the next pull or start: a
/// container waiting on a missing image that is cleared starts at once, a running container is
/// not affected by marking its image crashing until it restarts.
#[derive(Debug)]
pub struct Images {
    /// Marks by normalised image reference.
    marks: Mutex<HashMap<String, Mark>>,
    /// Bumped on every change, so the kubelet retries waiting pulls.
    changed: watch::Sender<u64>,
    /// Programs set for images: by normalised reference, or by repository (any tag) when set
    /// without a tag or digest.
    programs: Mutex<HashMap<String, String>>,
}

/// The images that run a program of their own wherever they come from: the repository's
/// last path component and the program.
pub const BUILTIN_PROGRAMS: [(&str, &str); 2] = [
    ("sandbox-router", "sandbox-router"),
    ("python-runtime-sandbox", "python-runtime-sandbox"),
];

impl Default for Images {
    fn default() -> Self {
        Images {
            marks: Mutex::new(HashMap::new()),
            changed: watch::channel(0).0,
            programs: Mutex::new(HashMap::new()),
        }
    }
}

impl Images {
    /// Makes pulls of `image` fail, as for a name the registry does not know.
    pub fn mark_missing(&self, image: &str) {
        self.set(image, Some(Mark::Missing));
    }

    /// Makes containers of `image` exit 1 as soon as they start.
    pub fn mark_crashing(&self, image: &str) {
        self.set(image, Some(Mark::Crashing));
    }

    /// Makes `image` an ordinary, working image again.
    pub fn clear(&self, image: &str) {
        self.set(image, None);
    }

    fn set(&self, image: &str, mark: Option<Mark>) {
        let key = normalize(image);
        {
            let mut marks = self.marks.lock().unwrap_or_else(|p| p.into_inner());
            match mark {
                Some(m) => marks.insert(key, m),
                None => marks.remove(&key),
            };
        }
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The mark of an image, if any.
    pub fn mark(&self, image: &str) -> Option<Mark> {
        let marks = self.marks.lock().unwrap_or_else(|p| p.into_inner());
        marks.get(&normalize(image)).copied()
    }

    /// Makes containers of `image` without `command` or `args` run `program` (with no
    /// arguments): every tag of the repository when `image` names none, else that tag.
    pub fn set_program(&self, image: &str, program: &str) {
        let mut programs = self.programs.lock().unwrap_or_else(|p| p.into_inner());
        programs.insert(program_key(image), program.to_string());
    }

    /// The program an image runs when its container gives no command: one set for it (by
    /// reference, then by repository), else the agent-sandbox images' own, else `None` (the
    /// keep-alive default).
    pub fn program(&self, image: &str) -> Option<String> {
        let full = normalize(image);
        let repo = repository(&full);
        {
            let programs = self.programs.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(p) = programs.get(&full).or_else(|| programs.get(&repo)) {
                return Some(p.clone());
            }
        }
        let last = repo.rsplit('/').next().unwrap_or_default();
        BUILTIN_PROGRAMS
            .iter()
            .find(|(name, _)| *name == last)
            .map(|(_, program)| program.to_string())
    }

    /// A receiver that sees every change of the marks.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// An image reference as containerd reports it: registry `docker.io` and the `library/`
/// namespace when missing, tag `latest` when there is neither tag nor digest.
pub fn normalize(image: &str) -> String {
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let first = name.split('/').next().unwrap_or("");
    let has_registry =
        name.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let mut full = if has_registry {
        name.to_string()
    } else if name.contains('/') {
        format!("docker.io/{name}")
    } else {
        format!("docker.io/library/{name}")
    };
    if let Some(rest) = full.strip_prefix("docker.io/")
        && !rest.contains('/')
    {
        full = format!("docker.io/library/{rest}");
    }
    let last = full.rsplit('/').next().unwrap_or("");
    match digest {
        Some(d) => format!("{full}@{d}"),
        None if last.contains(':') => full,
        None => format!("{full}:latest"),
    }
}

/// The key [`Images::set_program`] files an image under: its normalised reference, or its
/// repository when it was given without a tag or digest.
fn program_key(image: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or_default();
    let full = normalize(image);
    if last.contains(':') || image.contains('@') {
        full
    } else {
        repository(&full)
    }
}

/// A normalised reference without its tag or digest.
fn repository(full: &str) -> String {
    let name = full.split('@').next().unwrap_or_default();
    match name.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo.to_string(),
        _ => name.to_string(),
    }
}

/// The image's content address as the runtime reports it in `imageID`: the repository with
/// the digest (a stable made-up one when the reference has none).
pub fn image_id(image: &str) -> String {
    let full = normalize(image);
    if full.contains('@') {
        return full;
    }
    let repo = match full.rsplit_once(':') {
        Some((r, tag)) if !tag.contains('/') => r.to_string(),
        _ => full.clone(),
    };
    format!("{repo}@sha256:{}", hex64(&full))
}

/// 64 hex digits derived from `s` (four FNV-1a passes with different seeds): stable, not
/// cryptographic.
pub fn hex64(s: &str) -> String {
    let mut out = String::with_capacity(64);
    for seed in 0u64..4 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for b in s.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{h:016x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_resolve_to_docker_hub_library_with_latest() {
        assert_eq!(normalize("busybox"), "docker.io/library/busybox:latest");
        assert_eq!(normalize("busybox:1.36"), "docker.io/library/busybox:1.36");
        assert_eq!(normalize("me/tool"), "docker.io/me/tool:latest");
        assert_eq!(
            normalize("docker.io/busybox"),
            "docker.io/library/busybox:latest"
        );
    }

    #[test]
    fn registries_ports_and_digests_are_kept() {
        assert_eq!(
            normalize("registry.k8s.io/pause:3.9"),
            "registry.k8s.io/pause:3.9"
        );
        assert_eq!(normalize("localhost:5000/app"), "localhost:5000/app:latest");
        assert_eq!(
            normalize("busybox@sha256:abc"),
            "docker.io/library/busybox@sha256:abc"
        );
    }

    #[test]
    fn a_mark_applies_to_every_spelling_of_the_image_until_cleared() {
        let images = Images::default();
        images.mark_missing("busybox");
        assert_eq!(
            images.mark("docker.io/library/busybox:latest"),
            Some(Mark::Missing)
        );
        assert_eq!(images.mark("busybox:1.0"), None);
        images.mark_crashing("busybox:latest");
        assert_eq!(images.mark("busybox"), Some(Mark::Crashing));
        images.clear("docker.io/busybox");
        assert_eq!(images.mark("busybox"), None);
    }

    #[test]
    fn marking_an_image_notifies_subscribers() {
        let images = Images::default();
        let mut rx = images.subscribe();
        rx.borrow_and_update();
        images.mark_crashing("x");
        assert!(rx.has_changed().unwrap_or(false));
    }

    #[test]
    fn agent_sandbox_images_run_their_programs_from_any_registry_and_tag() {
        let images = Images::default();
        assert_eq!(
            images
                .program("kind.local/sandbox-router:latest")
                .as_deref(),
            Some("sandbox-router")
        );
        assert_eq!(
            images
                .program("us-central1-docker.pkg.dev/k8s-staging-images/agent-sandbox/python-runtime-sandbox:latest-main")
                .as_deref(),
            Some("python-runtime-sandbox")
        );
        assert_eq!(images.program("busybox"), None);
    }

    #[test]
    fn a_program_set_for_an_image_applies_to_its_tag_or_to_every_tag() {
        let images = Images::default();
        images.set_program("registry.example/my/router", "sandbox-router");
        images.set_program("web:2", "httpd");
        assert_eq!(
            images.program("registry.example/my/router:v3").as_deref(),
            Some("sandbox-router")
        );
        assert_eq!(
            images.program("docker.io/library/web:2").as_deref(),
            Some("httpd")
        );
        assert_eq!(images.program("web:3"), None);
        images.set_program("kind.local/sandbox-router:x", "true");
        assert_eq!(
            images.program("kind.local/sandbox-router:x").as_deref(),
            Some("true")
        );
    }

    #[test]
    fn image_ids_are_stable_digests_of_the_repository() {
        let id = image_id("busybox");
        assert!(id.starts_with("docker.io/library/busybox@sha256:"), "{id}");
        assert_eq!(id.len(), "docker.io/library/busybox@sha256:".len() + 64);
        assert_eq!(id, image_id("docker.io/library/busybox:latest"));
        assert_ne!(id, image_id("busybox:1.36"));
        assert_eq!(
            image_id("busybox@sha256:abc"),
            "docker.io/library/busybox@sha256:abc"
        );
    }
}
