//! The page: one HTML document with everything inside it, the charting
//! library (uPlot, vendored under `assets/`, see its README), our script
//! and styles, and the model as JSON. A report opens from a file with no
//! network (its Content-Security-Policy allows no fetch at all); the
//! dashboard is the same page with an empty model that fills from
//! `/events` of the server that served it.

use serde_json::Value;

/// The vendored uPlot release (assets/README.md).
pub const UPLOT_VERSION: &str = "1.6.32";

const UPLOT_JS: &str = include_str!("../assets/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../assets/uPlot.min.css");
const PAGE_JS: &str = include_str!("../assets/page.js");
const PAGE_CSS: &str = include_str!("../assets/page.css");

/// Text for an HTML element's content or a quoted attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JSON inside a `<script>` element: no `<` at all, so that no string
/// in it (a request name, a check) can close the element.
fn script_json(model: &Value) -> String {
    model.to_string().replace('<', "\\u003c")
}

/// The page for `model` (see `model.rs`).
pub fn page(model: &Value) -> String {
    let title = model["title"].as_str().unwrap_or("wload");
    let live = model["live"].as_bool().unwrap_or(false);
    // The dashboard reads its own server's events; a report fetches
    // nothing.
    let connect = if live { "'self'" } else { "'none'" };
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src {connect}\">\n\
         <meta name=\"generator\" content=\"wload {version}, uPlot {UPLOT_VERSION}\">\n\
         <title>{title} · wload</title>\n<style>{UPLOT_CSS}\n{PAGE_CSS}</style></head>\n\
         <body><main id=\"app\"></main>\n\
         <script id=\"wload-model\" type=\"application/json\">{json}</script>\n\
         <script>{UPLOT_JS}</script>\n<script>{PAGE_JS}</script>\n</body></html>\n",
        version = env!("CARGO_PKG_VERSION"),
        title = escape(title),
        json = script_json(model),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_model_cannot_close_its_script_element() {
        let page =
            page(&json!({ "title": "a <b>", "requests": [{ "name": "</script><script>x" }] }));
        assert!(!page.contains("</script><script>x"));
        assert!(page.contains("a &lt;b&gt; · wload"));
        let start = page.find("type=\"application/json\">").unwrap() + 24;
        let end = start + page[start..].find("</script>").unwrap();
        let back: Value = serde_json::from_str(&page[start..end]).unwrap();
        assert_eq!(back["requests"][0]["name"], "</script><script>x");
    }

    #[test]
    fn a_report_may_fetch_nothing_and_the_dashboard_only_its_server() {
        assert!(page(&json!({ "title": "t" })).contains("connect-src 'none'"));
        assert!(page(&json!({ "live": true })).contains("connect-src 'self'"));
    }
}
