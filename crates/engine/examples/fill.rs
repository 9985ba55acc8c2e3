//! How full sequential and random inserts leave a table's leaves: loads N keys (8-byte
//! big-endian integers, values of VALUE bytes) ascending, descending or shuffled into
//! table `t` of a new database, in commits of 10,000; then `sluice stats DIR` shows the
//! leaf fill.
//!
//! Run with `cargo run --release -p sluice --example fill DIR ascending|descending|shuffled
//! [N=1000000] [VALUE=40]`.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use sluice::{Database, Error};

fn main() -> Result<(), Error> {
    let usage = "usage: fill DIR ascending|descending|shuffled [N] [VALUE]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(order)) = (args.first(), args.get(1)) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let number = |i: usize, default: u64| match args.get(i).map(|a| a.parse::<u64>()) {
        None => default,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("fill: {}: {e}\n{usage}", args[i]);
            std::process::exit(2);
        }
    };
    let (n, value) = (number(2, 1_000_000), number(3, 40) as usize);
    let mut keys: Vec<u64> = (0..n).collect();
    match order.as_str() {
        "ascending" => {}
        "descending" => keys.reverse(),
        "shuffled" => keys.shuffle(&mut rand::rngs::StdRng::seed_from_u64(1)),
        other => {
            eprintln!("fill: unknown order {other:?}\n{usage}");
            std::process::exit(2);
        }
    }
    let db = Database::open(dir)?;
    let t = db.table_or_create("t")?;
    for chunk in keys.chunks(10_000) {
        let mut tx = db.begin();
        for &k in chunk {
            tx.put(&t, k.to_be_bytes(), vec![k as u8; value])?;
        }
        tx.commit()?;
    }
    drop(t);
    db.close()
}
