//! What a recorded list answer shows, and how well it fits the objects a replay has made.
//!
//! Several clients (or the concurrent parts of one) may list one collection at different
//! points of a run, with the same request; each list answer shows the collection at its point.
//! A replay tells them apart by their content: an answer fits when it lists the objects this
//! replay has created (and not deleted) and no object this replay has not created yet.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

/// What one recorded list answer shows.
#[derive(Debug, Clone)]
pub(crate) struct Listing {
    /// Which same requests it answers (an index into [`Objects::universes`]).
    group: usize,
    /// The objects it lists, as paths (`collection/name`).
    items: BTreeSet<String>,
    /// The last object of its page, when more pages follow: it shows nothing after it.
    until: Option<String>,
}

/// The objects the recorded clients wrote, and what each group of same list requests could
/// show.
#[derive(Debug, Default)]
pub(crate) struct Objects {
    /// Per object path, its creates and deletes (entry indices).
    writes: HashMap<String, Writes>,
    /// Per group of same list requests, every object any of its answers listed.
    universes: Vec<BTreeSet<String>>,
    /// The groups, by request key.
    groups: HashMap<String, usize>,
}

/// The creates and deletes of one object.
#[derive(Debug, Default)]
struct Writes {
    creates: Vec<usize>,
    deletes: Vec<usize>,
}

/// Where an object stands in a replay, from the writes served so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    /// No create of it was served (the recording's clients made it later, or never).
    NotYet,
    /// A create was served and no delete.
    Exists,
    /// A delete was served: a list may show it for a while still (finalizers) or not.
    Deleted,
}

impl Objects {
    /// Notes that entry `index`, a write to `object` answered with `status`, creates or deletes
    /// it (other writes change no object's presence).
    pub(crate) fn note_write(&mut self, index: usize, method: &str, object: &str, status: u16) {
        let writes = self.writes.entry(object.to_owned()).or_default();
        match method {
            // AlreadyExists: it exists, made by an earlier create.
            "POST" if status < 300 || status == 409 => writes.creates.push(index),
            "DELETE" if status < 300 => writes.deletes.push(index),
            _ => {}
        }
    }

    /// The listing of a recorded read of `path` keyed `key` (its client and query, so that
    /// only the same requests share a group), when its answer is a list of named items.
    pub(crate) fn note_list(&mut self, key: &str, path: &str, body: &Value) -> Option<Listing> {
        let items: BTreeSet<String> = body
            .get("items")?
            .as_array()?
            .iter()
            .filter_map(|item| item.pointer("/metadata/name")?.as_str())
            .map(|name| format!("{path}/{name}"))
            .collect();
        let more = body
            .pointer("/metadata/continue")
            .and_then(Value::as_str)
            .is_some_and(|c| !c.is_empty());
        let until = more.then(|| items.last().cloned()).flatten();
        let next = self.groups.len();
        let group = *self.groups.entry(key.to_owned()).or_insert(next);
        if group == self.universes.len() {
            self.universes.push(BTreeSet::new());
        }
        self.universes[group].extend(items.iter().cloned());
        Some(Listing {
            group,
            items,
            until,
        })
    }

    /// How badly `listing` fits the objects made so far, given whether each entry was served:
    /// the objects that exist and that its request can show but it leaves out, plus the
    /// objects it lists that the recording's clients created and this replay has not yet.
    pub(crate) fn misfit(&self, listing: &Listing, served: impl Fn(usize) -> bool) -> usize {
        // The last served create or delete decides (an id may be made again after a delete).
        let standing = |object: &str| {
            let w = self.writes.get(object).filter(|w| !w.creates.is_empty())?;
            let last = |list: &[usize]| list.iter().copied().filter(|i| served(*i)).max();
            Some(match (last(&w.creates), last(&w.deletes)) {
                (None, None) => Standing::NotYet,
                (Some(c), Some(d)) if c > d => Standing::Exists,
                (Some(_), None) => Standing::Exists,
                (_, Some(_)) => Standing::Deleted,
            })
        };
        let universe = &self.universes[listing.group];
        let missing = universe
            .iter()
            .take_while(|o| listing.until.as_ref().is_none_or(|until| *o <= until))
            .filter(|o| !listing.items.contains(*o) && standing(o) == Some(Standing::Exists))
            .count();
        let early = listing
            .items
            .iter()
            .filter(|o| standing(o) == Some(Standing::NotYet))
            .count();
        missing + early
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(names: &[&str], more: bool) -> Value {
        let items: Vec<Value> = names
            .iter()
            .map(|n| json!({"metadata": {"name": n}}))
            .collect();
        let token = if more { "next" } else { "" };
        json!({"metadata": {"continue": token}, "items": items})
    }

    #[test]
    fn a_list_fits_when_it_shows_what_was_made_and_nothing_made_later() {
        let mut objects = Objects::default();
        // Entries 0 and 1 create a and b, entry 2 deletes a.
        objects.note_write(0, "POST", "/s/a", 201);
        objects.note_write(1, "POST", "/s/b", 201);
        objects.note_write(2, "DELETE", "/s/a", 200);
        let only_a = objects.note_list("q", "/s", &list(&["a"], false)).unwrap();
        let both = objects
            .note_list("q", "/s", &list(&["a", "b"], false))
            .unwrap();
        let only_b = objects.note_list("q", "/s", &list(&["b"], false)).unwrap();
        let served = |upto: usize| move |i: usize| i < upto;
        assert_eq!(objects.misfit(&only_a, served(1)), 0);
        assert_eq!(objects.misfit(&both, served(1)), 1, "b is not made yet");
        assert_eq!(
            objects.misfit(&only_b, served(1)),
            2,
            "a is left out, b is early"
        );
        assert_eq!(objects.misfit(&both, served(2)), 0);
        assert_eq!(objects.misfit(&only_a, served(2)), 1, "b is left out");
        assert_eq!(objects.misfit(&only_b, served(3)), 0);
        assert_eq!(
            objects.misfit(&both, served(3)),
            0,
            "a deleted object may still be listed"
        );
    }

    #[test]
    fn a_page_says_nothing_about_objects_after_its_last() {
        let mut objects = Objects::default();
        objects.note_write(0, "POST", "/s/a", 201);
        objects.note_write(1, "POST", "/s/z", 201);
        let page = objects.note_list("q", "/s", &list(&["a"], true)).unwrap();
        let _whole = objects
            .note_list("q", "/s", &list(&["a", "z"], false))
            .unwrap();
        assert_eq!(objects.misfit(&page, |_| true), 0);
    }

    #[test]
    fn other_requests_and_objects_no_client_made_do_not_count() {
        let mut objects = Objects::default();
        objects.note_write(0, "POST", "/s/a", 201);
        let warm = objects
            .note_list("warm", "/s", &list(&["w1"], false))
            .unwrap();
        let _direct = objects
            .note_list("direct", "/s", &list(&["a"], false))
            .unwrap();
        assert_eq!(
            objects.misfit(&warm, |_| true),
            0,
            "a is never in the warm list; w1 was made by the server"
        );
        assert!(
            objects
                .note_list("x", "/s", &json!({"kind": "Pod"}))
                .is_none()
        );
    }
}
