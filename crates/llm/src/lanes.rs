//! Model requests spread over connections. Over HTTP/2 (what TLS
//! providers negotiate) reqwest sends every request to a host on one
//! connection, and past the provider's limit of concurrent streams on it
//! (100 to 256 is common) the h2 client queues the rest on that connection
//! instead of opening another: the 101st answer waits for one of the first
//! hundred to end, however long they stream. So requests go out on lanes,
//! each a client with connections of its own: a lane carries up to
//! `per_lane` requests at once, another is opened when every lane is full,
//! up to [`MAX_LANES`]; past that (or when a client cannot be made) the
//! least loaded lane takes the request, and the provider's connection
//! queues it. Lanes are for HTTP/2 providers: over HTTP/1.1 every request
//! in flight has a connection of its own anyway, and separate lanes would
//! only keep separate pools of idle connections.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;

/// Most lanes (clients) per provider: 64 × 100 streams by default.
pub const MAX_LANES: usize = 64;

/// Makes the client of a new lane (`None`: it could not be made).
pub type MakeClient = Arc<dyn Fn() -> Option<reqwest::Client> + Send + Sync>;

/// The lanes of one provider.
pub struct Lanes {
    /// `None`: one lane only (a client given whole, no way to make more).
    make: Option<MakeClient>,
    per_lane: usize,
    lanes: Mutex<Vec<Lane>>,
}

struct Lane {
    client: reqwest::Client,
    in_flight: Arc<AtomicUsize>,
}

/// One request's place on a lane, given back when dropped (when its
/// answer has been read to the end, or abandoned).
#[derive(Debug)]
pub struct Lease {
    in_flight: Arc<AtomicUsize>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Lanes {
    /// `first`, then lanes made by `make` as needed, each carrying up to
    /// `per_lane` requests at once (at least 1).
    pub fn new(first: reqwest::Client, make: MakeClient, per_lane: usize) -> Self {
        Self {
            make: Some(make),
            per_lane: per_lane.max(1),
            lanes: Mutex::new(vec![Lane::new(first)]),
        }
    }

    /// Every request on `client`.
    pub fn single(client: reqwest::Client) -> Self {
        Self {
            make: None,
            per_lane: usize::MAX,
            lanes: Mutex::new(vec![Lane::new(client)]),
        }
    }

    /// The client to send a request with, and its place on that lane: the
    /// first lane with room, else a new lane, else the least loaded.
    ///
    /// A new lane's client is made outside the lock (making one reads the
    /// platform's root certificates): requests meanwhile see the lanes as
    /// they are, and two that both found them full may each open one.
    pub fn take(&self) -> (reqwest::Client, Lease) {
        if let Some(taken) = self.take_with_room() {
            return taken;
        }
        let made = match &self.make {
            Some(make) if self.count() < MAX_LANES => make(),
            _ => None,
        };
        let mut lanes = self.lanes.lock();
        if let Some(client) = made
            && lanes.len() < MAX_LANES
        {
            lanes.push(Lane::new(client));
            tracing::debug!(
                lanes = lanes.len(),
                "model requests: another connection lane"
            );
            return lanes[lanes.len() - 1].lease();
        }
        let least = lanes
            .iter()
            .min_by_key(|l| l.in_flight.load(Ordering::Relaxed))
            .unwrap_or(&lanes[0]);
        least.lease()
    }

    /// The first lane with room, if any.
    fn take_with_room(&self) -> Option<(reqwest::Client, Lease)> {
        let lanes = self.lanes.lock();
        lanes
            .iter()
            .find(|l| l.in_flight.load(Ordering::Relaxed) < self.per_lane)
            .map(Lane::lease)
    }

    /// How many lanes are open.
    pub fn count(&self) -> usize {
        self.lanes.lock().len()
    }
}

impl Lane {
    fn new(client: reqwest::Client) -> Self {
        Self {
            client,
            in_flight: Arc::default(),
        }
    }

    /// A place on this lane (counted while the lanes are locked).
    fn lease(&self) -> (reqwest::Client, Lease) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        let lease = Lease {
            in_flight: self.in_flight.clone(),
        };
        (self.client.clone(), lease)
    }
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes")
            .field("per_lane", &self.per_lane)
            .field("lanes", &self.count())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A maker counting the clients made (the first lane's included).
    fn counting() -> (MakeClient, Arc<AtomicUsize>) {
        rtc_testkit::init_tls();
        let made = Arc::new(AtomicUsize::new(1));
        let m = made.clone();
        let make: MakeClient = Arc::new(move || {
            m.fetch_add(1, Ordering::Relaxed);
            Some(reqwest::Client::new())
        });
        (make, made)
    }

    #[test]
    fn a_lane_is_opened_only_when_every_lane_is_full_and_reused_after() {
        let (make, made) = counting();
        let lanes = Lanes::new(reqwest::Client::new(), make, 2);
        let a = lanes.take();
        let b = lanes.take();
        assert_eq!(lanes.count(), 1);
        let c = lanes.take();
        assert_eq!((lanes.count(), made.load(Ordering::Relaxed)), (2, 2));
        // A place given back on the first lane is taken again there.
        drop(a);
        let d = lanes.take();
        assert_eq!(lanes.count(), 2);
        assert_eq!(d.1.in_flight.load(Ordering::Relaxed), 2);
        assert_eq!(c.1.in_flight.load(Ordering::Relaxed), 1);
        drop((b, c, d));
    }

    #[test]
    fn past_the_last_lane_the_least_loaded_takes_the_request() {
        let (make, made) = counting();
        let lanes = Lanes::new(reqwest::Client::new(), make, 1);
        let mut held: Vec<_> = (0..MAX_LANES).map(|_| lanes.take()).collect();
        assert_eq!(made.load(Ordering::Relaxed), MAX_LANES);
        drop(held.swap_remove(5));
        let more: Vec<_> = (0..3).map(|_| lanes.take()).collect();
        assert_eq!(lanes.count(), MAX_LANES);
        assert_eq!(
            made.load(Ordering::Relaxed),
            MAX_LANES,
            "no lane past the last"
        );
        // The lane whose place came back got the first of them.
        assert_eq!(more[0].1.in_flight.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_client_that_cannot_be_made_leaves_the_request_on_the_least_loaded_lane() {
        rtc_testkit::init_tls();
        let lanes = Lanes::new(reqwest::Client::new(), Arc::new(|| None), 1);
        let a = lanes.take();
        let b = lanes.take();
        assert_eq!(lanes.count(), 1);
        assert_eq!(b.1.in_flight.load(Ordering::Relaxed), 2);
        drop((a, b));
    }

    #[test]
    fn a_single_client_is_one_lane_whatever_the_load() {
        rtc_testkit::init_tls();
        let lanes = Lanes::single(reqwest::Client::new());
        let held: Vec<_> = (0..500).map(|_| lanes.take()).collect();
        assert_eq!(lanes.count(), 1);
        assert_eq!(held[0].1.in_flight.load(Ordering::Relaxed), 500);
    }
}
