//! Request bytes.

use std::fmt::Write as _;

/// An HTTP/1 request being built: the request line, header lines in the
/// order given, then the blank line and the body ([`Request::finish`]).
#[derive(Debug, Clone)]
pub struct Request {
    text: String,
}

impl Request {
    /// Starts with the request line, written as given (`GET / HTTP/1.1`).
    pub fn new(request_line: &str) -> Self {
        Request {
            text: format!("{request_line}\r\n"),
        }
    }

    /// Adds `name: value`.
    pub fn header(mut self, name: &str, value: impl std::fmt::Display) -> Self {
        let _ = write!(self.text, "{name}: {value}\r\n");
        self
    }

    /// Adds a header line written out in full (an operator's
    /// `Name: value`), as is.
    pub fn line(mut self, line: &str) -> Self {
        self.text.push_str(line);
        self.text.push_str("\r\n");
        self
    }

    /// Ends the headers and appends `body` (which may be empty; a caller
    /// that sends one also sends its `Content-Length`).
    pub fn finish(self, body: &[u8]) -> Vec<u8> {
        let mut out = self.text.into_bytes();
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);
        out
    }
}

/// The `Host` header value for `host` (a name or an IP address) and, when
/// it is not the scheme's default, `port`: IPv6 literals in brackets.
pub fn host(host: &str, port: Option<u16>) -> String {
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    match port {
        Some(port) => format!("{host}:{port}"),
        None => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_requests() {
        let r = Request::new("POST /v1/x HTTP/1.0")
            .header("Host", host("::1", Some(8080)))
            .line("X-Raw: as written")
            .header("Content-Length", 2)
            .finish(b"{}");
        assert_eq!(
            r,
            b"POST /v1/x HTTP/1.0\r\nHost: [::1]:8080\r\nX-Raw: as written\r\nContent-Length: 2\r\n\r\n{}"
        );
        assert_eq!(host("10.0.0.1", None), "10.0.0.1");
        assert_eq!(host("exporter", Some(9100)), "exporter:9100");
    }
}

/// Percent-encodes `s` for a path segment or a query value: everything but
/// the unreserved characters (RFC 3986 §2.3).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod percent_tests {
    use super::percent_encode;

    #[test]
    fn only_unreserved_characters_stay() {
        assert_eq!(percent_encode("web-1_a.b~"), "web-1_a.b~");
        assert_eq!(
            percent_encode(r#"x{a="b c"}/?"#),
            "x%7Ba%3D%22b%20c%22%7D%2F%3F"
        );
    }
}
