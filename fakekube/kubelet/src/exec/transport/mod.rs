//! The connections an exec session runs over, each a [`Transport`](super::session::Transport):
//! [`websocket`] (the channel-prefixed messages of the `channel.k8s.io` family) and [`spdy`]
//! (one SPDY stream per channel).

pub mod spdy;
pub mod websocket;
