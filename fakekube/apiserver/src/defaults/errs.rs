//! [`Errs`]: the causes of a 422 gathered with the constructors of apimachinery's
//! `field.Error` (`Required`, `Invalid`, `NotSupported`, `Duplicate`, `Forbidden`), worded as
//! the API server words them.

use super::required;
use crate::status::Cause;
use fakekube_machinery::go_format::{go_quote, go_v};
use serde_json::Value;

/// The causes of one object, with the constructors of `field.Error`.
#[derive(Default)]
pub(super) struct Errs(pub(super) Vec<Cause>);

impl Errs {
    pub(super) fn required(&mut self, field: &str, detail: &str) {
        let mut c = required(field);
        if !detail.is_empty() {
            c.message = format!("Required value: {detail}");
        }
        self.0.push(c);
    }
    pub(super) fn invalid(&mut self, field: &str, value: &Value, detail: &str) {
        self.0.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {}: {detail}", go_v(value)),
            field: Some(field.into()),
        });
    }
    pub(super) fn not_supported(&mut self, field: &str, value: &Value, supported: &[&str]) {
        let list: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
        self.0.push(Cause {
            reason: "FieldValueNotSupported".into(),
            message: format!(
                "Unsupported value: {}: supported values: {}",
                go_v(value),
                list.join(", ")
            ),
            field: Some(field.into()),
        });
    }
    pub(super) fn duplicate(&mut self, field: &str, value: &Value) {
        self.0.push(Cause {
            reason: "FieldValueDuplicate".into(),
            message: format!("Duplicate value: {}", go_v(value)),
            field: Some(field.into()),
        });
    }
    pub(super) fn forbidden(&mut self, field: &str, detail: &str) {
        self.0.push(Cause {
            reason: "FieldValueForbidden".into(),
            message: format!("Forbidden: {detail}"),
            field: Some(field.into()),
        });
    }
}
