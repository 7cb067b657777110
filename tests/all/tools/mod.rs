//! The built-in tools on files that are not what they seem: FIFOs, huge sparse files, files over
//! the size cap.

mod special_files;
