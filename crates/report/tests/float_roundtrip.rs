//! A record read back (`report`, `compare`, `sweep --resume`) must hold the
//! very figures that were written: `--resume` keeps the points already
//! measured and writes them again, and a figure that moved by one unit in
//! the last place made a resumed record differ from the interrupted one
//! (seen in sweep_cli's resume tests). serde_json parses floats exactly
//! only with its `float_roundtrip` feature.

/// SplitMix64, for a reproducible spread of bit patterns.
fn next(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[test]
fn every_figure_survives_writing_and_reading_bit_for_bit() {
    let mut seed = 7;
    let mut moved = Vec::new();
    for i in 0..200_000 {
        // Rates, seconds and latencies as a record holds them: finite
        // values over many magnitudes, and plain decimals.
        let x = if i % 2 == 0 {
            let v = f64::from_bits(next(&mut seed));
            if !v.is_finite() {
                continue;
            }
            v
        } else {
            (next(&mut seed) % 10_000_000) as f64 / 1000.0 / 3.0
        };
        let text = serde_json::to_string(&x).unwrap();
        let back: f64 = serde_json::from_str(&text).unwrap();
        if back.to_bits() != x.to_bits() {
            moved.push((x, text, back));
        }
    }
    assert!(
        moved.is_empty(),
        "{} of 200000 moved, e.g. {:?}",
        moved.len(),
        &moved[..moved.len().min(3)]
    );
}
