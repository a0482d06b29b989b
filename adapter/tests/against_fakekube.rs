//! The adapter against fakekube: every item of the seed's "Fake API server" list.

#![allow(missing_docs)]

mod support;

use std::collections::BTreeSet;
use std::time::{Duration, UNIX_EPOCH};

use agentsandbox::{AgentSandbox, Clock, CreatedKind, POOL_LABEL, PoolConfig};
use bytes::Bytes;
use fakekube::FakeKube;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use sandbox_contract::{
    Capability, CreateRequest, ErrorCode, ExecEvent, ExecRequest, FileKind, Provider, Resources,
    SandboxId, SandboxState,
};
use serde_json::{Value, json};
use support::*;

fn id(s: &str) -> SandboxId {
    SandboxId::new(s).expect("valid sandbox id")
}

async fn stored(kube: &FakeKube, resource: &str, name: &str) -> Value {
    kube.get(resource, NS, name)
        .unwrap_or_else(|| panic!("{resource}/{name} is stored"))
}

// ---------------------------------------------------------------------------------------------
// Manifests sent

#[tokio::test]
async fn direct_sandbox_manifest_replaces_the_entrypoint_and_mounts_no_token() {
    let kube = fake().await;
    let p = direct(&kube, &[]).await;
    let sb = p
        .create(CreateRequest::new(id("sb-direct")).with_label("team", "a"))
        .await
        .unwrap();
    assert_eq!(sb.state, SandboxState::Running);
    insta::assert_json_snapshot!(
        "direct",
        sent_shape(&stored(&kube, "sandboxes", "sb-direct").await)
    );
}

#[tokio::test]
async fn direct_sandbox_with_volume_gets_a_claim_template_and_its_mount() {
    let kube = fake().await;
    let p = direct(
        &kube,
        &[
            "volumeSize: 1Gi",
            "volumePath: /workspace",
            "storageClassName: fast",
        ],
    )
    .await;
    p.create(CreateRequest::new(id("sb-volume"))).await.unwrap();
    insta::assert_json_snapshot!(
        "direct_with_volume",
        sent_shape(&stored(&kube, "sandboxes", "sb-volume").await)
    );
    let pvc = stored(&kube, "persistentvolumeclaims", "workspace-sb-volume").await;
    assert_eq!(pvc["spec"]["resources"]["requests"]["storage"], "1Gi");
}

#[tokio::test]
async fn resources_become_requests_and_limits_and_ephemeral_storage() {
    let kube = fake().await;
    let p = direct(&kube, &[]).await;
    let resources = Resources {
        cpu_millis: Some(500),
        memory_mib: Some(512),
        disk_gib: Some(10),
    };
    p.create(CreateRequest::new(id("sb-resources")).with_resources(resources))
        .await
        .unwrap();
    insta::assert_json_snapshot!(
        "resources",
        sent_shape(&stored(&kube, "sandboxes", "sb-resources").await)
    );
}

#[tokio::test]
async fn runtime_class_ttl_env_template_and_expose_shape_the_sandbox() {
    let kube = fake().await;
    // The cluster has what the pool names, as the API server's admission requires.
    kube.create(json!({
        "apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
        "metadata": { "name": "gvisor" }, "handler": "runsc",
    }))
    .unwrap();
    kube.create(json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": { "name": "sandbox", "namespace": NS },
    }))
    .unwrap();
    let p = direct(
        &kube,
        &[
            "runtimeClassName: gvisor",
            "serviceAccountName: sandbox",
            "features: exec,ports.expose,ttl",
        ],
    )
    .await;
    p.create(
        CreateRequest::new(id("sb-runtime"))
            .with_template("debian:bookworm-slim")
            .with_env("GREETING", "hello")
            .with_ttl(Duration::from_secs(3600)),
    )
    .await
    .unwrap();
    insta::assert_json_snapshot!(
        "runtime_class",
        sent_shape(&stored(&kube, "sandboxes", "sb-runtime").await),
        { ".spec.shutdownTime" => "[shutdown time]" }
    );
    let service = stored(&kube, "services", "sb-runtime").await;
    assert_eq!(service["spec"]["clusterIP"], "None");
}

#[tokio::test]
async fn warm_claim_manifest_names_the_warm_pool() {
    let kube = fake().await;
    warm_pool(&kube, 1).await;
    let p = warm(&kube, &["features: exec,ttl"]).await;
    p.create(CreateRequest::new(id("claim-1")).with_ttl(Duration::from_secs(600)))
        .await
        .unwrap();
    insta::assert_json_snapshot!(
        "warm_claim",
        sent_shape(&stored(&kube, "sandboxclaims", "claim-1").await),
        { ".spec.lifecycle.shutdownTime" => "[shutdown time]" }
    );
}

#[tokio::test]
async fn claim_with_env_carries_it_to_a_fresh_sandbox() {
    let kube = fake().await;
    warm_pool(&kube, 1).await;
    let p = warm(&kube, &["container: main"]).await;
    p.create(CreateRequest::new(id("claim-env")).with_env("MODE", "fresh"))
        .await
        .unwrap();
    insta::assert_json_snapshot!(
        "claim_with_env",
        sent_shape(&stored(&kube, "sandboxclaims", "claim-env").await)
    );
    let out = p
        .exec(
            &id("claim-env"),
            ExecRequest::new(["sh", "-c", "echo $MODE"]),
        )
        .await
        .unwrap();
    assert_eq!(out.stdout, "fresh\n");
}

// ---------------------------------------------------------------------------------------------
// Create, readiness, list, delete

#[tokio::test]
async fn create_is_idempotent_and_a_second_create_adopts() {
    let kube = fake().await;
    let p = direct(&kube, &[]).await;
    let request = CreateRequest::new(id("sb-twice")).with_label("n", "1");
    let (a, b) = tokio::join!(p.create(request.clone()), p.create(request.clone()));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.provider_ref, b.provider_ref);
    let third = p.create(request).await.unwrap();
    assert_eq!(third.state, SandboxState::Running);
    assert_eq!(third.labels.get("n").map(String::as_str), Some("1"));
    let listed = p.list().await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
}

#[tokio::test]
async fn create_waits_until_ready_for_the_current_generation() {
    let kube = fake_with(FakeKube::builder().kubelet(false)).await;
    let p = direct(&kube, &[]).await;
    let pods: Api<Pod> = Api::namespaced(admin(&kube).await, NS);
    let create = tokio::spawn({
        let p = p.clone();
        async move { p.create(CreateRequest::new(id("sb-slow"))).await }
    });
    kube.wait_for("pods", NS, "sb-slow", WAIT, |pod| pod.is_some())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !create.is_finished(),
        "create returned before the pod was ready"
    );
    // Play the kubelet: the pod runs and is ready.
    let merge = PatchParams::default();
    pods.patch(
        "sb-slow",
        &merge,
        &Patch::Merge(json!({"spec": {"nodeName": "node-1"}})),
    )
    .await
    .unwrap();
    pods.patch_status(
        "sb-slow",
        &merge,
        &Patch::Merge(json!({"status": {
            "phase": "Running",
            "podIP": "10.0.0.9",
            "podIPs": [{"ip": "10.0.0.9"}],
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]
        }})),
    )
    .await
    .unwrap();
    let sandbox = create.await.unwrap().unwrap();
    assert_eq!(sandbox.state, SandboxState::Running);
    let stored = stored(&kube, "sandboxes", "sb-slow").await;
    let generation = stored["metadata"]["generation"].clone();
    let ready = stored["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready["status"], "True");
    assert_eq!(ready["observedGeneration"], generation);
}

#[tokio::test]
async fn list_pages_through_continue_and_sees_only_this_pool() {
    let kube = fake().await;
    let token = role_token(&kube, "role-token-pages");
    let yaml = pool_yaml("paged", &[]);
    let pool = agentsandbox::PoolConfig::from_yaml(&yaml).unwrap();
    let p = agentsandbox::AgentSandbox::connect(pool, options(&kube, &token).with_page_size(2))
        .await
        .unwrap();
    let other = direct(&kube, &[]).await;
    other
        .create(CreateRequest::new(id("not-mine")))
        .await
        .unwrap();
    let ids: BTreeSet<String> = (0..5).map(|n| format!("sb-page-{n}")).collect();
    for name in &ids {
        p.create(CreateRequest::new(id(name))).await.unwrap();
    }
    let listed: BTreeSet<String> = p
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id.into_string())
        .collect();
    assert_eq!(listed, ids);
    assert!(p.get(&id("not-mine")).await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn list_fails_loudly_when_a_page_fails() {
    let kube = fake().await;
    let token = role_token(&kube, "role-token-failing");
    let pool = agentsandbox::PoolConfig::from_yaml(&pool_yaml("failing", &[])).unwrap();
    let p = agentsandbox::AgentSandbox::connect(pool, options(&kube, &token).with_page_size(1))
        .await
        .unwrap();
    for n in 0..3 {
        p.create(CreateRequest::new(id(&format!("sb-fail-{n}"))))
            .await
            .unwrap();
    }
    kube.faults().fail_continued_lists(true);
    let error = p.list().await.unwrap_err();
    assert_eq!(error.code(), ErrorCode::Internal, "{error}");
    assert!(error.message().contains("page"), "{error}");
    kube.faults().fail_continued_lists(false);
    assert_eq!(p.list().await.unwrap().len(), 3);
}

#[tokio::test]
async fn delete_is_idempotent_and_removes_everything() {
    let kube = fake().await;
    let p = direct(&kube, &["volumeSize: 1Gi", "features: exec,ports.expose"]).await;
    p.create(CreateRequest::new(id("sb-del"))).await.unwrap();
    p.delete(&id("sb-del")).await.unwrap();
    p.delete(&id("sb-del")).await.unwrap();
    p.delete(&id("never-was")).await.unwrap();
    kube.wait_for("sandboxes", NS, "sb-del", WAIT, |s| s.is_none())
        .await
        .unwrap();
    kube.wait_for("pods", NS, "sb-del", WAIT, |s| s.is_none())
        .await
        .unwrap();
    kube.wait_for(
        "persistentvolumeclaims",
        NS,
        "workspace-sb-del",
        WAIT,
        |s| s.is_none(),
    )
    .await
    .unwrap();
    assert!(p.get(&id("sb-del")).await.unwrap_err().is_not_found());
    assert_eq!(kube.leaks(), Vec::<String>::new());
}

#[tokio::test]
async fn reconcile_removes_only_what_the_host_no_longer_knows() {
    let kube = fake().await;
    let p = direct(&kube, &[]).await;
    for name in ["keep-me", "forgotten"] {
        p.create(CreateRequest::new(id(name))).await.unwrap();
    }
    let created = p.list_created().await.unwrap();
    assert_eq!(created.len(), 2);
    assert!(created.iter().all(|c| c.kind == CreatedKind::Sandbox));
    let known = BTreeSet::from([id("keep-me")]);
    let removed = p.reconcile(&known).await.unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].id, "forgotten");
    assert!(p.get(&id("keep-me")).await.is_ok());
    let after = p.reconcile(&known).await.unwrap();
    assert!(after.is_empty());
}

#[tokio::test]
async fn missing_image_fails_at_once_and_removes_the_sandbox() {
    let kube = fake().await;
    kube.images().mark_missing("ghcr.io/nobody/nothing:1");
    let p = direct(&kube, &[]).await;
    let error = p
        .create(CreateRequest::new(id("sb-noimage")).with_template("ghcr.io/nobody/nothing:1"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidRequest, "{error}");
    kube.wait_for("sandboxes", NS, "sb-noimage", WAIT, |s| s.is_none())
        .await
        .unwrap();
}

#[tokio::test]
async fn crash_loop_is_sandbox_failed_and_get_says_failed() {
    // A back-off of an hour keeps the pod waiting in CrashLoopBackOff after its first crash:
    // with fakekube's default of 10 ms, a slow `get` may read it between a restart and the next
    // crash.
    let kube = fake_with(FakeKube::builder().crash_backoff(Duration::from_secs(3600))).await;
    kube.images().mark_crashing("crashy:1");
    let p = direct(&kube, &[]).await;
    let error = p
        .create(CreateRequest::new(id("sb-crash")).with_template("crashy:1"))
        .await
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::SandboxFailed, "{error}");
    let sandbox = p.get(&id("sb-crash")).await.unwrap();
    assert_eq!(sandbox.state, SandboxState::Failed);
    let exec = p
        .exec(&id("sb-crash"), ExecRequest::new(["true"]))
        .await
        .unwrap_err();
    assert!(exec.is_sandbox_failed(), "{exec}");
    p.delete(&id("sb-crash")).await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Exec

#[tokio::test]
async fn exec_passes_arguments_env_and_cwd_exactly() {
    let kube = fake().await;
    kube.register_command("argv-dump", |call: fakekube::CommandCall| async move {
        let text = format!(
            "{}|{}|{}",
            call.args().join("\u{1}"),
            call.var("TOKEN_LIKE").unwrap_or("-"),
            call.cwd()
        );
        let _ = call.write_stdout(text).await;
        0
    });
    let p = direct(&kube, &[]).await;
    p.create(CreateRequest::new(id("sb-args"))).await.unwrap();
    let args = ["a b", "$HOME", "'q'", "\"dq\"", "x;y", "", "é"];
    let mut argv = vec!["argv-dump"];
    argv.extend(args);
    let out = p
        .exec(
            &id("sb-args"),
            ExecRequest::new(argv)
                .with_env("TOKEN_LIKE", "v a l")
                .with_cwd("/tmp"),
        )
        .await
        .unwrap();
    assert_eq!(out.exit_code, 0, "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{}|v a l|/tmp", args.join("\u{1}"))
    );
}

#[tokio::test]
async fn exec_exit_codes_are_data_with_124_126_127() {
    let kube = fake().await;
    let p = direct(&kube, &[]).await;
    let sb = id("sb-codes");
    p.create(CreateRequest::new(sb.clone())).await.unwrap();
    let run = |request: ExecRequest| {
        let p = p.clone();
        let sb = sb.clone();
        async move { p.exec(&sb, request).await.unwrap() }
    };
    assert_eq!(
        run(ExecRequest::new(["sh", "-c", "exit 7"]))
            .await
            .exit_code,
        7
    );
    assert_eq!(run(ExecRequest::new(["true"])).await.exit_code, 0);
    let missing = run(ExecRequest::new(["no-such-binary"])).await;
    assert_eq!(missing.exit_code, 127, "{missing:?}");
    let missing_sh = run(ExecRequest::new(["sh", "-c", "no-such-binary"])).await;
    assert_eq!(missing_sh.exit_code, 127);
    let not_exec = run(ExecRequest::new([
        "sh",
        "-c",
        "printf 'x' > /tmp/plain && /tmp/plain",
    ]))
    .await;
    assert_eq!(not_exec.exit_code, 126, "{not_exec:?}");
    // The command would outlast any test: the exec returns because its own timeout ended it.
    let timed_out = tokio::time::timeout(
        WAIT,
        run(ExecRequest::new(["sleep", "3600"]).with_timeout(Duration::from_millis(300))),
    )
    .await
    .expect("the timed-out exec does not wait for its command");
    assert_eq!(timed_out.exit_code, 124);
    let with_env_missing = run(ExecRequest::new(["nope"]).with_env("A", "1")).await;
    assert_eq!(with_env_missing.exit_code, 127);
}

#[tokio::test]
async fn exec_streams_stdout_and_stderr_separately_as_they_come() {
    let kube = fake().await;
    let p = direct(&kube, &[]).await;
    p.create(CreateRequest::new(id("sb-stream"))).await.unwrap();
    let mut session = p
        .exec_stream(
            &id("sb-stream"),
            ExecRequest::new([
                "sh",
                "-c",
                "echo out1; echo err1 >&2; while [ ! -f /tmp/go ]; do sleep 0.05; done; echo out2; exit 3",
            ]),
        )
        .await
        .unwrap();
    // The command goes on only once the test has seen its first chunk: a stream that held its
    // output back until the end would show nothing, however long the test waited.
    let first = tokio::time::timeout(WAIT, session.next_event())
        .await
        .expect("the first chunk came before the command went on")
        .unwrap()
        .unwrap();
    p.write_file(&id("sb-stream"), "/tmp/go", Bytes::new())
        .await
        .unwrap();
    let mut events = vec![first];
    while let Some(event) = session.next_event().await {
        events.push(event.unwrap());
    }
    let stdout: Vec<u8> = events
        .iter()
        .filter_map(|e| match e {
            ExecEvent::Stdout(b) => Some(b.to_vec()),
            _ => None,
        })
        .flatten()
        .collect();
    let stderr: Vec<u8> = events
        .iter()
        .filter_map(|e| match e {
            ExecEvent::Stderr(b) => Some(b.to_vec()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(stdout, b"out1\nout2\n");
    assert_eq!(stderr, b"err1\n");
    assert_eq!(events.last(), Some(&ExecEvent::Exit(3)));
}

#[tokio::test]
async fn stdin_bytes_and_streamed_stdin_reach_the_command_and_end() {
    let kube = fake().await;
    let p = direct(&kube, &["features: exec,exec.stream,stdin"]).await;
    let sb = id("sb-stdin");
    p.create(CreateRequest::new(sb.clone())).await.unwrap();
    let out = p
        .exec(&sb, ExecRequest::new(["wc", "-c"]).with_stdin("12345"))
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "5");
    let mut session = p
        .exec_stream(&sb, ExecRequest::new(["cat"]).with_streamed_stdin())
        .await
        .unwrap();
    let mut stdin = session.take_stdin().unwrap();
    stdin.send("line one\n").await.unwrap();
    let echoed = session.next_event().await.unwrap().unwrap();
    assert_eq!(echoed, ExecEvent::Stdout(Bytes::from_static(b"line one\n")));
    stdin.send("line two\n").await.unwrap();
    stdin.close().await.unwrap();
    let rest = session.wait_with_output().await.unwrap();
    assert_eq!(rest.stdout, "line two\n");
    assert_eq!(rest.exit_code, 0);
}

#[tokio::test]
async fn stdin_without_the_capability_is_unsupported() {
    let kube = fake().await;
    let p = direct(&kube, &[]).await;
    p.create(CreateRequest::new(id("sb-nostdin")))
        .await
        .unwrap();
    let error = p
        .exec(&id("sb-nostdin"), ExecRequest::new(["cat"]).with_stdin("x"))
        .await
        .unwrap_err();
    assert!(error.is_unsupported(), "{error}");
    assert!(error.message().contains("stdin"), "{error}");
}

#[tokio::test]
async fn v4_only_server_runs_exec_and_refuses_stdin_naming_its_protocol() {
    let kube = fake().await;
    let config = ["features: exec,exec.stream,files,stdin"];
    let p = direct(&kube, &config).await;
    let sb = id("sb-v4");
    p.create(CreateRequest::new(sb.clone())).await.unwrap();
    kube.faults().v4_only_exec(true);
    // A fresh provider knows no protocol yet: its first stdin exec probes without stdin.
    let fresh = direct(&kube, &config).await;
    let error = fresh
        .exec(
            &sb,
            ExecRequest::new(["sh", "-c", "cat > /tmp/probe"]).with_stdin("x"),
        )
        .await
        .unwrap_err();
    assert!(error.is_unsupported(), "{error}");
    assert!(error.message().contains("v4.channel.k8s.io"), "{error}");
    let probe = p.stat(&sb, "/tmp/probe").await.unwrap_err();
    assert!(probe.is_not_found(), "the refused command ran: {probe}");
    let out = p.exec(&sb, ExecRequest::new(["echo", "v4"])).await.unwrap();
    assert_eq!(out.stdout, "v4\n");
    let streamed = p
        .exec_stream(
            &sb,
            ExecRequest::new(["sh", "-c", "echo a; echo b >&2; exit 5"]),
        )
        .await
        .unwrap()
        .wait_with_output()
        .await
        .unwrap();
    assert_eq!(
        (
            streamed.exit_code,
            &streamed.stdout[..],
            &streamed.stderr[..]
        ),
        (5, &b"a\n"[..], &b"b\n"[..])
    );
    let error = p
        .exec(&sb, ExecRequest::new(["cat"]).with_stdin("x"))
        .await
        .unwrap_err();
    assert!(error.is_unsupported(), "{error}");
    assert!(error.message().contains("v4.channel.k8s.io"), "{error}");
    let write = p
        .write_file(&sb, "/tmp/w", Bytes::from_static(b"w"))
        .await
        .unwrap_err();
    assert!(write.is_unsupported(), "{write}");
    assert!(p.stat(&sb, "/").await.unwrap().is_dir());
}

// ---------------------------------------------------------------------------------------------
// Files

#[tokio::test]
async fn files_are_written_read_listed_and_missing_ones_are_not_found() {
    let kube = fake().await;
    let p = direct(&kube, &[]).await;
    let sb = id("sb-files");
    p.create(CreateRequest::new(sb.clone())).await.unwrap();
    let data: Bytes = (0..300 * 1024)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    p.write_file(&sb, "/workspace/deep/dir/data.bin", data.clone())
        .await
        .unwrap();
    assert_eq!(
        p.read_file(&sb, "/workspace/deep/dir/data.bin", u64::MAX)
            .await
            .unwrap(),
        data
    );
    let info = p.stat(&sb, "/workspace/deep/dir/data.bin").await.unwrap();
    assert_eq!((info.kind, info.size), (FileKind::File, data.len() as u64));
    p.mkdir(&sb, "/workspace/deep/other").await.unwrap();
    p.mkdir(&sb, "/workspace/deep/other").await.unwrap();
    p.write_file(&sb, "/workspace/deep/.hidden", Bytes::from_static(b"h"))
        .await
        .unwrap();
    let names: Vec<(String, FileKind)> = p
        .list_dir(&sb, "/workspace/deep")
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.kind))
        .collect();
    assert_eq!(
        names,
        [
            (".hidden".to_owned(), FileKind::File),
            ("dir".to_owned(), FileKind::Directory),
            ("other".to_owned(), FileKind::Directory),
        ]
    );
    let too_big = p
        .read_file(&sb, "/workspace/deep/dir/data.bin", 1024)
        .await
        .unwrap_err();
    assert!(too_big.is_invalid_request(), "{too_big}");
    for missing in [
        p.read_file(&sb, "/workspace/nope.txt", 10)
            .await
            .unwrap_err(),
        p.stat(&sb, "/workspace/nope.txt").await.unwrap_err(),
        p.list_dir(&sb, "/workspace/no-dir").await.unwrap_err(),
    ] {
        assert!(missing.is_not_found(), "{missing}");
    }
    let dir_read = p.read_file(&sb, "/workspace/deep", 10).await.unwrap_err();
    assert!(dir_read.is_invalid_request(), "{dir_read}");
    let in_the_way = p
        .mkdir(&sb, "/workspace/deep/dir/data.bin/sub")
        .await
        .unwrap_err();
    assert!(in_the_way.is_invalid_request(), "{in_the_way}");
    let relative = p.stat(&sb, "relative").await.unwrap_err();
    assert!(relative.is_invalid_request());
}

// ---------------------------------------------------------------------------------------------
// Lifecycle, ports, TTL

#[tokio::test]
async fn stop_and_start_keep_only_the_volume() {
    let kube = fake().await;
    let p = direct(&kube, &["volumeSize: 1Gi"]).await;
    let caps = p.info().await.unwrap().capabilities;
    assert!(caps.contains(Capability::LifecycleStopStart));
    assert!(caps.contains(Capability::PersistenceDisk));
    let sb = id("sb-life");
    p.create(CreateRequest::new(sb.clone())).await.unwrap();
    p.write_file(&sb, "/workspace/kept.txt", Bytes::from_static(b"kept"))
        .await
        .unwrap();
    p.write_file(&sb, "/tmp/lost.txt", Bytes::from_static(b"lost"))
        .await
        .unwrap();
    let stopped = p.stop(&sb).await.unwrap();
    assert_eq!(stopped.state, SandboxState::Stopped);
    assert!(
        kube.get("pods", NS, "sb-life").is_none(),
        "the pod is deleted"
    );
    assert!(
        kube.get("persistentvolumeclaims", NS, "workspace-sb-life")
            .is_some()
    );
    assert_eq!(p.stop(&sb).await.unwrap().state, SandboxState::Stopped);
    let error = p.exec(&sb, ExecRequest::new(["true"])).await.unwrap_err();
    assert!(error.is_invalid_state(), "{error}");
    let error = p
        .read_file(&sb, "/workspace/kept.txt", 10)
        .await
        .unwrap_err();
    assert!(error.is_invalid_state(), "{error}");
    assert_eq!(p.get(&sb).await.unwrap().state, SandboxState::Stopped);
    // Create while stopped returns it as it is.
    assert_eq!(
        p.create(CreateRequest::new(sb.clone()))
            .await
            .unwrap()
            .state,
        SandboxState::Stopped
    );
    let started = p.start(&sb).await.unwrap();
    assert_eq!(started.state, SandboxState::Running);
    assert_eq!(p.start(&sb).await.unwrap().state, SandboxState::Running);
    assert_eq!(
        p.read_file(&sb, "/workspace/kept.txt", 10).await.unwrap(),
        "kept"
    );
    assert!(
        p.read_file(&sb, "/tmp/lost.txt", 10)
            .await
            .unwrap_err()
            .is_not_found()
    );
}

#[tokio::test]
async fn a_pod_that_ignores_sigterm_holds_a_stop_until_its_grace_period_and_start_waits_for_it() {
    let kube = fake().await;
    let token = role_token(&kube, "role-token-stubborn");
    let pool = agentsandbox::PoolConfig::from_yaml(&pool_yaml("direct", &["volumeSize: 1Gi"]))
        .expect("pool config");
    // Creating and starting wait as long as any test does. The stops wait less than the 30 s
    // grace period (on real time here), so that only a process that ends on SIGTERM lets one
    // finish: the quick stop waits long enough for a loaded machine, and the one that must give
    // up gives up soon.
    let connect = |timeout: Duration| {
        agentsandbox::AgentSandbox::connect(
            pool.clone(),
            options(&kube, &token).with_ready_timeout(timeout),
        )
    };
    let p = connect(WAIT).await.unwrap();
    let within_grace = connect(Duration::from_secs(20)).await.unwrap();
    let impatient = connect(Duration::from_secs(1)).await.unwrap();
    let sb = id("sb-stubborn");
    p.create(CreateRequest::new(sb.clone())).await.unwrap();
    p.write_file(&sb, "/workspace/kept.txt", Bytes::from_static(b"kept"))
        .await
        .unwrap();
    // The adapter's own loop traps SIGTERM: this stop is quick.
    assert_eq!(
        within_grace.stop(&sb).await.unwrap().state,
        SandboxState::Stopped
    );
    // Someone replaces the loop with one that does not trap SIGTERM (pid 1 then ignores it).
    let mut containers = stored(&kube, "sandboxes", "sb-stubborn").await["spec"]["podTemplate"]
        ["spec"]["containers"]
        .clone();
    containers[0]["command"] = json!(["/bin/sh", "-c", "while true; do sleep 3600 & wait; done"]);
    let admin = admin(&kube).await;
    sandboxes(&admin)
        .patch(
            "sb-stubborn",
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "spec": { "podTemplate": { "spec": { "containers": containers } } } }),
            ),
        )
        .await
        .unwrap();
    assert_eq!(p.start(&sb).await.unwrap().state, SandboxState::Running);
    let old_uid = stored(&kube, "pods", "sb-stubborn").await["metadata"]["uid"].clone();
    let error = impatient.stop(&sb).await.unwrap_err();
    assert_eq!(error.code(), ErrorCode::Unavailable, "{error}");
    assert!(error.to_string().contains("still terminating"), "{error}");
    let pod = stored(&kube, "pods", "sb-stubborn").await;
    assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(p.get(&sb).await.unwrap().state, SandboxState::Stopping);
    // The grace period runs out on the cluster's clock: SIGKILL, the pod goes, and a start
    // (which waits for that) brings up a new pod with the volume kept.
    kube.advance_clock(Duration::from_secs(30));
    let started = p.start(&sb).await.unwrap();
    assert_eq!(started.state, SandboxState::Running);
    let new_uid = stored(&kube, "pods", "sb-stubborn").await["metadata"]["uid"].clone();
    assert_ne!(new_uid, old_uid);
    assert_eq!(
        p.read_file(&sb, "/workspace/kept.txt", 10).await.unwrap(),
        "kept"
    );
}

#[tokio::test]
async fn exec_after_another_client_stopped_or_deleted_the_sandbox_says_what_it_is_now() {
    let kube = fake().await;
    let p = direct(&kube, &["volumeSize: 1Gi"]).await;
    let other = direct(&kube, &["volumeSize: 1Gi"]).await;
    let sb = id("sb-moved");
    p.create(CreateRequest::new(sb.clone())).await.unwrap();
    assert_eq!(
        p.exec(&sb, ExecRequest::new(["true"]))
            .await
            .unwrap()
            .exit_code,
        0
    );

    other.stop(&sb).await.unwrap();
    let error = p.exec(&sb, ExecRequest::new(["true"])).await.unwrap_err();
    assert!(error.is_invalid_state(), "{error}");
    assert!(error.to_string().contains("sb-moved is stopped"), "{error}");

    other.start(&sb).await.unwrap();
    assert_eq!(
        p.exec(&sb, ExecRequest::new(["true"]))
            .await
            .unwrap()
            .exit_code,
        0
    );

    other.delete(&sb).await.unwrap();
    for resource in ["sandboxes", "pods"] {
        kube.wait_for(resource, NS, "sb-moved", WAIT, |o| o.is_none())
            .await
            .unwrap();
    }
    let error = p.exec(&sb, ExecRequest::new(["true"])).await.unwrap_err();
    assert!(error.is_not_found(), "{error}");
}

#[tokio::test]
async fn without_a_volume_stop_and_start_are_not_offered() {
    let kube = fake().await;
    let p = direct(&kube, &[]).await;
    assert!(
        !p.info()
            .await
            .unwrap()
            .capabilities
            .contains(Capability::LifecycleStopStart)
    );
    p.create(CreateRequest::new(id("sb-nostop"))).await.unwrap();
    let error = p.stop(&id("sb-nostop")).await.unwrap_err();
    assert_eq!(error.code(), ErrorCode::UnsupportedOperation);
    assert_eq!(error.http_status(), 501);
}

#[tokio::test]
async fn expose_port_gives_the_service_name_and_set_ttl_moves_the_shutdown() {
    let kube = fake().await;
    let p = direct(&kube, &["features: exec,ports.expose,ttl"]).await;
    let sb = id("sb-port");
    let created = p
        .create(CreateRequest::new(sb.clone()).with_ttl(Duration::from_secs(3600)))
        .await
        .unwrap();
    assert!(created.expires_at.is_some());
    assert_eq!(
        p.expose_port(&sb, 8080).await.unwrap(),
        format!("http://sb-port.{NS}.svc.cluster.local:8080")
    );
    assert!(
        p.expose_port(&sb, 0)
            .await
            .unwrap_err()
            .is_invalid_request()
    );
    let moved = p
        .set_ttl(&sb, Some(Duration::from_secs(7200)))
        .await
        .unwrap();
    assert!(moved.expires_at > created.expires_at);
    let stored = stored(&kube, "sandboxes", "sb-port").await;
    assert_eq!(stored["spec"]["shutdownPolicy"], "Delete");
    let cleared = p.set_ttl(&sb, None).await.unwrap();
    assert_eq!(cleared.expires_at, None);
    p.set_ttl(&sb, Some(Duration::from_secs(1))).await.unwrap();
    kube.wait_for("sandboxes", NS, "sb-port", WAIT, |s| s.is_none())
        .await
        .expect("the TTL backstop deletes the sandbox");
    assert!(p.get(&sb).await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn shutdown_time_is_computed_from_the_clock_the_options_give() {
    let kube = fake().await;
    warm_pool(&kube, 1).await;
    // 2030-03-17T17:46:40Z, far from the system clock: only the given clock can yield it.
    let at = UNIX_EPOCH + Duration::from_secs(1_900_000_000);
    let connect = |name: &str, lines: &[&str], token: &str| {
        let pool = PoolConfig::from_yaml(&pool_yaml(name, lines)).expect("pool config");
        let options = options(&kube, token).with_clock(Clock::from_fn(move || at));
        AgentSandbox::connect(pool, options)
    };
    let token = role_token(&kube, "role-token-clock");
    let p = connect("direct", &["features: exec,ttl"], &token)
        .await
        .unwrap();
    let sb = id("sb-clock");
    let created = p
        .create(CreateRequest::new(sb.clone()).with_ttl(Duration::from_secs(90)))
        .await
        .unwrap();
    assert_eq!(created.expires_at, Some(at + Duration::from_secs(90)));
    let spec = &stored(&kube, "sandboxes", "sb-clock").await["spec"];
    assert_eq!(spec["shutdownTime"], "2030-03-17T17:48:10Z");
    let moved = p
        .set_ttl(&sb, Some(Duration::from_secs(600)))
        .await
        .unwrap();
    assert_eq!(moved.expires_at, Some(at + Duration::from_secs(600)));
    let spec = &stored(&kube, "sandboxes", "sb-clock").await["spec"];
    assert_eq!(spec["shutdownTime"], "2030-03-17T17:56:40Z");
    let w = connect(
        "warm",
        &["warmPool: python-warm", "features: exec,ttl"],
        &token,
    )
    .await
    .unwrap();
    w.create(CreateRequest::new(id("claim-clock")).with_ttl(Duration::from_secs(90)))
        .await
        .unwrap();
    let claim = stored(&kube, "sandboxclaims", "claim-clock").await;
    assert_eq!(
        claim["spec"]["lifecycle"]["shutdownTime"],
        "2030-03-17T17:48:10Z"
    );
}

// ---------------------------------------------------------------------------------------------
// Warm pools

#[tokio::test]
async fn warm_pool_claims_adopt_run_and_refuse_stop() {
    let kube = fake().await;
    warm_pool(&kube, 1).await;
    let p = warm(
        &kube,
        &["features: exec,exec.stream,files,stdin,ports.expose,ttl"],
    )
    .await;
    let info = p.info().await.unwrap();
    assert_eq!(info.templates.len(), 1);
    assert_eq!(info.templates[0].name, "python-warm");
    assert!(!info.accepts_unlisted_templates);
    assert!(p.health().await.unwrap().is_healthy());
    let sb = id("claim-run");
    let sandbox = p.create(CreateRequest::new(sb.clone())).await.unwrap();
    assert_eq!(sandbox.state, SandboxState::Running);
    let claim = stored(&kube, "sandboxclaims", "claim-run").await;
    let adopted = claim["status"]["sandbox"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(adopted.starts_with("python-warm-"), "{adopted}");
    let out = p
        .exec(&sb, ExecRequest::new(["cat"]).with_stdin("through stdin"))
        .await
        .unwrap();
    assert_eq!(out.stdout, "through stdin");
    p.write_file(&sb, "/tmp/w.txt", Bytes::from_static(b"warm"))
        .await
        .unwrap();
    assert_eq!(p.read_file(&sb, "/tmp/w.txt", 100).await.unwrap(), "warm");
    let url = p.expose_port(&sb, 9000).await.unwrap();
    assert!(
        url.starts_with("http://") && url.ends_with(":9000"),
        "{url}"
    );
    let moved = p
        .set_ttl(&sb, Some(Duration::from_secs(900)))
        .await
        .unwrap();
    assert!(moved.expires_at.is_some());
    let claim = stored(&kube, "sandboxclaims", "claim-run").await;
    assert_eq!(claim["spec"]["lifecycle"]["shutdownPolicy"], "Delete");
    assert!(claim["spec"]["lifecycle"]["shutdownTime"].is_string());
    let stop = p.stop(&sb).await.unwrap_err();
    assert!(stop.is_unsupported(), "{stop}");
    assert_eq!(stop.http_status(), 501);
    let wrong = p
        .create(CreateRequest::new(id("claim-wrong")).with_template("other"))
        .await
        .unwrap_err();
    assert!(wrong.is_invalid_request(), "{wrong}");
    assert_eq!(p.list().await.unwrap().len(), 1);
    p.delete(&sb).await.unwrap();
    p.delete(&sb).await.unwrap();
    kube.wait_for("sandboxes", NS, &adopted, WAIT, |s| s.is_none())
        .await
        .expect("deleting the claim removes its sandbox");
}

#[tokio::test]
async fn warm_pool_config_refuses_the_keys_its_template_fixes() {
    let error = agentsandbox::PoolConfig::from_yaml(&pool_yaml(
        "w",
        &["warmPool: python-warm", "image: x"],
    ))
    .unwrap_err();
    assert_eq!(error.key, "config.image");
}

#[tokio::test]
async fn health_reports_a_missing_warm_pool() {
    let kube = fake().await;
    let p = warm(&kube, &[]).await;
    let health = p.health().await.unwrap();
    assert!(!health.is_healthy());
    assert!(health.message.unwrap().contains("python-warm"));
}

// ---------------------------------------------------------------------------------------------
// Credentials and the Role

#[tokio::test]
async fn exactly_the_seed_role_is_enough() {
    let kube = fake().await;
    let p = direct(
        &kube,
        &[
            "volumeSize: 1Gi",
            "features: exec,exec.stream,files,stdin,lifecycle.stop-start,ttl,ports.expose",
        ],
    )
    .await;
    assert!(p.health().await.unwrap().is_healthy());
    let sb = id("sb-role");
    p.create(CreateRequest::new(sb.clone()).with_ttl(Duration::from_secs(600)))
        .await
        .unwrap();
    p.create(CreateRequest::new(sb.clone())).await.unwrap();
    assert_eq!(p.list().await.unwrap().len(), 1);
    assert_eq!(
        p.exec(&sb, ExecRequest::new(["cat"]).with_stdin("ok"))
            .await
            .unwrap()
            .stdout,
        "ok"
    );
    p.write_file(&sb, "/workspace/f", Bytes::from_static(b"f"))
        .await
        .unwrap();
    p.stop(&sb).await.unwrap();
    p.start(&sb).await.unwrap();
    p.set_ttl(&sb, Some(Duration::from_secs(900)))
        .await
        .unwrap();
    p.expose_port(&sb, 80).await.unwrap();
    p.reconcile(&BTreeSet::from([sb.clone()])).await.unwrap();
    p.delete(&sb).await.unwrap();
}

#[tokio::test]
async fn a_missing_rule_is_permission_denied_naming_what_was_refused() {
    let kube = fake().await;
    let without_exec: Vec<fakekube::Rule> = seed_role()
        .into_iter()
        .filter(|r| !format!("{r:?}").contains("pods/exec"))
        .collect();
    kube.add_token(fakekube::Token::new("no-exec-token", "limited").with_rules(without_exec));
    let p = provider_with(&kube, &pool_yaml("limited", &[]), "no-exec-token").await;
    p.create(CreateRequest::new(id("sb-limited")))
        .await
        .unwrap();
    let error = p
        .exec(&id("sb-limited"), ExecRequest::new(["true"]))
        .await
        .unwrap_err();
    assert!(error.is_permission_denied(), "{error}");
    assert!(error.message().contains("pods/exec"), "{error}");

    let without_create: Vec<fakekube::Rule> = seed_role()
        .into_iter()
        .map(|r| {
            if format!("{r:?}").contains("\"sandboxes\"") {
                fakekube::Rule::new(
                    ["agents.x-k8s.io"],
                    ["sandboxes"],
                    ["get", "list", "patch", "delete"],
                )
                .in_namespaces([NS])
            } else {
                r
            }
        })
        .collect();
    kube.add_token(fakekube::Token::new("no-create-token", "limited").with_rules(without_create));
    let p = provider_with(&kube, &pool_yaml("limited2", &[]), "no-create-token").await;
    let error = p
        .create(CreateRequest::new(id("sb-refused")))
        .await
        .unwrap_err();
    assert!(error.is_permission_denied(), "{error}");
    assert!(error.message().contains("create"), "{error}");
    assert!(error.message().contains("sandboxes"), "{error}");
}

#[tokio::test]
async fn a_rotated_token_file_is_read_again_mid_run() {
    let kube = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "rotating-token-one\n").unwrap();
    role_token(&kube, "rotating-token-one");
    let yaml = format!(
        "{}credentials: {{file: {}}}\n",
        pool_yaml("rotating", &[]),
        token_file.display()
    );
    // The kubeconfig gives server and CA; its own token is not the pool's.
    let p = provider_with(&kube, &yaml, "kubeconfig-token-unused").await;
    let sb = id("sb-rotate");
    p.create(CreateRequest::new(sb.clone())).await.unwrap();
    // Rotate: the new token is written (same length, maybe the same second) and the old one
    // revoked; the next calls must read the file again, after the 401 if not before.
    role_token(&kube, "rotating-token-two");
    let before = std::fs::metadata(&token_file).unwrap().modified().unwrap();
    std::fs::write(&token_file, "rotating-token-two\n").unwrap();
    // Same length and, restored here, the same mtime: only the 401 can reveal the rotation.
    std::fs::File::options()
        .write(true)
        .open(&token_file)
        .unwrap()
        .set_modified(before)
        .unwrap();
    assert!(kube.revoke_token("rotating-token-one"));
    assert_eq!(
        p.exec(&sb, ExecRequest::new(["echo", "still"]))
            .await
            .unwrap()
            .stdout,
        "still\n"
    );
    assert_eq!(p.get(&sb).await.unwrap().state, SandboxState::Running);
    // A token that is refused even after reading it again is unauthenticated.
    assert!(kube.revoke_token("rotating-token-two"));
    let error = p.get(&sb).await.unwrap_err();
    assert!(error.is_unauthenticated(), "{error}");
    assert!(!p.health().await.unwrap().is_healthy());
}

#[tokio::test]
async fn credentials_are_never_echoed() {
    let kube = fake().await;
    let secret = "s3cr3t-t0ken-that-must-never-show";
    role_token(&kube, secret);
    let p = provider_with(
        &kube,
        &pool_yaml("echo", &["features: exec,files,stdin"]),
        secret,
    )
    .await;
    let mut seen = Vec::new();
    seen.push(format!("{p:?}"));
    let sb = id("sb-echo");
    let created = p.create(CreateRequest::new(sb.clone())).await.unwrap();
    seen.push(format!("{created:?}"));
    let out = p
        .exec(&sb, ExecRequest::new(["sh", "-c", "echo hi; exit 3"]))
        .await
        .unwrap();
    seen.push(format!("{out:?}"));
    for error in [
        p.get(&id("missing")).await.unwrap_err(),
        p.read_file(&sb, "/nope", 10).await.unwrap_err(),
        p.exec(&sb, ExecRequest::new(Vec::<String>::new()))
            .await
            .unwrap_err(),
        p.stop(&sb).await.unwrap_err(),
    ] {
        seen.push(format!("{error} {error:?}"));
    }
    sandboxes(&admin(&kube).await)
        .get("sb-echo")
        .await
        .expect("the admin sees the Sandbox");
    kube.revoke_token(secret);
    let refused = p.get(&sb).await.unwrap_err();
    assert!(refused.is_unauthenticated());
    seen.push(format!("{refused} {refused:?}"));
    let health = p.health().await.unwrap();
    seen.push(format!("{health:?}"));
    let setup = agentsandbox::AgentSandbox::connect(
        agentsandbox::PoolConfig::from_yaml(&pool_yaml("bad", &["caFile: /nonexistent/ca.crt"]))
            .unwrap(),
        options(&kube, secret),
    )
    .await
    .unwrap_err();
    seen.push(format!("{setup} {setup:?}"));
    let logs = logs();
    assert!(!logs.is_empty(), "the run logged nothing");
    for text in seen.iter().chain(std::iter::once(&logs)) {
        assert!(!text.contains(secret), "the token leaked into: {text}");
    }
    let _ = POOL_LABEL;
}

#[tokio::test]
async fn in_cluster_service_account_token_and_ca_are_used_and_reread() {
    let kube = fake().await;
    let sa = tempfile::tempdir().unwrap();
    std::fs::write(sa.path().join("ca.crt"), kube.ca_pem()).unwrap();
    std::fs::write(sa.path().join("token"), "sa-token-first").unwrap();
    role_token(&kube, "sa-token-first");
    let port = kube.addr().port().to_string();
    let pool = agentsandbox::PoolConfig::from_yaml(&pool_yaml("in-cluster", &[])).unwrap();
    let options = agentsandbox::ConnectOptions::from_env()
        .without_kubeconfig()
        .with_env(move |name| match name {
            "KUBERNETES_SERVICE_HOST" => Some("127.0.0.1".to_owned()),
            "KUBERNETES_SERVICE_PORT" => Some(port.clone()),
            _ => None,
        })
        .with_service_account_dir(sa.path())
        .with_ready_timeout(WAIT);
    let p = agentsandbox::AgentSandbox::connect(pool, options)
        .await
        .unwrap();
    assert!(p.health().await.unwrap().is_healthy());
    role_token(&kube, "sa-token-second-and-longer");
    std::fs::write(sa.path().join("token"), "sa-token-second-and-longer").unwrap();
    kube.revoke_token("sa-token-first");
    assert!(p.health().await.unwrap().is_healthy());
    p.create(CreateRequest::new(id("sb-in-cluster")))
        .await
        .unwrap();
}

#[tokio::test]
async fn kubeconfig_from_the_environment_env_and_secret_credentials_all_work() {
    let kube = fake().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        kube.kubeconfig_with_token(&role_token(&kube, "kc-env-token")),
    )
    .unwrap();
    let kubeconfig = path.display().to_string();
    let env = move |name: &str| match name {
        "KUBECONFIG" => Some(kubeconfig.clone()),
        "POOL_TOKEN" => Some("env-var-token".to_owned()),
        _ => None,
    };
    let connect =
        |yaml: String, resolver: Option<std::sync::Arc<dyn agentsandbox::SecretResolver>>| {
            let env = env.clone();
            async move {
                let mut options = agentsandbox::ConnectOptions::from_env()
                    .with_env(env)
                    .with_service_account_dir("/nonexistent");
                if let Some(resolver) = resolver {
                    options = options.with_secret_resolver(resolver);
                }
                agentsandbox::AgentSandbox::connect(
                    agentsandbox::PoolConfig::from_yaml(&yaml).unwrap(),
                    options,
                )
                .await
                .unwrap()
            }
        };
    let from_kubeconfig = connect(pool_yaml("kc", &[]), None).await;
    assert!(from_kubeconfig.health().await.unwrap().is_healthy());

    role_token(&kube, "env-var-token");
    let from_env = connect(
        format!(
            "{}credentials: {{env: POOL_TOKEN}}\n",
            pool_yaml("env", &[])
        ),
        None,
    )
    .await;
    assert!(from_env.health().await.unwrap().is_healthy());

    struct Resolver;
    #[async_trait::async_trait]
    impl agentsandbox::SecretResolver for Resolver {
        async fn resolve(&self, name: &str) -> Result<secrecy::SecretString, String> {
            (name == "k8s-token")
                .then(|| secrecy::SecretString::from("resolved-secret-token".to_owned()))
                .ok_or_else(|| format!("no secret {name}"))
        }
    }
    role_token(&kube, "resolved-secret-token");
    let from_secret = connect(
        format!(
            "{}credentials: {{secret: k8s-token}}\n",
            pool_yaml("secret", &[])
        ),
        Some(std::sync::Arc::new(Resolver)),
    )
    .await;
    assert!(from_secret.health().await.unwrap().is_healthy());
    let unknown = connect(
        format!(
            "{}credentials: {{secret: other}}\n",
            pool_yaml("secret2", &[])
        ),
        Some(std::sync::Arc::new(Resolver)),
    )
    .await;
    let error = unknown.list().await.unwrap_err();
    assert!(error.is_unauthenticated(), "{error}");
    assert!(error.message().contains("other"), "{error}");
}

// ---------------------------------------------------------------------------------------------
// Connections

/// A loopback TCP relay to `target` that counts the connections it accepts.
async fn counting_relay(
    target: std::net::SocketAddr,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("local address");
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (addr, accepted)
}

#[tokio::test]
async fn api_requests_share_one_http2_connection_and_each_exec_opens_its_own() {
    use std::sync::atomic::Ordering;
    let kube = fake().await;
    let (relay, accepted) = counting_relay(kube.addr()).await;
    let token = role_token(&kube, "role-token-relay");
    let kubeconfig = kube
        .kubeconfig_with_token(&token)
        .replace(&kube.base_url(), &format!("https://{relay}"));
    let pool = agentsandbox::PoolConfig::from_yaml(&pool_yaml("direct", &[])).unwrap();
    let p = agentsandbox::AgentSandbox::connect(
        pool,
        options(&kube, &token).with_kubeconfig_yaml(kubeconfig),
    )
    .await
    .unwrap();
    let p = std::sync::Arc::new(p);
    let mut creates = tokio::task::JoinSet::new();
    for i in 0..8 {
        let p = p.clone();
        creates.spawn(async move { p.create(CreateRequest::new(id(&format!("h2-{i}")))).await });
    }
    while let Some(created) = creates.join_next().await {
        created.unwrap().unwrap();
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "eight concurrent creates from a fresh adapter, and their readiness polls, went over one connection"
    );
    let out = p
        .exec(&id("h2-0"), ExecRequest::new(["true"]))
        .await
        .unwrap();
    assert_eq!(out.exit_code, 0);
    p.exec(&id("h2-1"), ExecRequest::new(["true"]))
        .await
        .unwrap();
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        3,
        "each exec upgrades a connection of its own"
    );
}
