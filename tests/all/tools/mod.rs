//! The built-in tools on files that are not what they seem: FIFOs, huge sparse files, files over
//! the size cap.

pub mod special_files;
