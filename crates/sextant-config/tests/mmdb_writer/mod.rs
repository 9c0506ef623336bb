//! A minimal MaxMind DB writer, so that tests build their own small `.mmdb`
//! files instead of downloading real ones.
//!
//! The format: a binary search tree over the address bits (24-bit records;
//! IPv6 with IPv4 networks at `::a.b.c.d/96+n`, or an IPv4-only tree as
//! ip-location-db's `*-ipv4.mmdb` files have), 16 zero bytes, a data
//! section of values in the MaxMind DB encoding, then
//! `"\xAB\xCD\xEFMaxMind.com"` and the metadata map. Only what location
//! records need is encoded: maps, arrays, UTF-8 strings, doubles, floats,
//! booleans, signed and unsigned integers. Networks must not overlap.

#![allow(dead_code)]

use std::net::IpAddr;

/// A value in a record.
#[derive(Debug, Clone)]
pub enum Value {
    Map(Vec<(&'static str, Value)>),
    Array(Vec<Value>),
    Str(String),
    Double(f64),
    Float(f32),
    Bool(bool),
    I32(i32),
    U16(u16),
    U32(u32),
    U64(u64),
}

pub fn s(text: &str) -> Value {
    Value::Str(text.to_string())
}

pub fn map(pairs: Vec<(&'static str, Value)>) -> Value {
    Value::Map(pairs)
}

/// `{ "en": name }`, as GeoIP `names` maps are.
pub fn names(name: &str) -> Value {
    map(vec![("en", s(name)), ("de", s(&format!("{name} (de)")))])
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Rec {
    Empty,
    Node(usize),
    Data(usize),
}

pub struct Writer {
    database_type: String,
    /// 6: a 128-bit tree; 4: a 32-bit tree that holds IPv4 networks only.
    ip_version: u16,
    nodes: Vec<[Rec; 2]>,
    records: Vec<Value>,
}

impl Writer {
    /// An IPv6 database (IPv4 networks inside it at `::/96`).
    pub fn new(database_type: &str) -> Self {
        Writer {
            database_type: database_type.to_string(),
            ip_version: 6,
            nodes: vec![[Rec::Empty, Rec::Empty]],
            records: Vec::new(),
        }
    }

    /// An IPv4-only database.
    pub fn new_v4(database_type: &str) -> Self {
        Writer {
            ip_version: 4,
            ..Writer::new(database_type)
        }
    }

    /// Inserts `network` (`"192.0.2.0/24"` or `"2001:db8::/32"`) with `value`.
    pub fn insert(&mut self, network: &str, value: Value) {
        let (ip, len) = network.split_once('/').expect("CIDR");
        let ip: IpAddr = ip.parse().expect("address");
        let len: usize = len.parse().expect("prefix length");
        let (bits, len) = match (ip, self.ip_version) {
            (IpAddr::V4(a), 4) => (u128::from(u32::from(a)) << 96, len),
            (IpAddr::V4(a), _) => (u128::from(u32::from(a)), len + 96),
            (IpAddr::V6(_), 4) => panic!("{network} in an IPv4-only database"),
            (IpAddr::V6(a), _) => (u128::from(a), len),
        };
        self.records.push(value);
        let data = Rec::Data(self.records.len() - 1);
        let mut node = 0;
        for depth in 0..len {
            let bit = ((bits >> (127 - depth)) & 1) as usize;
            if depth + 1 == len {
                assert_eq!(self.nodes[node][bit], Rec::Empty, "overlapping {network}");
                self.nodes[node][bit] = data;
                break;
            }
            node = match self.nodes[node][bit] {
                Rec::Node(n) => n,
                Rec::Empty => {
                    self.nodes.push([Rec::Empty, Rec::Empty]);
                    let n = self.nodes.len() - 1;
                    self.nodes[node][bit] = Rec::Node(n);
                    n
                }
                Rec::Data(_) => panic!("{network} is inside a network already inserted"),
            };
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut data = Vec::new();
        let mut offsets = Vec::new();
        for r in &self.records {
            offsets.push(data.len());
            encode(r, &mut data);
        }
        let count = self.nodes.len();
        let mut out = Vec::new();
        for node in &self.nodes {
            for rec in node {
                let v = match *rec {
                    Rec::Empty => count,
                    Rec::Node(n) => n,
                    Rec::Data(i) => count + 16 + offsets[i],
                };
                assert!(v < 1 << 24, "record too large for 24 bits");
                out.extend_from_slice(&(v as u32).to_be_bytes()[1..]);
            }
        }
        out.extend_from_slice(&[0u8; 16]);
        out.extend_from_slice(&data);
        out.extend_from_slice(b"\xAB\xCD\xEFMaxMind.com");
        let meta = map(vec![
            ("binary_format_major_version", Value::U16(2)),
            ("binary_format_minor_version", Value::U16(0)),
            ("build_epoch", Value::U64(1_700_000_000)),
            ("database_type", s(&self.database_type)),
            ("description", map(vec![("en", s("Sextant test database"))])),
            ("ip_version", Value::U16(self.ip_version)),
            ("languages", Value::Array(vec![s("en"), s("de")])),
            ("node_count", Value::U32(count as u32)),
            ("record_size", Value::U16(24)),
        ]);
        encode(&meta, &mut out);
        out
    }

    pub fn write(&self, path: &std::path::Path) {
        std::fs::write(path, self.to_bytes()).expect("write mmdb");
    }
}

/// Control byte(s) for `type_num` with payload size `size`.
fn control(type_num: u8, size: usize, out: &mut Vec<u8>) {
    let (first, ext) = if type_num <= 7 {
        (type_num << 5, None)
    } else {
        (0, Some(type_num - 7))
    };
    let (size_bits, extra): (u8, Vec<u8>) = if size < 29 {
        (size as u8, vec![])
    } else if size < 29 + 256 {
        (29, vec![(size - 29) as u8])
    } else if size < 285 + 65536 {
        (30, ((size - 285) as u16).to_be_bytes().to_vec())
    } else {
        (31, ((size - 65821) as u32).to_be_bytes()[1..].to_vec())
    };
    out.push(first | size_bits);
    if let Some(e) = ext {
        out.push(e);
    }
    out.extend_from_slice(&extra);
}

fn uint(type_num: u8, v: u64, width: usize, out: &mut Vec<u8>) {
    let bytes = v.to_be_bytes();
    let skip = bytes.iter().take_while(|b| **b == 0).count().max(8 - width);
    control(type_num, 8 - skip, out);
    out.extend_from_slice(&bytes[skip..]);
}

fn encode(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Str(t) => {
            control(2, t.len(), out);
            out.extend_from_slice(t.as_bytes());
        }
        Value::Double(d) => {
            control(3, 8, out);
            out.extend_from_slice(&d.to_be_bytes());
        }
        Value::Float(f) => {
            control(15, 4, out);
            out.extend_from_slice(&f.to_be_bytes());
        }
        Value::Bool(b) => control(14, usize::from(*b), out),
        Value::I32(n) => {
            control(8, 4, out);
            out.extend_from_slice(&n.to_be_bytes());
        }
        Value::U16(n) => uint(5, u64::from(*n), 2, out),
        Value::U32(n) => uint(6, u64::from(*n), 4, out),
        Value::U64(n) => uint(9, *n, 8, out),
        Value::Map(pairs) => {
            control(7, pairs.len(), out);
            for (k, v) in pairs {
                encode(&s(k), out);
                encode(v, out);
            }
        }
        Value::Array(items) => {
            control(11, items.len(), out);
            for i in items {
                encode(i, out);
            }
        }
    }
}

/// A GeoIP2-Country style record.
pub fn country_record(continent_code: &str, continent: &str, iso: &str) -> Value {
    map(vec![
        (
            "continent",
            map(vec![
                ("code", s(continent_code)),
                ("geoname_id", Value::U32(6255148)),
                ("names", names(continent)),
            ]),
        ),
        (
            "country",
            map(vec![
                ("geoname_id", Value::U32(2635167)),
                ("iso_code", s(iso)),
                ("names", names(iso)),
            ]),
        ),
        (
            "registered_country",
            map(vec![("iso_code", s(iso)), ("names", names(iso))]),
        ),
    ])
}

/// A GeoIP2-City style record.
pub fn city_record(
    continent: &str,
    iso: &str,
    subdivision: &str,
    city: &str,
    latitude: f64,
    longitude: f64,
) -> Value {
    map(vec![
        (
            "city",
            map(vec![("geoname_id", Value::U32(1)), ("names", names(city))]),
        ),
        (
            "continent",
            map(vec![("code", s("XX")), ("names", names(continent))]),
        ),
        (
            "country",
            map(vec![("iso_code", s(iso)), ("names", names(iso))]),
        ),
        (
            "location",
            map(vec![
                ("accuracy_radius", Value::U16(20)),
                ("latitude", Value::Double(latitude)),
                ("longitude", Value::Double(longitude)),
                ("time_zone", s("Europe/London")),
            ]),
        ),
        (
            "subdivisions",
            Value::Array(vec![map(vec![
                ("iso_code", s(subdivision)),
                ("names", names(subdivision)),
            ])]),
        ),
    ])
}

/// An ip-location-db city record (`@ip-location-db/*-city-mmdb`): flat,
/// every field present, coordinates as floats, empty strings for unknowns.
pub fn ip_location_db_city(
    country: &str,
    state1: &str,
    city: &str,
    latitude: f32,
    longitude: f32,
) -> Value {
    map(vec![
        ("city", s(city)),
        ("country_code", s(country)),
        ("latitude", Value::Float(latitude)),
        ("longitude", Value::Float(longitude)),
        ("postcode", s("")),
        ("state1", s(state1)),
        ("state2", s("")),
        ("timezone", s("Europe/Berlin")),
    ])
}

/// A DB-IP lite city record (`dbip-city-lite-YYYY-MM.mmdb`): MaxMind's
/// layout, but subdivisions and cities carry English names only, no codes.
pub fn dbip_city_record(
    continent_code: &str,
    continent: &str,
    iso: &str,
    subdivision: &str,
    city: &str,
    latitude: f64,
    longitude: f64,
) -> Value {
    map(vec![
        ("city", map(vec![("names", map(vec![("en", s(city))]))])),
        (
            "continent",
            map(vec![
                ("code", s(continent_code)),
                ("geoname_id", Value::U32(6255148)),
                ("names", names(continent)),
            ]),
        ),
        (
            "country",
            map(vec![
                ("geoname_id", Value::U32(2921044)),
                ("is_in_european_union", Value::Bool(true)),
                ("iso_code", s(iso)),
                ("names", names(iso)),
            ]),
        ),
        (
            "location",
            map(vec![
                ("latitude", Value::Double(latitude)),
                ("longitude", Value::Double(longitude)),
            ]),
        ),
        (
            "subdivisions",
            Value::Array(vec![map(vec![(
                "names",
                map(vec![("en", s(subdivision))]),
            )])]),
        ),
    ])
}
