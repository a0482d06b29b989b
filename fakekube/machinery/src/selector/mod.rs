//! Label and field selectors for list and watch requests (`?labelSelector=`, `?fieldSelector=`),
//! read, matched and worded as the API server does it.
//!
//! Label selectors follow apimachinery's `labels.Parse`: requirements separated by commas, each
//! one of `key=value`, `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key`
//! (exists), `!key` (does not exist), and the numeric `key>n` and `key<n`. Field selectors follow
//! `fields.ParseSelector`: `field=value`, `field==value` and `field!=value` terms whose values
//! escape `\`, `,` and `=` with a backslash.
//!
//! Behaviours that look odd but are the API server's, kept on purpose:
//! - `!=` and `notin` match objects that lack the key;
//! - `key in ()` is not an error: the parser reads it as `key in ("")` (apimachinery rejects an
//!   empty `values` list only in a `metav1.LabelSelector` object, which no request here reads);
//! - but `key in (x,,)` and `key in (,,)` are errors, because apimachinery's list reader wants a
//!   value after a double comma;
//! - field selectors are not trimmed: ` metadata.name=x` names the field ` metadata.name`;
//! - a field the object lacks compares as the empty string.
//!
//! # Layout
//!
//! One submodule per selector kind, after the upstream package it stands for:
//!
//! - `labels`: [`LabelSelector`] (k8s.io/apimachinery/pkg/labels, `labels.Parse` and
//!   `metav1.LabelSelectorAsSelector`).
//! - `fields`: [`FieldSelector`] and [`field_value`] (k8s.io/apimachinery/pkg/fields,
//!   `fields.ParseSelector`).
//!
//! and the parts label selectors are built from:
//!
//! - `requirement`: one label requirement (`labels.Requirement`) and the label key and value
//!   rules (k8s.io/apimachinery/pkg/util/validation).
//! - `parse`: the label selector lexer and parser (`labels.Lexer`, `labels.Parser`).
//! - `error`: [`SelectorError`] and [`RequirementError`], shared by both kinds.

mod error;
mod fields;
mod labels;
mod parse;
mod requirement;
#[cfg(test)]
mod tests;

pub use error::{RequirementError, SelectorError};
pub use fields::{FieldSelector, field_value};
pub use labels::LabelSelector;
