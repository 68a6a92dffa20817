//! A `tracing` subscriber that keeps every event, for the hosts' tests of their
//! transition events: the real dispatch, no mock of the `tracing` API.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// One event as the subscriber saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// Its level.
    pub level: Level,
    /// Its target.
    pub target: String,
    /// Its fields (the message as `message`), rendered as text.
    pub fields: BTreeMap<String, String>,
}

impl Captured {
    /// A field's value, or "" when the event has no such field.
    pub fn field(&self, name: &str) -> &str {
        self.fields.get(name).map_or("", String::as_str)
    }
}

/// Runs `f` with a subscriber that records every event emitted on this thread.
pub fn capture<R>(f: impl FnOnce() -> R) -> (R, Vec<Captured>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let subscriber = Recorder(Arc::clone(&events));
    let result = tracing::subscriber::with_default(subscriber, f);
    let events = std::mem::take(&mut *events.lock().unwrap_or_else(|p| p.into_inner()));
    (result, events)
}

struct Recorder(Arc<Mutex<Vec<Captured>>>);

struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut fields = Fields(BTreeMap::new());
        event.record(&mut fields);
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Captured {
                level: *event.metadata().level(),
                target: event.metadata().target().to_string(),
                fields: fields.0,
            });
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}
