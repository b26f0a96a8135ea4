//! HTML to Markdown for the model (R-WFF-1, R-PF-4). The page is parsed
//! once (dom_query); its main content is the author's own landmark when
//! there is exactly one (`<main>`, `role="main"`, or a single `<article>`),
//! else what readability (dom_smoothie) finds; either is written as
//! Markdown (headings, links, lists, GFM tables, fenced code) straight from
//! that parsed tree. When neither finds anything, htmd converts the whole
//! page. Scripts, styles, embeds and page furniture (navigation, footers,
//! asides, forms) are dropped throughout. A page nested too deeply, or with
//! too many elements, is refused before the converters see it
//! ([`limits`](super::limits)); they recurse per level of the tree.

use std::sync::LazyLock;

use dom_query::{Document, Selection};
use htmd::HtmlToMarkdown;

use super::limits::{ConvertError, check_source, check_tree};

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

/// Convert an HTML page; `url` (absolute) resolves relative links. The
/// recursion of the converters is bounded by the checks of
/// [`limits`](super::limits), which refuse the page first.
pub fn html_to_markdown(html: &str, url: Option<&str>) -> Result<Converted, ConvertError> {
    check_source(html)?;
    let doc = Document::from(html);
    check_tree(&doc)?;
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
            return Ok(Converted {
                title,
                markdown,
                extraction: Extraction::Landmark,
            });
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
            return Ok(Converted {
                title,
                markdown,
                extraction: Extraction::Readability,
            });
        }
    }
    Ok(Converted {
        markdown: finish(&WHOLE_PAGE.convert(html).unwrap_or_default(), None),
        title,
        extraction: Extraction::WholePage,
    })
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
#[path = "markdown_tests.rs"]
mod tests;
