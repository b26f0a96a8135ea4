//! R-PF-4: HTML → Markdown with main-content extraction on, over a corpus of
//! real documentation pages (`benches/corpus/`, from the Rust project's
//! documentation, MIT/Apache-2.0; `core-primitive-i128.html` is 1.2 MB of
//! rustdoc markup). Each page also runs with its `<main>` renamed, so the
//! readability path (dom_smoothie) is measured on the same content.
//!
//! `cargo bench -p rtc-tools --bench html_to_markdown` prints, per page, its
//! size, the p50 conversion time, MB/s and the Markdown size, then the
//! overall throughput. Target: ≥ 25 MB/s overall, ≤ 50 ms for a 1 MB page.

#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark binary"
)]

use std::time::{Duration, Instant};

use rtc_tools::web_fetch::markdown::html_to_markdown;

const RUNS: usize = 15;

fn main() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/corpus");
    let mut pages: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "html"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    pages.sort_by_key(|(_, html)| html.len());
    let no_landmark: Vec<(String, String)> = pages
        .iter()
        .map(|(name, html)| {
            let renamed = html.replace("<main", "<div").replace("</main>", "</div>");
            (
                format!("{} (no <main>)", name.trim_end_matches(".html")),
                renamed,
            )
        })
        .collect();
    pages.extend(no_landmark);
    println!(
        "{:<32} {:>10} {:>10} {:>8} {:>14} {:>12}",
        "page", "size (KB)", "p50 (ms)", "MB/s", "markdown (KB)", "extraction"
    );
    // (bytes, time) for the pages as published and with `<main>` renamed.
    let mut sums = [(0usize, Duration::ZERO); 2];
    for (i, (name, html)) in pages.iter().enumerate() {
        let mut times = Vec::with_capacity(RUNS);
        let mut out = None;
        for _ in 0..RUNS {
            let start = Instant::now();
            let converted = html_to_markdown(html, Some("https://doc.rust-lang.org/")).unwrap();
            times.push(start.elapsed());
            out = Some(converted);
        }
        times.sort();
        let p50 = times[RUNS / 2];
        let sum = &mut sums[usize::from(i >= pages.len() / 2)];
        sum.0 += html.len() * RUNS;
        sum.1 += times.iter().sum::<Duration>();
        let out = out.unwrap();
        println!(
            "{:<32} {:>10.0} {:>10.1} {:>8.1} {:>14.0} {:>12?}",
            name,
            html.len() as f64 / 1024.0,
            p50.as_secs_f64() * 1e3,
            html.len() as f64 / 1e6 / p50.as_secs_f64(),
            out.markdown.len() as f64 / 1024.0,
            out.extraction
        );
    }
    for ((bytes, time), what) in sums
        .iter()
        .zip(["the corpus as published", "readability forced (no <main>)"])
    {
        println!(
            "overall, {what}: {:.1} MB/s",
            *bytes as f64 / 1e6 / time.as_secs_f64()
        );
    }
}
