//! Which recorded exchange answers a request during a replay.
//!
//! A request matches a recorded one of the same client with the same method, path, normalized
//! query (pairs sorted by key, `timeoutSeconds` left out), content type and body, under the
//! normalization map ([`Bindings`]).
//!
//! Which of several matches answers it follows the recording's order as far as a client can
//! rely on it, and no further. Two exchanges are ordered when one was answered before the other
//! was sent (it *happened before*); exchanges in flight at once were a race, and may be served
//! in either order. So, per resource (the path; for a create, the new object's; for an
//! upgrade, with its query):
//!
//! - a request is not served an exchange that an open write of its resource happened before;
//!   identical writes of one resource are one group (a client that sends the same create eight
//!   times at once): once one of them is served, the others no longer hold anything back;
//! - a read gets, of the first open match and the open matches in flight with it, the one that
//!   shows the freshest state (by `resourceVersion`, else by when it was answered): a client
//!   that saw an older state than during the recording could ask for what the recording never
//!   saw (a poll that finds a sandbox pending reads its pod), one that sees a newer state only
//!   asks less;
//! - serving an exchange passes over (for good) the open reads of its resource that show an
//!   older state: those before a write, and those before or in flight with a fresher read;
//! - a read with no open match gets the last matching answer again (a client that polls more
//!   often than during the recording).
//!
//! A read of a collection that others write to (a list) is shared by every part of a client
//! that lists it, at different points of a run; its answers are never passed over, and a list
//! request gets the recorded answer whose content fits the objects this replay has made
//! ([`crate::listing`]), then the one whose writes before and after it are nearest to those
//! served. Anything else is a [`Miss`], which carries the nearest recorded request for the
//! side-by-side message.

use std::collections::HashMap;
use std::sync::Arc;

use crate::format::{Body, Cassette, Recorded};
use crate::listing::{Listing, Objects};
use crate::normalize::{Bindings, Comparison, Learned, skeleton};

/// Query parameters whose values are not compared: clients pick them at random.
const UNCOMPARED: &[&str] = &["timeoutSeconds"];

/// A request as the matcher sees it, recorded or asked now.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Asked {
    /// The client's name.
    pub(crate) client: String,
    /// The method.
    pub(crate) method: String,
    /// The path.
    pub(crate) path: String,
    /// The query pairs, decoded, sorted by key (stable), without [`UNCOMPARED`] ones.
    pub(crate) query: Vec<(String, String)>,
    /// The content type, if any.
    pub(crate) content_type: Option<String>,
    /// The body.
    pub(crate) body: Body,
    /// Whether it asks for an upgrade.
    pub(crate) upgrade: bool,
}

impl Asked {
    /// Builds the matcher's view of a request.
    pub(crate) fn new(
        client: &str,
        method: &str,
        path: &str,
        query: &str,
        content_type: Option<&str>,
        body: Body,
        upgrade: bool,
    ) -> Asked {
        let mut pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .filter(|(k, _)| !UNCOMPARED.contains(&k.as_ref()))
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        Asked {
            client: client.to_owned(),
            method: method.to_owned(),
            path: path.to_owned(),
            query: pairs,
            content_type: content_type.map(str::to_owned),
            body,
            upgrade,
        }
    }

    /// The view of a recorded exchange's request.
    pub(crate) fn recorded(recorded: &Recorded) -> Asked {
        let request = &recorded.exchange.request;
        Asked::new(
            &recorded.exchange.client,
            &request.method,
            &request.path,
            &request.query,
            request.headers.get("content-type").map(String::as_str),
            request.body.clone(),
            request.headers.contains_key("upgrade"),
        )
    }

    /// Whether it only reads: a GET or HEAD that is not an upgrade.
    pub(crate) fn is_read(&self) -> bool {
        !self.upgrade && (self.method == "GET" || self.method == "HEAD")
    }

    /// The object it acts on: its path; for a create, the new object's path.
    fn object(&self) -> String {
        let name = (self.method == "POST")
            .then(|| self.body.body.as_ref()?.pointer("/metadata/name")?.as_str())
            .flatten();
        match name {
            Some(name) => format!("{}/{name}", self.path),
            None => self.path.clone(),
        }
    }

    /// Whether it may change what the server holds: neither a read nor an upgrade.
    fn is_write(&self) -> bool {
        !self.upgrade && !self.is_read()
    }

    /// The resource it acts on: its client and [`Asked::object`]; for an upgrade (exec,
    /// attach, port-forward), its query too, so that different commands run at once on one
    /// pod may start in any order.
    fn resource(&self) -> String {
        let mut key = format!("{} {}", self.client, self.object());
        if self.upgrade {
            for (k, v) in &self.query {
                key.push_str(&format!("&{k}={v}"));
            }
        }
        key
    }

    /// This request in this run's terms, for a recorded one (names and times mapped).
    pub(crate) fn rewritten(&self, bindings: &Bindings) -> Asked {
        let mut body = self.body.clone();
        if let Some(value) = &body.body {
            body.body = Some(bindings.rewrite_json(value));
        }
        if let Some(text) = body.payload.whole_text() {
            body.payload.text = Some(bindings.rewrite(text));
        }
        Asked {
            path: bindings.rewrite(&self.path),
            query: self
                .query
                .iter()
                .map(|(k, v)| (k.clone(), bindings.rewrite(v)))
                .collect(),
            body,
            ..self.clone()
        }
    }
}

/// Compares a recorded request with one asked now.
fn compare<'b>(bindings: &'b Bindings, recorded: &Asked, live: &Asked) -> Comparison<'b> {
    let mut c = bindings.compare();
    if recorded.method != live.method {
        c.differ();
    }
    if recorded.upgrade != live.upgrade {
        c.differ();
    }
    c.text(&recorded.path, &live.path);
    for (r, l) in recorded.query.iter().zip(&live.query) {
        if r.0 == l.0 {
            c.text(&r.1, &l.1);
        } else {
            c.differ();
        }
    }
    for _ in 0..recorded.query.len().abs_diff(live.query.len()) {
        c.differ();
    }
    if recorded.content_type != live.content_type {
        c.differ();
    }
    match (&recorded.body.body, &live.body.body) {
        (Some(r), Some(l)) => c.json(r, l),
        (None, None) => match (
            recorded.body.payload.whole_text(),
            live.body.payload.whole_text(),
        ) {
            (Some(r), Some(l)) => {
                c.text(r, l);
            }
            _ => {
                if recorded.body.payload.to_bytes() != live.body.payload.to_bytes() {
                    c.differ();
                }
            }
        },
        _ => c.differ(),
    }
    c
}

/// Where a recorded exchange stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    /// Not served yet.
    Open,
    /// Served.
    Served,
    /// Passed over: the state it shows is older than one already served.
    Skipped,
}

struct Entry {
    recorded: Arc<Recorded>,
    asked: Asked,
    resource: String,
    /// The first entry of its resource with the very same request (itself when none before).
    twin: usize,
    state: Use,
    /// When its request arrived, in seconds of the recording.
    start: f64,
    /// When its answer was read (its head, for streams and upgrades).
    end: f64,
    /// The answer's `metadata.resourceVersion`, when it is a number: how fresh the state it
    /// shows is, more precisely than `end`.
    version: Option<u64>,
    /// For a read, the writes (of any client) to what it reads, its path or anything under
    /// it, that happened before it: the answer shows them done.
    past: Vec<usize>,
    /// For a read, the writes to what it reads that happened after it: the answer shows them
    /// not done yet.
    future: Vec<usize>,
    /// For a read, whether any of those writes is to something under its path (it reads a
    /// collection others write to, such as a list).
    shared: bool,
    /// For a read answered with a list, what the list shows.
    listing: Option<Listing>,
}

impl Entry {
    /// Whether it completed before `other` was sent in the recording, so that the client may
    /// have waited for it (anything else overlapped, and may come in either order).
    fn happened_before(&self, other: &Entry) -> bool {
        self.end <= other.start
    }

    /// Whether it and `other` were in flight at once in the recording.
    fn overlaps(&self, other: &Entry) -> bool {
        self.start < other.end && other.start < self.end
    }

    /// Whether its answer shows a later state than `other`'s: by resource version when both
    /// have one, else by when it was read.
    fn fresher_than(&self, other: &Entry) -> bool {
        match (self.version, other.version) {
            (Some(a), Some(b)) => a > b,
            _ => self.end > other.end,
        }
    }
}

/// Where the exchanges that may match a request are: the client, the method and the path's
/// [`skeleton`].
fn bucket(asked: &Asked) -> (String, String, String) {
    (
        asked.client.clone(),
        asked.method.clone(),
        skeleton(&asked.path),
    )
}

/// Whether `object` is `path` or under it.
fn covers(path: &str, object: &str) -> bool {
    object
        .strip_prefix(path)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// What answers a request.
#[derive(Debug, Clone)]
pub(crate) enum Taken {
    /// An exchange served for the first time.
    Fresh(Arc<Recorded>),
    /// A read served again.
    Again(Arc<Recorded>),
}

/// A request that no recorded exchange answers, and the nearest recorded one.
#[derive(Debug, Clone)]
pub(crate) struct Miss {
    /// The request.
    pub(crate) asked: Asked,
    /// The nearest recorded exchange, if the client recorded any.
    pub(crate) nearest: Option<Nearest>,
}

/// The recorded exchange nearest to a request that matched none.
#[derive(Debug, Clone)]
pub(crate) struct Nearest {
    /// The exchange.
    pub(crate) recorded: Arc<Recorded>,
    /// Its request in this run's terms.
    pub(crate) asked: Asked,
    /// How many parts differ.
    pub(crate) differences: usize,
    /// An earlier open write on its resource (and its request in this run's terms), when that
    /// is all that kept it from matching.
    pub(crate) blocked_by: Option<(Arc<Recorded>, Asked)>,
}

/// The recorded exchanges of a replay and where each stands.
pub(crate) struct Book {
    entries: Vec<Entry>,
    by_resource: HashMap<String, Vec<usize>>,
    /// The entries that may match a request, by [`bucket`], in order.
    by_bucket: HashMap<(String, String, String), Vec<usize>>,
    /// The objects the recorded clients created and deleted, for list answers.
    objects: Objects,
    /// The normalization map, grown as requests match.
    pub(crate) bindings: Bindings,
    served: usize,
    repeated: usize,
}

/// How far a replay got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Recorded exchanges served.
    pub served: usize,
    /// Answers served again to reads.
    pub repeated: usize,
    /// Recorded reads passed over.
    pub skipped: usize,
    /// Recorded exchanges never asked for.
    pub unused: usize,
}

impl Book {
    /// The exchanges of `cassette`, all open, with unbound recorded times moved by `shift`.
    pub(crate) fn new(cassette: &Cassette, shift: time::Duration) -> Book {
        let mut entries: Vec<Entry> = Vec::new();
        let mut by_resource: HashMap<String, Vec<usize>> = HashMap::new();
        let mut by_bucket: HashMap<(String, String, String), Vec<usize>> = HashMap::new();
        for recorded in &cassette.exchanges {
            let asked = Asked::recorded(recorded);
            let resource = asked.resource();
            let siblings = by_resource.entry(resource.clone()).or_default();
            let index = entries.len();
            let twin = siblings
                .iter()
                .copied()
                .find(|j: &usize| entries[*j].asked == asked)
                .unwrap_or(index);
            siblings.push(index);
            by_bucket.entry(bucket(&asked)).or_default().push(index);
            let exchange = &recorded.exchange;
            let version = exchange.response.body.body.as_ref().and_then(|b| {
                b.pointer("/metadata/resourceVersion")?
                    .as_str()?
                    .parse()
                    .ok()
            });
            entries.push(Entry {
                recorded: Arc::new(recorded.clone()),
                asked,
                resource,
                twin,
                state: Use::Open,
                start: exchange.t,
                end: exchange.t + exchange.took,
                version,
                past: Vec::new(),
                future: Vec::new(),
                shared: false,
                listing: None,
            });
        }
        let mut objects = Objects::default();
        for (i, entry) in entries.iter_mut().enumerate() {
            let response = &entry.recorded.exchange.response;
            if entry.asked.is_write() {
                let object = entry.asked.object();
                objects.note_write(i, &entry.asked.method, &object, response.status);
            } else if entry.asked.is_read()
                && let Some(body) = &response.body.body
            {
                let key = format!(
                    "{} {} {:?}",
                    entry.asked.client, entry.asked.path, entry.asked.query
                );
                entry.listing = objects.note_list(&key, &entry.asked.path, body);
            }
        }
        let writes: Vec<(usize, String)> = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.asked.is_write())
            .map(|(i, e)| (i, e.asked.object()))
            .collect();
        for r in 0..entries.len() {
            if !entries[r].asked.is_read() {
                continue;
            }
            let (mut past, mut future, mut shared) = (Vec::new(), Vec::new(), false);
            for (w, object) in &writes {
                if !covers(&entries[r].asked.path, object) {
                    continue;
                }
                shared |= *object != entries[r].asked.path;
                if entries[*w].happened_before(&entries[r]) {
                    past.push(*w);
                } else if entries[r].happened_before(&entries[*w]) {
                    future.push(*w);
                }
            }
            let entry = &mut entries[r];
            (entry.past, entry.future, entry.shared) = (past, future, shared);
        }
        Book {
            entries,
            by_resource,
            by_bucket,
            objects,
            bindings: Bindings::new(shift),
            served: 0,
            repeated: 0,
        }
    }

    /// How far the state entry `i`'s answer shows is from the state this replay has made,
    /// first by what a list answer shows ([`Objects::misfit`]), then by the writes to what it
    /// reads that it shows done but this replay has not served, and those it shows not done
    /// but this replay has served. A list that several clients (or trials) ask for in turn
    /// gets the answer recorded at the point the replay has reached.
    fn distance(&self, i: usize) -> (usize, usize) {
        let entry = &self.entries[i];
        let served = |w: usize| self.entries[w].state == Use::Served;
        let misfit = entry
            .listing
            .as_ref()
            .map_or(0, |l| self.objects.misfit(l, served));
        let undone = entry
            .past
            .iter()
            .filter(|w| self.entries[**w].state == Use::Open);
        let done = entry
            .future
            .iter()
            .filter(|w| self.entries[**w].state != Use::Open);
        (misfit, undone.count() + done.count())
    }

    /// The recorded exchange that answers `live`.
    ///
    /// The candidates are the open exchanges that match it and that no open write of their
    /// resource happened before; for a read, the served ones too, to answer again. A write
    /// gets the first candidate. A read gets the candidate whose answer shows the state
    /// nearest to the one this replay has made ([`Book::distance`]), the first (or, to answer
    /// again, the last served) of those equally near; then, of it and the open candidates
    /// equally near that overlapped it in the recording, the one that shows the freshest
    /// state. Which of several reads in flight at once the server answered first is a race,
    /// and a client that saw an older state than its recording did could ask for things the
    /// recording never saw (a poll that finds a sandbox pending looks at its pod); one that
    /// sees a newer state only asks less.
    pub(crate) fn take(&mut self, live: &Asked) -> Result<Taken, Box<Miss>> {
        let read = live.is_read();
        let bucket = self
            .by_bucket
            .get(&bucket(live))
            .cloned()
            .unwrap_or_default();
        let mut ranked: Vec<((usize, usize), bool, usize, usize)> = bucket
            .iter()
            .filter_map(|&i| match self.entries[i].state {
                Use::Open if self.blocked(i).is_none() => Some((self.distance(i), false, i, i)),
                Use::Served if read => Some((self.distance(i), true, usize::MAX - i, i)),
                _ => None,
            })
            .collect();
        ranked.sort_unstable();
        let mut chosen: Option<(usize, (usize, usize), Learned)> = None;
        for &(distance, _, _, i) in &ranked {
            let c = compare(&self.bindings, &self.entries[i].asked, live);
            if c.differences == 0 {
                chosen = Some((i, distance, c.learned()));
                break;
            }
        }
        let Some((first, distance, mut learned)) = chosen else {
            return Err(Box::new(self.miss(live)));
        };
        if self.entries[first].state == Use::Served {
            self.bindings.learn(learned);
            self.repeated += 1;
            return Ok(Taken::Again(self.entries[first].recorded.clone()));
        }
        let mut pick = first;
        if read {
            for &(d, served, _, i) in &ranked {
                let entry = &self.entries[i];
                if d != distance
                    || served
                    || i == first
                    || !entry.overlaps(&self.entries[first])
                    || !entry.fresher_than(&self.entries[pick])
                {
                    continue;
                }
                let c = compare(&self.bindings, &entry.asked, live);
                if c.differences == 0 {
                    (pick, learned) = (i, c.learned());
                }
            }
        }
        self.bindings.learn(learned);
        self.serve(pick);
        Ok(Taken::Fresh(self.entries[pick].recorded.clone()))
    }

    /// The first open write on entry `i`'s resource that happened before it, if any, leaving
    /// out writes one of whose identical twins was served.
    fn blocked(&self, i: usize) -> Option<usize> {
        let siblings = self.by_resource.get(&self.entries[i].resource)?;
        let served_twin = |twin: usize| {
            siblings
                .iter()
                .any(|k| self.entries[*k].twin == twin && self.entries[*k].state == Use::Served)
        };
        siblings
            .iter()
            .take_while(|j| **j < i)
            .find(|j| {
                let e = &self.entries[**j];
                e.state == Use::Open
                    && !e.asked.is_read()
                    && e.happened_before(&self.entries[i])
                    && !served_twin(e.twin)
            })
            .copied()
    }

    /// Marks entry `i` served, and the open reads of its resource that can no longer be
    /// served skipped: for a write, those before it; for a read of one object, those that
    /// show an older state, having happened before it or overlapped it (a client that saw
    /// this state must not see an older one next). Reads of a shared collection are never
    /// skipped: other clients may still be behind, and [`Book::distance`] keeps stale
    /// answers from them.
    fn serve(&mut self, i: usize) {
        self.entries[i].state = Use::Served;
        self.served += 1;
        let Some(list) = self.by_resource.get(&self.entries[i].resource) else {
            return;
        };
        let served = &self.entries[i];
        let stale: Vec<usize> = list
            .iter()
            .copied()
            .filter(|j| {
                let e = &self.entries[*j];
                let older = if served.asked.is_read() {
                    !served.shared
                        && !e.shared
                        && (e.happened_before(served)
                            || (e.start < served.end && served.fresher_than(e)))
                } else {
                    *j < i
                };
                e.state == Use::Open && e.asked.is_read() && older
            })
            .collect();
        for j in stale {
            self.entries[j].state = Use::Skipped;
        }
    }

    /// The nearest recorded exchange of the same client: the open one with the fewest
    /// differences, or a served one when none is open.
    fn miss(&self, live: &Asked) -> Miss {
        let mut best: Option<(usize, usize, bool)> = None;
        for (i, entry) in self.entries.iter().enumerate() {
            if entry.asked.client != live.client {
                continue;
            }
            let open = entry.state == Use::Open;
            let differences = compare(&self.bindings, &entry.asked, live).differences;
            let better = match best {
                None => true,
                Some((_, d, o)) => (open && !o) || (open == o && differences < d),
            };
            if better {
                best = Some((i, differences, open));
            }
        }
        let nearest = best.map(|(i, differences, open)| {
            let entry = &self.entries[i];
            let blocked_by = (open && differences == 0)
                .then(|| self.blocked(i))
                .flatten()
                .map(|j| {
                    let blocker = &self.entries[j];
                    (
                        blocker.recorded.clone(),
                        blocker.asked.rewritten(&self.bindings),
                    )
                });
            Nearest {
                recorded: entry.recorded.clone(),
                asked: entry.asked.rewritten(&self.bindings),
                differences,
                blocked_by,
            }
        });
        Miss {
            asked: live.clone(),
            nearest,
        }
    }

    /// How far the replay got.
    pub(crate) fn progress(&self) -> Progress {
        let count = |state| self.entries.iter().filter(|e| e.state == state).count();
        Progress {
            served: self.served,
            repeated: self.repeated,
            skipped: count(Use::Skipped),
            unused: count(Use::Open),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{Exchange, Header, Request, Response};
    use serde_json::json;

    /// Exchange `id`, sent at `id` seconds and answered half a second later.
    fn exchange(id: u64, method: &str, path: &str, body: Option<serde_json::Value>) -> Recorded {
        Recorded {
            exchange: Exchange {
                id,
                client: "default".to_owned(),
                t: id as f64,
                http: "2".to_owned(),
                request: Request {
                    method: method.to_owned(),
                    path: path.to_owned(),
                    query: String::new(),
                    headers: Default::default(),
                    body: Body {
                        body,
                        ..Body::default()
                    },
                },
                response: Response {
                    status: 200,
                    headers: Default::default(),
                    body: Body::default(),
                    stream: None,
                },
                took: 0.5,
            },
            line: id as usize + 1,
            events: Vec::new(),
            frames: Vec::new(),
            end: None,
        }
    }

    /// `recorded`, sent at `t` and answered `took` later with `status` and `body`.
    fn timed(
        mut recorded: Recorded,
        t: f64,
        took: f64,
        status: u16,
        body: Option<serde_json::Value>,
    ) -> Recorded {
        recorded.exchange.t = t;
        recorded.exchange.took = took;
        recorded.exchange.response.status = status;
        recorded.exchange.response.body.body = body;
        recorded
    }

    fn book(exchanges: Vec<Recorded>) -> Book {
        let cassette = Cassette {
            header: Header {
                format: "fakekube-cassette".to_owned(),
                version: 1,
                recorded_at: "2025-01-01T00:00:00Z".to_owned(),
            },
            exchanges,
        };
        Book::new(&cassette, time::Duration::ZERO)
    }

    fn ask(method: &str, path: &str, body: Option<serde_json::Value>) -> Asked {
        Asked::new(
            "default",
            method,
            path,
            "",
            None,
            Body {
                body,
                ..Body::default()
            },
            false,
        )
    }

    fn id(taken: Result<Taken, Box<Miss>>) -> u64 {
        match taken {
            Ok(Taken::Fresh(r)) => r.exchange.id,
            Ok(Taken::Again(r)) => 1000 + r.exchange.id,
            Err(miss) => panic!("miss: {miss:?}"),
        }
    }

    #[test]
    fn a_create_binds_the_run_s_name_and_later_requests_follow_it() {
        let mut b = book(vec![
            exchange(
                1,
                "POST",
                "/s",
                Some(json!({"metadata": {"name": "cf-aaaaaa-1"}})),
            ),
            exchange(2, "GET", "/s/cf-aaaaaa-1", None),
            exchange(3, "DELETE", "/s/cf-aaaaaa-1", None),
        ]);
        assert_eq!(
            id(b.take(&ask(
                "POST",
                "/s",
                Some(json!({"metadata": {"name": "cf-bbbbbb-1"}}))
            ))),
            1
        );
        assert_eq!(id(b.take(&ask("GET", "/s/cf-bbbbbb-1", None))), 2);
        assert_eq!(id(b.take(&ask("DELETE", "/s/cf-bbbbbb-1", None))), 3);
        assert_eq!(b.progress().unused, 0);
    }

    #[test]
    fn requests_of_other_resources_may_come_in_another_order() {
        let mut b = book(vec![
            exchange(1, "GET", "/a", None),
            exchange(2, "GET", "/b", None),
        ]);
        assert_eq!(id(b.take(&ask("GET", "/b", None))), 2);
        assert_eq!(id(b.take(&ask("GET", "/a", None))), 1);
    }

    #[test]
    fn a_write_is_not_served_before_an_earlier_write_of_its_resource() {
        let mut b = book(vec![
            exchange(1, "PATCH", "/a", Some(json!({"x": 1}))),
            exchange(2, "DELETE", "/a", None),
        ]);
        let miss = b.take(&ask("DELETE", "/a", None)).unwrap_err();
        let nearest = miss.nearest.unwrap();
        assert_eq!(nearest.recorded.exchange.id, 2);
        assert_eq!(nearest.differences, 0);
        assert_eq!(nearest.blocked_by.unwrap().0.exchange.id, 1);
    }

    #[test]
    fn reads_after_identical_writes_sent_at_once_wait_only_for_the_first_of_them() {
        let create = || Some(json!({"metadata": {"name": "cf-aaaaaa-3"}}));
        let mut b = book(vec![
            exchange(1, "POST", "/s", create()),
            exchange(2, "POST", "/s", create()),
            exchange(3, "GET", "/s/cf-aaaaaa-3", None),
        ]);
        let live = ask(
            "POST",
            "/s",
            Some(json!({"metadata": {"name": "cf-bbbbbb-3"}})),
        );
        assert!(
            b.take(&ask("GET", "/s/cf-aaaaaa-3", None)).is_err(),
            "no create served yet"
        );
        assert_eq!(id(b.take(&live)), 1);
        assert_eq!(id(b.take(&ask("GET", "/s/cf-bbbbbb-3", None))), 3);
        assert_eq!(id(b.take(&live)), 2);
    }

    #[test]
    fn fewer_polls_skip_reads_and_more_polls_repeat_the_last_answer() {
        let mut b = book(vec![
            exchange(1, "GET", "/a", None),
            exchange(2, "GET", "/a", None),
            exchange(3, "DELETE", "/a", None),
            exchange(4, "GET", "/a", None),
        ]);
        assert_eq!(id(b.take(&ask("GET", "/a", None))), 1);
        assert_eq!(id(b.take(&ask("DELETE", "/a", None))), 3);
        assert_eq!(b.progress().skipped, 1);
        assert_eq!(id(b.take(&ask("GET", "/a", None))), 4);
        assert_eq!(id(b.take(&ask("GET", "/a", None))), 1004);
    }

    #[test]
    fn reads_in_flight_at_once_get_the_freshest_answer_and_never_an_older_one_after() {
        let state = |rv: &str, ready: bool| {
            Some(json!({"metadata": {"resourceVersion": rv}, "ready": ready}))
        };
        let get = |id| exchange(id, "GET", "/s/a", None);
        let mut b = book(vec![
            timed(
                exchange(1, "POST", "/s", Some(json!({"metadata": {"name": "a"}}))),
                0.0,
                1.0,
                201,
                None,
            ),
            // Two pollers at once: the first sent was answered last, with the newer state.
            timed(get(2), 1.5, 3.0, 200, state("7", true)),
            timed(get(3), 2.0, 0.5, 200, state("5", false)),
            timed(get(4), 2.1, 2.0, 200, state("7", true)),
            timed(get(5), 6.0, 1.0, 200, state("9", true)),
        ]);
        assert_eq!(
            id(b.take(&ask("POST", "/s", Some(json!({"metadata": {"name": "a"}}))))),
            1
        );
        assert_eq!(
            id(b.take(&ask("GET", "/s/a", None))),
            2,
            "the freshest of 2, 3 and 4"
        );
        assert_eq!(
            id(b.take(&ask("GET", "/s/a", None))),
            4,
            "3 shows an older state than 2"
        );
        assert_eq!(id(b.take(&ask("GET", "/s/a", None))), 5);
        assert_eq!(b.progress().skipped, 1);
    }

    #[test]
    fn a_list_gets_the_answer_that_shows_what_this_replay_made() {
        let create =
            |id, name: &str| exchange(id, "POST", "/s", Some(json!({"metadata": {"name": name}})));
        let list = |names: &[&str]| {
            let items: Vec<_> = names
                .iter()
                .map(|n| json!({"metadata": {"name": n}}))
                .collect();
            Some(json!({"metadata": {}, "items": items}))
        };
        // Trial a, then trial b, each alone: create, list, delete.
        let mut b = book(vec![
            timed(create(1, "a"), 0.0, 1.0, 201, None),
            timed(exchange(2, "GET", "/s", None), 1.0, 1.0, 200, list(&["a"])),
            timed(exchange(3, "DELETE", "/s/a", None), 2.0, 1.0, 200, None),
            timed(create(4, "b"), 3.0, 1.0, 201, None),
            timed(exchange(5, "GET", "/s", None), 4.0, 1.0, 200, list(&["b"])),
            timed(exchange(6, "DELETE", "/s/b", None), 5.0, 1.0, 200, None),
        ]);
        // The replay runs them the other way round.
        let post = |name: &str| ask("POST", "/s", Some(json!({"metadata": {"name": name}})));
        assert_eq!(id(b.take(&post("b"))), 4);
        assert_eq!(id(b.take(&ask("GET", "/s", None))), 5, "b's own list");
        assert_eq!(id(b.take(&ask("DELETE", "/s/b", None))), 6);
        assert_eq!(id(b.take(&post("a"))), 1);
        assert_eq!(id(b.take(&ask("GET", "/s", None))), 2, "a's own list");
        assert_eq!(id(b.take(&ask("DELETE", "/s/a", None))), 3);
    }

    #[test]
    fn a_write_nobody_recorded_is_a_miss_with_the_nearest_request() {
        let mut b = book(vec![
            exchange(
                1,
                "POST",
                "/s",
                Some(json!({"metadata": {"name": "x"}, "spec": {"a": 1}})),
            ),
            exchange(2, "GET", "/other", None),
        ]);
        let miss = b
            .take(&ask(
                "POST",
                "/s",
                Some(json!({"metadata": {"name": "x"}, "spec": {"a": 2}})),
            ))
            .unwrap_err();
        let nearest = miss.nearest.unwrap();
        assert_eq!(nearest.recorded.exchange.id, 1);
        assert_eq!(nearest.differences, 1);
        assert!(nearest.blocked_by.is_none());
    }

    #[test]
    fn query_order_and_timeout_seconds_do_not_matter() {
        let a = Asked::new(
            "c",
            "GET",
            "/p",
            "watch=1&labelSelector=a%3Db&timeoutSeconds=290",
            None,
            Body::default(),
            false,
        );
        let b = Asked::new(
            "c",
            "GET",
            "/p",
            "labelSelector=a=b&timeoutSeconds=7&watch=1",
            None,
            Body::default(),
            false,
        );
        assert_eq!(compare(&Bindings::default(), &a, &b).differences, 0);
    }
}
