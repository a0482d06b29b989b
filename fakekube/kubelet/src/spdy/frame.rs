//! SPDY/3.1 framing, without I/O: [`parse`] reads one frame from the start of a buffer (or
//! says more bytes are needed), [`encode`] appends one to a buffer. Header blocks stay
//! compressed here; [`super::headers`] compresses and decompresses them, since that needs the
//! connection's running zlib contexts.
//!
//! Every frame has an 8-byte head. A control frame (high bit set) carries the version (3), its
//! type, flags and a 24-bit length; a data frame carries the stream id, flags and the length.

use bytes::Bytes;

/// The protocol version in every control frame.
pub const VERSION: u16 = 3;
/// The size of a frame head.
pub const HEAD: usize = 8;
/// The largest payload a frame can carry (its length field has 24 bits).
pub const MAX_LENGTH: usize = 0x00ff_ffff;

/// `FLAG_FIN`: the sender's half of the stream ends with this frame (data and control frames).
pub const FLAG_FIN: u8 = 0x01;
/// `FLAG_UNIDIRECTIONAL` (SYN_STREAM): the receiver must not send on the stream.
pub const FLAG_UNIDIRECTIONAL: u8 = 0x02;
/// `FLAG_SETTINGS_CLEAR_SETTINGS` (SETTINGS): forget persisted settings.
pub const FLAG_CLEAR_SETTINGS: u8 = 0x01;

/// Control frame types.
mod kind {
    pub(super) const SYN_STREAM: u16 = 1;
    pub(super) const SYN_REPLY: u16 = 2;
    pub(super) const RST_STREAM: u16 = 3;
    pub(super) const SETTINGS: u16 = 4;
    pub(super) const PING: u16 = 6;
    pub(super) const GOAWAY: u16 = 7;
    pub(super) const HEADERS: u16 = 8;
    pub(super) const WINDOW_UPDATE: u16 = 9;
}

/// A RST_STREAM status code (the draft's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RstStatus(pub u32);

impl RstStatus {
    /// A generic error.
    pub const PROTOCOL_ERROR: RstStatus = RstStatus(1);
    /// A frame for a stream that is not active.
    pub const INVALID_STREAM: RstStatus = RstStatus(2);
    /// The stream was refused before any processing.
    pub const REFUSED_STREAM: RstStatus = RstStatus(3);
}

/// A GOAWAY status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoAwayStatus(pub u32);

impl GoAwayStatus {
    /// A normal end of the session.
    pub const OK: GoAwayStatus = GoAwayStatus(0);
    /// The peer broke the protocol.
    pub const PROTOCOL_ERROR: GoAwayStatus = GoAwayStatus(1);
}

/// SETTINGS ids this server reads.
pub mod setting {
    /// `SETTINGS_INITIAL_WINDOW_SIZE`: the initial window of new streams.
    pub const INITIAL_WINDOW_SIZE: u32 = 7;
}

/// One SETTINGS entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// Its flags (`FLAG_SETTINGS_PERSIST_VALUE`, `FLAG_SETTINGS_PERSISTED`).
    pub flags: u8,
    /// Its id (24 bits).
    pub id: u32,
    /// Its value.
    pub value: u32,
}

/// One frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// DATA.
    Data {
        /// The stream.
        stream: u32,
        /// The sender's half ends here.
        fin: bool,
        /// The payload.
        data: Bytes,
    },
    /// SYN_STREAM: the sender opens a stream.
    SynStream {
        /// The new stream's id (odd from a client).
        stream: u32,
        /// The stream it belongs to (server push), or 0.
        associated: u32,
        /// 0 (highest) to 7.
        priority: u8,
        /// The CREDENTIAL slot (0: none).
        slot: u8,
        /// The sender sends nothing more on it.
        fin: bool,
        /// The receiver must send nothing on it.
        unidirectional: bool,
        /// The compressed name/value block.
        headers: Bytes,
    },
    /// SYN_REPLY: the receiver of a SYN_STREAM accepts it.
    SynReply {
        /// The stream.
        stream: u32,
        /// The sender sends nothing more on it.
        fin: bool,
        /// The compressed name/value block.
        headers: Bytes,
    },
    /// RST_STREAM: the stream ends abnormally, both ways.
    RstStream {
        /// The stream.
        stream: u32,
        /// Why.
        status: RstStatus,
    },
    /// SETTINGS.
    Settings {
        /// `FLAG_SETTINGS_CLEAR_SETTINGS`.
        clear: bool,
        /// The entries.
        entries: Vec<Setting>,
    },
    /// PING, to be echoed when the peer sent it.
    Ping {
        /// Odd from a client, even from a server.
        id: u32,
    },
    /// GOAWAY: the sender opens no more streams and accepts none after `last_good`.
    GoAway {
        /// The last stream id the sender accepted.
        last_good: u32,
        /// Why.
        status: GoAwayStatus,
    },
    /// HEADERS: more headers for a stream.
    Headers {
        /// The stream.
        stream: u32,
        /// The sender's half ends here.
        fin: bool,
        /// The compressed name/value block.
        headers: Bytes,
    },
    /// WINDOW_UPDATE: the sender can take `delta` more data bytes (on stream 0: for the whole
    /// session, as SPDY/3.1 adds).
    WindowUpdate {
        /// The stream, or 0 for the session.
        stream: u32,
        /// Bytes added to the window (1 to 2^31 - 1).
        delta: u32,
    },
    /// A control frame of a type not listed above (NOOP, CREDENTIAL, later ones): the draft
    /// says to ignore it.
    Unknown {
        /// Its type.
        kind: u16,
        /// Its flags.
        flags: u8,
        /// Its payload.
        payload: Bytes,
    },
}

/// Why bytes are not a valid frame (each is fatal to the session: framing is lost).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A control frame of another SPDY version.
    #[error("unsupported SPDY version {0}")]
    UnsupportedVersion(u16),
    /// A control frame whose length does not fit its type.
    #[error("control frame of type {kind} with a bad length of {len} bytes")]
    BadLength {
        /// The frame type.
        kind: u16,
        /// The length it claimed.
        len: usize,
    },
    /// A payload longer than [`MAX_LENGTH`] (when encoding).
    #[error("a frame payload of {0} bytes is longer than SPDY allows")]
    TooLarge(usize),
}

/// The low 31 bits (stream ids and window deltas leave the top bit reserved).
fn u31(bytes: [u8; 4]) -> u32 {
    u32::from_be_bytes(bytes) & 0x7fff_ffff
}

/// Four bytes at `at` (the caller checked the length).
fn four(buf: &[u8], at: usize) -> [u8; 4] {
    let mut out = [0u8; 4];
    if let Some(src) = buf.get(at..at + 4) {
        out.copy_from_slice(src);
    }
    out
}

/// Parses the frame at the start of `buf`: `Ok(None)` when more bytes are needed, otherwise the
/// frame and how many bytes it took.
pub fn parse(buf: &[u8]) -> Result<Option<(Frame, usize)>, FrameError> {
    let Some(head) = buf.get(..HEAD) else {
        return Ok(None);
    };
    let flags = head[4];
    let len = usize::from(head[5]) << 16 | usize::from(head[6]) << 8 | usize::from(head[7]);
    let Some(payload) = buf.get(HEAD..HEAD + len) else {
        return Ok(None);
    };
    let size = HEAD + len;
    let fin = flags & FLAG_FIN != 0;
    if head[0] & 0x80 == 0 {
        let frame = Frame::Data {
            stream: u31(four(head, 0)),
            fin,
            data: Bytes::copy_from_slice(payload),
        };
        return Ok(Some((frame, size)));
    }
    let version = u16::from_be_bytes([head[0], head[1]]) & 0x7fff;
    if version != VERSION {
        return Err(FrameError::UnsupportedVersion(version));
    }
    let kind = u16::from_be_bytes([head[2], head[3]]);
    let bad = || FrameError::BadLength { kind, len };
    let exactly = |n: usize| if len == n { Ok(()) } else { Err(bad()) };
    let frame = match kind {
        kind::SYN_STREAM => {
            if len < 10 {
                return Err(bad());
            }
            Frame::SynStream {
                stream: u31(four(payload, 0)),
                associated: u31(four(payload, 4)),
                priority: payload[8] >> 5,
                slot: payload[9],
                fin,
                unidirectional: flags & FLAG_UNIDIRECTIONAL != 0,
                headers: Bytes::copy_from_slice(&payload[10..]),
            }
        }
        kind::SYN_REPLY | kind::HEADERS => {
            if len < 4 {
                return Err(bad());
            }
            let stream = u31(four(payload, 0));
            let headers = Bytes::copy_from_slice(&payload[4..]);
            if kind == kind::SYN_REPLY {
                Frame::SynReply {
                    stream,
                    fin,
                    headers,
                }
            } else {
                Frame::Headers {
                    stream,
                    fin,
                    headers,
                }
            }
        }
        kind::RST_STREAM => {
            exactly(8)?;
            Frame::RstStream {
                stream: u31(four(payload, 0)),
                status: RstStatus(u32::from_be_bytes(four(payload, 4))),
            }
        }
        kind::SETTINGS => {
            if len < 4 {
                return Err(bad());
            }
            let count = u32::from_be_bytes(four(payload, 0)) as usize;
            if count.checked_mul(8).and_then(|n| n.checked_add(4)) != Some(len) {
                return Err(bad());
            }
            let entries = payload[4..]
                .chunks_exact(8)
                .map(|e| Setting {
                    flags: e[0],
                    id: u32::from_be_bytes([0, e[1], e[2], e[3]]),
                    value: u32::from_be_bytes([e[4], e[5], e[6], e[7]]),
                })
                .collect();
            Frame::Settings {
                clear: flags & FLAG_CLEAR_SETTINGS != 0,
                entries,
            }
        }
        kind::PING => {
            exactly(4)?;
            Frame::Ping {
                id: u32::from_be_bytes(four(payload, 0)),
            }
        }
        kind::GOAWAY => {
            exactly(8)?;
            Frame::GoAway {
                last_good: u31(four(payload, 0)),
                status: GoAwayStatus(u32::from_be_bytes(four(payload, 4))),
            }
        }
        kind::WINDOW_UPDATE => {
            exactly(8)?;
            Frame::WindowUpdate {
                stream: u31(four(payload, 0)),
                delta: u31(four(payload, 4)),
            }
        }
        other => Frame::Unknown {
            kind: other,
            flags,
            payload: Bytes::copy_from_slice(payload),
        },
    };
    Ok(Some((frame, size)))
}

/// Appends a control frame head.
fn control_head(out: &mut Vec<u8>, kind: u16, flags: u8, len: usize) -> Result<(), FrameError> {
    if len > MAX_LENGTH {
        return Err(FrameError::TooLarge(len));
    }
    out.extend_from_slice(&(0x8000 | VERSION).to_be_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    out.push(flags);
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    Ok(())
}

/// The flag byte for `fin`.
fn fin_flag(fin: bool) -> u8 {
    if fin { FLAG_FIN } else { 0 }
}

/// Appends `frame` to `out` (reserved bits zero, ids and deltas cut to 31 bits).
pub fn encode(frame: &Frame, out: &mut Vec<u8>) -> Result<(), FrameError> {
    let id = |n: u32| (n & 0x7fff_ffff).to_be_bytes();
    match frame {
        Frame::Data { stream, fin, data } => {
            if data.len() > MAX_LENGTH {
                return Err(FrameError::TooLarge(data.len()));
            }
            out.extend_from_slice(&id(*stream));
            out.push(fin_flag(*fin));
            out.extend_from_slice(&(data.len() as u32).to_be_bytes()[1..]);
            out.extend_from_slice(data);
        }
        Frame::SynStream {
            stream,
            associated,
            priority,
            slot,
            fin,
            unidirectional,
            headers,
        } => {
            let flags = fin_flag(*fin)
                | if *unidirectional {
                    FLAG_UNIDIRECTIONAL
                } else {
                    0
                };
            control_head(out, kind::SYN_STREAM, flags, 10 + headers.len())?;
            out.extend_from_slice(&id(*stream));
            out.extend_from_slice(&id(*associated));
            out.push((priority & 0x07) << 5);
            out.push(*slot);
            out.extend_from_slice(headers);
        }
        Frame::SynReply {
            stream,
            fin,
            headers,
        } => {
            control_head(out, kind::SYN_REPLY, fin_flag(*fin), 4 + headers.len())?;
            out.extend_from_slice(&id(*stream));
            out.extend_from_slice(headers);
        }
        Frame::Headers {
            stream,
            fin,
            headers,
        } => {
            control_head(out, kind::HEADERS, fin_flag(*fin), 4 + headers.len())?;
            out.extend_from_slice(&id(*stream));
            out.extend_from_slice(headers);
        }
        Frame::RstStream { stream, status } => {
            control_head(out, kind::RST_STREAM, 0, 8)?;
            out.extend_from_slice(&id(*stream));
            out.extend_from_slice(&status.0.to_be_bytes());
        }
        Frame::Settings { clear, entries } => {
            let flags = if *clear { FLAG_CLEAR_SETTINGS } else { 0 };
            control_head(out, kind::SETTINGS, flags, 4 + 8 * entries.len())?;
            out.extend_from_slice(&(entries.len() as u32).to_be_bytes());
            for e in entries {
                out.push(e.flags);
                out.extend_from_slice(&(e.id & 0x00ff_ffff).to_be_bytes()[1..]);
                out.extend_from_slice(&e.value.to_be_bytes());
            }
        }
        Frame::Ping { id: ping } => {
            control_head(out, kind::PING, 0, 4)?;
            out.extend_from_slice(&ping.to_be_bytes());
        }
        Frame::GoAway { last_good, status } => {
            control_head(out, kind::GOAWAY, 0, 8)?;
            out.extend_from_slice(&id(*last_good));
            out.extend_from_slice(&status.0.to_be_bytes());
        }
        Frame::WindowUpdate { stream, delta } => {
            control_head(out, kind::WINDOW_UPDATE, 0, 8)?;
            out.extend_from_slice(&id(*stream));
            out.extend_from_slice(&id(*delta));
        }
        Frame::Unknown {
            kind,
            flags,
            payload,
        } => {
            control_head(out, *kind, *flags, payload.len())?;
            out.extend_from_slice(payload);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes(max: usize) -> impl Strategy<Value = Bytes> {
        proptest::collection::vec(any::<u8>(), 0..max).prop_map(Bytes::from)
    }

    /// Any frame this codec can produce (ids within 31 bits, setting ids within 24).
    fn frame() -> impl Strategy<Value = Frame> {
        let id = 0u32..0x8000_0000;
        prop_oneof![
            (id.clone(), any::<bool>(), bytes(3000)).prop_map(|(stream, fin, data)| Frame::Data {
                stream,
                fin,
                data
            }),
            (
                id.clone(),
                id.clone(),
                0u8..8,
                any::<u8>(),
                any::<bool>(),
                any::<bool>(),
                bytes(300)
            )
                .prop_map(
                    |(stream, associated, priority, slot, fin, unidirectional, headers)| {
                        Frame::SynStream {
                            stream,
                            associated,
                            priority,
                            slot,
                            fin,
                            unidirectional,
                            headers,
                        }
                    }
                ),
            (id.clone(), any::<bool>(), bytes(300)).prop_map(|(stream, fin, headers)| {
                Frame::SynReply {
                    stream,
                    fin,
                    headers,
                }
            }),
            (id.clone(), any::<bool>(), bytes(300)).prop_map(|(stream, fin, headers)| {
                Frame::Headers {
                    stream,
                    fin,
                    headers,
                }
            }),
            (id.clone(), any::<u32>()).prop_map(|(stream, s)| Frame::RstStream {
                stream,
                status: RstStatus(s)
            }),
            (
                any::<bool>(),
                proptest::collection::vec(
                    (any::<u8>(), 0u32..0x0100_0000, any::<u32>())
                        .prop_map(|(flags, id, value)| Setting { flags, id, value }),
                    0..6
                )
            )
                .prop_map(|(clear, entries)| Frame::Settings { clear, entries }),
            any::<u32>().prop_map(|id| Frame::Ping { id }),
            (id.clone(), any::<u32>()).prop_map(|(last_good, s)| Frame::GoAway {
                last_good,
                status: GoAwayStatus(s)
            }),
            (id.clone(), id).prop_map(|(stream, delta)| Frame::WindowUpdate { stream, delta }),
            (10u16..0x8000, any::<u8>(), bytes(100)).prop_map(|(kind, flags, payload)| {
                Frame::Unknown {
                    kind,
                    flags,
                    payload,
                }
            }),
        ]
    }

    /// Parses every frame of `buf`, fed in pieces cut at `cuts`, as a reader would see them.
    fn parse_split(buf: &[u8], cuts: &[usize]) -> Result<Vec<Frame>, FrameError> {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (buf.len() + 1)).collect();
        points.push(buf.len());
        points.sort_unstable();
        let mut pending = Vec::new();
        let mut frames = Vec::new();
        let mut from = 0;
        for to in points {
            pending.extend_from_slice(&buf[from..to]);
            from = to;
            while let Some((frame, used)) = parse(&pending)? {
                frames.push(frame);
                pending.drain(..used);
            }
        }
        assert!(pending.is_empty(), "{} bytes left over", pending.len());
        Ok(frames)
    }

    #[test]
    fn a_syn_stream_head_is_laid_out_as_the_draft_says() {
        let mut out = Vec::new();
        let frame = Frame::SynStream {
            stream: 1,
            associated: 0,
            priority: 2,
            slot: 0,
            fin: true,
            unidirectional: false,
            headers: Bytes::from_static(b"hb"),
        };
        assert_eq!(encode(&frame, &mut out), Ok(()));
        assert_eq!(
            out,
            [
                0x80, 0x03, 0x00, 0x01, 0x01, 0x00, 0x00, 0x0c, 0, 0, 0, 1, 0, 0, 0, 0, 0x40, 0,
                b'h', b'b'
            ]
        );
        let mut data = Vec::new();
        let frame = Frame::Data {
            stream: 3,
            fin: false,
            data: Bytes::from_static(b"xyz"),
        };
        assert_eq!(encode(&frame, &mut data), Ok(()));
        assert_eq!(data, [0, 0, 0, 3, 0, 0, 0, 3, b'x', b'y', b'z']);
    }

    #[test]
    fn incomplete_frames_ask_for_more_bytes() {
        assert_eq!(parse(&[]), Ok(None));
        assert_eq!(parse(&[0x80, 3, 0, 6, 0, 0]), Ok(None));
        assert_eq!(parse(&[0x80, 3, 0, 6, 0, 0, 0, 4, 1, 2]), Ok(None));
    }

    #[test]
    fn another_version_and_bad_lengths_are_refused() {
        assert_eq!(
            parse(&[0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1]),
            Err(FrameError::UnsupportedVersion(2))
        );
        assert_eq!(
            parse(&[0x80, 3, 0, 6, 0, 0, 0, 3, 0, 0, 1]),
            Err(FrameError::BadLength { kind: 6, len: 3 })
        );
        assert_eq!(
            parse(&[0x80, 3, 0, 4, 0, 0, 0, 4, 0, 0, 0, 9]),
            Err(FrameError::BadLength { kind: 4, len: 4 })
        );
        assert_eq!(
            parse(&[0x80, 3, 0, 1, 0, 0, 0, 2, 0, 1]),
            Err(FrameError::BadLength { kind: 1, len: 2 })
        );
    }

    #[test]
    fn a_payload_too_long_for_24_bits_is_not_encoded() {
        let frame = Frame::Data {
            stream: 1,
            fin: false,
            data: Bytes::from(vec![0u8; MAX_LENGTH + 1]),
        };
        let mut out = Vec::new();
        assert_eq!(
            encode(&frame, &mut out),
            Err(FrameError::TooLarge(MAX_LENGTH + 1))
        );
    }

    proptest! {
        #[test]
        fn frames_round_trip(frame in frame()) {
            let mut out = Vec::new();
            prop_assert_eq!(encode(&frame, &mut out), Ok(()));
            prop_assert_eq!(parse(&out), Ok(Some((frame, out.len()))));
        }

        #[test]
        fn any_split_of_the_byte_stream_gives_the_same_frames(
            frames in proptest::collection::vec(frame(), 1..8),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let mut buf = Vec::new();
            for f in &frames {
                prop_assert_eq!(encode(f, &mut buf), Ok(()));
            }
            prop_assert_eq!(parse_split(&buf, &cuts), Ok(frames));
        }

        #[test]
        fn junk_never_panics_the_parser(junk in proptest::collection::vec(any::<u8>(), 0..600)) {
            let mut rest = junk.as_slice();
            while let Ok(Some((_, used))) = parse(rest) {
                rest = &rest[used..];
            }
        }
    }
}
