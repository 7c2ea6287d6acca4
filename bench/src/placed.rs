//! The clocks that place and route measured, read from `hdl/SYNTHESIS.md` (which
//! `hdl/synth.sh ecp5` writes), so that the bench report turns simulated cycles into
//! time at a measured clock wherever an engine shape was placed, and says "projection"
//! everywhere else.

/// One routed ECP5 row of `hdl/SYNTHESIS.md`.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    /// `engine` or the device top level.
    pub top: String,
    /// Users N.
    pub users: usize,
    /// Lanes P.
    pub lanes: usize,
    /// Speed grade (6 is the slowest).
    pub speed: u32,
    /// nextpnr's post-route Fmax.
    pub mhz: f64,
    /// The placement seed.
    pub seed: u32,
}

/// Every routed row of the ECP5 table (rows whose Fmax is not a clock, such as a run
/// stopped before routing, are left out). Cells: top level, users, lanes, speed, then
/// the Fmax and seed in the columns headed `Fmax` and `seed`.
pub fn ecp5_rows(synthesis_md: &str) -> Vec<Placed> {
    let Some(section) = synthesis_md.split("\n## ECP5").nth(1) else {
        return Vec::new();
    };
    let cells = |line: &str| -> Vec<String> {
        line.trim().trim_matches('|').split('|').map(|c| c.trim().to_string()).collect()
    };
    let mut header: Option<Vec<String>> = None;
    let mut rows = Vec::new();
    for line in section.lines().filter(|l| l.trim_start().starts_with('|')) {
        let row = cells(line);
        let Some(head) = &header else {
            header = Some(row);
            continue;
        };
        let column = |name: &str| head.iter().position(|h| h == name).and_then(|i| row.get(i));
        let number = |name: &str| column(name).and_then(|c| c.parse::<u64>().ok());
        let mhz = column("Fmax").and_then(|c| c.strip_suffix(" MHz")).and_then(|c| c.parse::<f64>().ok());
        let (Some(users), Some(lanes), Some(speed), Some(mhz), Some(seed)) =
            (number("users N"), number("lanes P"), number("speed"), mhz, number("seed"))
        else {
            continue;
        };
        rows.push(Placed {
            top: column("top level").cloned().unwrap_or_default(),
            users: users as usize,
            lanes: lanes as usize,
            speed: speed as u32,
            mhz,
            seed: seed as u32,
        });
    }
    rows
}

/// The best routed clock of the bare engine of `users` x `lanes` at `speed`, over the
/// seeds listed.
pub fn engine_clock(rows: &[Placed], users: usize, lanes: usize, speed: u32) -> Option<&Placed> {
    engine_clocks(rows, users, lanes, speed).into_iter().next()
}

/// Every routed clock of the bare engine of `users` x `lanes` at `speed`, one per seed
/// listed, fastest first: the second is what a user can count on more than the best
/// (one seed's placement moves the clock by 10% or more).
pub fn engine_clocks(rows: &[Placed], users: usize, lanes: usize, speed: u32) -> Vec<&Placed> {
    let mut clocks: Vec<&Placed> =
        rows.iter().filter(|r| r.top == "engine" && r.users == users && r.lanes == lanes && r.speed == speed).collect();
    clocks.sort_by(|a, b| b.mhz.total_cmp(&a.mhz));
    clocks
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str =
        "# Synthesis\n\n## iCE40\n\n| lanes P | users | Fmax |\n|---:|---:|---:|\n| 1 | 64 | 21.64 MHz |\n\n\
## ECP5\n\nText.\n\n\
| top level | users N | lanes P | speed | LUT4 | Fmax | seed | critical path |\n\
|---|---:|---:|---:|---:|---:|---:|---|\n\
| device top level (AXI4-Lite + AXI-Stream) | 1024 | 8 | 6 | 26785 | 12.79 MHz | 1 | `a` -> `b` |\n\
| engine | 1024 | 8 | 6 | 24345 | 13.52 MHz | 1 | `c` -> `d` |\n\
| engine | 1024 | 8 | 6 | 24345 | 14.10 MHz | 2 | `c` -> `d` |\n\
| engine | 1024 | 8 | 8 | 24345 | 17.00 MHz | 1 | `c` -> `d` |\n\
| engine | 1024 | 16 | 6 | 46427 | not routed within 6m (stopped) | 1 | - |\n";

    #[test]
    fn reads_the_routed_ecp5_rows_only() {
        let rows = ecp5_rows(SAMPLE);
        assert_eq!(rows.len(), 4, "{rows:?}");
        assert_eq!(rows[0].top, "device top level (AXI4-Lite + AXI-Stream)");
        assert_eq!((rows[1].users, rows[1].lanes, rows[1].speed, rows[1].mhz, rows[1].seed), (1024, 8, 6, 13.52, 1));
        assert!(rows.iter().all(|r| r.lanes != 16), "the stopped run has no clock");
    }

    #[test]
    fn the_best_seed_at_the_asked_speed() {
        let rows = ecp5_rows(SAMPLE);
        assert_eq!(engine_clock(&rows, 1024, 8, 6).map(|r| (r.mhz, r.seed)), Some((14.10, 2)));
        let seeds: Vec<(f64, u32)> = engine_clocks(&rows, 1024, 8, 6).iter().map(|r| (r.mhz, r.seed)).collect();
        assert_eq!(seeds, [(14.10, 2), (13.52, 1)], "fastest first, the device top level left out");
        assert_eq!(engine_clock(&rows, 1024, 8, 8).map(|r| r.mhz), Some(17.00));
        assert_eq!(engine_clock(&rows, 1024, 16, 6), None);
        assert_eq!(engine_clock(&rows, 256, 8, 6), None);
    }

    #[test]
    fn no_ecp5_section_no_rows() {
        assert!(ecp5_rows("# Synthesis\n\n## iCE40\n| a | b |\n|---|---|\n| 1 | 2 |\n").is_empty());
    }

    #[test]
    fn the_committed_file_parses() {
        // The file the script writes: every ECP5 table row with a clock is read.
        let text = include_str!("../../hdl/SYNTHESIS.md");
        let ecp5 = text.split("\n## ECP5").nth(1).expect("an ECP5 section");
        let clocked = ecp5.lines().filter(|l| l.starts_with('|') && l.contains(" MHz |")).count();
        let rows = ecp5_rows(text);
        assert_eq!(rows.len(), clocked, "{rows:?}");
        assert!(rows.iter().all(|r| r.mhz > 0.0 && r.users > 0 && r.lanes > 0), "{rows:?}");
    }
}
