use super::*;

fn nested(levels: usize) -> String {
    format!(
        "<html><body>{}deep{}</body></html>",
        "<div>".repeat(levels),
        "</div>".repeat(levels)
    )
}

/// (html, limit) → refused? Markup that the parser closes by itself must
/// not count as nesting; markup it keeps open must.
#[test]
fn the_raw_scan_approximates_the_parser() {
    let rows = |n: usize, row: &str| row.repeat(n);
    let cases: Vec<(String, bool)> = vec![
        (nested(40), false),
        (nested(60), true),
        // Siblings, closed properly.
        (rows(500, "<div><p>a</p><span>b</span></div>"), false),
        // Implied end tags: unclosed paragraphs, items, rows and cells.
        (rows(500, "<p>para"), false),
        (format!("<ul>{}</ul>", rows(500, "<li><p>item")), false),
        (
            format!("<table>{}</table>", rows(500, "<tr><td>a<td>b")),
            false,
        ),
        (
            format!("<select>{}</select>", rows(500, "<option>o")),
            false,
        ),
        (rows(500, "<dl><dt>t<dd>d</dl>"), false),
        // Tables closed with their cells still open.
        (rows(500, "<table><tr><td>cell</table>"), false),
        // Void elements, self-closing SVG, comments, raw text.
        (rows(500, "<br><img src=x><input>"), false),
        (format!("<svg>{}</svg>", rows(500, "<path d='M0'/>")), false),
        (
            rows(500, "<!-- <div> --><script>if (a<b) '<div>'</script>"),
            false,
        ),
        (rows(500, "<a title='x>y'>t</a>"), false),
        // `<div/>` opens a div in HTML.
        (rows(60, "<div/>"), true),
        // Stray end tags do not close what they do not name.
        (rows(60, "<div></span>"), true),
        // An end tag does not close past a table.
        (rows(30, "<div><table></div>"), true),
        // Nested tables.
        (rows(30, "<table><tr><td>"), true),
    ];
    for (html, refused) in cases {
        let got = check_source_with(&html, 50, 100_000);
        assert_eq!(
            got.is_err(),
            refused,
            "{}…: {got:?}",
            &html[..html.len().min(60)]
        );
    }
}

#[test]
fn the_raw_scan_counts_elements() {
    let html = "<b>x</b>".repeat(1_001);
    assert_eq!(
        check_source_with(&html, 50, 1_000),
        Err(ConvertError::TooManyElements { max: 1_000 })
    );
    assert_eq!(check_source_with(&html, 50, 2_000), Ok(()));
}

#[test]
fn deep_pages_are_refused_before_parsing() {
    for levels in [30_000, 100_000] {
        assert_eq!(
            check_source(&nested(levels)),
            Err(ConvertError::TooDeep { max: MAX_DEPTH })
        );
    }
    assert_eq!(check_source(&nested(MAX_DEPTH - 10)), Ok(()));
}

/// What the scan misses, the parsed tree's depth catches: nested tables
/// get implied `tbody` and `tr` levels.
#[test]
fn the_parsed_tree_is_measured_exactly() {
    let doc = Document::from(nested(100).as_str());
    // document > html > body > 100 divs > text
    assert_eq!(check_tree_with(&doc, 103), Ok(()));
    assert_eq!(
        check_tree_with(&doc, 102),
        Err(ConvertError::TooDeep { max: 102 })
    );
    let tables = "<table><td>".repeat(200);
    assert_eq!(check_source(&tables), Ok(()), "400 tags deep");
    let doc = Document::from(tables.as_str());
    assert!(check_tree(&doc).is_err(), "800 levels once parsed");
}

/// The documentation pages of the benchmark corpus pass both checks.
#[test]
fn real_pages_pass() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/corpus");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let html = std::fs::read_to_string(&path).unwrap();
        assert_eq!(check_source(&html), Ok(()), "{path:?}");
        assert_eq!(
            check_tree(&Document::from(html.as_str())),
            Ok(()),
            "{path:?}"
        );
        // With room to spare.
        assert_eq!(check_source_with(&html, 100, 100_000), Ok(()), "{path:?}");
        assert_eq!(
            check_tree_with(&Document::from(html.as_str()), 64),
            Ok(()),
            "{path:?}"
        );
    }
}
