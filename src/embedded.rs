//! The run records an HTML report carries: one `<script type="application/json">` block with a
//! fixed id. The report (src/report) writes it; the store's import (src/store) finds it again, so
//! `osgauge results import report.html` reads the records back. Both sides use these names, so
//! neither imports the other.

/// Id of the embedded JSON block.
pub const EMBED_ID: &str = "osgauge-runs";
/// The block's opening tag, as the report writes it.
const EMBED_OPEN: &str = "<script type=\"application/json\" id=\"osgauge-runs\">";

/// The JSON embedded in a report (see the module documentation).
pub fn extract_embedded(html: &str) -> Option<&str> {
    let start = html.find(EMBED_OPEN)? + EMBED_OPEN.len();
    let len = html[start..].find("</script>")?;
    Some(&html[start..start + len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_open_tag_names_the_id() {
        assert!(EMBED_OPEN.contains(&format!("id=\"{EMBED_ID}\"")));
        let page = format!("<p>x</p>{EMBED_OPEN}[1]</script>");
        assert_eq!(extract_embedded(&page), Some("[1]"));
        assert_eq!(extract_embedded("<p>no block</p>"), None);
    }
}
