//! The pool's one watch wakes the readiness waits: with polls an hour apart, creates, stops and
//! starts still finish, so the wake came from the watch; without `watch` in the Role the pool
//! polls and asks for the watch once; a watch broken mid-wait is opened again and loses no
//! wait; dropping the provider ends the watch.

#![allow(missing_docs)]

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use agentsandbox::{AgentSandbox, PoolConfig};
use fakekube::{FakeKube, Rule, Token};
use sandbox_contract::{CreateRequest, Provider, SandboxId, SandboxState};
use support::*;
use tokio::sync::watch;

fn id(s: &str) -> SandboxId {
    SandboxId::new(s).expect("valid sandbox id")
}

/// Polls so far apart that only the watch can wake a wait within [`WAIT`].
const HOUR: Duration = Duration::from_secs(3600);

/// The seed's Role plus `watch` on Sandboxes and SandboxClaims.
fn watch_role() -> Vec<Rule> {
    let mut rules = seed_role();
    rules.push(Rule::new(["agents.x-k8s.io"], ["sandboxes"], ["watch"]).in_namespaces([NS]));
    rules.push(
        Rule::new(["extensions.agents.x-k8s.io"], ["sandboxclaims"], ["watch"]).in_namespaces([NS]),
    );
    rules
}

/// A provider of the pool `name` (`config` lines) whose token may watch, polling an hour
/// apart, talking to `server` (the fake itself, or a relay to it).
async fn watching(
    kube: &FakeKube,
    name: &str,
    config: &[&str],
    server: SocketAddr,
) -> AgentSandbox {
    let secret = format!("watch-token-{name}");
    kube.add_token(Token::new(&secret, "watcher").with_rules(watch_role()));
    let kubeconfig = kube
        .kubeconfig_with_token(&secret)
        .replace(&kube.base_url(), &format!("https://{server}"));
    let pool = PoolConfig::from_yaml(&pool_yaml(name, config)).expect("pool config");
    AgentSandbox::connect(
        pool,
        options(kube, &secret)
            .with_kubeconfig_yaml(kubeconfig)
            .with_poll_backoff(HOUR, HOUR),
    )
    .await
    .expect("provider connects")
}

/// How many log lines hold every one of `needles`.
fn logged(needles: &[&str]) -> usize {
    logs()
        .lines()
        .filter(|line| needles.iter().all(|n| line.contains(n)))
        .count()
}

/// A loopback TCP relay to `target` that can cut every connection it carries, and counts
/// those open.
struct Relay {
    addr: SocketAddr,
    open: watch::Receiver<usize>,
    cut: watch::Sender<u64>,
}

impl Relay {
    async fn start(target: SocketAddr) -> Relay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let (open_tx, open) = watch::channel(0usize);
        let (cut, _) = watch::channel(0u64);
        let cuts = cut.clone();
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let open_tx = open_tx.clone();
                let mut cut = cuts.subscribe();
                open_tx.send_modify(|n| *n += 1);
                tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                        tokio::select! {
                            _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                            _ = cut.changed() => {}
                        }
                    }
                    open_tx.send_modify(|n| *n -= 1);
                });
            }
        });
        Relay { addr, open, cut }
    }

    /// Breaks every connection open now.
    fn cut(&self) {
        self.cut.send_modify(|generation| *generation += 1);
    }
}

#[tokio::test]
async fn warm_creates_are_woken_by_the_watch_when_polls_are_an_hour_apart() {
    let kube = fake().await;
    warm_pool(&kube, 2).await;
    let p = watching(
        &kube,
        "watched-warm",
        &["warmPool: python-warm"],
        kube.addr(),
    )
    .await;
    for name in ["ww-1", "ww-2", "ww-3"] {
        let sandbox = p.create(CreateRequest::new(id(name))).await.unwrap();
        assert_eq!(sandbox.state, SandboxState::Running, "{name}");
    }
    assert_eq!(
        logged(&["opening the watch", "pool watched-warm sandboxclaims"]),
        1,
        "one watch served every wait"
    );
}

#[tokio::test]
async fn direct_create_stop_and_start_are_woken_by_the_watch_when_polls_are_an_hour_apart() {
    let kube = fake().await;
    let p = watching(&kube, "watched-direct", &["volumeSize: 1Gi"], kube.addr()).await;
    let sb = id("wd-1");
    assert_eq!(
        p.create(CreateRequest::new(sb.clone()))
            .await
            .unwrap()
            .state,
        SandboxState::Running
    );
    assert_eq!(p.stop(&sb).await.unwrap().state, SandboxState::Stopped);
    assert_eq!(p.start(&sb).await.unwrap().state, SandboxState::Running);
    let second = p.create(CreateRequest::new(id("wd-2"))).await.unwrap();
    assert_eq!(second.state, SandboxState::Running);
}

#[tokio::test]
async fn without_watch_in_the_role_creates_are_polled_and_the_watch_is_asked_for_once() {
    let kube = fake().await;
    let token = role_token(&kube, "role-token-polled");
    let p = provider_with(&kube, &pool_yaml("polled", &[]), &token).await;
    for name in ["wp-1", "wp-2", "wp-3"] {
        let sandbox = p.create(CreateRequest::new(id(name))).await.unwrap();
        assert_eq!(sandbox.state, SandboxState::Running, "{name}");
    }
    assert_eq!(logged(&["opening the watch", "pool polled sandboxes"]), 1);
    assert_eq!(
        logged(&["the watch is not allowed (403)", "pool polled sandboxes"]),
        1
    );
    assert!(
        !logs().contains("role-token-polled"),
        "no token in the logs"
    );
}

#[tokio::test]
async fn a_watch_broken_mid_wait_is_opened_again_and_loses_no_wait() {
    let kube = fake_with(FakeKube::builder().pod_start_delay(Duration::from_secs(1))).await;
    let relay = Relay::start(kube.addr()).await;
    let p = watching(&kube, "broken", &[], relay.addr).await;
    assert_eq!(
        p.create(CreateRequest::new(id("wb-1")))
            .await
            .unwrap()
            .state,
        SandboxState::Running
    );
    let waiting = {
        let p = p.clone();
        tokio::spawn(async move { p.create(CreateRequest::new(id("wb-2"))).await })
    };
    // The wait is registered once the Sandbox is created; its pod starts only 1 s later.
    let deadline = tokio::time::Instant::now() + WAIT;
    while logged(&["Sandbox created", "sandbox=\"wb-2\""]) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the create went through"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    relay.cut();
    let created = waiting.await.expect("the create task ends").unwrap();
    assert_eq!(created.state, SandboxState::Running);
    assert!(
        logged(&["opening the watch", "pool broken sandboxes"]) >= 2,
        "the watch was opened again"
    );
}

#[tokio::test]
async fn dropping_the_provider_ends_the_watch_and_closes_its_connection() {
    let kube = fake().await;
    let relay = Relay::start(kube.addr()).await;
    let p = watching(&kube, "dropped", &[], relay.addr).await;
    p.create(CreateRequest::new(id("wx-1"))).await.unwrap();
    assert!(*relay.open.borrow() > 0, "the provider holds a connection");
    drop(p);
    let mut open = relay.open.clone();
    tokio::time::timeout(WAIT, open.wait_for(|n| *n == 0))
        .await
        .expect("every connection closes once the provider is dropped")
        .expect("the relay runs");
}
