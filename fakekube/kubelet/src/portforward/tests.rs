//! Port-forwarding sessions over in-memory connections, against a pod network with a test
//! listener: SPDY stream pairs (direct and tunnelled) and WebSocket channels.

use super::*;
use crate::spdy::frame::{Frame, RstStatus};
use crate::spdy::testing::{Client, Seen};
use fakekube_runtime::{Listener, PodNetwork};
use futures_util::{SinkExt, StreamExt};
use std::collections::HashMap;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_util::sync::CancellationToken;

/// How long a test waits for a condition before it fails: generous, since a loaded machine is
/// slow, and every wait returns as soon as its condition holds.
const WAIT: Duration = Duration::from_secs(60);

fn target(network: &PodNetwork) -> PortForwardTarget {
    PortForwardTarget {
        network: network.clone(),
        sandbox_id: "5a".repeat(32),
        netns: "/var/run/netns/cni-1".into(),
        cancel: CancellationToken::new(),
    }
}

/// A listener that answers one connection with `reply` after reading everything sent;
/// returns what it read.
fn echo_server(listener: Listener, reply: &'static [u8]) -> tokio::task::JoinHandle<Vec<u8>> {
    tokio::spawn(async move {
        let mut data = Vec::new();
        if let Some(mut conn) = listener.accept().await {
            let _ = conn.read_to_end(&mut data).await;
            let _ = conn.write_all(reply).await;
            let _ = conn.shutdown().await;
        }
        data
    })
}

/// What the SPDY client saw on each stream, until both of a pair were finished.
async fn read_until_fins(client: &mut Client<DuplexStream>, fins: &[u32]) -> HashMap<u32, Vec<u8>> {
    let mut data: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut finished = Vec::new();
    while !fins.iter().all(|f| finished.contains(f)) {
        match tokio::time::timeout(WAIT, client.next())
            .await
            .expect("in time")
        {
            Some(Seen::Data {
                stream,
                fin,
                data: d,
            }) => {
                data.entry(stream).or_default().extend_from_slice(&d);
                if fin {
                    finished.push(stream);
                }
            }
            Some(_) => {}
            None => break,
        }
    }
    data
}

#[tokio::test]
async fn a_spdy_stream_pair_reaches_the_pods_port_both_ways() {
    let net = PodNetwork::new();
    let server = echo_server(net.listen(8080).expect("free"), b"pong");
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let session = tokio::spawn(spdy::serve(server_io, target(&net)));
    let mut client = Client::new(client_io);
    let h = |t: &'static str| [("streamType", t), ("port", "8080"), ("requestID", "0")];
    client.open(1, &h("error"), true).await;
    client.open(3, &h("data"), false).await;
    client.data(3, b"ping", true).await;
    let got = read_until_fins(&mut client, &[1, 3]).await;
    assert_eq!(got.get(&3).map(Vec::as_slice), Some(&b"pong"[..]));
    assert!(got.get(&1).is_none_or(Vec::is_empty), "no error: {got:?}");
    drop(client);
    assert!(tokio::time::timeout(WAIT, session).await.is_ok());
    assert_eq!(server.await.ok(), Some(b"ping".to_vec()));
}

#[tokio::test]
async fn the_pods_end_finishes_both_streams_while_the_client_still_sends() {
    let net = PodNetwork::new();
    let listener = net.listen(8080).expect("free");
    let server = tokio::spawn(async move {
        let mut conn = listener.accept().await.expect("a connection");
        let _ = conn.write_all(b"bye").await;
        let _ = conn.shutdown().await;
    });
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let _session = tokio::spawn(spdy::serve(server_io, target(&net)));
    let mut client = Client::new(client_io);
    let h = |t: &'static str| [("streamType", t), ("port", "8080"), ("requestID", "3")];
    client.open(1, &h("error"), true).await;
    client.open(3, &h("data"), false).await;
    // The client's data stream stays open, as older kubectl keeps it until the local end.
    let got = read_until_fins(&mut client, &[1, 3]).await;
    assert_eq!(got.get(&3).map(Vec::as_slice), Some(&b"bye"[..]));
    assert!(server.await.is_ok());
}

#[tokio::test]
async fn a_refused_port_is_reported_on_the_error_stream_as_the_kubelet_words_it() {
    let net = PodNetwork::new();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let _session = tokio::spawn(spdy::serve(server_io, target(&net)));
    let mut client = Client::new(client_io);
    // No requestID: the streams pair by their ids, as for very old clients.
    client
        .open(5, &[("streamType", "error"), ("port", "9999")], true)
        .await;
    client
        .open(7, &[("streamType", "data"), ("port", "9999")], false)
        .await;
    let got = read_until_fins(&mut client, &[5, 7]).await;
    let message =
        String::from_utf8_lossy(got.get(&5).map(Vec::as_slice).unwrap_or_default()).into_owned();
    assert!(
        message.starts_with(&format!(
            "error forwarding port 9999 to pod {}, uid : failed to execute portforward in network namespace \"/var/run/netns/cni-1\": failed to connect to localhost:9999",
            "5a".repeat(32)
        )),
        "{message}"
    );
    assert!(message.contains("connect: connection refused"), "{message}");
}

#[tokio::test]
async fn streams_without_a_valid_port_or_type_are_refused() {
    let net = PodNetwork::new();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let _session = tokio::spawn(spdy::serve(server_io, target(&net)));
    let mut client = Client::new(client_io);
    client
        .open(1, &[("streamType", "data"), ("port", "0")], false)
        .await;
    client
        .open(3, &[("streamType", "stdout"), ("port", "80")], false)
        .await;
    for stream in [1, 3] {
        let next = tokio::time::timeout(WAIT, client.next())
            .await
            .expect("in time");
        assert_eq!(
            next,
            Some(Seen::Other(Frame::RstStream {
                stream,
                status: RstStatus::REFUSED_STREAM
            }))
        );
    }
}

#[tokio::test]
async fn the_pods_end_closes_the_spdy_connection_with_goaway() {
    let net = PodNetwork::new();
    let t = target(&net);
    let cancel = t.cancel.clone();
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let session = tokio::spawn(spdy::serve(server_io, t));
    let mut client = Client::new(client_io);
    cancel.cancel();
    let mut saw_goaway = false;
    while let Ok(Some(seen)) = tokio::time::timeout(WAIT, client.next()).await {
        saw_goaway |= matches!(seen, Seen::Other(Frame::GoAway { .. }));
    }
    assert!(saw_goaway);
    client.shutdown().await;
    assert!(tokio::time::timeout(WAIT, session).await.is_ok());
}

/// A WebSocket client over an in-memory pipe, with the server's session.
async fn ws_session(
    framing: Protocol,
    ports: Vec<u16>,
    net: &PodNetwork,
) -> (WebSocketStream<DuplexStream>, tokio::task::JoinHandle<()>) {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let session = tokio::spawn(websocket::serve(server_io, framing, ports, target(net)));
    let client = WebSocketStream::from_raw_socket(client_io, Role::Client, None).await;
    (client, session)
}

/// Every binary message until the server's Close, and whether a Close came.
async fn ws_read_all(client: &mut WebSocketStream<DuplexStream>) -> (Vec<Vec<u8>>, bool) {
    let mut messages = Vec::new();
    loop {
        match tokio::time::timeout(WAIT, client.next())
            .await
            .expect("in time")
        {
            Some(Ok(WsMessage::Binary(b))) => messages.push(b.to_vec()),
            Some(Ok(WsMessage::Text(t))) => messages.push(t.as_bytes().to_vec()),
            Some(Ok(WsMessage::Close(_))) => return (messages, true),
            Some(Ok(_)) => {}
            Some(Err(_)) | None => return (messages, false),
        }
    }
}

#[tokio::test]
async fn websocket_channels_start_with_the_port_and_carry_each_ports_bytes() {
    let net = PodNetwork::new();
    let server = echo_server(net.listen(8080).expect("free"), b"pong");
    let (mut client, session) = ws_session(Protocol::V4, vec![8080, 9999], &net).await;
    assert!(
        client
            .send(WsMessage::binary(b"\x00ping".to_vec()))
            .await
            .is_ok()
    );
    assert!(client.send(WsMessage::Close(None)).await.is_ok());
    let (messages, closed) = ws_read_all(&mut client).await;
    assert!(closed);
    drop(client);
    let on = |ch: u8| -> Vec<Vec<u8>> {
        messages
            .iter()
            .filter(|m| m.first() == Some(&ch))
            .map(|m| m[1..].to_vec())
            .collect()
    };
    assert_eq!(on(0).first().map(Vec::as_slice), Some(&[0x90, 0x1f][..]));
    assert_eq!(on(1).first().map(Vec::as_slice), Some(&[0x90, 0x1f][..]));
    assert_eq!(on(2).first().map(Vec::as_slice), Some(&[0x0f, 0x27][..]));
    assert_eq!(on(0).concat().get(2..), Some(&b"pong"[..]));
    let refused = String::from_utf8_lossy(&on(3).concat()[2..]).into_owned();
    assert!(refused.contains("connect: connection refused"), "{refused}");
    assert!(tokio::time::timeout(WAIT, session).await.is_ok());
    assert_eq!(server.await.ok(), Some(b"ping".to_vec()));
}

#[tokio::test]
async fn base64_channels_are_text_both_ways() {
    let net = PodNetwork::new();
    let _server = echo_server(net.listen(80).expect("free"), b"ok");
    let (mut client, _session) = ws_session(Protocol::V4Base64, vec![80], &net).await;
    assert!(client.send(WsMessage::text("0aGk=")).await.is_ok());
    assert!(client.send(WsMessage::Close(None)).await.is_ok());
    let (messages, _) = ws_read_all(&mut client).await;
    assert!(messages.contains(&b"0UAA=".to_vec()), "{messages:?}");
    assert!(messages.contains(&b"0b2s=".to_vec()), "{messages:?}");
}

#[tokio::test]
async fn spdy_tunnelled_in_websocket_messages_reaches_the_port() {
    let net = PodNetwork::new();
    let server = echo_server(net.listen(8080).expect("free"), b"pong");
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let session = tokio::spawn(spdy::serve(
        crate::websocket::tunnel(server_io),
        target(&net),
    ));
    // The client side of the tunnel: SPDY bytes in binary messages, as client-go sends them.
    let ws = WebSocketStream::from_raw_socket(client_io, Role::Client, None).await;
    let (mut ws_tx, mut ws_rx) = ws.split();
    let (spdy_io, bridge) = tokio::io::duplex(64 * 1024);
    let (mut bridge_rd, mut bridge_wr) = tokio::io::split(bridge);
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        while let Ok(n) = bridge_rd.read(&mut buf).await {
            if n == 0
                || ws_tx
                    .send(WsMessage::binary(buf[..n].to_vec()))
                    .await
                    .is_err()
            {
                break;
            }
        }
        let _ = ws_tx.close().await;
    });
    tokio::spawn(async move {
        while let Some(Ok(m)) = ws_rx.next().await {
            if let WsMessage::Binary(b) = m
                && bridge_wr.write_all(&b).await.is_err()
            {
                break;
            }
        }
    });
    let mut client = Client::new(spdy_io);
    let h = |t: &'static str| [("streamType", t), ("port", "8080"), ("requestID", "1")];
    client.open(1, &h("error"), true).await;
    client.open(3, &h("data"), false).await;
    client.data(3, b"ping", true).await;
    let got = read_until_fins(&mut client, &[1, 3]).await;
    assert_eq!(got.get(&3).map(Vec::as_slice), Some(&b"pong"[..]));
    drop(client);
    assert!(tokio::time::timeout(WAIT, session).await.is_ok());
    assert_eq!(server.await.ok(), Some(b"ping".to_vec()));
}
