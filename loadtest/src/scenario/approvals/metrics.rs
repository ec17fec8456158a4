//! The workers' own account of what they hold, read from their Prometheus
//! `/metrics`: `weft_runs_executing` (runs holding a worker slot right now),
//! `weft_queue_depth` (queued runs, as the reaper last counted them) and the
//! counters that show a tool ran or an approval was asked for exactly once per
//! run. Every given URL is scraped and the values are summed (one URL per worker;
//! embedded mode has one process, whose gateway serves them), except the queue
//! depth, which every worker's reaper counts for the one shared queue.
//!
//! A [`Sampler`] scrapes in the background for the whole scenario, so each phase
//! can be read back afterwards: the peak while runs are suspending (the worker
//! concurrency at work), the slots held while they all wait (must be 0), and the
//! peak while they resume.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::task::JoinHandle;

/// How often the sampler scrapes.
const EVERY: Duration = Duration::from_millis(100);

/// The values of one scrape, summed over the URLs.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scrape {
    /// `weft_runs_executing`; `None` when a URL did not answer or no URL has the
    /// gauge (a gateway of the distributed mode: it executes nothing).
    pub executing: Option<i64>,
    /// `weft_queue_depth`, the largest of the URLs' (each counts the queue).
    pub queue_depth: Option<i64>,
    /// `weft_tool_calls_total`, every label.
    pub tool_calls: Option<i64>,
    /// `weft_approvals_requested_total`.
    pub approvals_requested: Option<i64>,
}

/// Scrapes a fixed set of `/metrics` URLs.
#[derive(Clone)]
pub struct Scraper {
    http: reqwest::Client,
    urls: Arc<Vec<String>>,
}

impl Scraper {
    pub fn new(http: reqwest::Client, urls: Vec<String>) -> Scraper {
        Scraper {
            http,
            urls: Arc::new(urls),
        }
    }

    /// One scrape of every URL. A URL that fails makes every value unknown: a
    /// partial sum would understate what the workers hold.
    pub async fn scrape(&self) -> Scrape {
        let mut texts = Vec::with_capacity(self.urls.len());
        for url in self.urls.iter() {
            match self.fetch(url).await {
                Some(t) => texts.push(t),
                None => return Scrape::default(),
            }
        }
        let values = |name: &str| -> Vec<i64> {
            texts
                .iter()
                .filter_map(|t| sum(t, name))
                .map(|v| v.round() as i64)
                .collect()
        };
        let total = |name: &str| {
            let v = values(name);
            (!v.is_empty()).then(|| v.iter().sum())
        };
        Scrape {
            executing: total("weft_runs_executing"),
            // Every worker's reaper counts the same shared queue: not a sum.
            queue_depth: values("weft_queue_depth").into_iter().max(),
            tool_calls: total("weft_tool_calls_total").or(Some(0)),
            approvals_requested: total("weft_approvals_requested_total").or(Some(0)),
        }
    }

    async fn fetch(&self, url: &str) -> Option<String> {
        let r = self
            .http
            .get(url)
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .ok()?;
        if !r.status().is_success() {
            return None;
        }
        r.text().await.ok()
    }
}

/// The sum of every sample of `name` (whatever its labels) in a Prometheus text
/// exposition; `None` when it has none.
pub fn sum(text: &str, name: &str) -> Option<f64> {
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let rest = match rest.chars().next() {
            Some('{') => match rest.rfind('}') {
                Some(i) => &rest[i + 1..],
                None => continue,
            },
            Some(' ') => rest,
            _ => continue, // a longer name (`…_bucket`, `…_total_x`)
        };
        if let Some(v) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        {
            found = Some(found.unwrap_or(0.0) + v);
        }
    }
    found
}

/// Scrapes every [`EVERY`] until stopped; the samples are read per time window.
pub struct Sampler {
    samples: Arc<Mutex<Vec<(Instant, Scrape)>>>,
    task: JoinHandle<()>,
}

/// What the samples of one window say about `weft_runs_executing`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    /// Samples taken in the window, and how many of them knew the gauge.
    pub samples: u64,
    pub known: u64,
    pub max_executing: Option<i64>,
    /// The window's last known `weft_queue_depth`: the reapers set it once per
    /// sweep, so only a window longer than their interval is sure to hold a
    /// count taken inside it.
    pub last_queue_depth: Option<i64>,
}

impl Sampler {
    pub fn start(scraper: Scraper) -> Sampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let sink = samples.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let s = scraper.scrape().await;
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((Instant::now(), s));
            }
        });
        Sampler { samples, task }
    }

    /// The samples taken from `from` to `to`.
    pub fn window(&self, from: Instant, to: Instant) -> Window {
        let samples = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        let mut w = Window::default();
        for (_, s) in samples.iter().filter(|(at, _)| *at >= from && *at <= to) {
            w.samples += 1;
            if let Some(e) = s.executing {
                w.known += 1;
                w.max_executing = Some(w.max_executing.map_or(e, |m| m.max(e)));
            }
            w.last_queue_depth = s.queue_depth.or(w.last_queue_depth);
        }
        w
    }

    pub fn stop(self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_every_label_set_and_ignores_longer_names() {
        let text = "# TYPE weft_tool_calls_total counter\n\
            weft_tool_calls_total{ok=\"true\"} 7\n\
            weft_tool_calls_total{ok=\"false\"} 2\n\
            weft_runs_executing 3\n\
            weft_runs_executing_bucket{le=\"1\"} 40\n";
        assert_eq!(sum(text, "weft_tool_calls_total"), Some(9.0));
        assert_eq!(sum(text, "weft_runs_executing"), Some(3.0));
        assert_eq!(sum(text, "weft_queue_depth"), None);
    }
}
