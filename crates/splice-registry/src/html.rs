//! The page at the verification URI: sign in with the name and password set by `registry user
//! add`, then approve or deny the code. Everything shown is escaped.

use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

fn escape(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&#39;".to_string(),
            c => c.to_string(),
        })
        .collect()
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body><h1>{title}</h1>\n{body}\n</body></html>\n"
    )
}

pub fn form(user_code: &str) -> String {
    let code = escape(user_code);
    page(
        "Sign in a device to Splice",
        &format!(
            "<form method=\"post\" action=\"/device\">\
             <p><label>User code <input name=\"user_code\" value=\"{code}\" required></label></p>\
             <p><label>User name <input name=\"user\" autocomplete=\"username\" required></label></p>\
             <p><label>Password <input name=\"password\" type=\"password\" autocomplete=\"current-password\" required></label></p>\
             <p><button name=\"action\" value=\"approve\">Approve</button> \
             <button name=\"action\" value=\"deny\">Deny</button></p></form>"
        ),
    )
}

/// Never framed by another site (no clickjacking of Approve), no script, forms post here only.
const HEADERS: [(header::HeaderName, &str); 2] = [
    (header::X_FRAME_OPTIONS, "DENY"),
    (
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
];

pub fn form_page(user_code: &str) -> Response {
    (HEADERS, Html(form(user_code))).into_response()
}

pub fn result(status: StatusCode, message: &str) -> Response {
    (
        status,
        HEADERS,
        Html(page(
            "Splice device sign-in",
            &format!("<p>{}</p>", escape(message)),
        )),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_user_code_is_escaped() {
        let html = super::form("\"><script>");
        assert!(!html.contains("<script>"));
        assert!(html.contains("&quot;&gt;&lt;script&gt;"));
    }
}
