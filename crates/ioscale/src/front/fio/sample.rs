//! fio's bw/iops samples: the whole intervals of the per-worker figures
//! the executor took (`bench::sampling`, under the plan's `samples`
//! rule), as fio keeps one bw and one iops sample per `bw_avg_time`.

use bench::sampling::Tick;

/// The bw (KiB/s) and iops samples of one worker in one direction.
pub fn samples(ticks: &[Tick], reads: bool) -> (Vec<f64>, Vec<f64>) {
    ticks
        .iter()
        .filter(|t| t.full && t.write != reads)
        .map(|t| (t.kib_s(), t.iops()))
        .unzip()
}
