//! The device-code login modal in the whole screen, drawn with `TestBackend`: each state as a
//! snapshot, and the QR code read back off the drawn cells and decoded.

use std::time::{Duration, Instant};

use insta::assert_snapshot;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;

use super::app::App;
use super::device_login::DeviceLoginModal;
use super::qr::{decode, modules_on_screen};
use super::snapshot_tests::app;
use splice_core::device_login::{DeviceLogin, DeviceLoginEvent, DeviceLoginSender};
use splice_core::session::{LoginTarget, Op, SessionEvent};

const LINK: &str = "http://127.0.0.1:7878/device";
const COMPLETE: &str = "http://127.0.0.1:7878/device?user_code=BCDF-GHJK";

fn draw(app: &mut App, width: u16, height: u16) -> (String, Buffer) {
    let mut terminal =
        Terminal::new(TestBackend::new(width, height)).unwrap_or_else(|e| panic!("terminal: {e}"));
    terminal
        .draw(|frame| app.render(frame))
        .unwrap_or_else(|e| panic!("draw: {e}"));
    let buffer = terminal.backend().buffer().clone();
    (terminal.backend().to_string(), buffer)
}

/// A login's events, fed by hand where the session would report them.
struct Feed {
    sender: DeviceLoginSender,
    login: DeviceLogin,
}

impl Feed {
    fn new() -> Feed {
        let (sender, login) = DeviceLogin::channel();
        Feed { sender, login }
    }

    fn send(&self, event: DeviceLoginEvent) {
        self.sender.send(event);
    }
}

/// An app with `/login`'s modal open, as the session's `LoginStarted` opens it; the clock at
/// `t0`.
fn opened(t0: Instant) -> (App, Feed) {
    let mut app = app();
    app.set_now(t0);
    app.on_session(SessionEvent::LoginStarted {
        service: "registry http://127.0.0.1:7878".into(),
    });
    (app, Feed::new())
}

/// Deliver what the producer sent, as the session and the event loop do.
fn deliver(app: &mut App, feed: &mut Feed) {
    while let Some(event) = feed.login.try_next() {
        app.on_session(SessionEvent::Login(Some(event)));
    }
}

fn waiting(t0: Instant) -> App {
    let (mut app, mut events) = opened(t0);
    events.send(DeviceLoginEvent::Code {
        user_code: "BCDF-GHJK".into(),
        verification_uri: LINK.into(),
        verification_uri_complete: COMPLETE.into(),
        expires_in: 600,
    });
    deliver(&mut app, &mut events);
    app
}

fn ended(event: DeviceLoginEvent) -> App {
    let t0 = Instant::now();
    let (mut app, mut events) = opened(t0);
    events.send(DeviceLoginEvent::Code {
        user_code: "BCDF-GHJK".into(),
        verification_uri: LINK.into(),
        verification_uri_complete: COMPLETE.into(),
        expires_in: 600,
    });
    events.send(event);
    deliver(&mut app, &mut events);
    app
}

#[test]
fn login_waiting_with_qr_and_countdown() {
    let t0 = Instant::now();
    let mut app = waiting(t0);
    app.set_now(t0 + Duration::from_secs(75));
    let (screen, buffer) = draw(&mut app, 80, 24);
    assert!(
        screen.contains("Sign in to registry http://127.0.0.1:7878"),
        "{screen}"
    );
    assert!(screen.contains("B C D F - G H J K"), "{screen}");
    assert!(screen.contains(LINK), "{screen}");
    assert!(screen.contains("Expires in 08:45"), "{screen}");
    let (size, dark) = modules_on_screen(&buffer).unwrap_or_else(|| panic!("no QR:\n{screen}"));
    assert_eq!(decode(size, &dark).as_deref(), Ok(COMPLETE));
    assert_snapshot!(screen);
}

/// A window too narrow for the code beside the text puts it under the text, whole.
#[test]
fn login_waiting_tall_and_narrow_puts_the_qr_under_the_text() {
    let t0 = Instant::now();
    let mut app = waiting(t0);
    let (screen, buffer) = draw(&mut app, 50, 40);
    assert!(screen.contains("Expires in 10:00"), "{screen}");
    let (size, dark) = modules_on_screen(&buffer).unwrap_or_else(|| panic!("no QR:\n{screen}"));
    assert_eq!(decode(size, &dark).as_deref(), Ok(COMPLETE));
}

#[test]
fn login_waiting_on_a_small_terminal_shows_no_qr() {
    let t0 = Instant::now();
    let mut app = waiting(t0);
    app.set_now(t0 + Duration::from_secs(599));
    let (screen, buffer) = draw(&mut app, 60, 16);
    assert!(
        modules_on_screen(&buffer).is_none(),
        "a clipped QR:\n{screen}"
    );
    assert!(!screen.contains('▀') && !screen.contains('▄'), "{screen}");
    assert!(screen.contains("B C D F - G H J K"), "{screen}");
    assert!(screen.contains(LINK), "{screen}");
    assert!(screen.contains("Expires in 00:01"), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn login_signed_in() {
    let mut app = ended(DeviceLoginEvent::SignedIn {
        account: "alice".into(),
    });
    let (screen, buffer) = draw(&mut app, 80, 24);
    assert!(screen.contains("Signed in as alice"), "{screen}");
    assert!(modules_on_screen(&buffer).is_none(), "{screen}");
    assert_snapshot!(screen);
}

#[test]
fn login_expired() {
    let mut app = ended(splice_core::registry_client::login::failure(
        &splice_core::registry_client::RegistryError::LoginExpired,
    ));
    let (screen, _) = draw(&mut app, 80, 24);
    assert!(
        screen.contains("The code expired before it was approved."),
        "{screen}"
    );
    assert_snapshot!(screen);
}

#[test]
fn login_denied_with_hint() {
    let mut app = ended(splice_core::registry_client::login::failure(
        &splice_core::registry_client::RegistryError::LoginDenied,
    ));
    let (screen, _) = draw(&mut app, 80, 24);
    assert!(screen.contains("The login was denied."), "{screen}");
    assert!(
        screen.contains("Run /login again if that was a mistake."),
        "{screen}"
    );
    assert_snapshot!(screen);
}

/// The countdown reaches zero before the producer says so: the modal says the code expired.
#[test]
fn login_countdown_at_zero_says_expired() {
    let t0 = Instant::now();
    let mut app = waiting(t0);
    app.on_tick(t0 + Duration::from_secs(600));
    assert!(app.is_dirty());
    let (screen, _) = draw(&mut app, 80, 24);
    assert!(screen.contains("The code has expired"), "{screen}");
}

/// While the modal is open keys are its own: typing does not reach the composer, and Esc
/// closes it and drops the login.
#[test]
fn keys_go_to_the_login_modal_and_esc_cancels() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let t0 = Instant::now();
    let mut app = waiting(t0);
    app.on_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
    assert_eq!(app.composer().text(), "");
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert!(!app.modals().has(super::modals::Kind::Login));
    let (screen, _) = draw(&mut app, 80, 24);
    assert!(screen.contains("cancelled"), "{screen}");
    assert!(!screen.contains("B C D F"), "{screen}");
}

/// Text from the server cannot drive the terminal: escape sequences never reach the screen.
#[test]
fn hostile_server_text_is_stripped() {
    let mut app = ended(DeviceLoginEvent::Failed {
        message: "denied\u{1b}]52;c;SGVsbG8=\u{7} by\u{1b}[2J admin".into(),
        hint: Some("try \u{1b}[31magain".into()),
    });
    let (screen, _) = draw(&mut app, 80, 24);
    assert!(screen.contains("denied by admin"), "{screen}");
    assert!(screen.contains("try again"), "{screen}");
    assert!(!screen.contains('\u{1b}'), "{screen}");
}

/// A run going on when the modal opens keeps streaming into the transcript underneath, and the
/// status line (not covered) shows it running.
#[test]
fn a_run_keeps_streaming_under_the_login_modal() {
    use crate::cells::Cell;
    use splice_core::protocol::Event;
    let t0 = Instant::now();
    let mut app = app();
    app.set_now(t0);
    app.submit("Explain the parser".into());
    let mut events = Feed::new();
    app.open_login(DeviceLoginModal::new("registry http://127.0.0.1:7878"));
    events.send(DeviceLoginEvent::Code {
        user_code: "BCDF-GHJK".into(),
        verification_uri: LINK.into(),
        verification_uri_complete: COMPLETE.into(),
        expires_in: 600,
    });
    deliver(&mut app, &mut events);
    app.on_event("run_1", Event::text("The parser reads "));
    app.on_event("run_1", Event::text("one line at a time."));
    assert!(
        matches!(app.transcript().last(), Some(Cell::Assistant(text)) if text == "The parser reads one line at a time."),
        "{:?}",
        app.transcript().last()
    );
    let (screen, _) = draw(&mut app, 80, 24);
    assert!(screen.contains("Waiting for approval"), "{screen}");
    let status = screen.lines().last().unwrap_or_default();
    assert!(status.contains("running"), "{screen}");
}

/// `/login URL` asks the session, which checks the URL as `splice login --registry` does:
/// plain http to another host is refused with the reason, and no modal opens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_with_an_unsafe_url_is_refused_with_the_reason() {
    let mut app = app();
    app.submit("/login http://registry.example.com".into());
    let (reports, reported) = std::sync::mpsc::channel();
    let session = splice_core::session::Session::spawn(
        app.settings().clone(),
        splice_core::session::Frontend {
            sinks: vec![],
            reports: vec![std::sync::Arc::new(super::snapshot_tests::SessionReports(
                reports,
            ))],
            asks: false,
            turn: splice_core::session::execute_turn(),
            mcp: splice_core::session::McpScope::PerTurn,
        },
    );
    for op in app.take_ops() {
        assert!(
            matches!(&op, Op::Login(LoginTarget::Registry(Some(url))) if url == "http://registry.example.com"),
        );
        session.submit(op);
    }
    let event = reported
        .recv_timeout(Duration::from_secs(10))
        .expect("recv timeout");
    app.on_session(event);
    assert!(!app.modals().has(super::modals::Kind::Login));
    let (screen, _) = draw(&mut app, 100, 20);
    assert!(screen.contains("must use https://"), "{screen}");
}
