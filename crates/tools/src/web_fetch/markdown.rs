//! HTML to Markdown for the model (R-WFF-1, R-PF-4). The page is parsed
//! once (dom_query); its main content is the author's own landmark when
//! there is exactly one (`<main>`, `role="main"`, or a single `<article>`),
//! else what readability (dom_smoothie) finds; either is written as
//! Markdown (headings, links, lists, GFM tables, fenced code) straight from
//! that parsed tree. When neither finds anything, htmd converts the whole
//! page. Scripts, styles, embeds and page furniture (navigation, footers,
//! asides, forms) are dropped throughout.

use std::sync::LazyLock;

use dom_query::{Document, Selection};
use htmd::HtmlToMarkdown;

/// Elements whose content never helps the model, and page furniture:
/// dropped wherever they are.
const DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "iframe", "svg", "canvas", "object", "embed", "nav",
    "footer", "aside", "form", "button", "menu", "dialog", "head", "meta", "link",
];

/// Page furniture as a selector, removed before readability scores.
const FURNITURE: &str = "nav, footer, aside, form, button, menu, dialog";

/// The whole-page fallback; without an article, the page's header (site
/// banner, menus) goes too.
static WHOLE_PAGE: LazyLock<HtmlToMarkdown> = LazyLock::new(|| {
    let tags: Vec<&str> = DROPPED.iter().chain(&["header"]).copied().collect();
    HtmlToMarkdown::builder().skip_tags(tags).build()
});

/// How the main content was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extraction {
    /// The page's single `<main>`, `role="main"` or `<article>`.
    Landmark,
    /// Readability scoring (dom_smoothie).
    Readability,
    /// Neither found anything: the whole body.
    WholePage,
}

/// A page as Markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    pub title: Option<String>,
    pub markdown: String,
    pub extraction: Extraction,
}

/// Convert an HTML page; `url` (absolute) resolves relative links.
pub fn html_to_markdown(html: &str, url: Option<&str>) -> Converted {
    let doc = Document::from(html);
    let title = Some(doc.select("head title").text().trim().to_owned()).filter(|t| !t.is_empty());
    let base = url.and_then(|u| url::Url::parse(u).ok());
    if let Some(main) = landmark(&doc) {
        if let Some(base) = &base {
            absolutize(&main, base);
        }
        let markdown = main
            .nodes()
            .first()
            .map(|node| finish(&node.md(Some(DROPPED)), title.as_deref()))
            .unwrap_or_default();
        if !markdown.is_empty() {
            return Converted {
                title,
                markdown,
                extraction: Extraction::Landmark,
            };
        }
    }
    // Readability keeps what scores well; furniture must not get the chance.
    doc.select(FURNITURE).remove();
    let readable = base.as_ref().map(url::Url::as_str);
    let config = dom_smoothie::Config {
        text_mode: dom_smoothie::TextMode::Markdown,
        ..Default::default()
    };
    if let Ok(mut readability) =
        dom_smoothie::Readability::with_document(doc, readable, Some(config))
        && let Ok(article) = readability.parse()
    {
        let title = Some(article.title.trim().to_owned())
            .filter(|t| !t.is_empty())
            .or(title.clone());
        let markdown = finish(&article.text_content, title.as_deref());
        if !markdown.is_empty() {
            return Converted {
                title,
                markdown,
                extraction: Extraction::Readability,
            };
        }
    }
    Converted {
        markdown: finish(&WHOLE_PAGE.convert(html).unwrap_or_default(), None),
        title,
        extraction: Extraction::WholePage,
    }
}

/// The author's main-content landmark, when there is exactly one.
fn landmark(doc: &Document) -> Option<Selection<'_>> {
    ["main", "[role=main]", "article"]
        .into_iter()
        .map(|sel| doc.select(sel))
        .find(|found| found.length() == 1)
}

/// Make links and images absolute, as readability does.
fn absolutize(root: &Selection<'_>, base: &url::Url) {
    for (selector, attr) in [("a[href]", "href"), ("img[src]", "src")] {
        for node in root.select(selector).iter() {
            if let Some(value) = node.attr(attr)
                && let Ok(absolute) = base.join(&value)
            {
                node.set_attr(attr, absolute.as_str());
            }
        }
    }
}

/// Markdown tidied, with `# title` on top if it has no heading.
fn finish(markdown: &str, title: Option<&str>) -> String {
    let markdown = tidy(markdown);
    match title {
        Some(t) if !markdown.is_empty() && !markdown.starts_with('#') => {
            format!("# {t}\n\n{markdown}")
        }
        _ => markdown,
    }
}

/// Collapse runs of blank lines, trim trailing spaces.
fn tidy(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut blank = 0;
    for line in markdown.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"<!doctype html><html><head><title>Ferry times</title>
<style>body { color: red }</style><script>var tracking = 1;</script></head>
<body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/about">About us</a></li><li><a href="/shop">Shop</a></li></ul></nav>
<header><div class="menu">Main menu Sign in Register</div></header>
<main><article>
<h1>Ferry timetable for the northern islands</h1>
<p>The ferries to the northern islands run every day of the year. In winter the
timetable is reduced and crossings may be cancelled in storms; check the notices
before travelling. Tickets can be bought on board or at the harbour office.</p>
<p>The crossing takes about forty minutes in good weather. Cars must arrive at least
twenty minutes before departure; foot passengers ten minutes.</p>
<h2>Departures</h2>
<table><thead><tr><th>Port</th><th>Departure</th><th>Arrival</th></tr></thead>
<tbody><tr><td>Northport</td><td>08:15</td><td>08:55</td></tr>
<tr><td>Eastbay</td><td>12:30</td><td>13:10</td></tr></tbody></table>
<h2>Checking the service</h2>
<p>Use the status command of the harbour terminal, which prints the current state of every
crossing and whether it is delayed.</p>
<pre><code>harbour status --route north
</code></pre>
<p>See the <a href="/notices">service notices</a> for planned changes.</p>
</article></main>
<footer>Copyright the ferry company. Cookie settings. Privacy.</footer>
</body></html>"#;

    #[test]
    fn main_content_with_headings_tables_and_code() {
        let c = html_to_markdown(PAGE, Some("https://ferries.example/timetable"));
        assert_eq!(c.extraction, Extraction::Landmark, "{c:?}");
        let md = &c.markdown;
        assert!(md.contains("## Departures"), "{md}");
        assert!(
            md.starts_with("# Ferry timetable for the northern islands"),
            "{md}"
        );
        let rows: Vec<Vec<&str>> = md
            .lines()
            .filter(|l| l.starts_with('|'))
            .map(|l| {
                l.split('|')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .collect()
            })
            .collect();
        assert_eq!(rows[0], ["Port", "Departure", "Arrival"], "{md}");
        assert!(rows[1][0].starts_with("---"), "GFM delimiter row: {md}");
        assert_eq!(rows[2], ["Northport", "08:15", "08:55"]);
        assert!(
            md.contains("```\nharbour status --route north\n```"),
            "{md}"
        );
        assert!(
            md.contains("(https://ferries.example/notices)"),
            "relative links resolved: {md}"
        );
        for noise in [
            "About us",
            "Sign in",
            "Cookie settings",
            "tracking",
            "color: red",
        ] {
            assert!(!md.contains(noise), "`{noise}` kept: {md}");
        }
    }

    #[test]
    fn a_page_without_an_article_is_converted_without_furniture() {
        let html = "<html><body><nav>Home | Shop</nav><div><h3>Opening hours</h3><p>Mon–Fri 9–17</p></div><script>x()</script></body></html>";
        let c = html_to_markdown(html, None);
        assert!(c.markdown.contains("### Opening hours"), "{c:?}");
        assert!(c.markdown.contains("Mon–Fri 9–17"));
        assert!(!c.markdown.contains("Shop"), "{c:?}");
        assert!(!c.markdown.contains("x()"));
    }

    /// No landmark: readability picks the story out of a div soup.
    #[test]
    fn readability_finds_the_story_without_landmarks() {
        let para = "The harbour council met on Tuesday to decide the new winter timetable, which keeps two daily crossings and adds a late boat on Fridays. Residents asked for earlier departures, and the council agreed to review the request in spring after counting passengers. ";
        let html = format!(
            r#"<html><head><title>Council news</title></head><body>
<div class="sidebar"><a href="/a">Weather</a> <a href="/b">Tides</a> <a href="/c">Events</a> <a href="/d">Contact</a></div>
<div class="content"><div class="story"><h2>Winter timetable agreed</h2><p>{para}</p><p>{para}</p><p>{para}</p></div></div>
<div class="comments">Share on social media · Print · Email</div>
</body></html>"#
        );
        let c = html_to_markdown(&html, Some("https://news.example/council"));
        assert_eq!(c.extraction, Extraction::Readability, "{c:?}");
        assert!(c.markdown.contains("Winter timetable agreed"), "{c:?}");
        assert!(c.markdown.contains("late boat on Fridays"));
        assert!(!c.markdown.contains("Tides"), "{c:?}");
    }
}
