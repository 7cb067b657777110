//! The one frame every modal is drawn in: a cleared, rounded, titled box centred over the
//! transcript, or (when the window is too small for a border) its rows alone. The scrolling
//! modals (a permission prompt, an MCP approval, `/mcp`) lay their rows out in it the same way:
//! a header, the body as far as it fits, a blank row, the legend, which stays.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Padding, Paragraph, Widget};

use super::theme::Theme;

/// A `width` × `height` rectangle centred in `area` (both at most `area`'s).
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let (width, height) = (width.min(area.width), height.min(area.height));
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

/// The modal border: rounded, a column of padding inside, titled.
pub fn border(title: Span<'static>, style: Style) -> Block<'static> {
    Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Rounded)
        .padding(Padding::horizontal(1))
        .border_style(style)
        .title(title)
}

/// A cleared box of `width` x `height` centred in `area` with `block` round it; its inside.
pub fn boxed(
    area: Rect,
    (width, height): (u16, u16),
    block: Block<'_>,
    buf: &mut Buffer,
    theme: &Theme,
) -> Rect {
    let rect = centered(area, width, height);
    theme.clear(rect, buf);
    let inner = block.inner(rect);
    block.render(rect, buf);
    inner
}

/// Where a scrolling modal goes in `area`: bordered when there is room, and how wide.
#[derive(Debug, Clone, Copy)]
pub struct Fit {
    bordered: bool,
    width: u16,
    /// Columns for its rows, inside border and padding.
    pub inner: usize,
}

impl Fit {
    /// The border goes first when space is short; at most `max_width` columns wide.
    pub fn new(area: Rect, max_width: u16) -> Fit {
        let bordered = area.height >= 6 && area.width >= 24;
        let width = if bordered {
            area.width
                .saturating_sub(4)
                .clamp(20, max_width)
                .min(area.width)
        } else {
            area.width
        };
        let pad = if bordered { 4 } else { 0 };
        Fit {
            bordered,
            width,
            inner: usize::from(width.saturating_sub(pad)).max(1),
        }
    }

    pub fn bordered(&self) -> bool {
        self.bordered
    }
}

/// Which rows a scrolling modal shows: its first body row and a page, kept between frames.
#[derive(Debug, Clone, Copy)]
pub struct Scroll {
    /// The first body row shown; `usize::MAX` is the end (or, with `follow`, that row).
    pub first: usize,
    /// The body rows visible at the last draw.
    pub page: usize,
}

impl Default for Scroll {
    fn default() -> Scroll {
        Scroll { first: 0, page: 1 }
    }
}

impl Scroll {
    /// Move by `rows` (clamped to the body when drawn).
    pub fn by(&mut self, rows: isize) {
        self.first = self.first.saturating_add_signed(rows);
    }

    /// A page's rows, for PgUp/PgDn.
    pub fn page(&self) -> isize {
        isize::try_from(self.page.max(1)).unwrap_or(isize::MAX)
    }
}

/// What a scrolling modal shows, its rows already wrapped to [`Fit::inner`].
pub struct Rows<'a> {
    /// Above the body while the legend leaves room for it.
    pub header: Option<Line<'static>>,
    pub body: &'a [Line<'static>],
    /// Always shown, below the body and a blank row.
    pub legend: Vec<Line<'static>>,
    /// When `first` is `usize::MAX`: this body row is brought into view.
    pub follow: Option<usize>,
}

/// The frame's border around a scrolling modal's rows.
pub struct Border {
    pub title: Span<'static>,
    /// Right-aligned on the top border.
    pub keys: Option<Line<'static>>,
    pub style: Style,
    /// What scrolls the body, said beside the rows shown when it does not fit.
    pub scroll_keys: &'static str,
}

/// Draw `rows` in `fit`'s frame centred in `area`, scrolled by `scroll`.
pub fn draw(
    (area, buf, theme): (Rect, &mut Buffer, &Theme),
    fit: Fit,
    rows: Rows<'_>,
    border: Border,
    scroll: &mut Scroll,
) {
    let Rows {
        header,
        body,
        legend,
        follow,
    } = rows;
    let frame = if fit.bordered { 2 } else { 0 };
    let room = usize::from(area.height).saturating_sub(frame).max(1);
    let legend_rows = legend.len().min(room);
    let header_rows = usize::from(header.is_some() && room > legend_rows);
    // A blank row between body and legend, when there is a legend and a border.
    let gap = usize::from(fit.bordered && !legend.is_empty());
    let visible = body
        .len()
        .min(room.saturating_sub(legend_rows + header_rows + gap));
    let max_scroll = body.len() - visible;
    if let Some(row) = follow
        && scroll.first == usize::MAX
    {
        scroll.first = row.min(max_scroll);
    }
    scroll.first = scroll.first.min(max_scroll);
    scroll.page = visible.max(1);
    let mut shown: Vec<Line<'static>> = Vec::new();
    if let Some(header) = header.filter(|_| header_rows > 0) {
        shown.push(header);
    }
    shown.extend(body.iter().skip(scroll.first).take(visible).cloned());
    if gap > 0 && room > shown.len() + legend_rows {
        shown.push(Line::default());
    }
    shown.extend(legend.into_iter().take(legend_rows));
    let height = u16::try_from(shown.len() + frame)
        .unwrap_or(u16::MAX)
        .min(area.height);
    if !fit.bordered {
        let rect = centered(area, fit.width, height);
        theme.clear(rect, buf);
        Paragraph::new(shown).render(rect, buf);
        return;
    }
    let Border {
        title,
        keys,
        style,
        scroll_keys,
    } = border;
    let mut block = self::border(title, style);
    if let Some(keys) = keys {
        block = block.title(keys.right_aligned());
    }
    if max_scroll > 0 {
        block = block.title_bottom(Span::styled(
            format!(
                " {}-{} of {} · {scroll_keys} ",
                scroll.first + 1,
                scroll.first + visible,
                body.len()
            ),
            theme.dim(),
        ));
    }
    let inner = boxed(area, (fit.width, height), block, buf, theme);
    Paragraph::new(shown).render(inner, buf);
}
