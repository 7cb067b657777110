//! Writing the 16 kHz mono 16-bit PCM WAV: streamed into a new temporary file beside `out`,
//! renamed over `out` only when complete.
//!
//! The temporary file is created with `O_CREAT | O_EXCL` (so an existing file or symlink of
//! that name is never opened), and `rename` replaces the directory entry `out` itself: a
//! symlink at `out` is replaced, its target is never written. Dropping an uncommitted writer
//! (error, cancel, panic) removes the temporary file. Errors here are about the output, never
//! the input, so they are `Unsupported` (the CLI may try its own tools), never `Failed`.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::MediaError;
use super::resample::OUT_RATE;

/// Size of the canonical 44-byte header (RIFF, `fmt ` with PCM, `data`).
const HEADER_LEN: u32 = 44;

pub struct WavWriter {
    temp: PathBuf,
    out: PathBuf,
    file: Option<BufWriter<File>>,
    data_bytes: u32,
}

impl WavWriter {
    pub fn create(out: &Path) -> Result<Self, MediaError> {
        let name = out
            .file_name()
            .ok_or_else(|| MediaError::Failed(format!("{} names no file", out.display())))?;
        let dir = out.parent().unwrap_or_else(|| Path::new(""));
        let mut attempt = 0;
        loop {
            let temp = dir.join(format!(
                ".{}.{}.partial",
                name.to_string_lossy(),
                crate::ids::random_suffix(8)
            ));
            match OpenOptions::new().write(true).create_new(true).open(&temp) {
                Ok(file) => {
                    let mut writer = Self {
                        temp,
                        out: out.to_path_buf(),
                        file: Some(BufWriter::with_capacity(64 * 1024, file)),
                        data_bytes: 0,
                    };
                    writer.write_header()?;
                    return Ok(writer);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 8 => {
                    attempt += 1;
                }
                Err(e) => {
                    return Err(MediaError::Unsupported(format!(
                        "cannot create a file beside {}: {e}",
                        out.display()
                    )));
                }
            }
        }
    }

    /// Appends samples in [-1, 1) (clipped beyond) as 16-bit PCM; the scale is symphonia's
    /// (i16 / 32768), so 16-bit input at 16 kHz comes out bit for bit.
    pub fn write(&mut self, samples: impl Iterator<Item = f32>) -> Result<(), MediaError> {
        let file = self.file.as_mut().ok_or_else(closed)?;
        for s in samples {
            let value = (s * 32768.0).round().clamp(-32768.0, 32767.0) as i16;
            self.data_bytes = self
                .data_bytes
                .checked_add(2)
                .filter(|n| *n <= u32::MAX - HEADER_LEN)
                .ok_or_else(|| {
                    MediaError::Unsupported("the audio is longer than a WAV file holds".into())
                })?;
            file.write_all(&value.to_le_bytes()).map_err(io_failed)?;
        }
        Ok(())
    }

    pub fn samples_written(&self) -> u64 {
        u64::from(self.data_bytes / 2)
    }

    /// Fills in the sizes, syncs, and renames the file over `out`.
    pub fn commit(mut self) -> Result<(), MediaError> {
        self.write_header()?;
        let writer = self.file.take().ok_or_else(closed)?;
        let file = writer.into_inner().map_err(|e| io_failed(e.into_error()))?;
        file.sync_all().map_err(io_failed)?;
        drop(file);
        std::fs::rename(&self.temp, &self.out).map_err(|e| {
            MediaError::Unsupported(format!(
                "cannot move the WAV into {}: {e}",
                self.out.display()
            ))
        })?;
        // Renamed: nothing left to clean up.
        self.temp = PathBuf::new();
        Ok(())
    }

    fn write_header(&mut self) -> Result<(), MediaError> {
        let data = self.data_bytes;
        let file = self.file.as_mut().ok_or_else(closed)?;
        let mut h = Vec::with_capacity(HEADER_LEN as usize);
        h.extend_from_slice(b"RIFF");
        h.extend_from_slice(&(HEADER_LEN - 8 + data).to_le_bytes());
        h.extend_from_slice(b"WAVEfmt ");
        h.extend_from_slice(&16u32.to_le_bytes()); // fmt chunk size
        h.extend_from_slice(&1u16.to_le_bytes()); // PCM
        h.extend_from_slice(&1u16.to_le_bytes()); // mono
        h.extend_from_slice(&OUT_RATE.to_le_bytes());
        h.extend_from_slice(&(OUT_RATE * 2).to_le_bytes()); // bytes per second
        h.extend_from_slice(&2u16.to_le_bytes()); // block align
        h.extend_from_slice(&16u16.to_le_bytes()); // bits per sample
        h.extend_from_slice(b"data");
        h.extend_from_slice(&data.to_le_bytes());
        let end = u64::from(HEADER_LEN) + u64::from(data);
        file.seek(SeekFrom::Start(0)).map_err(io_failed)?;
        file.write_all(&h).map_err(io_failed)?;
        file.seek(SeekFrom::Start(end)).map_err(io_failed)?;
        Ok(())
    }
}

impl Drop for WavWriter {
    fn drop(&mut self) {
        self.file = None;
        if !self.temp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

fn closed() -> MediaError {
    MediaError::Unsupported("the WAV writer is closed".into())
}

/// Output-side trouble (disk full, permissions) says nothing about the input, so it is not
/// `FAILED` (which the CLI reports as a corrupt input): the CLI may try its own tools.
fn io_failed(e: std::io::Error) -> MediaError {
    MediaError::Unsupported(format!("cannot write the WAV: {e}"))
}
