//! Property tests of the page checks, node views and compact images: a page the engine
//! builds validates and round-trips through its image; a page that passes `validate` is
//! safe to read through every `Node` accessor the engine uses (all cells walked); a page
//! or image damaged in any way is reported, never a panic. The same checks as the fuzz
//! targets (`crate::fuzzing::{page, page_image}`).

use super::fuzz::{page_image, read_valid_page};
use super::layout::{format, put_u64, OFF_IMAGE_LSN, OFF_LSN};
use super::*;
use crate::alloc_probe::assert_bounded;
use crate::ids::PageId;
use crate::mutations::{apply, mutations};
use proptest::prelude::*;

const ID: PageId = PageId(77);

/// A node page the engine could have built: a leaf or an internal node of a random
/// size, filled with sorted keys, some cells removed (fragments), maybe compacted.
fn node_page() -> impl Strategy<Value = Vec<u8>> {
    (
        0u32..6,
        0u8..3,
        proptest::collection::btree_map(
            proptest::collection::vec(any::<u8>(), 0..24),
            (
                proptest::collection::vec(any::<u8>(), 0..60),
                any::<bool>(),
                any::<u64>(),
            ),
            0..80,
        ),
        proptest::collection::vec(any::<prop::sample::Index>(), 0..6),
        any::<bool>(),
        (1u64..1 << 40, 0u64..1 << 40),
    )
        .prop_map(|(shift, level, cells, removals, compact, (lsn, image))| {
            let size = MIN_PAGE_SIZE << shift;
            let mut b = vec![0u8; size];
            let mut n = NodeMut::format(&mut b, ID, level);
            if level > 0 {
                n.set_link(PageId(3));
            }
            for (key, (value, external, child)) in cells {
                let len = if level == 0 {
                    node::LEAF_CELL_HEADER + key.len() + value.len()
                } else {
                    node::INTERNAL_CELL_HEADER + key.len()
                };
                if !n.fits(len) {
                    break;
                }
                let at = n.view().len();
                if level == 0 {
                    n.insert_leaf_value(
                        at,
                        &key,
                        CellValue {
                            bytes: &value,
                            external,
                        },
                    );
                } else {
                    n.insert_internal(at, &key, PageId(child));
                }
            }
            for r in removals {
                let len = n.view().len();
                if len > 0 {
                    n.remove(r.index(len));
                }
            }
            if compact {
                n.compact();
            }
            put_u64(&mut b, OFF_LSN, lsn + image);
            put_u64(&mut b, OFF_IMAGE_LSN, image);
            b
        })
}

fn meta_page() -> impl Strategy<Value = Vec<u8>> {
    (0u32..6, 2u64..1 << 40, 1u64..1 << 40).prop_map(|(shift, count, lsn)| {
        let mut b = vec![0u8; MIN_PAGE_SIZE << shift];
        Meta::format(&mut b, count);
        put_u64(&mut b, OFF_LSN, lsn);
        b
    })
}

fn any_page() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![4 => node_page(), 1 => meta_page()]
}

fn size_index(len: usize) -> u8 {
    (len / MIN_PAGE_SIZE).trailing_zeros() as u8
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::test_support::prop_cases(512)))]

    #[test]
    fn built_pages_validate_read_and_round_trip_through_images(mut p in any_page()) {
        let kind = validate(&p, page_id_of(&p)).map_err(TestCaseError::fail)?;
        read_valid_page(&p, kind);
        let img = compress(&p);
        prop_assert_eq!(image_page_size(&img), p.len());
        prop_assert_eq!(expand(&img, p.len()), Ok(p.clone()));
        seal(&mut p);
        prop_assert!(checksum_ok(&p));
    }

    #[test]
    fn damaged_pages_are_reported_or_read_never_panic(mut p in any_page(), ms in mutations(4), reseal in any::<bool>()) {
        apply(&mut p, &ms);
        if reseal && p.len() >= HEADER_LEN {
            seal(&mut p);
        }
        assert_bounded(&p, super::fuzz::page);
        // The page read as the id it should have (the engine's view): checked the same.
        if p.len() >= HEADER_LEN {
            if let Ok(kind) = validate(&p, ID) {
                read_valid_page(&p, kind);
            }
        }
    }

    #[test]
    fn damaged_images_are_reported_never_panic(p in any_page(), ms in mutations(4)) {
        let mut img = compress(&p);
        apply(&mut img, &ms);
        let mut input = vec![size_index(p.len())];
        input.extend_from_slice(&img);
        assert_bounded(&input, page_image);
    }

    #[test]
    fn arbitrary_images_never_panic(size in 0u8..6, img in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut input = vec![size];
        input.extend_from_slice(&img);
        assert_bounded(&input, page_image);
    }

    #[test]
    fn headers_with_random_fields_never_panic(
        shift in 0u32..3,
        kind in 0u8..5,
        fields in proptest::collection::vec(any::<u8>(), HEADER_LEN),
        cells in proptest::collection::vec(any::<u8>(), 0..200),
    ) {
        // A formatted page whose header is overwritten: the cell area from `cells`.
        let size = MIN_PAGE_SIZE << shift;
        let mut p = vec![0u8; size];
        format(&mut p, ID, PageType::Leaf, 0);
        p[..HEADER_LEN].copy_from_slice(&fields);
        p[4] = kind;
        p[8..16].copy_from_slice(&ID.0.to_le_bytes());
        let at = size - cells.len();
        p[at..].copy_from_slice(&cells);
        if let Ok(kind) = validate(&p, ID) {
            read_valid_page(&p, kind);
        }
    }
}

fn page_id_of(p: &[u8]) -> PageId {
    PageId(u64::from_le_bytes(p[8..16].try_into().expect("8 bytes")))
}

/// Valid pages of each kind and a few sizes (seeds for the fuzz targets).
pub(crate) fn seed_pages() -> Vec<Vec<u8>> {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    (0..30)
        .map(|_| any_page().new_tree(&mut runner).unwrap().current())
        .filter(|p| p.len() <= 8192)
        .collect()
}
