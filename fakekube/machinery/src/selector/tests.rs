//! Tests of both selector parsers together.

use proptest::prelude::*;

use super::{FieldSelector, LabelSelector};

/// Strings made of selector characters, to reach deep into both parsers.
fn selector_like() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-c =!(),<>\\\\\t]{0,24}",
        prop::collection::vec(
            prop::sample::select(vec![
                "a",
                "b",
                "in",
                "notin",
                "(",
                ")",
                ",",
                "=",
                "==",
                "!=",
                "!",
                ">",
                "<",
                " ",
                "\\",
                "\\,",
                "é",
                "\u{0}",
                "metadata.name",
                "/",
                "x.y/z",
                "1",
            ]),
            0..12
        )
        .prop_map(|parts| parts.concat()),
    ]
}

proptest! {
    #[test]
    fn parsers_never_panic_and_successes_round_trip(input in selector_like()) {
        if let Ok(s) = LabelSelector::parse(&input) {
            prop_assert_eq!(LabelSelector::parse(&s.to_string()), Ok(s.clone()));
            let _ = s.matches(None);
        }
        if let Ok(s) = FieldSelector::parse(&input) {
            prop_assert_eq!(FieldSelector::parse(&s.to_string()), Ok(s.clone()));
            let _ = s.check_supported(&["metadata.name"]);
        }
    }
}
