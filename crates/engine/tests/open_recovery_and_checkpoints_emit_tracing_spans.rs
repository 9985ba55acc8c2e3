//! The engine emits `tracing` spans for open, recovery (one per pass) and checkpoints,
//! and installs no subscriber itself: an application's subscriber (here a tiny layer that
//! records each new span's name, its parent and its fields) sees them.

use sluice::{Database, Options};
use sluice_storage::{SimStorage, Storage};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Records every span opened: "name<parent" and the fields it was recorded with.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a new span is registered");
        let parent = span.parent().map_or("", |p| p.name());
        let mut line = format!("{}<{parent}", attrs.metadata().name());
        attrs.record(&mut Fields(&mut line));
        self.0.lock().unwrap().push(line);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a recorded span is registered");
        let mut line = format!("{} recorded", span.name());
        values.record(&mut Fields(&mut line));
        self.0.lock().unwrap().push(line);
    }
}

fn has(lines: &[String], prefix: &str) -> bool {
    lines.iter().any(|l| l.starts_with(prefix))
}

#[test]
fn open_recovery_and_checkpoints_emit_spans() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let sim = SimStorage::new(1);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    tracing::subscriber::with_default(subscriber, || {
        let db = Database::open_on(storage.clone(), "/db", Options::small()).unwrap();
        let t = db.create_table("t").unwrap();
        let mut tx = db.begin();
        tx.put(&t, "k", "v").unwrap();
        tx.commit().unwrap();
        db.checkpoint().unwrap();
        // A loser for the undo pass, then a power loss.
        let mut loser = db.begin();
        loser.put(&t, "l", "x").unwrap();
        db.log().sync().unwrap();
        sim.crash();
        // Its rollback cannot reach the disk any more.
        drop(loser);
        drop(db);
        let db = Database::open_on(storage.clone(), "/db", Options::small()).unwrap();
        db.close().unwrap();
    });
    let lines = capture.0.lock().unwrap().clone();
    for want in [
        "open<",
        "recovery<open",
        "analysis<recovery",
        "redo<recovery",
        "undo<recovery",
        "checkpoint<",
        "recovery recorded",
    ] {
        assert!(has(&lines, want), "no span {want:?} among {lines:#?}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("recovery recorded") && l.contains("losers=1")),
        "the second recovery's span does not say it found the loser: {lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("open<") && l.contains("dir=/db")),
        "the open span does not name the directory: {lines:#?}"
    );
}
