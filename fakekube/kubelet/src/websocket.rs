//! The server side of RFC 6455 framing, written here rather than taken from tungstenite because
//! the exec session needs one thing tungstenite forbids: to keep sending output and the status
//! after the client's Close frame (kube-rs under v4 sends Close on stdin EOF and keeps reading),
//! and only then answer with its own Close. Header parsing and encoding are pure functions; a
//! [`Reader`] reassembles messages from any `AsyncRead`, a [`Writer`] writes unmasked frames,
//! and [`tunnel`] turns a connection's binary messages into a plain byte stream (SPDY tunnelled
//! in WebSocket, as port-forwarding does since kubectl 1.30).

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;

/// Continuation frame.
pub const OP_CONTINUATION: u8 = 0x0;
/// Text frame.
pub const OP_TEXT: u8 = 0x1;
/// Binary frame.
pub const OP_BINARY: u8 = 0x2;
/// Close frame.
pub const OP_CLOSE: u8 = 0x8;
/// Ping frame.
pub const OP_PING: u8 = 0x9;
/// Pong frame.
pub const OP_PONG: u8 = 0xA;

/// The room a [`Reader`] makes for a frame's header (and whatever follows it in the same
/// read): what an idle connection holds while it waits for the client's next message.
const HEADER_ROOM: usize = 256;

/// The most room a [`Reader`] makes at once for a payload it knows the length of (so that a
/// header announcing a large message costs nothing before its bytes arrive).
const PAYLOAD_ROOM: usize = 64 * 1024;

/// The largest message the server accepts from a client (stdin frames are 32 KiB in practice).
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// Why the client's byte stream is not acceptable WebSocket framing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A reserved bit is set (no extension was negotiated).
    #[error("reserved bits set")]
    ReservedBits,
    /// An opcode RFC 6455 does not define.
    #[error("unknown opcode {0:#x}")]
    UnknownOpcode(u8),
    /// A control frame that is fragmented or longer than 125 bytes.
    #[error("invalid control frame")]
    BadControlFrame,
    /// A frame or message longer than [`MAX_MESSAGE`].
    #[error("message of {0} bytes is too large")]
    TooLarge(u64),
    /// A continuation with nothing to continue, or a new message inside a fragmented one.
    #[error("unexpected fragment")]
    BadFragment,
}

/// One frame's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Whether this is the last frame of its message.
    pub fin: bool,
    /// The opcode.
    pub opcode: u8,
    /// The masking key, when the frame is masked (clients must mask; unmasked is tolerated).
    pub mask: Option<[u8; 4]>,
    /// The payload length.
    pub len: u64,
}

/// Parses a frame header from the start of `buf`: `Ok(None)` when more bytes are needed,
/// otherwise the header and its size in bytes.
pub fn parse_header(buf: &[u8]) -> Result<Option<(Header, usize)>, FrameError> {
    let [b0, b1, rest @ ..] = buf else {
        return Ok(None);
    };
    if b0 & 0x70 != 0 {
        return Err(FrameError::ReservedBits);
    }
    let fin = b0 & 0x80 != 0;
    let opcode = b0 & 0x0F;
    let is_control = opcode & 0x8 != 0;
    if !matches!(
        opcode,
        OP_CONTINUATION | OP_TEXT | OP_BINARY | OP_CLOSE | OP_PING | OP_PONG
    ) {
        return Err(FrameError::UnknownOpcode(opcode));
    }
    let masked = b1 & 0x80 != 0;
    let short = b1 & 0x7F;
    let (len, ext) = match short {
        126 => match rest {
            [a, b, ..] => (u64::from(u16::from_be_bytes([*a, *b])), 2),
            _ => return Ok(None),
        },
        127 => match rest.get(..8) {
            Some(bytes) => {
                let mut eight = [0u8; 8];
                eight.copy_from_slice(bytes);
                (u64::from_be_bytes(eight), 8)
            }
            None => return Ok(None),
        },
        n => (u64::from(n), 0),
    };
    if is_control && (!fin || len > 125) {
        return Err(FrameError::BadControlFrame);
    }
    if len > MAX_MESSAGE as u64 {
        return Err(FrameError::TooLarge(len));
    }
    let mask = if masked {
        match rest.get(ext..ext + 4) {
            Some(k) => Some([k[0], k[1], k[2], k[3]]),
            None => return Ok(None),
        }
    } else {
        None
    };
    let size = 2 + ext + if masked { 4 } else { 0 };
    Ok(Some((
        Header {
            fin,
            opcode,
            mask,
            len,
        },
        size,
    )))
}

/// Encodes the header of an unmasked, final frame (what a server sends) into `out`.
pub fn encode_header(opcode: u8, len: usize, out: &mut Vec<u8>) {
    out.push(0x80 | (opcode & 0x0F));
    if len < 126 {
        out.push(len as u8);
    } else if let Ok(short) = u16::try_from(len) {
        out.push(126);
        out.extend_from_slice(&short.to_be_bytes());
    } else {
        out.push(127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
}

/// XORs `data` with the masking key (masking and unmasking are the same operation).
pub fn apply_mask(data: &mut [u8], key: [u8; 4]) {
    for (i, b) in data.iter_mut().enumerate() {
        *b ^= key[i % 4];
    }
}

/// A whole message (or control frame) from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// A text message's bytes (not checked for UTF-8: the channel codec reads bytes).
    Text(Vec<u8>),
    /// A binary message.
    Binary(Vec<u8>),
    /// A Ping with its payload, to be echoed in a Pong.
    Ping(Vec<u8>),
    /// A Pong.
    Pong,
    /// A Close, with its status code when it carried one.
    Close(Option<u16>),
}

/// Why reading the client's messages stopped.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The socket failed.
    #[error("reading the socket")]
    Io(#[from] std::io::Error),
    /// The client broke the framing rules.
    #[error("invalid WebSocket framing")]
    Frame(#[from] FrameError),
}

/// Reads client messages, reassembling fragmented ones.
#[derive(Debug)]
pub struct Reader<R> {
    /// The socket's read half.
    io: R,
    /// Bytes read but not yet parsed.
    buf: Vec<u8>,
    /// A fragmented message so far: whether it is text, and its bytes.
    partial: Option<(bool, Vec<u8>)>,
}

impl<R: AsyncRead + Unpin> Reader<R> {
    /// Wraps a socket's read half.
    pub fn new(io: R) -> Self {
        Reader {
            io,
            buf: Vec::new(),
            partial: None,
        }
    }

    /// Reads more bytes into the buffer, making room for `wanted` of them (at most
    /// [`PAYLOAD_ROOM`], at least [`HEADER_ROOM`]); `false` at end of stream. Reads straight
    /// into the buffer's spare room: no chunk on the stack, which would live in every pending
    /// read's future (one per exec connection), and no buffer before the first byte.
    async fn fill(&mut self, wanted: usize) -> Result<bool, std::io::Error> {
        let room = wanted.clamp(HEADER_ROOM, PAYLOAD_ROOM);
        if self.buf.capacity() - self.buf.len() < room {
            self.buf.reserve(room);
        }
        let n = self.io.read_buf(&mut self.buf).await?;
        Ok(n > 0)
    }

    /// The next message; `Ok(None)` at a clean end of stream between frames.
    pub async fn next(&mut self) -> Result<Option<Message>, ReadError> {
        loop {
            let (header, size) = loop {
                if let Some(found) = parse_header(&self.buf)? {
                    break found;
                }
                if !self.fill(HEADER_ROOM).await? {
                    return if self.buf.is_empty() && self.partial.is_none() {
                        Ok(None)
                    } else {
                        Err(ReadError::Io(std::io::ErrorKind::UnexpectedEof.into()))
                    };
                }
            };
            // parse_header bounds len by MAX_MESSAGE, so it fits in usize.
            let len = usize::try_from(header.len).map_err(|_| FrameError::TooLarge(header.len))?;
            while self.buf.len() < size + len {
                if !self.fill(size + len - self.buf.len()).await? {
                    return Err(ReadError::Io(std::io::ErrorKind::UnexpectedEof.into()));
                }
            }
            let mut payload: Vec<u8> = self.buf.drain(..size + len).skip(size).collect();
            if self.buf.is_empty() && self.buf.capacity() > HEADER_ROOM {
                // Nothing left to parse: an idle connection holds no large buffer.
                self.buf = Vec::new();
            }
            if let Some(key) = header.mask {
                apply_mask(&mut payload, key);
            }
            match header.opcode {
                OP_PING => return Ok(Some(Message::Ping(payload))),
                OP_PONG => return Ok(Some(Message::Pong)),
                OP_CLOSE => {
                    let code = match payload.as_slice() {
                        [a, b, ..] => Some(u16::from_be_bytes([*a, *b])),
                        _ => None,
                    };
                    return Ok(Some(Message::Close(code)));
                }
                OP_CONTINUATION => {
                    let Some((text, mut data)) = self.partial.take() else {
                        return Err(FrameError::BadFragment.into());
                    };
                    if data.len() + payload.len() > MAX_MESSAGE {
                        return Err(
                            FrameError::TooLarge((data.len() + payload.len()) as u64).into()
                        );
                    }
                    data.extend_from_slice(&payload);
                    if header.fin {
                        return Ok(Some(if text {
                            Message::Text(data)
                        } else {
                            Message::Binary(data)
                        }));
                    }
                    self.partial = Some((text, data));
                }
                op => {
                    if self.partial.is_some() {
                        return Err(FrameError::BadFragment.into());
                    }
                    let text = op == OP_TEXT;
                    if !header.fin {
                        self.partial = Some((text, payload));
                        continue;
                    }
                    return Ok(Some(if text {
                        Message::Text(payload)
                    } else {
                        Message::Binary(payload)
                    }));
                }
            }
        }
    }
}

/// Writes server frames (unmasked, never fragmented).
#[derive(Debug)]
pub struct Writer<W> {
    /// The socket's write half.
    io: W,
    /// One frame being assembled, so that header and payload go out in one write.
    frame: Vec<u8>,
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    /// Wraps a socket's write half.
    pub fn new(io: W) -> Self {
        Writer {
            io,
            frame: Vec::new(),
        }
    }

    /// Writes one frame (without flushing).
    pub async fn send(&mut self, opcode: u8, payload: &[u8]) -> std::io::Result<()> {
        self.send_parts(opcode, &[], payload).await
    }

    /// Writes one frame whose payload is `prefix` then `payload` (a channel byte and its
    /// data), without flushing: the two are copied once, into the frame.
    pub async fn send_parts(
        &mut self,
        opcode: u8,
        prefix: &[u8],
        payload: &[u8],
    ) -> std::io::Result<()> {
        self.frame.clear();
        encode_header(opcode, prefix.len() + payload.len(), &mut self.frame);
        self.frame.extend_from_slice(prefix);
        self.frame.extend_from_slice(payload);
        self.io.write_all(&self.frame).await
    }

    /// Writes a Close frame with `code` (without flushing).
    pub async fn close(&mut self, code: u16) -> std::io::Result<()> {
        self.send(OP_CLOSE, &code.to_be_bytes()).await
    }

    /// Flushes what was written.
    pub async fn flush(&mut self) -> std::io::Result<()> {
        self.io.flush().await
    }

    /// Flushes and shuts the write side down (TLS close_notify, TCP FIN).
    pub async fn shutdown(&mut self) -> std::io::Result<()> {
        self.io.shutdown().await
    }
}

/// Bytes buffered each way between a tunnel and its user.
const TUNNEL_BUFFER: usize = 64 * 1024;

/// A byte stream carried by a WebSocket connection's binary messages: each message's payload
/// is read as the next bytes and each write goes out as one binary message (what client-go's
/// `TunnelingConnection` does on the other end). Pings are answered. The client's Close, a
/// text message or the end of the connection is the end of what the stream reads; shutting
/// the stream down (or dropping it) sends Close 1000.
pub fn tunnel<S>(io: S) -> DuplexStream
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (near, far) = tokio::io::duplex(TUNNEL_BUFFER);
    let (mut far_rd, mut far_wr) = tokio::io::split(far);
    let (rd, wr) = tokio::io::split(io);
    let (pong_tx, mut pong_rx) = mpsc::channel::<Vec<u8>>(4);
    tokio::spawn(async move {
        let mut reader = Reader::new(rd);
        loop {
            match reader.next().await {
                Ok(Some(Message::Binary(data))) => {
                    if far_wr.write_all(&data).await.is_err() {
                        break;
                    }
                }
                Ok(Some(Message::Ping(p))) => {
                    let _ = pong_tx.try_send(p);
                }
                Ok(Some(Message::Pong)) => {}
                Ok(Some(Message::Text(_) | Message::Close(_)) | None) | Err(_) => break,
            }
        }
        let _ = far_wr.shutdown().await;
    });
    tokio::spawn(async move {
        let mut writer = Writer::new(wr);
        let mut buf = vec![0u8; 32 * 1024];
        let mut pongs_open = true;
        loop {
            let sent = tokio::select! {
                biased;
                p = pong_rx.recv(), if pongs_open => match p {
                    Some(p) => writer.send(OP_PONG, &p).await,
                    None => { pongs_open = false; continue; }
                },
                n = far_rd.read(&mut buf) => match n {
                    Ok(0) | Err(_) => {
                        if writer.close(1000).await.is_ok() {
                            let _ = writer.flush().await;
                        }
                        let _ = writer.shutdown().await;
                        return;
                    }
                    Ok(n) => writer.send(OP_BINARY, &buf[..n]).await,
                },
            };
            if sent.is_err() || writer.flush().await.is_err() {
                return;
            }
        }
    });
    near
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A client frame: masked, as clients send them.
    fn client_frame(fin: bool, opcode: u8, payload: &[u8], key: [u8; 4]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_header(opcode, payload.len(), &mut out);
        if let Some(first) = out.first_mut()
            && !fin
        {
            *first &= 0x7F;
        }
        if let Some(second) = out.get_mut(1) {
            *second |= 0x80;
        }
        out.extend_from_slice(&key);
        let mut body = payload.to_vec();
        apply_mask(&mut body, key);
        out.extend_from_slice(&body);
        out
    }

    #[test]
    fn headers_use_7_16_and_64_bit_lengths() {
        for (len, size) in [
            (0usize, 2usize),
            (125, 2),
            (126, 4),
            (65535, 4),
            (65536, 10),
        ] {
            let mut out = Vec::new();
            encode_header(OP_BINARY, len, &mut out);
            assert_eq!(out.len(), size, "length {len}");
            assert_eq!(
                parse_header(&out),
                Ok(Some((
                    Header {
                        fin: true,
                        opcode: OP_BINARY,
                        mask: None,
                        len: len as u64
                    },
                    size
                )))
            );
        }
    }

    #[test]
    fn incomplete_headers_ask_for_more_bytes() {
        assert_eq!(parse_header(&[]), Ok(None));
        assert_eq!(parse_header(&[0x82]), Ok(None));
        assert_eq!(parse_header(&[0x82, 126, 1]), Ok(None));
        assert_eq!(parse_header(&[0x82, 0x85, 1, 2, 3]), Ok(None));
    }

    #[test]
    fn bad_headers_are_refused() {
        assert_eq!(parse_header(&[0xC2, 0]), Err(FrameError::ReservedBits));
        assert_eq!(parse_header(&[0x83, 0]), Err(FrameError::UnknownOpcode(3)));
        assert_eq!(parse_header(&[0x09, 0]), Err(FrameError::BadControlFrame));
        assert_eq!(
            parse_header(&[0x89, 126, 0, 126]),
            Err(FrameError::BadControlFrame)
        );
        assert_eq!(
            parse_header(&[0x82, 127, 0xFF, 0, 0, 0, 0, 0, 0, 0]),
            Err(FrameError::TooLarge(0xFF00_0000_0000_0000))
        );
    }

    #[tokio::test]
    async fn fragmented_messages_are_reassembled_around_control_frames() {
        let key = [1, 2, 3, 4];
        let mut bytes = client_frame(false, OP_TEXT, b"he", key);
        bytes.extend(client_frame(true, OP_PING, b"p", key));
        bytes.extend(client_frame(false, OP_CONTINUATION, b"ll", key));
        bytes.extend(client_frame(true, OP_CONTINUATION, b"o", key));
        bytes.extend(client_frame(true, OP_CLOSE, &1000u16.to_be_bytes(), key));
        let mut r = Reader::new(bytes.as_slice());
        assert_eq!(
            r.next().await.ok(),
            Some(Some(Message::Ping(b"p".to_vec())))
        );
        assert_eq!(
            r.next().await.ok(),
            Some(Some(Message::Text(b"hello".to_vec())))
        );
        assert_eq!(r.next().await.ok(), Some(Some(Message::Close(Some(1000)))));
        assert_eq!(r.next().await.ok(), Some(None));
    }

    #[tokio::test]
    async fn messages_larger_than_the_read_room_arrive_whole_through_small_reads() {
        let key = [7, 1, 7, 1];
        let big: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut bytes = client_frame(true, OP_BINARY, &big, key);
        bytes.extend(client_frame(true, OP_BINARY, b"small", key));
        bytes.extend(client_frame(
            true,
            OP_BINARY,
            &big[..HEADER_ROOM * 3 + 1],
            key,
        ));
        // A pipe of 97 bytes: every read gets at most that many.
        let (mut client, server) = tokio::io::duplex(97);
        let writer = tokio::spawn(async move { client.write_all(&bytes).await });
        let mut r = Reader::new(server);
        assert_eq!(
            r.next().await.ok(),
            Some(Some(Message::Binary(big.clone())))
        );
        assert_eq!(
            r.next().await.ok(),
            Some(Some(Message::Binary(b"small".to_vec())))
        );
        assert_eq!(
            r.next().await.ok(),
            Some(Some(Message::Binary(big[..HEADER_ROOM * 3 + 1].to_vec())))
        );
        assert!(matches!(writer.await, Ok(Ok(()))));
        assert_eq!(r.next().await.ok(), Some(None));
    }

    #[tokio::test]
    async fn a_reader_gives_its_buffer_back_once_a_large_message_is_read() {
        let big = vec![5u8; 100_000];
        let bytes = client_frame(true, OP_BINARY, &big, [1, 2, 3, 4]);
        let mut r = Reader::new(bytes.as_slice());
        assert_eq!(r.next().await.ok(), Some(Some(Message::Binary(big))));
        assert_eq!(r.buf.capacity(), 0);
        assert_eq!(r.next().await.ok(), Some(None));
        assert!(r.buf.capacity() <= HEADER_ROOM);
    }

    #[tokio::test]
    async fn a_stray_continuation_is_a_framing_error() {
        let bytes = client_frame(true, OP_CONTINUATION, b"x", [9, 9, 9, 9]);
        let mut r = Reader::new(bytes.as_slice());
        assert!(matches!(
            r.next().await,
            Err(ReadError::Frame(FrameError::BadFragment))
        ));
    }

    #[tokio::test]
    async fn a_stream_cut_inside_a_frame_is_an_unexpected_eof() {
        let bytes = client_frame(true, OP_BINARY, b"abcdef", [9, 9, 9, 9]);
        let cut = bytes.get(..bytes.len() - 2).unwrap_or_default();
        let mut r = Reader::new(cut);
        assert!(matches!(r.next().await, Err(ReadError::Io(_))));
    }

    #[tokio::test]
    async fn a_tunnel_reads_binary_payloads_as_a_stream_and_writes_binary_messages() {
        let (server, mut client) = tokio::io::duplex(64 * 1024);
        let mut stream = tunnel(server);
        let key = [7, 7, 7, 7];
        let mut bytes = client_frame(true, OP_BINARY, b"hel", key);
        bytes.extend(client_frame(true, OP_PING, b"p", key));
        bytes.extend(client_frame(true, OP_BINARY, b"lo", key));
        bytes.extend(client_frame(true, OP_CLOSE, &1000u16.to_be_bytes(), key));
        assert!(client.write_all(&bytes).await.is_ok());
        let mut got = Vec::new();
        assert!(stream.read_to_end(&mut got).await.is_ok());
        assert_eq!(got, b"hello");
        assert!(stream.write_all(b"back").await.is_ok());
        assert!(stream.shutdown().await.is_ok());
        let mut r = Reader::new(client);
        let mut seen = Vec::new();
        while let Ok(Some(m)) = r.next().await {
            seen.push(m);
        }
        assert!(seen.contains(&Message::Pong), "{seen:?}");
        assert!(
            seen.contains(&Message::Binary(b"back".to_vec())),
            "{seen:?}"
        );
        assert_eq!(seen.last(), Some(&Message::Close(Some(1000))));
    }

    proptest! {
        #[test]
        fn masked_client_frames_round_trip(
            payload in proptest::collection::vec(any::<u8>(), 0..70_000),
            key in any::<[u8; 4]>(),
            binary in any::<bool>(),
        ) {
            let opcode = if binary { OP_BINARY } else { OP_TEXT };
            let bytes = client_frame(true, opcode, &payload, key);
            let rt = tokio::runtime::Builder::new_current_thread().build();
            prop_assert!(rt.is_ok());
            if let Ok(rt) = rt {
                let got = rt.block_on(async { Reader::new(bytes.as_slice()).next().await.ok() });
                let want = if binary { Message::Binary(payload) } else { Message::Text(payload) };
                prop_assert_eq!(got, Some(Some(want)));
            }
        }

        #[test]
        fn junk_bytes_never_panic_the_reader(
            junk in proptest::collection::vec(any::<u8>(), 0..512),
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().build();
            prop_assert!(rt.is_ok());
            if let Ok(rt) = rt {
                rt.block_on(async {
                    let mut r = Reader::new(junk.as_slice());
                    for _ in 0..64 {
                        match r.next().await {
                            Ok(Some(_)) => continue,
                            Ok(None) | Err(_) => break,
                        }
                    }
                });
            }
        }
    }
}
