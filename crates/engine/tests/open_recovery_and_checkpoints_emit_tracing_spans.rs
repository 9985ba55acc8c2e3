//! The engine emits `tracing` spans for open, recovery (one per pass) and checkpoints,
//! and installs no subscriber itself: an application's subscriber (here a tiny layer that
//! records each new span's name, its parent and its fields) sees them. A checkpoint held
//! back by a failed log archive warns, once.

use sluice::{Database, Options};
use sluice_storage::{FaultKind, FaultOp, FaultPlan, SimStorage, Storage};
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
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        let m = event.metadata();
        let mut line = format!("event {} {}", m.level(), m.target());
        event.record(&mut Fields(&mut line));
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

#[test]
fn a_checkpoint_held_back_by_a_failed_log_archive_warns_once() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let sim = SimStorage::new(2);
    let mut o = Options::small();
    o.log.segment_bytes = 16 << 10;
    // Only the checkpoints taken here, on this thread (where the subscriber is).
    o.checkpoint_log_bytes = 0;
    o.checkpoint_interval = std::time::Duration::ZERO;
    tracing::subscriber::with_default(subscriber, || {
        let db = Database::builder("/db")
            .options(o)
            .storage(Arc::new(sim.clone()))
            .log_archive("/archive")
            .open()
            .unwrap();
        sim.inject(
            FaultPlan::new(FaultOp::Any, 1, FaultKind::Eio)
                .persistent()
                .on("/archive"),
        );
        let t = db.create_table("t").unwrap();
        for i in 0..400u32 {
            let mut tx = db.begin();
            tx.put(&t, i.to_be_bytes(), [7u8; 200]).unwrap();
            tx.commit().unwrap();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while db.metrics().archive.unwrap().error.is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "the archive never failed"
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        for _ in 0..3 {
            db.checkpoint().unwrap();
        }
        drop(t);
        db.close().unwrap();
    });
    let lines = capture.0.lock().unwrap().clone();
    let warnings: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("event WARN") && l.contains("log archive"))
        .collect();
    assert_eq!(warnings.len(), 1, "{lines:#?}");
    assert!(
        warnings[0].contains("archive=\"/archive\"") && warnings[0].contains("error="),
        "{}",
        warnings[0]
    );
}

/// Outside review of the restore's progress (its recovery now runs inside the open on a
/// thread the restore spawns, so that recovery's reports reach the caller's callback): a
/// restore's open and recovery are still spans the caller's subscriber sees, inside the
/// `restore` span — as they were when the open ran on the caller's thread. A subscriber
/// set for the thread (`with_default`, as here) is the caller's thread's only: a thread
/// spawned without carrying the dispatcher and the current span over reports to nobody.
#[test]
fn a_restores_recovery_spans_reach_the_callers_subscriber_inside_the_restore_span() {
    use sluice::{Replay, Restore, RestoreTarget};
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let sim = SimStorage::new(3);
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let db = Database::open_on(storage.clone(), "/db", Options::small()).unwrap();
    let t = db.create_table("t").unwrap();
    for i in 0..50u32 {
        let mut tx = db.begin();
        tx.put(&t, i.to_be_bytes(), [7u8; 100]).unwrap();
        tx.commit().unwrap();
    }
    db.backup_to("/backup").unwrap();
    drop(t);
    db.close().unwrap();
    tracing::subscriber::with_default(subscriber, || {
        for (dest, replay) in [("/lo", Replay::LogOrder), ("/sr", Replay::SortedRuns)] {
            Database::restore(
                storage.clone(),
                &Restore {
                    backup: "/backup".into(),
                    ancestors: Vec::new(),
                    archive: None,
                    target: RestoreTarget::End,
                    dest: dest.into(),
                    replay,
                },
                &mut |_| {},
            )
            .unwrap();
        }
    });
    let lines = capture.0.lock().unwrap().clone();
    for want in [
        "restore<",
        "open<restore",
        "recovery<open",
        "analysis<recovery",
        "undo<recovery",
    ] {
        assert!(has(&lines, want), "no span {want:?} among {lines:#?}");
    }
    for dest in ["/lo", "/sr"] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("open<restore") && l.contains(&format!("dir={dest}"))),
            "no open span of the restore into {dest}: {lines:#?}"
        );
    }
}
