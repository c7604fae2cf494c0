//! The parse benchmark behind `cargo xtask bench parse` (run in release by it).
//!
//! Streams at least `--mb` megabytes (default 100) made by repeating the recordings
//! in `tests/fixtures/`, and times, over the same bytes:
//! - `value`: `serde_json::from_slice::<serde_json::Value>` per line (lines pre-split);
//! - `parser`: our parser per line (lines pre-split), events built and dropped;
//! - `stream`: our framing plus parser, fed 64 KiB chunks as from a pipe.
//!
//! The stream is never held whole: the recordings are repeated chunk by chunk, so peak
//! memory stays that of one pass; VmHWM before and after shows it.

use std::time::{Duration, Instant};

use agent_claude::{ClaudeCode, JsonlDecoder};
use runner_contract::Agent;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut megabytes = 100usize;
    let mut out: Option<String> = None;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "--mb" => megabytes = iter.next().and_then(|v| v.parse().ok()).expect("--mb N"),
            "--out" => out = iter.next().cloned(),
            other => panic!("unknown argument {other:?}: use --mb N --out FILE"),
        }
    }
    let corpus = corpus();
    let lines: Vec<&[u8]> = corpus
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let passes = (megabytes * 1_000_000).div_ceil(corpus.len());
    let bytes = passes * corpus.len();

    // Warm up, and take the high-water mark of memory before the long runs.
    run_stream(&corpus, 2);
    run_value(&lines, 2);
    let hwm_before = vm_hwm_kib();

    let value = time(|| run_value(&lines, passes));
    let parser = time(|| run_parser(&lines, passes));
    let stream = time(|| run_stream(&corpus, passes));
    let hwm_after = vm_hwm_kib();

    let mbps = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
    let report = serde_json::json!({
        "bytes": bytes,
        "lines": passes * lines.len(),
        "corpusBytes": corpus.len(),
        "valueMBps": round(mbps(value)),
        "parserMBps": round(mbps(parser)),
        "streamMBps": round(mbps(stream)),
        "parserVsValue": round(value.as_secs_f64() / parser.as_secs_f64()),
        "streamVsValue": round(value.as_secs_f64() / stream.as_secs_f64()),
        "peakRssKiBBefore": hwm_before,
        "peakRssKiBAfter": hwm_after,
    });
    println!(
        "parse: {:.0} MB of Claude Code 2.1.332 lines ({} lines)",
        bytes as f64 / 1e6,
        passes * lines.len()
    );
    println!("  serde_json::Value per line   {:>7.1} MB/s", mbps(value));
    println!(
        "  our parser per line          {:>7.1} MB/s   {:.2}x the Value parse",
        mbps(parser),
        value.as_secs_f64() / parser.as_secs_f64()
    );
    println!(
        "  framing + parser (64 KiB)    {:>7.1} MB/s   {:.2}x the Value parse",
        mbps(stream),
        value.as_secs_f64() / stream.as_secs_f64()
    );
    println!("  peak RSS {hwm_before} KiB after warm-up, {hwm_after} KiB after the whole stream");
    if let Some(out) = out {
        std::fs::write(&out, serde_json::to_string_pretty(&report).unwrap() + "\n")
            .expect("write the report");
        println!("  wrote {out}");
    }
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn corpus() -> Vec<u8> {
    let folder = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut names: Vec<_> = std::fs::read_dir(&folder)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    names.sort();
    let mut corpus = Vec::new();
    for name in names {
        corpus.extend(std::fs::read(name).expect("fixture"));
        if corpus.last() != Some(&b'\n') {
            corpus.push(b'\n');
        }
    }
    corpus
}

fn time(f: impl FnOnce() -> usize) -> Duration {
    let start = Instant::now();
    let n = f();
    let elapsed = start.elapsed();
    std::hint::black_box(n);
    elapsed
}

fn run_value(lines: &[&[u8]], passes: usize) -> usize {
    let mut n = 0;
    for _ in 0..passes {
        for line in lines {
            let value: serde_json::Value = serde_json::from_slice(line).expect("valid JSON");
            n += usize::from(value.is_object());
        }
    }
    n
}

fn run_parser(lines: &[&[u8]], passes: usize) -> usize {
    let mut parser = ClaudeCode::with_program("claude").parser();
    let mut n = 0;
    for _ in 0..passes {
        for line in lines {
            // The runner has the line as text already (it is kept as `raw`).
            let text = std::str::from_utf8(line).expect("UTF-8");
            n += parser.parse_line(text).len();
        }
    }
    n + parser.finish(Some(0)).len()
}

fn run_stream(corpus: &[u8], passes: usize) -> usize {
    let mut parser = ClaudeCode::with_program("claude").parser();
    let mut decoder = JsonlDecoder::new();
    let mut frames = Vec::new();
    let mut n = 0;
    for _ in 0..passes {
        for chunk in corpus.chunks(64 * 1024) {
            decoder.push(chunk, &mut frames);
            for frame in frames.drain(..) {
                n += parser.parse_line(&frame.text()).len();
            }
        }
    }
    decoder.finish(&mut frames);
    n + frames.len() + parser.finish(Some(0)).len()
}

/// The process's peak resident memory (Linux), in KiB.
fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
