//! Simulated time and its mapping to the faked Redis clock.
//!
//! Simulated seconds since the start of the trace are `(real elapsed) ×
//! speed`, counted from a real instant `origin`. The faked Redis clock (what
//! `redis.call('TIME')` returns in the scripts) runs at the same rate, so
//! one calibration — a few `TIME` samples through a Lua script, keeping the
//! one with the shortest round trip — maps any real instant to fake Unix
//! milliseconds. The driver stamps each join with the fake time of the
//! instant it sends it (no extra round trip, and what Redis saw up to the
//! reply's queueing); waits are `matched_at − that stamp`. The speed is
//! measured, not assumed, before anything runs.

use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;

/// One reading of the faked clock.
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    /// Real instant halfway through the round trip.
    pub at: Instant,
    /// Fake Unix time in milliseconds.
    pub fake_ms: f64,
    pub round_trip: Duration,
}

/// Reads the fake clock the way the scripts do, `samples` times, and keeps
/// the reading with the shortest round trip.
pub async fn read(conn: &mut MultiplexedConnection, samples: usize) -> Result<Reading, String> {
    let script = redis::Script::new("return redis.call('TIME')");
    let mut best: Option<Reading> = None;
    for _ in 0..samples.max(1) {
        let start = Instant::now();
        let (secs, micros): (u64, u64) = script
            .invoke_async(conn)
            .await
            .map_err(|e| format!("TIME through a script: {e}"))?;
        let end = Instant::now();
        let round_trip = end - start;
        let reading = Reading {
            at: start + round_trip / 2,
            fake_ms: secs as f64 * 1000.0 + micros as f64 / 1000.0,
            round_trip,
        };
        if best.is_none_or(|b| reading.round_trip < b.round_trip) {
            best = Some(reading);
        }
    }
    best.ok_or_else(|| "no clock reading".into())
}

/// Measures how fast the fake clock runs: two readings `window` apart (real
/// time). Fails with a clear message when it is off by more than
/// `tolerance` (a fraction) from `speed`. Returns the measured factor and
/// the later reading.
pub async fn verify_speed(
    conn: &mut MultiplexedConnection,
    speed: f64,
    window: Duration,
    tolerance: f64,
) -> Result<(f64, Reading), String> {
    let a = read(conn, 5).await?;
    tokio::time::sleep(window).await;
    let b = read(conn, 5).await?;
    let real = (b.at - a.at).as_secs_f64();
    let measured = (b.fake_ms - a.fake_ms) / 1000.0 / real;
    if (measured / speed - 1.0).abs() > tolerance {
        return Err(format!(
            "redis-server's clock runs at x{measured:.2} real time, not x{speed} \
             (TIME advanced {:.3} s over {real:.3} s): libfaketime is not speeding it up. \
             Check that LD_PRELOAD reaches redis-server (not a setuid or static binary) \
             and that FAKETIME is not overridden (e.g. by ~/.faketimerc)",
            (b.fake_ms - a.fake_ms) / 1000.0
        ));
    }
    Ok((measured, b))
}

/// Maps simulated seconds to real instants and fake Unix milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct SimClock {
    /// Real instant of simulated time 0.
    pub origin: Instant,
    /// Fake Unix ms at simulated time 0.
    pub fake_origin_ms: f64,
    pub speed: f64,
}

impl SimClock {
    /// Simulated time 0 is `origin`; `reading` anchors the fake clock.
    pub fn new(origin: Instant, reading: Reading, speed: f64) -> Self {
        let offset = signed_secs(origin, reading.at);
        Self {
            origin,
            fake_origin_ms: reading.fake_ms + offset * speed * 1000.0,
            speed,
        }
    }

    /// Simulated seconds at real instant `at` (negative before the origin).
    pub fn sim_at(&self, at: Instant) -> f64 {
        signed_secs(at, self.origin) * self.speed
    }

    pub fn sim_now(&self) -> f64 {
        self.sim_at(Instant::now())
    }

    /// The real instant of simulated time `t` (the origin for t < 0).
    pub fn real_at(&self, t: f64) -> Instant {
        self.origin + Duration::from_secs_f64((t / self.speed).max(0.0))
    }

    /// Fake Unix ms at simulated time `t`.
    pub fn fake_ms_at(&self, t: f64) -> f64 {
        self.fake_origin_ms + t * 1000.0
    }

    /// Simulated time of fake Unix ms `ms`.
    pub fn sim_of_fake_ms(&self, ms: f64) -> f64 {
        (ms - self.fake_origin_ms) / 1000.0
    }

    /// How far a reading is from this model, in simulated seconds.
    pub fn error_of(&self, reading: &Reading) -> f64 {
        self.sim_of_fake_ms(reading.fake_ms) - self.sim_at(reading.at)
    }
}

/// `a − b` in seconds, negative if `a` is earlier.
fn signed_secs(a: Instant, b: Instant) -> f64 {
    if a >= b {
        (a - b).as_secs_f64()
    } else {
        -(b - a).as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_maps_real_instants_to_fake_time() {
        let t0 = Instant::now();
        let reading = Reading {
            at: t0 + Duration::from_millis(100),
            fake_ms: 1_000_000.0,
            round_trip: Duration::from_micros(80),
        };
        // Origin 100 ms before the reading, x20: 2 s of fake time earlier.
        let clock = SimClock::new(t0, reading, 20.0);
        assert!((clock.fake_origin_ms - 998_000.0).abs() < 1e-6);
        assert!((clock.sim_at(t0 + Duration::from_millis(50)) - 1.0).abs() < 1e-9);
        assert!((clock.sim_at(t0) - 0.0).abs() < 1e-12);
        assert!(clock.sim_at(t0 - Duration::from_millis(10)) < 0.0);
        assert_eq!(clock.real_at(2.0), t0 + Duration::from_millis(100));
        assert_eq!(clock.real_at(-5.0), t0);
        assert!((clock.fake_ms_at(2.0) - 1_000_000.0).abs() < 1e-6);
        assert!((clock.sim_of_fake_ms(1_001_000.0) - 3.0).abs() < 1e-9);
        assert!(clock.error_of(&reading).abs() < 1e-9);
        let late = Reading {
            fake_ms: 1_000_500.0,
            ..reading
        };
        assert!((clock.error_of(&late) - 0.5).abs() < 1e-9);
    }
}
