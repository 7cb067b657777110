//! A QR code drawn with half-block characters: each cell holds two modules, one above the
//! other (`▀`, `▄`, `█` or a space). Dark modules on a light ground, whatever the theme, with
//! a light quiet zone around it, so a phone reads it on a dark terminal too. It is drawn whole
//! or not at all: a clipped code scans wrong or not at all.

use qrcode::{Color as Module, EcLevel, QrCode};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};

/// Light modules around the code. The standard asks for 4; 2 is what terminal QR printers use
/// and what phone readers accept, and it keeps the code on an 80x24 screen.
pub const QUIET_ZONE: usize = 2;
/// Dark and light, as ANSI colours: black on bright white.
pub const DARK: Color = Color::Black;
pub const LIGHT: Color = Color::White;

/// The half-block for a cell whose top and bottom modules are dark or not.
pub fn block(top: bool, bottom: bool) -> &'static str {
    match (top, bottom) {
        (false, false) => " ",
        (true, false) => "▀",
        (false, true) => "▄",
        (true, true) => "█",
    }
}

/// The modules of one code, quiet zone included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QrImage {
    /// Modules per side, quiet zone included.
    size: usize,
    dark: Vec<bool>,
}

impl QrImage {
    /// The code for `data` at error correction level L (a screen does not smudge), or `None`
    /// when it does not fit in a QR code.
    pub fn new(data: &str) -> Option<QrImage> {
        let code = QrCode::with_error_correction_level(data.as_bytes(), EcLevel::L).ok()?;
        let inner = code.width();
        let colors = code.to_colors();
        let size = inner + 2 * QUIET_ZONE;
        let mut dark = vec![false; size * size];
        for y in 0..inner {
            for x in 0..inner {
                if colors[y * inner + x] == Module::Dark {
                    dark[(y + QUIET_ZONE) * size + x + QUIET_ZONE] = true;
                }
            }
        }
        Some(QrImage { size, dark })
    }

    /// Columns it takes.
    pub fn width(&self) -> u16 {
        u16::try_from(self.size).unwrap_or(u16::MAX)
    }

    /// Rows it takes: two modules a row.
    pub fn height(&self) -> u16 {
        u16::try_from(self.size.div_ceil(2)).unwrap_or(u16::MAX)
    }

    fn is_dark(&self, x: usize, y: usize) -> bool {
        y < self.size && self.dark[y * self.size + x]
    }

    /// Draw at the top left of `area`; nothing when it does not fit whole.
    pub fn render(&self, area: Rect, buf: &mut Buffer) -> bool {
        if area.width < self.width() || area.height < self.height() {
            return false;
        }
        let style = Style::default().fg(DARK).bg(LIGHT);
        for row in 0..self.height() {
            for column in 0..self.width() {
                let (x, y) = (usize::from(column), usize::from(row) * 2);
                let symbol = block(self.is_dark(x, y), self.is_dark(x, y + 1));
                if let Some(cell) = buf.cell_mut((area.x + column, area.y + row)) {
                    cell.set_symbol(symbol).set_style(style);
                }
            }
        }
        true
    }
}

/// Read the modules back from a drawn buffer: every cell drawn in the QR's colours is two
/// modules. The region is found by its colours, so a test checks what the screen shows.
#[cfg(test)]
pub fn modules_on_screen(buf: &Buffer) -> Option<(usize, Vec<bool>)> {
    let area = buf.area;
    let mut cells = Vec::new();
    for y in area.y..area.y + area.height {
        for x in area.x..area.x + area.width {
            let cell = buf.cell((x, y))?;
            if cell.fg == DARK && cell.bg == LIGHT {
                cells.push((x, y));
            }
        }
    }
    let left = cells.iter().map(|c| c.0).min()?;
    let top = cells.iter().map(|c| c.1).min()?;
    let width = usize::from(cells.iter().map(|c| c.0).max()? - left + 1);
    let rows = usize::from(cells.iter().map(|c| c.1).max()? - top + 1);
    // Two modules a row; the last row's lower half is padding when the size is odd.
    let size = width;
    if rows != size.div_ceil(2) {
        return None;
    }
    let mut dark = vec![false; size * size];
    for row in 0..rows {
        for column in 0..width {
            let x = left + u16::try_from(column).ok()?;
            let y = top + u16::try_from(row).ok()?;
            let cell = buf.cell((x, y))?;
            let (upper, lower) = match cell.symbol() {
                " " => (false, false),
                "▀" => (true, false),
                "▄" => (false, true),
                "█" => (true, true),
                _ => return None,
            };
            dark[row * 2 * size + column] = upper;
            if row * 2 + 1 < size {
                dark[(row * 2 + 1) * size + column] = lower;
            }
        }
    }
    Some((size, dark))
}

/// Decode modules as a camera would see them: scaled up to pixels and found by the detector
/// (finder patterns, quiet zone), not read off a grid that is already known. Round the code
/// the picture is dark, as a dark terminal is: only the drawn quiet zone separates them.
#[cfg(test)]
pub fn decode(size: usize, dark: &[bool]) -> Result<String, DecodeError> {
    const SCALE: usize = 4;
    let margin = 6 * SCALE;
    let pixels = size * SCALE + 2 * margin;
    let mut image = rqrr::PreparedImage::prepare_from_bitmap(pixels, pixels, |x, y| {
        let inside = |p: usize| p >= margin && p < margin + size * SCALE;
        !(inside(x) && inside(y)) || dark[(y - margin) / SCALE * size + (x - margin) / SCALE]
    });
    let grids = image.detect_grids();
    let grid = grids.first().ok_or(DecodeError::NotFound)?;
    grid.decode()
        .map(|(_, text)| text)
        .map_err(|e| DecodeError::Unreadable(e.to_string()))
}

/// Why a drawn code did not read.
#[cfg(test)]
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum DecodeError {
    #[error("no QR code found")]
    NotFound,
    #[error("{0}")]
    Unreadable(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn(data: &str) -> Buffer {
        let qr = QrImage::new(data).unwrap_or_else(|| panic!("no code"));
        let mut buf = Buffer::empty(Rect::new(0, 0, qr.width() + 6, qr.height() + 3));
        assert!(qr.render(Rect::new(3, 1, qr.width(), qr.height()), &mut buf));
        buf
    }

    #[test]
    fn a_drawn_code_decodes_to_its_text() {
        let url = "http://127.0.0.1:45678/device?user_code=BCDF-GHJK";
        let (size, dark) = modules_on_screen(&drawn(url)).unwrap_or_else(|| panic!("no QR"));
        assert_eq!(decode(size, &dark).as_deref(), Ok(url));
    }

    /// The decoder is a real check: one module flipped in the data area reads differently or
    /// not at all, and a code drawn upside down (rows swapped in each cell) does not read.
    #[test]
    fn a_code_drawn_wrong_does_not_decode_to_its_text() {
        let url = "http://127.0.0.1:45678/device?user_code=BCDF-GHJK";
        let (size, dark) = modules_on_screen(&drawn(url)).unwrap_or_else(|| panic!("no QR"));
        let mut swapped = vec![false; size * size];
        for y in 0..size {
            for x in 0..size {
                let partner = if y % 2 == 0 { y + 1 } else { y - 1 };
                if partner < size {
                    swapped[partner * size + x] = dark[y * size + x];
                }
            }
        }
        assert_ne!(decode(size, &swapped).as_deref(), Ok(url));
        // Every finder pattern gone: nothing to find.
        let blank = vec![false; size * size];
        assert_eq!(decode(size, &blank), Err(DecodeError::NotFound));
    }

    #[test]
    fn a_code_that_does_not_fit_is_not_drawn() {
        let qr = QrImage::new("http://x/device?user_code=A").unwrap_or_else(|| panic!("no code"));
        let mut buf = Buffer::empty(Rect::new(0, 0, qr.width() - 1, qr.height() + 5));
        assert!(!qr.render(buf.area, &mut buf));
        assert!(modules_on_screen(&buf).is_none());
    }
}
