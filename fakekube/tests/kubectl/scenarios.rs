//! The scenarios each kubectl version runs: apply, get, describe, patch and delete; create's
//! generators; server-side apply; a stale replace; watch; wait; create token, auth can-i and
//! unauthorized requests; CRD schemas and explain; RBAC objects and kind-up's RBAC.

use super::*;

/// apply (create, unchanged, update), get (-o json, -o name, -l, --chunk-size), patch
/// (strategic, merge, JSON) and delete, on Sandboxes and Pods.
pub(super) fn core_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "core";
    k.create_namespace(ns);
    thread::scope(|s| {
        s.spawn(|| sandbox_apply_steps(&k, &server, ns));
        pod_apply_steps(&k, &server, ns);
    });
    read_steps(&k, ns);
    patch_steps(&k, ns);
    delete_steps(&k, ns);
}

/// Client-side apply of a Sandbox: created, unchanged, a label change (same generation), a
/// spec change (next generation).
fn sandbox_apply_steps(k: &Kubectl, server: &Server, ns: &str) {
    let sb = server.write(
        "box.yaml",
        &sandbox_yaml("box", &[("app", "demo")], "busybox:1.36"),
    );
    k.apply(ns, &sb, &[])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box created\n");
    let v1 = k.get_json(ns, &["sandbox", "box"]);
    assert_eq!(v1["kind"], "Sandbox");
    assert_eq!(meta(&v1, "namespace"), ns);
    assert_eq!(generation(&v1), 1, "{v1}");
    assert!(
        v1["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .is_some_and(|a| a.contains("busybox:1.36")),
        "client-side apply records the applied configuration: {v1}"
    );

    k.apply(ns, &sb, &[])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box unchanged\n");
    let same = k.get_json(ns, &["sandbox", "box"]);
    assert_eq!(
        meta(&same, "resourceVersion"),
        meta(&v1, "resourceVersion"),
        "an unchanged apply writes nothing"
    );

    let labelled = sandbox_yaml("box", &[("app", "demo"), ("tier", "gold")], "busybox:1.36");
    let sb = server.write("box.yaml", &labelled);
    k.apply(ns, &sb, &[])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box configured\n");
    let v2 = k.get_json(ns, &["sandbox", "box"]);
    assert_eq!(v2["metadata"]["labels"]["tier"], "gold", "{v2}");
    assert_eq!(
        generation(&v2),
        1,
        "a label change does not bump the generation: {v2}"
    );
    assert_ne!(meta(&v2, "resourceVersion"), meta(&v1, "resourceVersion"));

    let updated = sandbox_yaml("box", &[("app", "demo"), ("tier", "gold")], "busybox:1.37");
    let sb = server.write("box.yaml", &updated);
    k.apply(ns, &sb, &[])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box configured\n");
    let v3 = k.get_json(ns, &["sandbox", "box"]);
    let image = &v3["spec"]["podTemplate"]["spec"]["containers"][0]["image"];
    assert_eq!(image, "busybox:1.37", "{v3}");
    assert_eq!(
        generation(&v3),
        2,
        "a spec change bumps the generation: {v3}"
    );
    assert_ne!(meta(&v3, "resourceVersion"), meta(&v2, "resourceVersion"));
    assert_eq!(meta(&v3, "uid"), meta(&v1, "uid"));
}

/// Client-side apply of three Pods, then an update of one: kubectl sends a strategic merge patch
/// whose container list merges by name.
fn pod_apply_steps(k: &Kubectl, server: &Server, ns: &str) {
    thread::scope(|s| {
        for (name, app, tier) in [("p1", "web", "a"), ("p2", "web", "b"), ("p3", "db", "a")] {
            s.spawn(move || {
                let yaml = pod_yaml(name, &[("app", app), ("tier", tier)], "nginx:1.25");
                let f = server.write(&format!("{name}.yaml"), &yaml);
                k.apply(ns, &f, &[])
                    .success()
                    .stdout_is(&format!("pod/{name} created\n"));
            });
        }
    });
    let before = k.get_json(ns, &["pod", "p1"]);
    let f = server.write(
        "p1.yaml",
        &pod_yaml("p1", &[("app", "web"), ("tier", "a")], "nginx:1.26"),
    );
    k.apply(ns, &f, &[])
        .success()
        .stdout_is("pod/p1 configured\n");
    let p1 = k.get_json(ns, &["pod", "p1"]);
    let containers = p1["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        containers.len(),
        1,
        "the container list is merged by name: {p1}"
    );
    assert_eq!(containers[0]["name"], "main", "{p1}");
    assert_eq!(containers[0]["image"], "nginx:1.26", "{p1}");
    assert!(
        !has_directive_key(&p1),
        "no strategic-merge directive is stored: {p1}"
    );
    assert_ne!(
        meta(&p1, "resourceVersion"),
        meta(&before, "resourceVersion")
    );
}

/// `get -o json` (a List), `-o name`, label selectors, `--chunk-size` and the default table.
fn read_steps(k: &Kubectl, ns: &str) {
    thread::scope(|s| {
        s.spawn(|| {
            let list = k.get_json(ns, &["pods"]);
            assert_eq!(list["kind"], "List", "{list}");
            assert_eq!(item_names(&list), ["p1", "p2", "p3"], "{list}");
        });
        s.spawn(|| {
            let args = [
                "-n",
                ns,
                "get",
                "pods",
                "--chunk-size=1",
                "-o",
                "name",
                "-v=6",
            ];
            let paged = k.run(&args).success().stdout_is("pod/p1\npod/p2\npod/p3\n");
            assert!(
                paged.stderr.contains("limit=1"),
                "kubectl asked for pages of one: {paged}"
            );
            let continued = paged.stderr.matches("continue=").count();
            assert!(
                continued >= 2,
                "kubectl followed the continue tokens: {paged}"
            );
        });
        s.spawn(|| {
            let table = k.run(&["-n", ns, "get", "sandboxes"]).success();
            assert!(table.stdout.starts_with("NAME"), "{table}");
            assert!(
                table.stdout.lines().any(|l| l.starts_with("box ")),
                "{table}"
            );
        });
        expect_stdout_all(
            k,
            &[
                (
                    &["-n", ns, "get", "pods", "-o", "name"],
                    "pod/p1\npod/p2\npod/p3\n",
                ),
                (
                    &["-n", ns, "get", "pods", "-l", "app=web", "-o", "name"],
                    "pod/p1\npod/p2\n",
                ),
                (
                    &[
                        "-n",
                        ns,
                        "get",
                        "pods",
                        "-l",
                        "app=web,tier=a",
                        "-o",
                        "name",
                    ],
                    "pod/p1\n",
                ),
                (
                    &[
                        "-n",
                        ns,
                        "get",
                        "pods",
                        "-l",
                        "tier notin (a)",
                        "-o",
                        "name",
                    ],
                    "pod/p2\n",
                ),
                (&["-n", ns, "get", "pods", "-l", "!tier", "-o", "name"], ""),
                (
                    &["-n", ns, "get", "sandboxes", "-o", "name"],
                    "sandbox.agents.x-k8s.io/box\n",
                ),
            ],
        );
    });
}

/// `kubectl patch`: strategic (the default for a core kind) on a Pod, merge and JSON patch on
/// the Sandbox; label patches keep the other labels and the generation.
fn patch_steps(k: &Kubectl, ns: &str) {
    thread::scope(|s| {
        s.spawn(|| {
            let smp = r#"{"metadata":{"labels":{"patched":"smp"}}}"#;
            let out = k
                .run(&["-n", ns, "patch", "pod", "p2", "-p", smp])
                .success();
            out.stdout_is("pod/p2 patched\n");
        });
        let merge = r#"{"metadata":{"labels":{"patched":"merge"}}}"#;
        k.run(&[
            "-n",
            ns,
            "patch",
            "sandbox",
            "box",
            "--type=merge",
            "-p",
            merge,
        ])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box patched\n");
        let json = r#"[{"op":"add","path":"/metadata/labels/json","value":"yes"}]"#;
        k.run(&[
            "-n",
            ns,
            "patch",
            "sandbox",
            "box",
            "--type=json",
            "-p",
            json,
        ])
        .success()
        .stdout_is("sandbox.agents.x-k8s.io/box patched\n");
    });
    thread::scope(|s| {
        s.spawn(|| {
            let p2 = k.get_json(ns, &["pod", "p2"]);
            assert_eq!(p2["metadata"]["labels"]["patched"], "smp", "{p2}");
            assert_eq!(
                p2["metadata"]["labels"]["app"], "web",
                "other labels stay: {p2}"
            );
        });
        s.spawn(|| {
            let v4 = k.get_json(ns, &["sandbox", "box"]);
            assert_eq!(v4["metadata"]["labels"]["patched"], "merge", "{v4}");
            assert_eq!(v4["metadata"]["labels"]["json"], "yes", "{v4}");
            assert_eq!(v4["metadata"]["labels"]["tier"], "gold", "{v4}");
            assert_eq!(
                generation(&v4),
                2,
                "label patches keep the generation: {v4}"
            );
        });
        expect_stdout_all(
            k,
            &[(
                &["-n", ns, "get", "pods", "-l", "patched=smp", "-o", "name"],
                "pod/p2\n",
            )],
        );
    });
}

/// `kubectl delete` of a Pod and of the Sandbox; a get afterwards is NotFound.
fn delete_steps(k: &Kubectl, ns: &str) {
    thread::scope(|s| {
        s.spawn(|| {
            k.run(&["-n", ns, "delete", "pod", "p1"])
                .success()
                .stdout_is("pod \"p1\" deleted\n");
            k.run(&["-n", ns, "get", "pod", "p1"])
                .failure()
                .stderr_has_line("Error from server (NotFound): pods \"p1\" not found");
        });
        k.run(&["-n", ns, "delete", "sandbox", "box"])
            .success()
            .stdout_is("sandbox.agents.x-k8s.io \"box\" deleted\n");
        k.run(&["-n", ns, "get", "sandbox", "box"])
            .failure()
            .stderr_has_line(
                "Error from server (NotFound): sandboxes.agents.x-k8s.io \"box\" not found",
            );
    });
    k.run(&["-n", ns, "get", "pods", "-o", "name"])
        .success()
        .stdout_is("pod/p2\npod/p3\n");
}

/// `kubectl create namespace`, `create secret generic`, `create serviceaccount` and
/// `create service clusterip`: typed clients, which kubectl 1.32 and later send as protobuf.
pub(super) fn create_generators_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "made";
    k.create_namespace(ns);
    thread::scope(|s| {
        s.spawn(|| {
            let out = k.run(&["create", "namespace", "other"]);
            out.success().stdout_is("namespace/other created\n");
            let other = k
                .run(&["get", "namespace", "other", "-o", "json"])
                .success()
                .json();
            assert_eq!(meta(&other, "name"), "other", "{other}");
        });
        s.spawn(|| {
            let args = [
                "create",
                "secret",
                "generic",
                "creds",
                "--from-literal=user=bob",
            ];
            let out = k.run(&[&["-n", ns][..], &args[..]].concat());
            out.success().stdout_is("secret/creds created\n");
            let secret = k.get_json(ns, &["secret", "creds"]);
            assert_eq!(secret["data"]["user"], "Ym9i", "{secret}");
        });
        s.spawn(|| {
            let out = k.run(&["-n", ns, "create", "serviceaccount", "robot"]);
            out.success().stdout_is("serviceaccount/robot created\n");
        });
        let args = ["create", "service", "clusterip", "web", "--tcp=80:8080"];
        let out = k.run(&[&["-n", ns][..], &args[..]].concat());
        out.success().stdout_is("service/web created\n");
        let svc = k.get_json(ns, &["service", "web"]);
        assert_eq!(svc["spec"]["ports"][0]["port"], 80, "{svc}");
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080, "{svc}");
    });
}

/// `apply --server-side` creates, then updates, a Sandbox and a Pod.
pub(super) fn server_side_apply_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "ssa";
    k.create_namespace(ns);
    let ssa = ["--server-side"];
    thread::scope(|s| {
        s.spawn(|| {
            let pod = server.write("p.yaml", &pod_yaml("p", &[("app", "web")], "nginx:1.25"));
            k.apply(ns, &pod, &ssa)
                .success()
                .stdout_is("pod/p serverside-applied\n");
            let pod = server.write("p.yaml", &pod_yaml("p", &[("app", "web")], "nginx:1.26"));
            k.apply(ns, &pod, &ssa)
                .success()
                .stdout_is("pod/p serverside-applied\n");
            let p = k.get_json(ns, &["pod", "p"]);
            let containers = p["spec"]["containers"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert_eq!(containers.len(), 1, "{p}");
            assert_eq!(containers[0]["image"], "nginx:1.26", "{p}");
            assert!(!has_directive_key(&p), "{p}");
        });
        let applied = "sandbox.agents.x-k8s.io/box serverside-applied\n";
        let sb = server.write(
            "box.yaml",
            &sandbox_yaml("box", &[("app", "demo")], "busybox:1.36"),
        );
        k.apply(ns, &sb, &ssa).success().stdout_is(applied);
        let v1 = k.get_json(ns, &["sandbox", "box"]);
        assert_eq!(generation(&v1), 1, "{v1}");
        assert!(
            v1["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
                .is_null(),
            "server-side apply leaves no last-applied annotation: {v1}"
        );
        let sb = server.write(
            "box.yaml",
            &sandbox_yaml("box", &[("app", "demo")], "busybox:1.37"),
        );
        k.apply(ns, &sb, &ssa).success().stdout_is(applied);
        let v2 = k.get_json(ns, &["sandbox", "box"]);
        let image = &v2["spec"]["podTemplate"]["spec"]["containers"][0]["image"];
        assert_eq!(image, "busybox:1.37", "{v2}");
        assert_eq!(generation(&v2), 2, "{v2}");
        assert_eq!(meta(&v2, "uid"), meta(&v1, "uid"));
    });
}

/// `kubectl replace` with an object read before someone else changed it is refused with the
/// Conflict message and changes nothing; with the fresh object it succeeds.
pub(super) fn replace_stale_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "replace";
    k.create_namespace(ns);
    let cases = [
        (
            "sandbox",
            "box",
            sandbox_yaml("box", &[("app", "demo")], "busybox:1.36"),
            "sandboxes.agents.x-k8s.io \"box\"",
        ),
        (
            "pod",
            "p",
            pod_yaml("p", &[("app", "web")], "nginx:1.25"),
            "pods \"p\"",
        ),
    ];
    thread::scope(|s| {
        for (kind, name, manifest, shown) in &cases {
            let (k, server) = (&k, &server);
            s.spawn(move || {
                let file = server.write(&format!("{kind}.yaml"), manifest);
                k.apply(ns, &file, &[]).success();
                let stale = k.run(&["-n", ns, "get", kind, name, "-o", "json"]).success().stdout;
                let stale_path = server.write(&format!("{kind}-stale.json"), &stale);
                let stale_str = stale_path.to_str().expect("a UTF-8 path");
                k.run(&["-n", ns, "label", kind, name, "touched=yes"]).success();
                k.run(&["-n", ns, "replace", "-f", stale_str]).failure().stderr_has_line(&format!(
                    "Error from server (Conflict): error when replacing \"{stale_str}\": Operation cannot be fulfilled on {shown}: the object has been modified; please apply your changes to the latest version and try again"
                ));
                let fresh = k.get_json(ns, &[kind, name]);
                assert_eq!(fresh["metadata"]["labels"]["touched"], "yes", "{fresh}");
                let mut edited = fresh.clone();
                edited["metadata"]["labels"]["replaced"] = Value::from("yes");
                let fresh_path = server.write(&format!("{kind}-fresh.json"), &edited.to_string());
                let fresh_str = fresh_path.to_str().expect("a UTF-8 path");
                let out = k.run(&["-n", ns, "replace", "-f", fresh_str]).success();
                assert!(out.stdout.ends_with(&format!("/{name} replaced\n")), "{out}");
                let after = k.get_json(ns, &[kind, name]);
                assert_eq!(after["metadata"]["labels"]["replaced"], "yes", "{after}");
                assert_ne!(meta(&after, "resourceVersion"), meta(&fresh, "resourceVersion"));
            });
        }
    });
}

/// `kubectl get -w --output-watch-events` sees a Sandbox added, modified and deleted.
pub(super) fn watch_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "watch";
    k.create_namespace(ns);
    let first = server.write("first.yaml", &sandbox_yaml("first", &[], "busybox:1.36"));
    k.apply(ns, &first, &[]).success();

    let args = [
        "-n",
        ns,
        "get",
        "sandboxes",
        "-w",
        "--output-watch-events",
        "-o",
        "json",
    ];
    let mut w = k.spawn(&args);
    let event = |ty: &'static str, name: &'static str| {
        move |line: &str| {
            serde_json::from_str::<Value>(line)
                .is_ok_and(|e| e["type"] == ty && e["object"]["metadata"]["name"] == name)
        }
    };
    w.expect_line(
        Stream::Stdout,
        "ADDED first (the initial list)",
        event("ADDED", "first"),
    );

    let second = server.write("second.yaml", &sandbox_yaml("second", &[], "busybox:1.36"));
    k.apply(ns, &second, &[]).success();
    let added = w.expect_line(Stream::Stdout, "ADDED second", event("ADDED", "second"));
    k.run(&["-n", ns, "label", "sandbox", "second", "phase=two"])
        .success();
    let modified = w.expect_line(
        Stream::Stdout,
        "MODIFIED second",
        event("MODIFIED", "second"),
    );
    k.run(&["-n", ns, "delete", "sandbox", "second"]).success();
    w.expect_line(Stream::Stdout, "DELETED second", event("DELETED", "second"));

    let added: Value = serde_json::from_str(&added).expect("an event is JSON");
    let modified: Value = serde_json::from_str(&modified).expect("an event is JSON");
    assert_eq!(
        modified["object"]["metadata"]["labels"]["phase"], "two",
        "{modified}"
    );
    assert_ne!(
        meta(&added["object"], "resourceVersion"),
        meta(&modified["object"], "resourceVersion")
    );
}

/// `kubectl wait --for=jsonpath=…` returns at once when the field already matches, returns
/// once it comes to match, times out with kubectl's message when it never does; and
/// `--for=delete` returns once the Sandbox is gone.
pub(super) fn wait_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "wait";
    k.create_namespace(ns);
    let sb = server.write(
        "box.yaml",
        &sandbox_yaml("box", &[("app", "demo")], "busybox:1.36"),
    );
    k.apply(ns, &sb, &[]).success();
    let met = "sandbox.agents.x-k8s.io/box condition met\n";

    thread::scope(|s| {
        s.spawn(|| {
            let matches = "--for=jsonpath={.metadata.labels.app}=demo";
            let out = k.run(&["-n", ns, "wait", matches, "sandbox/box", "--timeout=20s"]);
            out.success().stdout_is(met);
        });
        s.spawn(|| {
            let never = "--for=jsonpath={.metadata.labels.phase}=never";
            k.run(&["-n", ns, "wait", never, "sandbox/box", "--timeout=1s"])
                .failure()
                .stderr_has_line("error: timed out waiting for the condition on sandboxes/box");
        });
        // Label only once kubectl watches (-v=6 logs the watch request).
        let later = "--for=jsonpath={.metadata.labels.phase}=ready";
        let mut w = k.spawn(&[
            "-n",
            ns,
            "wait",
            later,
            "sandbox/box",
            "--timeout=30s",
            "-v=6",
        ]);
        w.expect_line(Stream::Stderr, "the watch request", |l| {
            l.contains("watch=true")
        });
        k.run(&["-n", ns, "label", "sandbox", "box", "phase=ready"])
            .success();
        w.finish().success().stdout_is(met);
    });

    let mut w = k.spawn(&[
        "-n",
        ns,
        "wait",
        "--for=delete",
        "sandbox/box",
        "--timeout=30s",
        "-v=6",
    ]);
    w.expect_line(Stream::Stderr, "the watch request", |l| {
        l.contains("watch=true")
    });
    k.run(&["-n", ns, "delete", "sandbox", "box", "--wait=false"])
        .success();
    w.finish().success().stdout_is(met);
}

/// `kubectl create token default` mints a token the server accepts but which may do nothing:
/// reads and deletes are Forbidden with the API server's wording.
pub(super) fn create_token_forbidden_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "tokens";
    k.create_namespace(ns);
    let out = k.run(&["-n", ns, "create", "token", "default"]).success();
    let token = out.stdout.trim().to_string();
    assert!(
        !token.is_empty() && !token.contains(char::is_whitespace),
        "one token: {out}"
    );
    let user = format!("User \"system:serviceaccount:{ns}:default\"");
    let cases = [
        (
            ["get", "pods"],
            format!(
                "Error from server (Forbidden): pods is forbidden: {user} cannot list resource \"pods\" in API group \"\" in the namespace \"{ns}\""
            ),
        ),
        (
            ["get", "sandboxes"],
            format!(
                "Error from server (Forbidden): sandboxes.agents.x-k8s.io is forbidden: {user} cannot list resource \"sandboxes\" in API group \"agents.x-k8s.io\" in the namespace \"{ns}\""
            ),
        ),
        (
            ["delete", "pod/nope"],
            format!(
                "Error from server (Forbidden): pods \"nope\" is forbidden: {user} cannot delete resource \"pods\" in API group \"\" in the namespace \"{ns}\""
            ),
        ),
    ];
    thread::scope(|s| {
        for (args, line) in &cases {
            let (k, token) = (&k, &token);
            s.spawn(move || {
                let out = k.run(&["-n", ns, args[0], args[1], "--token", token]);
                out.failure().stderr_has_line(line);
            });
        }
        k.run(&["-n", ns, "create", "token", "ghost"])
            .failure()
            .stderr_has_line("error: failed to create token: serviceaccounts \"ghost\" not found");
    });
}

/// `kubectl auth can-i` answers yes for the admin and no (exit 1) for a token of an unbound
/// service account, as a real server does: every authenticated user may create
/// SelfSubjectAccessReviews.
pub(super) fn auth_can_i_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "cani";
    k.create_namespace(ns);
    thread::scope(|s| {
        s.spawn(|| {
            expect_stdout_all(
                &k,
                &[
                    (&["-n", ns, "auth", "can-i", "list", "pods"], "yes\n"),
                    (
                        &[
                            "-n",
                            ns,
                            "auth",
                            "can-i",
                            "create",
                            "sandboxes.agents.x-k8s.io",
                        ],
                        "yes\n",
                    ),
                    (
                        &[
                            "-n",
                            ns,
                            "auth",
                            "can-i",
                            "create",
                            "pods",
                            "--subresource=exec",
                        ],
                        "yes\n",
                    ),
                ],
            );
        });
        let token = k
            .run(&["-n", ns, "create", "token", "default"])
            .success()
            .stdout;
        let token = token.trim();
        k.run(&["-n", ns, "auth", "can-i", "list", "pods", "--token", token])
            .failure()
            .stdout_is("no\n");
        let what = "sandboxes.agents.x-k8s.io";
        k.run(&["-n", ns, "auth", "can-i", "delete", what, "--token", token])
            .failure()
            .stdout_is("no\n");
    });
}

/// A bogus token is Unauthorized. With an empty discovery cache kubectl fails in discovery,
/// which reports client-go's generic 401 text; with a warm cache the request itself fails and
/// kubectl prints the Status's message, `Unauthorized`.
pub(super) fn unauthorized_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    thread::scope(|s| {
        s.spawn(|| {
            k.run(&["get", "pods", "--token", "bogus"]).failure().stderr_has_line(
                "error: You must be logged in to the server (the server has asked for the client to provide credentials)",
            );
        });
        let home = tempfile::tempdir().expect("a temporary HOME");
        let warm = k.with_home(home.path());
        warm.run(&["get", "pods"]).success();
        let unauthorized = "error: You must be logged in to the server (Unauthorized)";
        warm.run(&["get", "pods", "--token", "bogus"])
            .failure()
            .stderr_has_line(unauthorized);
        warm.run(&["get", "sandboxes", "--token", "bogus"])
            .failure()
            .stderr_has_line(unauthorized);
    });
}

/// The Sandbox CRD schema through kubectl: defaults are stored, an enum violation is Invalid
/// with the field named, an unknown field is only warned about and pruned under
/// `--validate=warn`, and refused under `--validate=strict` (kubectl's default).
pub(super) fn crd_schema_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "schema";
    k.create_namespace(ns);
    let with_spec_line = |name: &str, line: &str| {
        sandbox_yaml(name, &[], "busybox:1.36").replacen(
            "\nspec:\n",
            &format!("\nspec:\n  {line}\n"),
            1,
        )
    };
    thread::scope(|s| {
        s.spawn(|| {
            let sb = server.write("box.yaml", &sandbox_yaml("box", &[], "busybox:1.36"));
            k.apply(ns, &sb, &[]).success();
            let fields = "jsonpath={.spec.operatingMode}/{.spec.shutdownPolicy}";
            let out = k.run(&["-n", ns, "get", "sandbox", "box", "-o", fields]);
            out.success().stdout_is("Running/Retain");
        });
        s.spawn(|| {
            let bad = server.write("bad.yaml", &with_spec_line("bad", "operatingMode: Bogus"));
            let out = k.apply(ns, &bad, &[]).failure();
            assert!(out.stderr.starts_with("The Sandbox \"bad\" is invalid:"), "{out}");
            let cause = r#"spec.operatingMode: Unsupported value: "Bogus": supported values: "Running", "Suspended""#;
            assert!(out.stderr.contains(cause), "{out}");
            k.run(&["-n", ns, "get", "sandbox", "bad"]).failure().stderr_has_line(
                "Error from server (NotFound): sandboxes.agents.x-k8s.io \"bad\" not found",
            );
        });
        s.spawn(|| {
            let extra = server.write("extra.yaml", &with_spec_line("extra", "bogusField: 1"));
            let extra = extra.to_str().expect("a UTF-8 path");
            k.run(&["-n", ns, "create", "-f", extra, "--validate=warn"])
                .success()
                .stdout_is("sandbox.agents.x-k8s.io/extra created\n")
                .stderr_has_line("Warning: unknown field \"spec.bogusField\"");
            let stored = k.get_json(ns, &["sandbox", "extra"]);
            assert!(
                stored["spec"].get("bogusField").is_none(),
                "the field is pruned: {stored}"
            );
        });
        let strict = server.write("strict.yaml", &with_spec_line("strict", "bogusField: 1"));
        let strict = strict.to_str().expect("a UTF-8 path");
        k.run(&["-n", ns, "create", "-f", strict]).failure().stderr_has_line(&format!(
            "Error from server (BadRequest): error when creating \"{strict}\": Sandbox in version \"v1beta1\" cannot be handled as a Sandbox: strict decoding error: unknown field \"spec.bogusField\""
        ));
    });
}

/// `kubectl explain` reads the kind's schema from `/openapi/v3`.
pub(super) fn explain_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let out = k.run(&["explain", "sandboxes.spec"]).success();
    assert!(out.stdout.contains("KIND:       Sandbox"), "{out}");
    assert!(out.stdout.contains("podTemplate"), "{out}");
    assert!(out.stdout.contains("operatingMode"), "{out}");
}

/// A file of the workspace's `fixtures/`.
fn fixture(path: &str) -> String {
    format!("{}/../fixtures/{path}", env!("CARGO_MANIFEST_DIR"))
}

/// RBAC made with `kubectl create`: a Role and a RoleBinding for a service account answer
/// `auth can-i --as` yes for the Role's verbs and no otherwise; a token from `create token`
/// may do exactly that (others are Forbidden, worded as the API server words them), `auth
/// whoami` names the account and `auth can-i --list` shows the Role's rule; a ClusterRole bound
/// by a RoleBinding grants in that namespace only.
pub(super) fn rbac_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "rbac";
    k.create_namespace(ns);
    let account = format!("{ns}:bot");
    let user = format!("system:serviceaccount:{account}");
    k.run(&["-n", ns, "create", "serviceaccount", "bot"])
        .success()
        .stdout_is("serviceaccount/bot created\n");
    k.run(&[
        "-n",
        ns,
        "create",
        "role",
        "pod-reader",
        "--verb=get,list",
        "--resource=pods",
    ])
    .success()
    .stdout_is("role.rbac.authorization.k8s.io/pod-reader created\n");
    let sa_flag = format!("--serviceaccount={account}");
    k.run(&[
        "-n",
        ns,
        "create",
        "rolebinding",
        "bot-reads",
        "--role=pod-reader",
        &sa_flag,
    ])
    .success()
    .stdout_is("rolebinding.rbac.authorization.k8s.io/bot-reads created\n");
    let as_bot = format!("--as={user}");
    k.run(&["-n", ns, "auth", "can-i", "list", "pods", &as_bot])
        .success()
        .stdout_is("yes\n");
    k.run(&["-n", ns, "auth", "can-i", "delete", "pods", &as_bot])
        .failure()
        .stdout_is("no\n");
    k.run(&["-n", "default", "auth", "can-i", "list", "pods", &as_bot])
        .failure()
        .stdout_is("no\n");
    let token = k
        .run(&["-n", ns, "create", "token", "bot", "--duration=15m"])
        .success()
        .stdout
        .trim()
        .to_string();
    let with_token = |namespace: &str, args: &[&str]| {
        let mut all = vec!["-n", namespace, "--token", token.as_str()];
        all.extend_from_slice(args);
        k.run(&all)
    };
    with_token(ns, &["get", "pods"]).success();
    let forbidden = |namespace: &str| {
        format!(
            "Error from server (Forbidden): secrets is forbidden: User \"{user}\" cannot list resource \"secrets\" in API group \"\" in the namespace \"{namespace}\""
        )
    };
    with_token(ns, &["get", "secrets"])
        .failure()
        .stderr_has_line(&forbidden(ns));
    let who = with_token(ns, &["auth", "whoami", "-o", "json"])
        .success()
        .json();
    assert_eq!(who["status"]["userInfo"]["username"], user.as_str());
    let list = with_token(ns, &["auth", "can-i", "--list"]).success();
    assert!(
        list.stdout
            .lines()
            .any(|l| l.starts_with("pods ") && l.trim_end().ends_with("[get list]")),
        "the Role's rule is listed: {list}"
    );
    k.run(&[
        "create",
        "clusterrole",
        "secret-reader",
        "--verb=get,list",
        "--resource=secrets",
    ])
    .success()
    .stdout_is("clusterrole.rbac.authorization.k8s.io/secret-reader created\n");
    k.run(&[
        "-n",
        ns,
        "create",
        "rolebinding",
        "bot-secrets",
        "--clusterrole=secret-reader",
        &sa_flag,
    ])
    .success();
    with_token(ns, &["get", "secrets"]).success();
    with_token("default", &["get", "secrets"])
        .failure()
        .stderr_has_line(&forbidden("default"));
}

/// The RBAC part of `ci/kind-up.sh`, applied unchanged: the namespace, the seed's Role, and
/// `fixtures/live/kind/access.yaml` (service accounts, bindings, token Secrets). The token
/// controller fills the Secret; its token may do what the seed's Role allows (kind-up's own
/// checks) and nothing else, and stops working when the Secret is deleted.
pub(super) fn kind_up_rbac_scenario(bin: &str) {
    if !installed(bin) {
        return;
    }
    let server = Server::start();
    let k = Kubectl::new(bin, &server);
    let ns = "sandboxes";
    let mut args = vec!["apply"];
    let files = [
        fixture("live/namespace.yaml"),
        fixture("rbac/differently-sandboxes-role.yaml"),
        fixture("live/kind/access.yaml"),
    ];
    for f in &files {
        args.extend(["-f", f.as_str()]);
    }
    let applied = k.run(&args).success();
    assert!(
        applied.stdout.contains("secret/live-runner-token created"),
        "{applied}"
    );
    let mut watch = k.spawn(&[
        "-n",
        ns,
        "get",
        "secret",
        "live-runner-token",
        "-w",
        "-o",
        "jsonpath={.data.token}{\"\\n\"}",
    ]);
    let encoded = watch.expect_line(Stream::Stdout, "a filled token", |l| !l.trim().is_empty());
    drop(watch);
    use base64::Engine;
    let token = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|t| String::from_utf8(t).ok())
        .expect("the Secret's token is base64 text");
    let with_token = |args: &[&str]| {
        let mut all = vec!["-n", ns, "--token", token.as_str()];
        all.extend_from_slice(args);
        k.run(&all)
    };
    with_token(&["auth", "can-i", "create", "sandboxes.agents.x-k8s.io"])
        .success()
        .stdout_is("yes\n");
    with_token(&["auth", "can-i", "list", "services"])
        .failure()
        .stdout_is("no\n");
    with_token(&["get", "sandboxes"]).success();
    with_token(&["get", "services"]).failure().stderr_has_line(
        "Error from server (Forbidden): services is forbidden: User \"system:serviceaccount:sandboxes:live-runner\" cannot list resource \"services\" in API group \"\" in the namespace \"sandboxes\"",
    );
    k.run(&["-n", ns, "delete", "secret", "live-runner-token"])
        .success();
    // A cold discovery cache: kubectl fails in discovery, with client-go's 401 text.
    with_token(&["get", "sandboxes"]).failure().stderr_has_line(
        "error: You must be logged in to the server (the server has asked for the client to provide credentials)",
    );
}

// ---------------------------------------------------------------------------------------------
// The tests: the core scenarios on every version, the rest on 1.30, 1.33 and the dispatcher.
// ---------------------------------------------------------------------------------------------
