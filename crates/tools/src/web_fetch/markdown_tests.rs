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
    let c = html_to_markdown(PAGE, Some("https://ferries.example/timetable")).unwrap();
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
    let c = html_to_markdown(html, None).unwrap();
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
    let c = html_to_markdown(&html, Some("https://news.example/council")).unwrap();
    assert_eq!(c.extraction, Extraction::Readability, "{c:?}");
    assert!(c.markdown.contains("Winter timetable agreed"), "{c:?}");
    assert!(c.markdown.contains("late boat on Fridays"));
    assert!(!c.markdown.contains("Tides"), "{c:?}");
}

/// 30,000 nested `<div>` overflowed the stack (and aborted the process);
/// 10,000 took 13 s. Now refused at once, with a message for the model.
#[test]
fn deeply_nested_pages_are_refused_quickly() {
    for levels in [30_000, 100_000] {
        let html = format!(
            "<html><body>{}deep{}</body></html>",
            "<div>".repeat(levels),
            "</div>".repeat(levels)
        );
        let started = std::time::Instant::now();
        let err = html_to_markdown(&html, None).unwrap_err();
        assert!(
            err.to_string()
                .contains("the page is too deeply nested to convert"),
            "{err}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "{levels} levels: {:?}",
            started.elapsed()
        );
    }
}

/// The 1 MB page of the benchmark corpus still converts, with and without
/// its landmark.
#[test]
fn a_1mb_page_still_converts() {
    let html = include_str!("../../benches/corpus/core-primitive-i128.html");
    let c = html_to_markdown(html, Some("https://doc.rust-lang.org/")).unwrap();
    assert_eq!(c.extraction, Extraction::Landmark);
    assert!(c.markdown.len() > 500_000, "{}", c.markdown.len());
    let no_main = html.replace("<main", "<div").replace("</main>", "</div>");
    let c = html_to_markdown(&no_main, Some("https://doc.rust-lang.org/")).unwrap();
    assert_eq!(c.extraction, Extraction::Readability);
    assert!(c.markdown.contains("i128"));
}
