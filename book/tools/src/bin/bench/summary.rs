//! From rounds to one cell per server and scenario: the medians the report and the chart
//! show, and each server's ratio to its nginx.

use crate::cpu::CpuPerRequest;
use crate::generator::LoadResult;
use crate::scenarios::Outcome;

/// One server's result for one scenario, over all rounds.
#[derive(Clone, Debug)]
pub enum Summary {
    Measured {
        /// Each number's median over the rounds (errors: their sum).
        median: LoadResult,
        /// The highest peak memory of any round.
        peak_rss_kib: Option<u64>,
        /// The server's CPU time per request: user and system, each its median over the
        /// rounds that could read it.
        cpu: Option<CpuPerRequest>,
        /// The median, over rounds, of this server's requests/s over its nginx's in that
        /// round.
        vs_nginx: Option<f64>,
        /// Rounds that did not measure (blocked or failed), if any.
        missed: Option<String>,
    },
    Blocked(String),
    Failed(String),
}

impl Summary {
    pub fn measured(&self) -> Option<&LoadResult> {
        match self {
            Summary::Measured { median, .. } => Some(median),
            _ => None,
        }
    }

    pub fn cpu(&self) -> Option<CpuPerRequest> {
        match self {
            Summary::Measured { cpu, .. } => *cpu,
            _ => None,
        }
    }
}

// ANCHOR: summarize
/// Reduces the rounds of one scenario to one cell per server. `rounds[server][round]`;
/// `peers[server]` is the index in `rounds` of the nginx that server is compared with
/// (the one with as many workers as it has loops), if that nginx ran.
pub fn summarize(rounds: &[Vec<Outcome>], peers: &[Option<usize>]) -> Vec<Summary> {
    let rate = |outcome: &Outcome| match outcome {
        Outcome::Measured { load, .. } => Some(load.requests_per_s),
        _ => None,
    };
    rounds
        .iter()
        .enumerate()
        .map(|(server, outcomes)| {
            let measured: Vec<(&LoadResult, Option<u64>, Option<CpuPerRequest>)> = outcomes
                .iter()
                .filter_map(|outcome| match outcome {
                    Outcome::Measured { load, peak_rss_kib, cpu } => {
                        Some((load, *peak_rss_kib, *cpu))
                    }
                    _ => None,
                })
                .collect();
            if measured.is_empty() {
                // Every round blocked or failed: say the first reason (they are alike).
                return match outcomes.first() {
                    Some(Outcome::Blocked(why)) => Summary::Blocked(why.clone()),
                    Some(Outcome::Failed(why)) => Summary::Failed(why.clone()),
                    _ => Summary::Failed("not run".into()),
                };
            }
            let peak_rss_kib = measured.iter().filter_map(|(_, rss, _)| *rss).max();
            let cpus: Vec<CpuPerRequest> = measured.iter().filter_map(|(_, _, cpu)| *cpu).collect();
            let cpu = (!cpus.is_empty()).then(|| CpuPerRequest {
                user_us: median_of(cpus.iter().map(|cpu| cpu.user_us)),
                system_us: median_of(cpus.iter().map(|cpu| cpu.system_us)),
            });
            // Each number is its own median over the rounds; errors are added up, so that
            // an error in any round shows.
            let loads: Vec<&LoadResult> = measured.iter().map(|(load, _, _)| *load).collect();
            // The same remark from several rounds is said once.
            let mut details: Vec<&str> = Vec::new();
            for load in &loads {
                if !load.detail.is_empty() && !details.contains(&load.detail.as_str()) {
                    details.push(&load.detail);
                }
            }
            let median = LoadResult {
                requests: median_of(loads.iter().map(|load| load.requests as f64)) as u64,
                requests_per_s: median_of(loads.iter().map(|load| load.requests_per_s)),
                // A latency of zero means "not measured" (see `text::latency_or_dash`).
                p50_us: median_of(loads.iter().map(|load| load.p50_us).filter(|us| *us > 0.0)),
                p99_us: median_of(loads.iter().map(|load| load.p99_us).filter(|us| *us > 0.0)),
                errors: loads.iter().map(|load| load.errors).sum(),
                detail: details.join("; "),
            };
            // Ratios per round, against nginx in the same round: the machine's speed
            // drifts, but within a round both ran on the same machine, one after the other.
            let ratios: Vec<f64> = peers
                .get(server)
                .copied()
                .flatten()
                .map(|peer| {
                    outcomes
                        .iter()
                        .zip(&rounds[peer])
                        .filter_map(|(ours, theirs)| Some(rate(ours)? / rate(theirs)?))
                        .filter(|ratio| ratio.is_finite())
                        .collect()
                })
                .unwrap_or_default();
            let vs_nginx = (!ratios.is_empty()).then(|| median_of(ratios.into_iter()));
            let misses = outcomes.len() - measured.len();
            let missed = (misses > 0).then(|| {
                let why = outcomes.iter().find_map(|outcome| match outcome {
                    Outcome::Blocked(why) | Outcome::Failed(why) => Some(why.as_str()),
                    Outcome::Measured { .. } => None,
                });
                format!(
                    "{misses} of {} rounds did not measure: {}",
                    outcomes.len(),
                    why.unwrap_or("?")
                )
            });
            Summary::Measured { median, peak_rss_kib, cpu, vs_nginx, missed }
        })
        .collect()
}
// ANCHOR_END: summarize

/// The middle value; with an even count, the mean of the two middle ones.
pub fn median_of(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(rate: f64) -> Outcome {
        Outcome::Measured {
            load: LoadResult { requests_per_s: rate, ..LoadResult::default() },
            peak_rss_kib: Some(rate as u64),
            cpu: Some(CpuPerRequest { user_us: rate / 10.0, system_us: 1.0 }),
        }
    }

    #[test]
    fn medians_and_ratios_per_round() {
        // Two servers, three rounds; the second is "nginx", and the peer of both.
        let rounds = vec![
            vec![measured(10.0), measured(30.0), measured(20.0)],
            vec![measured(100.0), measured(100.0), measured(50.0)],
        ];
        let cells = summarize(&rounds, &[Some(1), Some(1)]);
        let Summary::Measured { median, vs_nginx, peak_rss_kib, cpu, missed } = &cells[0] else {
            panic!("measured");
        };
        assert_eq!(median.requests_per_s, 20.0);
        assert_eq!(*peak_rss_kib, Some(30));
        assert_eq!(*cpu, Some(CpuPerRequest { user_us: 2.0, system_us: 1.0 }));
        // Ratios 0.1, 0.3, 0.4: the median is 0.3.
        assert_eq!(*vs_nginx, Some(0.3));
        assert!(missed.is_none());
    }

    #[test]
    fn each_server_is_compared_with_its_own_peer() {
        let rounds = vec![vec![measured(60.0)], vec![measured(30.0)], vec![measured(120.0)]];
        let cells = summarize(&rounds, &[Some(1), Some(1), Some(2)]);
        let ratio = |cell: &Summary| match cell {
            Summary::Measured { vs_nginx, .. } => *vs_nginx,
            _ => None,
        };
        assert_eq!(ratio(&cells[0]), Some(2.0));
        assert_eq!(ratio(&cells[2]), Some(1.0));
        assert_eq!(summarize(&rounds, &[None]).len(), 3); // no peers: no ratios, no panic
    }

    #[test]
    fn an_even_number_of_rounds_takes_the_middle_two() {
        assert_eq!(median_of([4.0, 1.0].into_iter()), 2.5);
        assert_eq!(median_of([3.0, 1.0, 2.0].into_iter()), 2.0);
        assert_eq!(median_of(std::iter::empty()), 0.0);
    }

    #[test]
    fn all_rounds_blocked_is_blocked() {
        let rounds = vec![vec![Outcome::Blocked("stuck".into()), Outcome::Blocked("stuck".into())]];
        assert!(matches!(&summarize(&rounds, &[None])[0], Summary::Blocked(why) if why == "stuck"));
    }
}
