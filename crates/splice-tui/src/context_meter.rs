//! The status line's context meter: how full the model's context window is, from the prompt
//! tokens the provider reported for the session's last request.

use splice_core::settings::RunSettings;

/// The share of the window at which the meter turns to the warning colour: where a run
/// compacts on its own.
pub const WARN_AT_PERCENT: u64 = splice_core::session::COMPACT_AT_PERCENT;

/// The share of `window` that `prompt_tokens` fill, in whole percent, rounded to the nearest;
/// never 0 for a prompt that holds anything, and not capped: past 100 the conversation no
/// longer fits (after `/model` switched to a smaller window, say) and the meter says so.
pub fn percent(prompt_tokens: u64, window: u64) -> u64 {
    if prompt_tokens == 0 {
        return 0;
    }
    let window = u128::from(window.max(1));
    let share = (u128::from(prompt_tokens) * 100 + window / 2) / window;
    u64::try_from(share).unwrap_or(u64::MAX).max(1)
}

/// `ctx 63%`, or nothing while the fill is unknown (before the session's first request).
pub fn text(prompt_tokens: Option<u64>, window: u64) -> Option<(String, u64)> {
    let percent = percent(prompt_tokens?, window);
    Some((format!("ctx {percent}%"), percent))
}

/// The window of the model the session runs now (it follows `/model`), from the price table
/// the runs use (the built-in data with the user's pricing file over it), or its default.
pub fn window(settings: &RunSettings) -> u64 {
    splice_core::session::context_window(settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use splice_core::provider::pricing::PriceTable;

    #[test]
    fn the_share_is_rounded_to_the_nearest_percent() {
        assert_eq!(percent(63_000, 100_000), 63);
        assert_eq!(percent(63_499, 100_000), 63);
        assert_eq!(percent(63_500, 100_000), 64);
        assert_eq!(percent(128_000, 128_000), 100);
        // A small prompt is never shown as empty.
        assert_eq!(percent(10, 200_000), 1);
        assert_eq!(percent(0, 200_000), 0);
    }

    #[test]
    fn past_the_window_the_meter_shows_the_real_share() {
        assert_eq!(percent(150_000, 100_000), 150);
        assert_eq!(text(Some(40_000), 32_000), Some(("ctx 125%".into(), 125)));
        // A window of 0 cannot divide by zero.
        assert_eq!(percent(5, 0), 500);
        assert_eq!(percent(u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn unknown_fill_shows_nothing_and_unknown_models_use_the_default_window() {
        assert_eq!(text(None, 128_000), None);
        let mut settings = crate::snapshot_tests::settings();
        settings.pricing = PriceTable::builtin();
        assert_eq!(window(&settings), 1_047_576);
        settings.provider.api_model = "no-such-model".into();
        assert_eq!(
            window(&settings),
            splice_core::provider::pricing::DEFAULT_CONTEXT_WINDOW
        );
    }
}
