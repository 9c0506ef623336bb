//! Reading a response: the pure parsing, and a bounded buffer that any read
//! function fills.

use std::borrow::Cow;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// A status line that is not `HTTP/1.x SSS reason`; shown as
/// `bad status line "..."` with at most 60 characters of the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadStatusLine(pub String);

impl fmt::Display for BadStatusLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad status line {:?}", self.0)
    }
}

impl std::error::Error for BadStatusLine {}

/// Parses `HTTP/1.x SSS reason` and returns the status code.
pub fn parse_status_line(line: &[u8]) -> Result<u16, BadStatusLine> {
    let bad = || {
        let shown: String = String::from_utf8_lossy(line).chars().take(60).collect();
        BadStatusLine(shown.trim_end().to_string())
    };
    let rest = line.strip_prefix(b"HTTP/1.").ok_or_else(bad)?;
    // One version digit, a space, three status digits, then a space or end.
    match rest {
        [v, b' ', a, b, c, tail @ ..]
            if v.is_ascii_digit()
                && [a, b, c].iter().all(|d| d.is_ascii_digit())
                && matches!(tail.first(), None | Some(b' ' | b'\r')) =>
        {
            Ok(u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0'))
        }
        _ => Err(bad()),
    }
}

/// Offset just past the blank line that ends the headers.
pub fn header_end(buf: &[u8]) -> Option<usize> {
    let crlf = find(buf, b"\r\n\r\n").map(|i| i + 4);
    let lf = find(buf, b"\n\n").map(|i| i + 2);
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The values (trimmed) of the header `name` (any case) in `head`, the
/// status line and headers of a response, in order.
pub fn header<'a>(head: &'a [u8], name: &'a str) -> impl Iterator<Item = String> + 'a {
    head.split(|&b| b == b'\n').skip(1).filter_map(move |line| {
        let line = String::from_utf8_lossy(line);
        let (n, value) = line.split_once(':')?;
        n.trim()
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().to_string())
    })
}

/// How the body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Chunked,
    Length(usize),
    /// Until the connection closes (no `Content-Length`, not chunked).
    Close,
}

impl Framing {
    /// The framing the headers in `head` declare.
    pub fn from_headers(head: &[u8]) -> Self {
        // Chunked wins over Content-Length (RFC 9112 §6.3).
        if header(head, "transfer-encoding").any(|v| v.to_ascii_lowercase().contains("chunked")) {
            return Framing::Chunked;
        }
        header(head, "content-length")
            .filter_map(|v| v.parse::<usize>().ok())
            .last()
            .map_or(Framing::Close, Framing::Length)
    }

    /// The body decoded so far from `raw`, and whether it is complete.
    pub fn body(self, raw: &[u8]) -> (Cow<'_, [u8]>, bool) {
        match self {
            Framing::Close => (raw.into(), false),
            Framing::Length(n) => {
                let end = n.min(raw.len());
                (raw.get(..end).unwrap_or_default().into(), raw.len() >= n)
            }
            Framing::Chunked => {
                let (body, complete) = dechunk(raw);
                (body.into(), complete)
            }
        }
    }

    /// Whether the body in `raw` is complete (without waiting for the
    /// close): cheaper than [`Framing::body`] while a chunked body cannot
    /// have ended yet.
    pub fn complete(self, raw: &[u8]) -> bool {
        match self {
            Framing::Close => false,
            Framing::Length(n) => raw.len() >= n,
            // Decoding is only worth trying once the last chunk may be there.
            Framing::Chunked => raw.ends_with(b"0\r\n\r\n") && self.body(raw).1,
        }
    }
}

/// Decodes as much of a chunked body as is present. Best effort: on a
/// malformed size line it returns what it decoded and says "complete", so
/// the caller stops reading and judges what it has.
fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    loop {
        let Some(eol) = find(raw, b"\n") else {
            return (out, false);
        };
        let size_line = String::from_utf8_lossy(raw.get(..eol).unwrap_or_default());
        let size_hex = size_line.split(';').next().unwrap_or_default().trim();
        let Ok(size) = usize::from_str_radix(size_hex, 16) else {
            return (out, true);
        };
        if size == 0 {
            return (out, true);
        }
        let data = raw.get(eol + 1..).unwrap_or_default();
        let take = size.min(data.len());
        out.extend_from_slice(data.get(..take).unwrap_or_default());
        if data.len() < size {
            return (out, false);
        }
        // Skip the chunk's trailing CRLF (or bare LF).
        let after = data.get(size..).unwrap_or_default();
        raw = after
            .strip_prefix(b"\r\n")
            .or_else(|| after.strip_prefix(b"\n"))
            .unwrap_or(after);
        if after.len() < 2 && !after.starts_with(b"\n") {
            return (out, false);
        }
    }
}

/// First index of `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Whether `needle` occurs in `hay`.
pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle).is_some()
}

/// The bounds of a complete response read by [`Reader::progress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most bytes accepted (status line, headers and body); one more
    /// is [`Error::TooLarge`].
    pub max: usize,
    /// The status line and headers must end within this many bytes.
    pub max_head: usize,
    /// The most bytes asked of one read (the buffer grows by this much).
    pub read_size: usize,
}

/// What one fill of a [`Reader`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fill {
    /// Bytes arrived.
    Data,
    /// End of stream: no more bytes will come.
    Closed,
    /// The buffer is at its size limit; nothing was read.
    Full,
}

/// The status line and headers of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    /// Where the body starts.
    pub len: usize,
    pub framing: Framing,
}

/// A complete response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// The header fields in the order received, names as sent.
    pub headers: Vec<(String, String)>,
    /// Decoded (chunked framing undone).
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Why no response was read. The texts are what operators see in a load
/// source's detail.
#[derive(Debug)]
pub enum Error {
    /// The TCP connection could not be opened.
    Connect { addr: SocketAddr, source: io::Error },
    /// Writing the request failed.
    Send(io::Error),
    /// Reading the response failed.
    Read(io::Error),
    /// A blocking read or write timed out.
    Timeout(Duration),
    /// The peer closed before sending anything.
    Empty,
    /// The peer closed before the end of the headers.
    ClosedInHead,
    /// The peer closed before the end of a framed body.
    Truncated,
    /// The headers did not end within [`Limits::max_head`].
    HeadTooLong,
    /// More than [`Limits::max`] bytes came.
    TooLarge(usize),
    /// Not an HTTP/1.x response.
    BadStatusLine(BadStatusLine),
    /// The caller's check of the head refused it (its text as is).
    Rejected(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const MIB: usize = 1024 * 1024;
        match self {
            Error::Connect { addr, source } => write!(f, "connect to {addr} failed: {source}"),
            Error::Send(e) => write!(f, "sending the request failed: {e}"),
            Error::Read(e) => write!(f, "reading the response failed: {e}"),
            Error::Timeout(t) => write!(f, "no response within {t:?}"),
            Error::Empty => f.write_str("connection closed without a response"),
            Error::ClosedInHead => f.write_str("connection closed inside the response headers"),
            Error::Truncated => f.write_str("connection closed before the end of the body"),
            Error::HeadTooLong => f.write_str("the response headers are too long"),
            Error::TooLarge(n) if *n >= MIB && n % MIB == 0 => {
                write!(f, "the response is larger than {} MiB", n / MIB)
            }
            Error::TooLarge(n) => write!(f, "the response is larger than {n} bytes"),
            Error::BadStatusLine(e) => write!(f, "malformed HTTP response: {e}"),
            Error::Rejected(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Connect { source: e, .. } | Error::Send(e) | Error::Read(e) => Some(e),
            Error::BadStatusLine(e) => Some(e),
            _ => None,
        }
    }
}

/// A response buffer that never holds more than its size limit, filled by
/// a read function: blocking ([`Reader::fill`]) or async
/// ([`Reader::fill_async`]).
#[derive(Debug)]
pub struct Reader {
    buf: Vec<u8>,
    /// The most bytes held.
    cap: usize,
    limits: Limits,
    head: Option<Head>,
}

impl Reader {
    /// A buffer of at most `cap` bytes, read `read_size` at a time; a fill
    /// at the cap returns [`Fill::Full`] (the HTTP monitor judges what it
    /// has then, as if the peer had closed).
    pub fn new(cap: usize, read_size: usize) -> Self {
        Reader::with(
            cap,
            Limits {
                max: cap,
                max_head: cap,
                read_size,
            },
        )
    }

    /// A buffer for one complete response read by [`Reader::progress`]:
    /// it holds one byte more than `limits.max`, so that
    /// [`Fill::Full`] means the peer sent more than allowed.
    pub fn for_response(limits: Limits) -> Self {
        Reader::with(limits.max.saturating_add(1), limits)
    }

    fn with(cap: usize, limits: Limits) -> Self {
        Reader {
            buf: Vec::with_capacity(limits.read_size.clamp(1, 16 * 1024).min(cap)),
            cap,
            limits,
            head: None,
        }
    }

    /// The bytes received so far.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Reads once with `read`, which gets the free space to read into and
    /// returns how many bytes it put there (0 at end of stream). A peer
    /// that ends a TLS stream without `close_notify` (`UnexpectedEof`) has
    /// closed: many servers do, and `Connection: close` made us expect it.
    pub fn fill(&mut self, read: impl FnOnce(&mut [u8]) -> io::Result<usize>) -> io::Result<Fill> {
        let Some(start) = self.window() else {
            return Ok(Fill::Full);
        };
        let result = read(self.buf.get_mut(start..).unwrap_or_default());
        self.filled(start, result)
    }

    /// [`Reader::fill`] with an async read function, e.g.
    /// `async |w| stream.read(w).await` with tokio's `AsyncReadExt`. If the
    /// future is dropped before it ends, drop the reader too.
    pub async fn fill_async(
        &mut self,
        read: impl AsyncFnOnce(&mut [u8]) -> io::Result<usize>,
    ) -> io::Result<Fill> {
        let Some(start) = self.window() else {
            return Ok(Fill::Full);
        };
        let result = read(self.buf.get_mut(start..).unwrap_or_default()).await;
        self.filled(start, result)
    }

    /// Grows the buffer by the next read's space; where that space starts,
    /// or `None` at the cap.
    fn window(&mut self) -> Option<usize> {
        let start = self.buf.len();
        let room = self.cap.saturating_sub(start);
        if room == 0 {
            return None;
        }
        self.buf
            .resize(start + room.min(self.limits.read_size.max(1)), 0);
        Some(start)
    }

    /// Keeps what a read put after `start`.
    fn filled(&mut self, start: usize, result: io::Result<usize>) -> io::Result<Fill> {
        match result {
            Ok(n) => {
                let end = start.saturating_add(n).min(self.buf.len());
                self.buf.truncate(end);
                Ok(if end == start {
                    Fill::Closed
                } else {
                    Fill::Data
                })
            }
            Err(e) => {
                self.buf.truncate(start);
                if e.kind() == io::ErrorKind::UnexpectedEof {
                    Ok(Fill::Closed)
                } else {
                    Err(e)
                }
            }
        }
    }

    /// After a fill: the complete response once it is there (its body's
    /// framing says so, or the peer closed), `None` while more is needed.
    /// When the head arrives, `check` sees it (and its bytes) and may
    /// refuse the response without reading the body.
    pub fn progress(
        &mut self,
        fill: Fill,
        check: impl FnOnce(&Head, &[u8]) -> Result<(), String>,
    ) -> Result<Option<Response>, Error> {
        match fill {
            Fill::Full => Err(Error::TooLarge(self.limits.max)),
            Fill::Data => {
                let head = match self.head {
                    Some(head) => head,
                    None => match header_end(&self.buf) {
                        Some(end) => {
                            let head_bytes = self.buf.get(..end).unwrap_or_default();
                            let head = parse_head(head_bytes)?;
                            check(&head, head_bytes).map_err(Error::Rejected)?;
                            self.head = Some(head);
                            head
                        }
                        None if self.buf.len() > self.limits.max_head => {
                            return Err(Error::HeadTooLong);
                        }
                        None => return Ok(None),
                    },
                };
                let (head_bytes, raw) = self.buf.split_at(head.len.min(self.buf.len()));
                Ok(head
                    .framing
                    .complete(raw)
                    .then(|| response(head, head_bytes, raw)))
            }
            Fill::Closed => {
                let Some(head) = self.head else {
                    return Err(if self.buf.is_empty() {
                        Error::Empty
                    } else {
                        Error::ClosedInHead
                    });
                };
                let (head_bytes, raw) = self.buf.split_at(head.len.min(self.buf.len()));
                let (_, done) = head.framing.body(raw);
                if !done && head.framing != Framing::Close {
                    return Err(Error::Truncated);
                }
                Ok(Some(response(head, head_bytes, raw)))
            }
        }
    }
}

/// The head in `head` (status line and headers, blank line included).
fn parse_head(head: &[u8]) -> Result<Head, Error> {
    let line_end = find(head, b"\n").unwrap_or(head.len());
    let status = parse_status_line(head.get(..line_end).unwrap_or_default())
        .map_err(Error::BadStatusLine)?;
    Ok(Head {
        status,
        len: head.len(),
        framing: Framing::from_headers(head),
    })
}

fn response(head: Head, head_bytes: &[u8], raw: &[u8]) -> Response {
    let headers = String::from_utf8_lossy(head_bytes)
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
        .collect();
    Response {
        status: head.status,
        headers,
        body: head.framing.body(raw).0.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines() {
        assert_eq!(parse_status_line(b"HTTP/1.1 200 OK\r").unwrap(), 200);
        assert_eq!(parse_status_line(b"HTTP/1.0 503").unwrap(), 503);
        assert_eq!(parse_status_line(b"HTTP/1.1 204\r").unwrap(), 204);
        assert!(parse_status_line(b"HTTP/2 200").is_err());
        assert!(parse_status_line(b"HTTP/1.1 20 OK").is_err());
        assert!(parse_status_line(b"HTTP/1.1 2000 OK").is_err());
        assert!(parse_status_line(b"").is_err());
        assert_eq!(
            parse_status_line(b"SSH-2.0-OpenSSH\r")
                .unwrap_err()
                .to_string(),
            "bad status line \"SSH-2.0-OpenSSH\""
        );
    }

    #[test]
    fn framing_and_dechunk() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
        assert_eq!(Framing::from_headers(head), Framing::Length(5));
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n";
        assert_eq!(Framing::from_headers(head), Framing::Chunked);
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: x\r\ncontent-length: 7\r\n\r\n";
        assert_eq!(Framing::from_headers(head), Framing::Length(7));
        assert_eq!(
            Framing::from_headers(b"HTTP/1.0 200 OK\r\n\r\n"),
            Framing::Close
        );
        let (body, done) = dechunk(b"3\r\nabc\r\n4;x=y\r\ndefg\r\n0\r\n\r\n");
        assert_eq!((body.as_slice(), done), (&b"abcdefg"[..], true));
        let (body, done) = dechunk(b"3\r\nabc\r\n4\r\nde");
        assert_eq!((body.as_slice(), done), (&b"abcde"[..], false));
        let (body, done) = dechunk(b"zz\r\n");
        assert_eq!((body.as_slice(), done), (&b""[..], true));
        let (_, done) = dechunk(b"ffffffffffffffffffffffff\r\nab");
        assert!(done);
        assert_eq!(header_end(b"HTTP/1.1 200 OK\n\nbody"), Some(17));
        assert!(Framing::Chunked.complete(b"3\r\nabc\r\n0\r\n\r\n"));
        assert!(!Framing::Chunked.complete(b"3\r\nabc\r\n"));
        assert!(Framing::Length(2).complete(b"ab"));
        assert!(!Framing::Close.complete(b"ab"));
        let head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nX: 1\r\n\r\n";
        assert_eq!(
            header(head, "CONTENT-ENCODING").collect::<Vec<_>>(),
            ["gzip"]
        );
    }

    const LIMITS: Limits = Limits {
        max: 128,
        max_head: 64,
        read_size: 7,
    };

    /// Feeds `wire` to a reader in reads of at most `LIMITS.read_size`,
    /// then closes, as a peer would.
    fn read_all(wire: &[u8]) -> Result<Response, Error> {
        read_checked(wire, |_, _| Ok(()))
    }

    fn read_checked(
        wire: &[u8],
        check: impl Fn(&Head, &[u8]) -> Result<(), String>,
    ) -> Result<Response, Error> {
        let mut r = Reader::for_response(LIMITS);
        let mut rest = wire;
        loop {
            let fill = r
                .fill(|w| {
                    let n = w.len().min(rest.len());
                    w[..n].copy_from_slice(&rest[..n]);
                    rest = &rest[n..];
                    Ok(n)
                })
                .map_err(Error::Read)?;
            if let Some(resp) = r.progress(fill, &check)? {
                return Ok(resp);
            }
        }
    }

    #[test]
    fn reads_content_length_chunked_and_close_delimited_bodies() {
        let r = read_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello, and more").unwrap();
        assert_eq!((r.status, r.text().as_str()), (200, "hello"));
        let r = read_all(b"HTTP/1.1 404 No\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
            .unwrap();
        assert_eq!((r.status, r.text().as_str()), (404, "abcde"));
        // No Content-Length, not chunked: the body runs to the close.
        let r = read_all(b"HTTP/1.0 200 OK\r\nServer: x\r\n\r\nuntil the end").unwrap();
        assert_eq!((r.status, r.text().as_str()), (200, "until the end"));
    }

    #[test]
    fn cut_short_or_oversize_responses_fail() {
        let text = |wire: &[u8]| read_all(wire).unwrap_err().to_string();
        assert_eq!(text(b""), "connection closed without a response");
        assert_eq!(
            text(b"HTTP/1.1 200 OK\r\nX: y"),
            "connection closed inside the response headers"
        );
        assert_eq!(
            text(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc"),
            "connection closed before the end of the body"
        );
        assert_eq!(
            text(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nabc"),
            "connection closed before the end of the body"
        );
        assert_eq!(
            text(b"SSH-2.0-OpenSSH_9.6\r\n\r\n"),
            "malformed HTTP response: bad status line \"SSH-2.0-OpenSSH_9.6\""
        );
        assert_eq!(
            text(&[b'x'; 70]),
            "the response headers are too long",
            "no blank line within max_head"
        );
        // Exactly `max` bytes is fine; one more is too large.
        let mut wire = b"HTTP/1.0 200 OK\r\n\r\n".to_vec();
        wire.resize(LIMITS.max, b'b');
        assert_eq!(read_all(&wire).unwrap().body.len(), LIMITS.max - 19);
        wire.push(b'b');
        assert_eq!(text(&wire), "the response is larger than 128 bytes");
        assert_eq!(
            Error::TooLarge(8 * 1024 * 1024).to_string(),
            "the response is larger than 8 MiB"
        );
    }

    #[test]
    fn the_head_check_can_refuse_before_the_body() {
        let refuse = |head: &Head, _: &[u8]| {
            if head.status == 200 {
                Ok(())
            } else {
                Err(format!("HTTP {}", head.status))
            }
        };
        let e = read_checked(b"HTTP/1.1 503 Busy\r\nContent-Length: 1000\r\n\r\n", refuse);
        assert_eq!(e.unwrap_err().to_string(), "HTTP 503");
    }

    #[test]
    fn a_raw_reader_stops_at_its_cap_and_eof_kinds_close() {
        let mut r = Reader::new(10, 4);
        let mut fills = Vec::new();
        for _ in 0..4 {
            fills.push(r.fill(|w| Ok(w.len())).unwrap());
        }
        assert_eq!(fills, [Fill::Data, Fill::Data, Fill::Data, Fill::Full]);
        assert_eq!(r.bytes().len(), 10);
        let mut r = Reader::new(10, 4);
        let eof = r
            .fill(|_| Err(io::ErrorKind::UnexpectedEof.into()))
            .unwrap();
        assert_eq!((eof, r.bytes().len()), (Fill::Closed, 0));
        assert!(r.fill(|_| Err(io::ErrorKind::BrokenPipe.into())).is_err());
        assert!(r.bytes().is_empty());
    }
}
