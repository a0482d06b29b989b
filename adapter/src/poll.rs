//! How the adapter waits for a controller: it polls the object, as the Role of the provider
//! page grants `get` and no `watch`. The schedule answers a fast backend within a round trip or
//! two and sends a slow one few requests: at once, once more at once, and on back to back while
//! the wait's first millisecond lasts (no timer waits less than a millisecond, and against a
//! backend whose round trip is a fraction of one, a controller often finishes just after the
//! first answers); then waits doubling from 1 ms to 250 ms. Requests are the same kind however
//! fast the backend answers, only their number changes.

use std::time::Duration;

use sandbox_contract::Error;

/// How long a poll asks again at once before its first timed wait: a timer's resolution.
const AT_ONCE_FOR: Duration = Duration::from_millis(1);

/// The most checks made at once, however fast they are answered (a clock that does not move,
/// as a paused test clock, would otherwise never end the first millisecond).
const AT_ONCE_MAX: u32 = 8;

/// The first timed wait, doubled after each until [`LONGEST_WAIT`].
const FIRST_WAIT: Duration = Duration::from_millis(1);

/// The longest wait between two checks.
const LONGEST_WAIT: Duration = Duration::from_millis(250);

/// One check of a poll.
pub(crate) enum Step<T> {
    /// Ready, with the value.
    Done(T),
    /// Not yet, and why.
    Wait(String),
}

/// Something [`until_ready`] can ask whether it is done.
pub(crate) trait AsyncProbe<T> {
    /// Checks once.
    fn step(&mut self) -> impl std::future::Future<Output = Result<Step<T>, Error>> + Send;
}

/// Checks `probe` on the schedule above until it is done, fails, or `timeout` passes; a
/// transient error is checked again (after the `Retry-After` it names, if any). `what` is the
/// timeout error's subject (`sandbox x was not ready`), which ends with the last reason given.
pub(crate) async fn until_ready<T>(
    timeout: Duration,
    what: &str,
    mut probe: impl AsyncProbe<T>,
) -> Result<T, Error> {
    let started = tokio::time::Instant::now();
    let deadline = started + timeout;
    let mut wait = FIRST_WAIT;
    let mut asked = 0u32;
    loop {
        let mut told_to_wait = false;
        let last = match probe.step().await {
            Ok(Step::Done(value)) => return Ok(value),
            Ok(Step::Wait(why)) => why,
            Err(e) if e.is_transient() => {
                if let Some(after) = e.retry_after() {
                    wait = wait.max(after);
                    told_to_wait = true;
                }
                e.to_string()
            }
            Err(e) => return Err(e),
        };
        asked += 1;
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(Error::unavailable(format!(
                "{what} after {}s: {last}",
                timeout.as_secs()
            )));
        }
        let at_once = asked < 2 || (now - started < AT_ONCE_FOR && asked < AT_ONCE_MAX);
        if at_once && !told_to_wait {
            continue;
        }
        tokio::time::sleep(wait.min(deadline - now)).await;
        wait = (wait * 2).min(LONGEST_WAIT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::time::Instant;

    /// A probe whose every check takes `round_trip` of the (paused) clock and is done at
    /// check `done_at`, recording when each check began.
    struct Timed {
        round_trip: Duration,
        done_at: usize,
        started: Instant,
        asked_at: Vec<Duration>,
    }

    impl Timed {
        fn new(round_trip: Duration, done_at: usize) -> Self {
            Timed {
                round_trip,
                done_at,
                started: Instant::now(),
                asked_at: Vec::new(),
            }
        }
    }

    impl AsyncProbe<usize> for &mut Timed {
        async fn step(&mut self) -> Result<Step<usize>, Error> {
            self.asked_at.push(self.started.elapsed());
            tokio::time::advance(self.round_trip).await;
            let n = self.asked_at.len();
            Ok(if n >= self.done_at {
                Step::Done(n)
            } else {
                Step::Wait(format!("check {n}"))
            })
        }
    }

    fn micros(d: &[Duration]) -> Vec<u128> {
        d.iter().map(Duration::as_micros).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_fast_backend_is_asked_back_to_back_through_the_first_millisecond() {
        let mut probe = Timed::new(Duration::from_micros(300), 7);
        let n = until_ready(Duration::from_secs(60), "x", &mut probe)
            .await
            .expect("ready");
        assert_eq!(n, 7);
        // Four checks fill the first millisecond; then waits of 1, 2 and 4 ms, each of which
        // the timer, counting whole milliseconds, makes one longer.
        assert_eq!(
            micros(&probe.asked_at),
            [0, 300, 600, 900, 3200, 6500, 11800]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_backend_is_asked_twice_at_once_then_with_doubling_waits() {
        let mut probe = Timed::new(Duration::from_millis(2), 5);
        until_ready(Duration::from_secs(60), "x", &mut probe)
            .await
            .expect("ready");
        assert_eq!(micros(&probe.asked_at), [0, 2000, 5000, 9000, 15000]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_clock_that_does_not_move_still_ends_the_checks_at_once() {
        let mut probe = Timed::new(Duration::ZERO, 10);
        until_ready(Duration::from_secs(60), "x", &mut probe)
            .await
            .expect("ready");
        // Eight at once, then the first wait of 1 ms, then 2 ms.
        assert_eq!(
            micros(&probe.asked_at),
            [0, 0, 0, 0, 0, 0, 0, 0, 1000, 3000]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_timeout_names_the_last_reason() {
        let mut probe = Timed::new(Duration::from_millis(10), usize::MAX);
        let e = until_ready(
            Duration::from_secs(1),
            "sandbox x was not ready",
            &mut probe,
        )
        .await
        .expect_err("times out");
        let text = e.to_string();
        assert!(
            text.contains("sandbox x was not ready after 1s: check "),
            "{text}"
        );
    }
}
