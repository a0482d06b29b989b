//! The connection against the test client, over an in-memory pipe.

use super::*;
use crate::spdy::frame::Setting;
use crate::spdy::testing::{Client, Seen};
use tokio::io::DuplexStream;

/// How long a test waits for a condition before it fails: generous, since a loaded machine is
/// slow, and every wait returns as soon as its condition holds.
const WAIT: Duration = Duration::from_secs(60);

fn start(accept: Accept) -> (Client<DuplexStream>, Connection) {
    let (server, client) = tokio::io::duplex(256 * 1024);
    (Client::new(client), Connection::start(server, accept))
}

fn accept_all() -> Accept {
    Box::new(|_| true)
}

async fn next(client: &mut Client<DuplexStream>) -> Option<Seen> {
    tokio::time::timeout(WAIT, client.next())
        .await
        .expect("the server answers")
}

async fn accepted(conn: &mut Connection) -> Stream {
    tokio::time::timeout(WAIT, conn.accept())
        .await
        .expect("a stream arrives")
        .expect("the connection is open")
}

/// Reads DATA frames of `stream` until `want` bytes (or its FIN) arrived, skipping others.
async fn read_data(client: &mut Client<DuplexStream>, stream: u32, want: usize) -> (Vec<u8>, bool) {
    let mut got = Vec::new();
    while got.len() < want {
        match next(client).await {
            Some(Seen::Data {
                stream: s,
                fin,
                data,
            }) if s == stream => {
                got.extend_from_slice(&data);
                if fin {
                    return (got, true);
                }
            }
            Some(_) => {}
            None => break,
        }
    }
    (got, false)
}

#[tokio::test]
async fn a_stream_is_replied_to_and_carries_data_both_ways_until_each_fin() {
    let (mut client, mut conn) = start(accept_all());
    client
        .open(1, &[("streamType", "data"), ("port", "80")], false)
        .await;
    let stream = accepted(&mut conn).await;
    assert_eq!(stream.id(), 1);
    assert_eq!(stream.headers().get("streamtype"), Some("data"));
    assert_eq!(next(&mut client).await, Some(Seen::Reply(1)));
    let (mut reader, writer) = stream.split();
    client.data(1, b"hello", true).await;
    assert_eq!(reader.recv().await.as_deref(), Some(&b"hello"[..]));
    assert_eq!(reader.recv().await, None);
    assert_eq!(writer.write(b"world").await, Ok(()));
    assert_eq!(writer.finish().await, Ok(()));
    assert_eq!(
        read_data(&mut client, 1, 100).await,
        (b"world".to_vec(), true)
    );
    assert_eq!(writer.write(b"late").await, Err(WriteError::StreamClosed));
}

#[tokio::test]
async fn refused_and_misnumbered_streams_are_reset() {
    let (mut client, mut conn) = start(Box::new(|h| h.get("port").is_some()));
    client.open(1, &[("streamType", "data")], false).await;
    assert_eq!(
        next(&mut client).await,
        Some(Seen::Other(Frame::RstStream {
            stream: 1,
            status: RstStatus::REFUSED_STREAM
        }))
    );
    client.open(4, &[("port", "1")], false).await;
    assert_eq!(
        next(&mut client).await,
        Some(Seen::Other(Frame::RstStream {
            stream: 4,
            status: RstStatus::PROTOCOL_ERROR
        }))
    );
    client.open(5, &[("port", "1")], false).await;
    assert_eq!(next(&mut client).await, Some(Seen::Reply(5)));
    assert_eq!(accepted(&mut conn).await.id(), 5);
}

#[tokio::test]
async fn the_clients_pings_are_echoed_and_even_ones_are_not() {
    let (mut client, _conn) = start(accept_all());
    client.send(&Frame::Ping { id: 2 }).await;
    client.send(&Frame::Ping { id: 7 }).await;
    assert_eq!(
        next(&mut client).await,
        Some(Seen::Other(Frame::Ping { id: 7 }))
    );
}

#[tokio::test]
async fn without_flow_control_from_the_client_output_is_not_held_at_64_kib() {
    let (mut client, mut conn) = start(accept_all());
    client.open(1, &[], true).await;
    let (_reader, writer) = accepted(&mut conn).await.split();
    let big = vec![7u8; 300 * 1024];
    let sender = tokio::spawn(async move {
        let r = writer.write(&big).await;
        let f = writer.finish().await;
        (r, f)
    });
    let (got, fin) = read_data(&mut client, 1, usize::MAX).await;
    assert_eq!((got.len(), fin), (300 * 1024, true));
    assert_eq!(sender.await.ok(), Some((Ok(()), Ok(()))));
}

#[tokio::test]
async fn a_client_that_keeps_windows_gets_no_more_than_they_allow() {
    let (mut client, mut conn) = start(accept_all());
    client
        .send(&Frame::Settings {
            clear: false,
            entries: vec![Setting {
                flags: 0,
                id: setting::INITIAL_WINDOW_SIZE,
                value: 10,
            }],
        })
        .await;
    client.open(1, &[], true).await;
    let (_reader, writer) = accepted(&mut conn).await.split();
    let sender = tokio::spawn(async move { writer.write(&[1u8; 25]).await });
    assert_eq!(read_data(&mut client, 1, 10).await.0.len(), 10);
    client
        .send(&Frame::WindowUpdate {
            stream: 1,
            delta: 15,
        })
        .await;
    assert_eq!(read_data(&mut client, 1, 15).await.0.len(), 15);
    assert_eq!(sender.await.ok(), Some(Ok(())));
}

#[tokio::test]
async fn reading_half_a_window_sends_window_updates_for_the_stream_and_the_session() {
    let (mut client, mut conn) = start(accept_all());
    client.open(1, &[], false).await;
    let (mut reader, _writer) = accepted(&mut conn).await.split();
    assert_eq!(next(&mut client).await, Some(Seen::Reply(1)));
    let half = INITIAL_WINDOW as usize / 2;
    client.data(1, &vec![0u8; half], false).await;
    let mut read = 0;
    while read < half {
        read += reader.recv().await.map(|c| c.len()).unwrap_or(half);
    }
    let mut updates = Vec::new();
    while updates.len() < 2 {
        match next(&mut client).await {
            Some(Seen::Other(Frame::WindowUpdate { stream, delta })) => {
                updates.push((stream, delta));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    updates.sort_unstable();
    assert_eq!(updates, vec![(0, half as u32), (1, half as u32)]);
}

#[tokio::test]
async fn a_client_that_ignores_windows_loses_nothing_when_the_reader_is_slow() {
    let (mut client, mut conn) = start(accept_all());
    client.open(1, &[], false).await;
    let (mut reader, _writer) = accepted(&mut conn).await.split();
    let data: Vec<u8> = (0..400 * 1024).map(|i| (i % 251) as u8).collect();
    let sent = data.clone();
    let feeder = tokio::spawn(async move {
        for chunk in sent.chunks(32 * 1024) {
            client.data(1, chunk, false).await;
        }
        client.data(1, b"", true).await;
        client
    });
    let mut got = Vec::new();
    while let Some(chunk) = reader.recv().await {
        got.extend_from_slice(&chunk);
    }
    assert_eq!(got, data);
    assert!(feeder.await.is_ok());
}

#[tokio::test]
async fn finishing_sends_goaway_and_closes_after_the_client() {
    let (mut client, mut conn) = start(accept_all());
    client.open(1, &[], true).await;
    let _stream = accepted(&mut conn).await;
    let finished = tokio::spawn(conn.finish(WAIT));
    assert_eq!(next(&mut client).await, Some(Seen::Reply(1)));
    assert_eq!(
        next(&mut client).await,
        Some(Seen::Other(Frame::GoAway {
            last_good: 1,
            status: GoAwayStatus::OK
        }))
    );
    assert_eq!(next(&mut client).await, None);
    client.shutdown().await;
    assert!(tokio::time::timeout(WAIT, finished).await.is_ok());
}

#[tokio::test]
async fn junk_from_the_client_is_a_protocol_error_and_ends_the_connection() {
    use tokio::io::AsyncWriteExt;
    let (server, mut client) = tokio::io::duplex(4096);
    let mut conn = Connection::start(server, accept_all());
    let handle = conn.handle();
    let _ = client.write_all(&[0x80, 0x02, 0, 1, 0, 0, 0, 0]).await;
    let mut c = Client::new(client);
    assert_eq!(
        next(&mut c).await,
        Some(Seen::Other(Frame::GoAway {
            last_good: 0,
            status: GoAwayStatus::PROTOCOL_ERROR
        }))
    );
    assert!(tokio::time::timeout(WAIT, handle.gone()).await.is_ok());
    assert!(conn.accept().await.is_none());
}

#[tokio::test]
async fn a_closed_connection_ends_every_stream() {
    let (mut client, mut conn) = start(accept_all());
    client.open(1, &[], false).await;
    let (mut reader, writer) = accepted(&mut conn).await.split();
    drop(client);
    assert_eq!(reader.recv().await, None);
    tokio::time::timeout(WAIT, conn.handle().gone())
        .await
        .expect("the connection notices");
    assert_eq!(writer.write(b"x").await, Err(WriteError::ConnectionGone));
}
