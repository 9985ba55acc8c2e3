//! A 1,000,000-key B+tree: load in pseudo-random key order, then verify with an ordered
//! scan, a point lookup of every key and a full tree check. Prints the load rate.

#[test]
fn a_million_keys_load_and_verify() {
    let r = sluice_testkit::load::load_verify(1_000_000).expect("load and verify");
    println!(
        "1M-key load: {:.0} keys/s (load {:.2} s, verify {:.2} s)",
        r.keys_per_sec, r.load_secs, r.verify_secs
    );
    assert_eq!(r.keys, 1_000_000);
    assert!(r.keys_per_sec > 0.0);
}
