//! What a confined command may read: everything but a few files (Splice's saved registry
//! logins, whose token would let a command publish as you). Landlock only grants, so "all but
//! X" is built as grants on every sibling along the way down from `/` to X, taken when the
//! command starts: a file created later beside X or beside one of X's ancestor directories is
//! unreadable too (fail closed), and directories stay listable everywhere.

use std::path::{Component, Path, PathBuf};

use thiserror::Error;

/// Why the files to hide cannot be carved out; the command is then not run.
#[derive(Debug, Error)]
pub enum HiddenError {
    #[error(
        "{} cannot be kept from the command: it is inside {}, where confined commands may \
         write; keep Splice's config directory (SPLICE_CONFIG) outside the working root and \
         the temporary directories",
        .path.display(),
        .place.display()
    )]
    InWritable { path: PathBuf, place: PathBuf },
    #[error("cannot resolve {}: {error}", .path.display())]
    CurrentDir {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot resolve {}", .0.display())]
    Unresolved(PathBuf),
    #[error("cannot list {}: {error}", .dir.display())]
    List { dir: PathBuf, error: std::io::Error },
    #[error(
        "the terminals cannot be kept from the command: it may write {}, which holds them; \
         run Splice in a project directory",
        .0.display()
    )]
    TerminalsWritable(PathBuf),
}

/// The subtrees a confined command may read files in: `/` with each of `hidden` carved out.
/// A hidden file that exists inside a place the command may write cannot be hidden (write
/// access includes reading): that is an error, so the command is not run.
pub fn readable_roots(
    hidden: &[PathBuf],
    writable: &[PathBuf],
) -> Result<Vec<PathBuf>, HiddenError> {
    let mut roots = vec![PathBuf::from("/")];
    for path in hidden {
        let target = resolved(path)?;
        let inside = writable
            .iter()
            .find(|w| target.starts_with(w.canonicalize().unwrap_or_else(|_| w.to_path_buf())));
        if let Some(place) = inside {
            if target.exists() {
                return Err(HiddenError::InWritable {
                    path: path.clone(),
                    place: place.clone(),
                });
            }
            continue;
        }
        carve(&mut roots, &target)?;
    }
    Ok(roots)
}

/// `path` made absolute with its links resolved: the real file when it exists, else the
/// deepest existing ancestor (resolved) joined with the next name down (which a later file
/// would take).
pub(crate) fn resolved(path: &Path) -> Result<PathBuf, HiddenError> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|error| HiddenError::CurrentDir {
                path: path.to_path_buf(),
                error,
            })?
            .join(path)
    };
    if let Ok(real) = absolute.canonicalize() {
        return Ok(real);
    }
    let mut below = Vec::new();
    let mut at = absolute.as_path();
    loop {
        let Some(parent) = at.parent() else {
            return Err(HiddenError::Unresolved(path.to_path_buf()));
        };
        below.push(at.file_name().map(PathBuf::from).unwrap_or_default());
        if let Ok(real) = parent.canonicalize() {
            let next = below.pop().unwrap_or_default();
            return Ok(real.join(next));
        }
        at = parent;
    }
}

/// Replace the root that holds `target` by its siblings' subtrees on every level down to it.
/// A directory on the way that is missing or that Splice may not list holds nothing more to
/// grant (what lies below stays unreadable).
pub(crate) fn carve(roots: &mut Vec<PathBuf>, target: &Path) -> Result<(), HiddenError> {
    if let Some(exact) = roots.iter().position(|r| r == target) {
        roots.remove(exact);
        return Ok(());
    }
    let Some(holder) = roots.iter().position(|r| target.starts_with(r)) else {
        return Ok(()); // Already unreadable.
    };
    let mut dir = roots.remove(holder);
    let names: Vec<_> = match target.strip_prefix(&dir) {
        Ok(rest) => rest
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name.to_os_string()),
                _ => None,
            })
            .collect(),
        Err(_) => return Ok(()),
    };
    for name in names {
        let cannot_list = |error| HiddenError::List {
            dir: dir.clone(),
            error,
        };
        let listing = match std::fs::read_dir(&dir) {
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                ) =>
            {
                return Ok(());
            }
            listing => listing.map_err(cannot_list)?,
        };
        for entry in listing {
            let entry = entry.map_err(cannot_list)?;
            // Links get no rule: a rule follows its link, and one to an ancestor of `target`
            // would grant it back. What a link points at is readable through its own rule.
            let link = entry.file_type().is_ok_and(|t| t.is_symlink());
            if entry.file_name() != name && !link {
                roots.push(entry.path());
            }
        }
        dir.push(&name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let base = dir.path().canonicalize().expect("canonicalize dir");
        let conf = base.join("home/.config/splice");
        std::fs::create_dir_all(&conf).expect("create conf");
        std::fs::create_dir_all(base.join("home/src")).expect("create home/src");
        for file in ["home/.config/splice/config.json", "home/.bashrc"] {
            std::fs::write(base.join(file), "x").expect("write file");
        }
        std::fs::write(conf.join("credentials.json"), "{}").expect("write credentials.json");
        std::os::unix::fs::symlink(base.join("home"), base.join("home/loop"))
            .expect("link home/loop");
        (dir, base)
    }

    #[test]
    fn the_hidden_file_is_under_no_root_and_its_neighbours_are() {
        let (_dir, base) = tree();
        let hidden = base.join("home/.config/splice/credentials.json");
        let roots = readable_roots(std::slice::from_ref(&hidden), &[]).expect("readable roots");
        let covered = |p: &Path| roots.iter().any(|r| p.starts_with(r));
        assert!(!covered(&hidden), "{roots:?}");
        for readable in [
            "home/.config/splice/config.json",
            "home/.bashrc",
            "home/src",
        ] {
            assert!(covered(&base.join(readable)), "{readable}: {roots:?}");
        }
        assert!(covered(Path::new("/usr/bin/env")) || !Path::new("/usr").exists());
        // The link back up to `home` gets no rule of its own.
        assert!(!roots.contains(&base.join("home/loop")), "{roots:?}");
        // A file not yet created beside it would not be readable either.
        assert!(!covered(&base.join("home/.config/splice/new.json")));
    }

    #[test]
    fn a_hidden_file_that_does_not_exist_yet_is_carved_out_by_name() {
        let (_dir, base) = tree();
        let later = base.join("home/.config/other/credentials.json");
        let roots = readable_roots(std::slice::from_ref(&later), &[]).expect("readable roots");
        assert!(!roots.iter().any(|r| later.starts_with(r)), "{roots:?}");
        assert!(
            roots
                .iter()
                .any(|r| base.join("home/.bashrc").starts_with(r))
        );
    }

    #[test]
    fn an_existing_hidden_file_in_a_writable_place_refuses_confinement() {
        let (_dir, base) = tree();
        let hidden = base.join("home/.config/splice/credentials.json");
        let refused = readable_roots(std::slice::from_ref(&hidden), &[base.join("home")]);
        let refused = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            refused,
            format!(
                "{} cannot be kept from the command: it is inside {}, where confined commands \
                 may write; keep Splice's config directory (SPLICE_CONFIG) outside the working \
                 root and the temporary directories",
                hidden.display(),
                base.join("home").display()
            )
        );
        // Not there yet: nothing to hide, and nothing refused.
        let absent = base.join("home/.config/splice/none.json");
        assert!(readable_roots(&[absent], &[base.join("home")]).is_ok());
    }
}
