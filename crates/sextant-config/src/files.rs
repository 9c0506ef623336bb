//! Which files a configuration may make this node read, and how: the one
//! reader of every file a configuration names (DNSSEC key files, location
//! files) and of the configuration file itself, at start, reload, `PUT
//! /v1/config` and config sync alike.
//!
//! A configuration received from a peer parent is data from a stranger: it
//! may name any path. [`FileAccess`] is the receiving operator's answer to
//! "which files may it read": for the node's own configuration, any file;
//! for a received one, only files under the directories the operator named
//! (by default the configuration file's own directory, more with `sextant
//! serve --sync-file-dir DIR`), never the node's own secrets (its
//! configuration file, API token file, TLS key); in both cases never anything but a regular
//! file (a device, FIFO or socket is refused before it is opened, and the
//! open cannot block), and never more than [`FileKind::limit`] bytes.
//!
//! [`FileAccess::decide`] is the decision, pure and tested on its own;
//! [`FileAccess::read`] gathers the facts (the canonical path, the
//! metadata) and reads. Errors ([`FileError`]) say what is wrong with the
//! file and never quote its content.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What a file is read as; each kind has its own size bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// The configuration file itself.
    Configuration,
    /// A DNSSEC `.key` or `.private` file (a few hundred bytes).
    DnssecKey,
    /// A location file: the appliance's CSV format or a MaxMind database
    /// (a GeoIP2 City database is about 130 MB).
    Location,
}

/// The largest configuration file read: the largest transfer config sync
/// takes (`sextant_config_sync::MAX_TRANSFER_BYTES`).
pub const MAX_CONFIGURATION_FILE: u64 = 256 << 20;
/// The largest DNSSEC key file read: a key file is a few hundred bytes.
pub const MAX_KEY_FILE: u64 = 64 << 10;
/// The largest location file read: room for the largest GeoIP databases
/// (a GeoIP2 or DB-IP city database is 100–200 MB) and no more.
pub const MAX_LOCATION_FILE: u64 = 1 << 30;

impl FileKind {
    /// The most bytes a file of this kind may hold.
    pub fn limit(self) -> u64 {
        match self {
            FileKind::Configuration => MAX_CONFIGURATION_FILE,
            FileKind::DnssecKey => MAX_KEY_FILE,
            FileKind::Location => MAX_LOCATION_FILE,
        }
    }

    fn what(self) -> &'static str {
        match self {
            FileKind::Configuration => "a configuration file",
            FileKind::DnssecKey => "a DNSSEC key file",
            FileKind::Location => "a location file",
        }
    }
}

/// Why a file is not read. Never holds any of the file's content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("no such file")]
    NotFound,
    #[error("permission denied")]
    PermissionDenied,
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("it is larger than {limit} bytes, the most {what} may hold")]
    TooLarge { limit: u64, what: &'static str },
    #[error(
        "it is outside the directories this node reads files from for a configuration received over config sync (its configuration file's directory and each `sextant serve --sync-file-dir`)"
    )]
    Outside,
    #[error(
        "it is one of this node's own files that hold secrets (its configuration file, API token file or TLS key), never read as another file"
    )]
    Secret,
    #[error("the file is not valid UTF-8 text")]
    NotUtf8,
    #[error("{0}")]
    Io(String),
}

impl FileError {
    fn from_io(e: &std::io::Error) -> FileError {
        match e.kind() {
            std::io::ErrorKind::NotFound => FileError::NotFound,
            std::io::ErrorKind::PermissionDenied => FileError::PermissionDenied,
            // The OS's words (e.g. "Not a directory (os error 20)"): never content.
            _ => FileError::Io(e.to_string()),
        }
    }
}

/// The type of a file, as its metadata says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    Regular,
    Directory,
    CharDevice,
    BlockDevice,
    Fifo,
    Socket,
    Other,
}

impl FileType {
    fn of(t: std::fs::FileType) -> FileType {
        if t.is_file() {
            FileType::Regular
        } else if t.is_dir() {
            FileType::Directory
        } else if t.is_char_device() {
            FileType::CharDevice
        } else if t.is_block_device() {
            FileType::BlockDevice
        } else if t.is_fifo() {
            FileType::Fifo
        } else if t.is_socket() {
            FileType::Socket
        } else {
            FileType::Other
        }
    }

    fn describe(self) -> &'static str {
        match self {
            FileType::Regular => "a regular file",
            FileType::Directory => "a directory",
            FileType::CharDevice => "a character device",
            FileType::BlockDevice => "a block device",
            FileType::Fifo => "a FIFO (named pipe)",
            FileType::Socket => "a socket",
            FileType::Other => "a special file",
        }
    }
}

/// Which files a configuration may make this node read. See the module
/// documentation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileAccess {
    /// `None`: anywhere (the operator's own configuration); else only
    /// under these directories (canonical paths).
    dirs: Option<Vec<PathBuf>>,
    /// Never read, whoever names them (canonical paths).
    never: Vec<PathBuf>,
}

impl FileAccess {
    /// The operator's own configuration (start, SIGHUP, `PUT /v1/config`,
    /// `sextant check`): any file, within the type and size bounds.
    pub fn operator() -> FileAccess {
        FileAccess::default()
    }

    /// A configuration received over config sync: only files under `dirs`
    /// (made canonical here; a directory that does not exist allows
    /// nothing).
    pub fn received<I: IntoIterator<Item = PathBuf>>(dirs: I) -> FileAccess {
        FileAccess {
            dirs: Some(
                dirs.into_iter()
                    .filter_map(|d| std::fs::canonicalize(d).ok())
                    .collect(),
            ),
            never: Vec::new(),
        }
    }

    /// Also never reads `files` (the node's own secrets), whoever names them.
    pub fn never_read<I: IntoIterator<Item = PathBuf>>(mut self, files: I) -> FileAccess {
        self.never.extend(
            files
                .into_iter()
                .filter_map(|f| std::fs::canonicalize(f).ok()),
        );
        self
    }

    /// The directories a received configuration may read under (`None`:
    /// no restriction).
    pub fn dirs(&self) -> Option<&[PathBuf]> {
        self.dirs.as_deref()
    }

    /// The decision, from the facts: the file's canonical path (every
    /// symlink and `..` resolved), its type and its size.
    pub fn decide(
        &self,
        kind: FileKind,
        canonical: &Path,
        file_type: FileType,
        len: u64,
    ) -> Result<(), FileError> {
        if self.never.iter().any(|n| n == canonical) {
            return Err(FileError::Secret);
        }
        if let Some(dirs) = &self.dirs
            && !dirs.iter().any(|d| canonical.starts_with(d))
        {
            return Err(FileError::Outside);
        }
        if file_type != FileType::Regular {
            return Err(FileError::NotRegular(file_type.describe()));
        }
        if len > kind.limit() {
            return Err(FileError::TooLarge {
                limit: kind.limit(),
                what: kind.what(),
            });
        }
        Ok(())
    }

    /// Reads `path` as a file of `kind`, if [`FileAccess::decide`] allows
    /// it: resolves it, checks its metadata before opening, opens it
    /// without blocking and without following a symlink swapped in since,
    /// checks the opened file again, and reads at most the bound.
    pub fn read(&self, path: &Path, kind: FileKind) -> Result<Vec<u8>, FileError> {
        let canonical = std::fs::canonicalize(path).map_err(|e| FileError::from_io(&e))?;
        let meta = std::fs::metadata(&canonical).map_err(|e| FileError::from_io(&e))?;
        self.decide(kind, &canonical, FileType::of(meta.file_type()), meta.len())?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
            .open(&canonical)
            .map_err(|e| FileError::from_io(&e))?;
        let meta = file.metadata().map_err(|e| FileError::from_io(&e))?;
        self.decide(kind, &canonical, FileType::of(meta.file_type()), meta.len())?;
        let limit = kind.limit();
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| FileError::from_io(&e))?;
        if bytes.len() as u64 > limit {
            return Err(FileError::TooLarge {
                limit,
                what: kind.what(),
            });
        }
        Ok(bytes)
    }

    /// [`FileAccess::read`] as UTF-8 text.
    pub fn read_text(&self, path: &Path, kind: FileKind) -> Result<String, FileError> {
        String::from_utf8(self.read(path, kind)?).map_err(|_| FileError::NotUtf8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn received(dirs: &[&str]) -> FileAccess {
        FileAccess {
            dirs: Some(dirs.iter().map(PathBuf::from).collect()),
            never: vec![PathBuf::from("/etc/sextant/api-tokens")],
        }
    }

    #[test]
    fn the_operator_reads_any_regular_file_within_the_bound() {
        let a = FileAccess::operator();
        let p = Path::new("/srv/geo/city.mmdb");
        assert_eq!(
            a.decide(FileKind::Location, p, FileType::Regular, 200 << 20),
            Ok(())
        );
        assert_eq!(
            a.decide(FileKind::DnssecKey, p, FileType::Regular, MAX_KEY_FILE + 1),
            Err(FileError::TooLarge {
                limit: MAX_KEY_FILE,
                what: "a DNSSEC key file"
            })
        );
        for t in [
            FileType::CharDevice,
            FileType::Fifo,
            FileType::Socket,
            FileType::Directory,
            FileType::BlockDevice,
        ] {
            assert!(matches!(
                a.decide(FileKind::Location, Path::new("/dev/zero"), t, 0),
                Err(FileError::NotRegular(_))
            ));
        }
    }

    #[test]
    fn a_received_configuration_reads_only_under_the_named_directories() {
        let a = received(&["/etc/sextant", "/srv/geo"]);
        let ok = |p: &str| a.decide(FileKind::Location, Path::new(p), FileType::Regular, 10);
        assert_eq!(ok("/etc/sextant/geo.csv"), Ok(()));
        assert_eq!(ok("/srv/geo/sub/city.mmdb"), Ok(()));
        assert_eq!(ok("/etc/shadow"), Err(FileError::Outside));
        // A prefix of the name is not the directory.
        assert_eq!(ok("/etc/sextant-other/x"), Err(FileError::Outside));
        assert_eq!(ok("/etc/sextant/api-tokens"), Err(FileError::Secret));
    }

    #[test]
    fn reads_resolve_links_and_refuse_devices_fifos_and_oversize_at_once() {
        let dir = std::env::temp_dir().join(format!("sextant-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let inside = dir.join("inside");
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::write(inside.join("geo.csv"), "ok\n").unwrap();
        std::fs::write(dir.join("secret"), "s3cret-content\n").unwrap();
        std::os::unix::fs::symlink(dir.join("secret"), inside.join("link")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", inside.join("zero")).unwrap();
        let fifo = inside.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
        let a = FileAccess::received([inside.clone()]);
        let read = |p: &Path| a.read(p, FileKind::Location);
        assert_eq!(read(&inside.join("geo.csv")).unwrap(), b"ok\n");
        assert_eq!(read(&inside.join("link")), Err(FileError::Outside));
        assert_eq!(read(&inside.join("../secret")), Err(FileError::Outside));
        assert_eq!(read(&inside.join("missing")), Err(FileError::NotFound));
        // The operator's own configuration: anywhere, but never a device or FIFO.
        let op = FileAccess::operator();
        assert_eq!(
            op.read(&inside.join("zero"), FileKind::Location),
            Err(FileError::NotRegular("a character device"))
        );
        assert_eq!(
            op.read(&fifo, FileKind::Location),
            Err(FileError::NotRegular("a FIFO (named pipe)"))
        );
        std::fs::write(
            inside.join("big.key"),
            vec![b'x'; MAX_KEY_FILE as usize + 1],
        )
        .unwrap();
        assert!(matches!(
            op.read(&inside.join("big.key"), FileKind::DnssecKey),
            Err(FileError::TooLarge { .. })
        ));
        let secret = op.clone().never_read([dir.join("secret")]);
        assert_eq!(
            secret.read(&inside.join("link"), FileKind::DnssecKey),
            Err(FileError::Secret)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
