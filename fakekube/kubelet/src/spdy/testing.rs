//! A SPDY client for tests: opens streams, sends data and control frames, and reads what the
//! server sends, header blocks decompressed.

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::frame::{self, Frame};
use super::headers::{Compressor, Decompressor, Headers};

/// A frame from the server, its header block (if any) decompressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    /// SYN_REPLY.
    Reply(u32),
    /// DATA.
    Data {
        /// The stream.
        stream: u32,
        /// FIN.
        fin: bool,
        /// The payload.
        data: Bytes,
    },
    /// Any other frame.
    Other(Frame),
}

/// The client end of a SPDY connection.
pub(crate) struct Client<S> {
    io: S,
    compressor: Compressor,
    decompressor: Decompressor,
    buf: Vec<u8>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Client<S> {
    pub(crate) fn new(io: S) -> Self {
        Client {
            io,
            compressor: Compressor::new().expect("zlib starts"),
            decompressor: Decompressor::new(),
            buf: Vec::new(),
        }
    }

    /// Sends one frame.
    pub(crate) async fn send(&mut self, f: &Frame) {
        let mut out = Vec::new();
        frame::encode(f, &mut out).expect("the frame encodes");
        self.io.write_all(&out).await.expect("written");
    }

    /// Opens `stream` with `headers`.
    pub(crate) async fn open(&mut self, stream: u32, headers: &[(&str, &str)], fin: bool) {
        let mut h = Headers::new();
        for (n, v) in headers {
            h = h.with(n, v);
        }
        let block = self.compressor.compress(&h).expect("compressed");
        self.send(&Frame::SynStream {
            stream,
            associated: 0,
            priority: 0,
            slot: 0,
            fin,
            unidirectional: false,
            headers: block.into(),
        })
        .await;
    }

    /// Sends data on `stream`.
    pub(crate) async fn data(&mut self, stream: u32, data: &[u8], fin: bool) {
        self.send(&Frame::Data {
            stream,
            fin,
            data: Bytes::copy_from_slice(data),
        })
        .await;
    }

    /// The next frame from the server; `None` at the end of the connection.
    pub(crate) async fn next(&mut self) -> Option<Seen> {
        loop {
            if let Some((f, used)) = frame::parse(&self.buf).expect("the server frames well") {
                self.buf.drain(..used);
                return Some(match f {
                    Frame::SynReply {
                        stream, headers, ..
                    } => {
                        self.decompressor
                            .decompress(&headers)
                            .expect("the reply's headers decompress");
                        Seen::Reply(stream)
                    }
                    Frame::Data { stream, fin, data } => Seen::Data { stream, fin, data },
                    other => Seen::Other(other),
                });
            }
            let mut chunk = [0u8; 8192];
            match self.io.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// Shuts the client's write side down.
    pub(crate) async fn shutdown(&mut self) {
        let _ = self.io.shutdown().await;
    }
}
