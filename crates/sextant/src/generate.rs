//! `sextant generate-assets DIR`: the manual pages and shell completions,
//! made from the same clap definitions the binary parses with, so they can
//! never disagree with `--help`. Run at package build time
//! (scripts/package.sh); the output is not committed.

use std::path::Path;

use anyhow::Context;
use clap_complete::Shell;

/// Writes `DIR/man/sextant.1`, one `sextant-SUBCOMMAND.1` per subcommand,
/// and `DIR/completions/{sextant.bash,_sextant,sextant.fish}`.
pub fn assets(mut cmd: clap::Command, dir: &Path) -> anyhow::Result<()> {
    let man = dir.join("man");
    let completions = dir.join("completions");
    for d in [&man, &completions] {
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
    }
    clap_mangen::generate_to(cmd.clone(), &man)
        .with_context(|| format!("cannot write the manual pages into {}", man.display()))?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut cmd, "sextant", &completions).with_context(
            || {
                format!(
                    "cannot write the {shell} completion into {}",
                    completions.display()
                )
            },
        )?;
    }
    Ok(())
}
