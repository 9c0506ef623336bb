//! The project's shell scripts, run with stand-ins for the slow tools they
//! drive, for what they promise their callers.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use sextant_test_support::scratch::Scratch;

fn executable(path: &Path, text: &str) {
    fs::write(path, text).expect("write script");
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// `scripts/test.sh > log 2>&1` keeps the whole log: scripts/package.sh
/// once wrote cargo-deb's output with `tee /dev/stderr`, whose reopening
/// truncated the log file, losing every line written before it.
#[test]
fn package_sh_keeps_a_log_file_its_output_is_redirected_to() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let s = Scratch::new("package_log");
    // A copy of the script in a tree of its own (it works in `..` of
    // itself), with a cargo and a release binary that only say what they do.
    let tree = s.0.join("tree");
    fs::create_dir_all(tree.join("scripts")).expect("mkdir");
    fs::copy(
        repo.join("scripts/package.sh"),
        tree.join("scripts/package.sh"),
    )
    .expect("copy");
    let bin = s.0.join("bin");
    fs::create_dir_all(&bin).expect("mkdir");
    let deb = s.0.join("sextant_0.1.0_amd64.deb");
    fs::write(&deb, "not really a package").expect("write");
    executable(
        &bin.join("cargo"),
        &format!(
            "#!/bin/sh\n\
             case \"$1 $2\" in\n\
             'deb --version') echo 'cargo-deb 2.0' ;;\n\
             deb*) echo 'cargo deb: packaging'; echo '{}' ;;\n\
             build*) echo 'cargo build: compiled the release binary' >&2 ;;\n\
             esac\n",
            deb.display()
        ),
    );
    let target = s.0.join("target");
    fs::create_dir_all(target.join("release")).expect("mkdir");
    executable(
        &target.join("release/sextant"),
        "#!/bin/sh\nmkdir -p \"$2/man\" && echo page > \"$2/man/sextant.1\"\n",
    );

    let log_path = s.0.join("test.log");
    let log = fs::File::create(&log_path).expect("create log");
    let status = Command::new("bash")
        .arg("-c")
        .arg("echo 'before the package step' >&2; scripts/package.sh")
        .current_dir(&tree)
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("CARGO_TARGET_DIR", &target)
        .stdout(Stdio::from(log.try_clone().expect("clone log")))
        .stderr(Stdio::from(log))
        .status()
        .expect("run package.sh");
    assert!(
        status.success(),
        "{}",
        fs::read_to_string(&log_path).unwrap_or_default()
    );
    let text = String::from_utf8_lossy(&fs::read(&log_path).expect("read log")).into_owned();
    for line in [
        "before the package step",
        "cargo build: compiled the release binary",
        "cargo deb: packaging",
    ] {
        assert!(text.contains(line), "the log lost {line:?}:\n{text:?}");
    }
    assert!(
        text.trim_end().ends_with(&deb.display().to_string()),
        "the package path is the last line:\n{text}"
    );
}
