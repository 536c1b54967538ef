//! Server-Sent Events framing (`text/event-stream`), both ways, over bytes
//! only: the transports move them.
//!
//! The encoder writes what Tern's HTTP server sends: one JSON-RPC message
//! per event as `data:` (HTTP-A3), with an `id:` on the resumable streams of
//! a 2025-11-25 session, the priming event that opens such a stream, and the
//! keep-alive comment of a quiet stream. The decoder reads what a client
//! receives: events without a name or named `message`, with the last event
//! id and `retry` delay kept for resuming (2025-11-25 resumability; a
//! modern server sends neither, HTTP-20).

use std::time::Duration;

use bytes::{Bytes, BytesMut};

/// An event carrying `data`, with `id` when the stream is resumable.
///
/// Each line of `data` (split at CR, LF or CRLF) becomes a `data:` line, so
/// the decoder gives back the lines joined by LF; compact JSON is one line.
/// `id` must hold no CR, LF or NUL: a decoder would not read it back.
pub fn event(id: Option<&str>, data: &[u8]) -> Bytes {
    let id_len = id.map_or(0, |i| i.len() + 5);
    let mut b = BytesMut::with_capacity(data.len() + id_len + 8);
    if let Some(id) = id {
        debug_assert!(
            !id.contains(['\r', '\n', '\0']),
            "an SSE id cannot hold {id:?}"
        );
        b.extend_from_slice(b"id: ");
        b.extend_from_slice(id.as_bytes());
        b.extend_from_slice(b"\n");
    }
    let mut rest = data;
    loop {
        b.extend_from_slice(b"data: ");
        let Some(end) = rest.iter().position(|c| *c == b'\n' || *c == b'\r') else {
            b.extend_from_slice(rest);
            break;
        };
        b.extend_from_slice(&rest[..end]);
        b.extend_from_slice(b"\n");
        let crlf = rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n');
        rest = &rest[end + if crlf { 2 } else { 1 }..];
    }
    b.extend_from_slice(b"\n\n");
    b.freeze()
}

/// The event that opens a resumable stream: an id and empty data, so even a
/// stream cut before its first message can be resumed. Decoders skip it but
/// keep its id.
pub fn priming(id: &str) -> Bytes {
    event(Some(id), b"")
}

/// The comment a quiet stream sends so that proxies keep it open; decoders
/// skip it.
pub fn keep_alive() -> Bytes {
    Bytes::from_static(b": keep-alive\n\n")
}

/// Why a stream could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A line that is not UTF-8.
    #[error("an SSE line that is not UTF-8")]
    NotUtf8,
    /// An event, or a line still being read, larger than the decoder's
    /// limit.
    #[error("an SSE event over {max} bytes")]
    TooLarge {
        /// The limit.
        max: usize,
    },
}

/// One event of JSON-RPC data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The data, its lines joined by LF.
    pub data: String,
    /// The stream's last event id when the event ended: its own `id:`, or
    /// an earlier event's (SSE keeps the last one).
    pub id: Option<String>,
}

/// A `text/event-stream` decoder, fed bytes as they arrive (HTTP-A3):
/// events without a name or named `message` carry JSON-RPC in `data`;
/// comments, other events and events with empty data are skipped. `id:`
/// and `retry:` are remembered for resuming. Empty `data:` lines before an
/// event's first non-empty one are dropped (SSE would keep them as leading
/// line feeds): JSON-RPC data never starts with one.
#[derive(Debug)]
pub struct Decoder {
    /// Bytes of lines not yet ended.
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no line end, so a line that
    /// arrives in pieces is scanned once, not once per piece.
    scanned: usize,
    data: String,
    event: String,
    max: usize,
    /// SSE's last-event-id buffer.
    last_id: Option<String>,
    retry: Option<Duration>,
}

impl Decoder {
    /// A decoder refusing events (and lines) over `max` bytes.
    pub fn new(max: usize) -> Self {
        Decoder {
            buf: Vec::new(),
            scanned: 0,
            data: String::new(),
            event: String::new(),
            max,
            last_id: None,
            retry: None,
        }
    }

    /// The last event id the server gave, to resume from.
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The reconnection delay the server asked for.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// A new stream of the same source: partial lines and events are
    /// dropped, the last id and retry delay kept.
    pub fn restart(&mut self) {
        self.buf.clear();
        self.scanned = 0;
        self.data.clear();
        self.event.clear();
    }

    /// Feeds bytes; returns every event completed by them.
    ///
    /// Linear in what arrives: lines are read in place and the consumed
    /// ones dropped once per call, and a line still open is not scanned
    /// again, so a server cannot buy quadratic work with many short lines
    /// in one chunk or one long line in many.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Event>, SseError> {
        let mut buf = std::mem::take(&mut self.buf);
        buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        // The current line starts at `start`; it has no line end before
        // `from`.
        let mut start = 0;
        let mut from = self.scanned;
        let read = loop {
            let Some(end) = buf[from..].iter().position(|b| *b == b'\n' || *b == b'\r') else {
                from = buf.len();
                break Ok(());
            };
            let pos = from + end;
            // A CR at the very end may be the first half of CRLF: wait.
            if buf[pos] == b'\r' && pos + 1 == buf.len() {
                from = pos;
                break Ok(());
            }
            let crlf = buf[pos] == b'\r' && buf.get(pos + 1) == Some(&b'\n');
            let line = std::str::from_utf8(&buf[start..pos]);
            start = pos + if crlf { 2 } else { 1 };
            from = start;
            match line {
                Ok(line) => self.line(line, &mut out),
                Err(_) => break Err(SseError::NotUtf8),
            }
        };
        buf.drain(..start);
        self.scanned = from - start;
        self.buf = buf;
        read?;
        if self.buf.len() + self.data.len() > self.max {
            return Err(SseError::TooLarge { max: self.max });
        }
        Ok(out)
    }

    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        if line.is_empty() {
            let data = std::mem::take(&mut self.data);
            let event = std::mem::take(&mut self.event);
            if !data.is_empty() && (event.is_empty() || event == "message") {
                out.push(Event {
                    data,
                    id: self.last_id.clone(),
                });
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(value);
            }
            "event" => self.event = value.to_owned(),
            // SSE: an id with NUL is ignored; an empty one resets.
            "id" if !value.contains('\0') => {
                self.last_id = (!value.is_empty()).then(|| value.to_owned());
            }
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn data(events: Vec<Event>) -> Vec<String> {
        events.into_iter().map(|e| e.data).collect()
    }

    #[test]
    fn sse_events_are_split_and_noise_ignored() {
        let mut d = Decoder::new(1 << 20);
        let mut out = data(
            d.feed(
                b": keep-alive\n\nid: 7\nretry: 100\ndata: {\"a\":1}\n\nevent: other\ndata: x\n\n",
            )
            .unwrap(),
        );
        out.extend(data(
            d.feed(b"data: \n\nevent: message\r\ndata: {\"b\"").unwrap(),
        ));
        out.extend(data(d.feed(b":2}\r").unwrap()));
        out.extend(data(d.feed(b"\n\r\n").unwrap()));
        assert_eq!(out, ["{\"a\":1}", "{\"b\":2}"]);
        assert_eq!(d.last_id(), Some("7"));
        assert_eq!(d.retry(), Some(Duration::from_millis(100)));
    }

    #[test]
    fn a_restart_drops_the_line_being_read() {
        let mut d = Decoder::new(1 << 20);
        assert_eq!(d.feed(b"data: half a li").unwrap(), []);
        d.restart();
        assert_eq!(data(d.feed(b"data: x\n\n").unwrap()), ["x"]);
        // A CR held back at the end of a chunk is dropped with its line.
        assert_eq!(d.feed(b"data: y\r").unwrap(), []);
        d.restart();
        assert_eq!(data(d.feed(b"data: z\r\n\r\n").unwrap()), ["z"]);
    }

    #[test]
    fn oversized_events_are_refused() {
        let mut d = Decoder::new(8);
        assert_eq!(
            d.feed(b"data: 0123456789").unwrap_err(),
            SseError::TooLarge { max: 8 }
        );
        let mut d = Decoder::new(8);
        assert_eq!(d.feed(b"data: \xff\n").unwrap_err(), SseError::NotUtf8);
    }

    #[test]
    fn the_encoder_writes_the_wire_forms() {
        assert_eq!(event(None, b"{\"a\":1}"), &b"data: {\"a\":1}\n\n"[..]);
        assert_eq!(event(Some("3-1"), b"x"), &b"id: 3-1\ndata: x\n\n"[..]);
        assert_eq!(priming("0-0"), &b"id: 0-0\ndata: \n\n"[..]);
        assert_eq!(keep_alive(), &b": keep-alive\n\n"[..]);
        assert_eq!(
            event(None, b"a\r\nb\rc\n"),
            &b"data: a\ndata: b\ndata: c\ndata: \n\n"[..]
        );
    }

    /// Encodes `events` (with a priming event and keep-alives between them)
    /// as one stream; returns it and the events a decoder must give back.
    fn stream(events: &[(Option<&str>, &str)]) -> (Vec<u8>, Vec<Event>) {
        let mut wire = priming("0-0").to_vec();
        let mut last = Some("0-0".to_owned());
        let mut want = Vec::new();
        for (id, text) in events {
            wire.extend_from_slice(&event(*id, text.as_bytes()));
            wire.extend_from_slice(&keep_alive());
            if let Some(id) = id {
                last = Some((*id).to_owned());
            }
            let text = text.replace("\r\n", "\n").replace('\r', "\n");
            let text = text.trim_start_matches('\n');
            if !text.is_empty() {
                want.push(Event {
                    data: text.to_owned(),
                    id: last.clone(),
                });
            }
        }
        (wire, want)
    }

    fn decode_in(chunks: &[&[u8]]) -> (Vec<Event>, Option<String>) {
        let mut d = Decoder::new(1 << 20);
        let mut got = Vec::new();
        for c in chunks {
            got.extend(d.feed(c).unwrap());
        }
        (got, d.last_id().map(str::to_owned))
    }

    #[test]
    fn what_is_encoded_decodes_the_same_at_any_chunk_boundary() {
        let (wire, want) = stream(&[
            (Some("0-1"), "{\"jsonrpc\":\"2.0\",\"method\":\"x\"}"),
            (
                Some("0-2"),
                "first line\nsecond line\n\n fourth, after an empty one",
            ),
            (None, "no id of its own: the last one stays"),
            (Some("0-3"), ""),
            (Some("0-4"), "\ncr\rcrlf\r\nend\n"),
            (Some("12-345"), "é ü 💡"),
        ]);
        assert_eq!(want.len(), 5);
        let last = Some("12-345".to_owned());
        assert_eq!(decode_in(&[&wire]), (want.clone(), last.clone()));
        for at in 0..=wire.len() {
            let (a, b) = wire.split_at(at);
            assert_eq!(
                decode_in(&[a, b]),
                (want.clone(), last.clone()),
                "split at {at}"
            );
        }
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        assert_eq!(decode_in(&bytes), (want, last));
    }

    proptest! {
        #[test]
        fn any_events_round_trip(
            events in proptest::collection::vec(
                (proptest::option::of("[0-9a-z-]{1,6}"), any::<String>()),
                0..6,
            ),
            cut in any::<prop::sample::Index>(),
        ) {
            let events: Vec<(Option<&str>, &str)> =
                events.iter().map(|(i, d)| (i.as_deref(), d.as_str())).collect();
            let (wire, want) = stream(&events);
            let at = cut.index(wire.len() + 1);
            let (a, b) = wire.split_at(at);
            let (got, _) = decode_in(&[a, b]);
            prop_assert_eq!(got, want);
        }
    }
}
