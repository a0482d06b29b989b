//! Which recorded exchange answers a request during a replay.
//!
//! A request matches a recorded one of the same client with the same method, path, normalized
//! query (pairs sorted by key, `timeoutSeconds` left out), content type and body, under the
//! normalization map ([`Bindings`]). Exchanges are served in order per resource (the path, and
//! for a create the new object's name): the first open match whose resource has no earlier
//! open write wins, and reads it passes over on its resource are skipped for good. A read with
//! no open match gets the last matching answer again (a client that polls more often than
//! during the recording); anything else is a [`Miss`], which carries the nearest recorded
//! request for the side-by-side message. Identical writes of one resource are one group (a
//! client that sends the same create eight times at once): once one of them is served, the
//! others no longer hold back the reads after them, since they raced in the recording too.

use std::collections::HashMap;
use std::sync::Arc;

use crate::format::{Body, Cassette, Recorded};
use crate::normalize::{Bindings, Comparison};

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

    /// The resource it acts on: its path; for a create, the new object's name too; for an
    /// upgrade (exec, attach, port-forward), its query too, so that different commands run at
    /// once on one pod may start in any order.
    fn resource(&self) -> String {
        let name = (self.method == "POST")
            .then(|| self.body.body.as_ref()?.pointer("/metadata/name")?.as_str())
            .flatten();
        let mut key = format!("{} {}", self.client, self.path);
        if let Some(name) = name {
            key.push('/');
            key.push_str(name);
        }
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
    /// Passed over: a later exchange of its resource was served.
    Skipped,
}

struct Entry {
    recorded: Arc<Recorded>,
    asked: Asked,
    resource: String,
    /// The first entry of its resource with the very same request (itself when none before).
    twin: usize,
    state: Use,
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
    /// The normalization map, grown as requests match.
    pub(crate) bindings: Bindings,
    /// Entries before this one are all served or skipped.
    open_from: usize,
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
            entries.push(Entry {
                recorded: Arc::new(recorded.clone()),
                asked,
                resource,
                twin,
                state: Use::Open,
            });
        }
        Book {
            entries,
            by_resource,
            bindings: Bindings::new(shift),
            open_from: 0,
            served: 0,
            repeated: 0,
        }
    }

    /// The recorded exchange that answers `live`.
    pub(crate) fn take(&mut self, live: &Asked) -> Result<Taken, Box<Miss>> {
        let mut chosen = None;
        for i in self.open_from..self.entries.len() {
            let entry = &self.entries[i];
            if entry.state != Use::Open
                || entry.asked.client != live.client
                || entry.asked.method != live.method
                || self.blocked(i).is_some()
            {
                continue;
            }
            let c = compare(&self.bindings, &entry.asked, live);
            if c.differences == 0 {
                chosen = Some((i, c.learned()));
                break;
            }
        }
        if let Some((i, learned)) = chosen {
            self.bindings.learn(learned);
            self.serve(i);
            return Ok(Taken::Fresh(self.entries[i].recorded.clone()));
        }
        if live.is_read() {
            for i in (0..self.entries.len()).rev() {
                let entry = &self.entries[i];
                if entry.state != Use::Served || entry.asked.client != live.client {
                    continue;
                }
                let c = compare(&self.bindings, &entry.asked, live);
                if c.differences == 0 {
                    let learned = c.learned();
                    self.bindings.learn(learned);
                    self.repeated += 1;
                    return Ok(Taken::Again(self.entries[i].recorded.clone()));
                }
            }
        }
        Err(Box::new(self.miss(live)))
    }

    /// The first open write on entry `i`'s resource before it, if any, leaving out writes
    /// one of whose identical twins was served.
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
                e.state == Use::Open && !e.asked.is_read() && !served_twin(e.twin)
            })
            .copied()
    }

    /// Marks entry `i` served and the open reads before it on its resource skipped.
    fn serve(&mut self, i: usize) {
        self.entries[i].state = Use::Served;
        self.served += 1;
        if let Some(list) = self.by_resource.get(&self.entries[i].resource) {
            for j in list.iter().take_while(|j| **j < i) {
                let e = &mut self.entries[*j];
                if e.state == Use::Open && e.asked.is_read() {
                    e.state = Use::Skipped;
                }
            }
        }
        while self
            .entries
            .get(self.open_from)
            .is_some_and(|e| e.state != Use::Open)
        {
            self.open_from += 1;
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

    fn exchange(id: u64, method: &str, path: &str, body: Option<serde_json::Value>) -> Recorded {
        Recorded {
            exchange: Exchange {
                id,
                client: "default".to_owned(),
                t: 0.0,
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
                took: 0.0,
            },
            line: id as usize + 1,
            events: Vec::new(),
            frames: Vec::new(),
            end: None,
        }
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
