//! Compact page images for the log: the page without its free gap, its runs of equal
//! bytes shortened.
//!
//! A node page's gap between the slot array and the cells is always zero, so an image
//! is `[hole_start u32][hole_len u32]` followed by the bytes before and after the hole
//! (PostgreSQL's full-page-write "hole" compression). A half-full 8 KiB page logs ~4 KiB.
//!
//! The body is then run-length encoded (PackBits: a control byte `c < 128` is followed by
//! `c + 1` literal bytes, `c ≥ 128` by one byte repeated `c - 125` times) when that is
//! shorter, and bit 31 of `hole_start` says so. Rows padded with spaces or zeros, small
//! integers in wide fields and child page numbers are runs: TPC-B's history leaves and
//! their parents, whose split images were 216 of its log bytes per transaction once
//! updates logged deltas, shrink to about half. Images without the bit (every image
//! before it existed) decode as before.

use crate::page::layout::{page_type, PageType, HEADER_LEN};
use crate::page::meta::META_USED;
use crate::page::node::Node;

/// In an image's `hole_start` word: the body is run-length encoded.
const RLE_FLAG: u32 = 1 << 31;
/// The shortest run worth a run token (two bytes replace it).
const MIN_RUN: usize = 3;
/// The longest run one token holds.
const MAX_RUN: usize = 127 + MIN_RUN;
/// The longest literal one token holds.
const MAX_LITERAL: usize = 128;

/// The image of `page` (a validated page) for a log record.
pub fn compress(page: &[u8]) -> Vec<u8> {
    let (start, end) = match page_type(page) {
        Some(PageType::Leaf | PageType::Internal) => Node::new(page).hole(),
        Some(PageType::Meta) => (META_USED, page.len()),
        _ => (page.len(), page.len()),
    };
    debug_assert!(
        page[start..end].iter().all(|&b| b == 0),
        "the hole is not zero"
    );
    debug_assert!((start as u32) < RLE_FLAG);
    let raw = page.len() - (end - start);
    let mut out = Vec::with_capacity(8 + raw);
    out.extend_from_slice(&(start as u32 | RLE_FLAG).to_le_bytes());
    out.extend_from_slice(&((end - start) as u32).to_le_bytes());
    if run_length_encode(&page[..start], &page[end..], raw, &mut out) {
        return out;
    }
    out.clear();
    out.extend_from_slice(&(start as u32).to_le_bytes());
    out.extend_from_slice(&((end - start) as u32).to_le_bytes());
    out.extend_from_slice(&page[..start]);
    out.extend_from_slice(&page[end..]);
    out
}

/// Appends the run-length encoding of `a ++ b` to `out`; false (leaving junk) as soon as
/// it would not be shorter than the `raw` bytes themselves. The two parts are encoded one
/// after the other (a run does not span them: the decoder only sees tokens), each over a
/// plain slice, because this runs for every page image the log takes (splits, the first
/// change after a checkpoint) and a byte-at-a-time walk over both parts cost about 5% of
/// a replicated write's CPU (`perf`, `sluice bench replicated`).
fn run_length_encode(a: &[u8], b: &[u8], raw: usize, out: &mut Vec<u8>) -> bool {
    let limit = out.len() + raw;
    encode_part(a, limit, out) && encode_part(b, limit, out) && out.len() < limit
}

/// Appends the tokens of `s` to `out`; false once `out` reaches `limit`.
fn encode_part(s: &[u8], limit: usize, out: &mut Vec<u8>) -> bool {
    let n = s.len();
    let mut literal_from = 0;
    let mut i = 0;
    while i < n {
        let byte = s[i];
        let end = (i + MAX_RUN).min(n);
        let mut j = i + 1;
        while j < end && s[j] == byte {
            j += 1;
        }
        let run = j - i;
        if run >= MIN_RUN {
            push_literals(out, &s[literal_from..i]);
            out.push((run - MIN_RUN + 128) as u8);
            out.push(byte);
            literal_from = j;
            if out.len() >= limit {
                return false;
            }
        }
        i = j;
    }
    push_literals(out, &s[literal_from..]);
    out.len() < limit
}

/// Appends `bytes` as literal tokens of at most `MAX_LITERAL` bytes each.
fn push_literals(out: &mut Vec<u8>, bytes: &[u8]) {
    for chunk in bytes.chunks(MAX_LITERAL) {
        out.push((chunk.len() - 1) as u8);
        out.extend_from_slice(chunk);
    }
}

/// Decodes a run-length encoded body of exactly `len` bytes.
fn run_length_decode(mut src: &[u8], len: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(len);
    while let Some((&c, rest)) = src.split_first() {
        if c < 128 {
            let n = c as usize + 1;
            if rest.len() < n || out.len() + n > len {
                return Err("page image literal runs past its end".into());
            }
            out.extend_from_slice(&rest[..n]);
            src = &rest[n..];
        } else {
            let n = (c - 128) as usize + MIN_RUN;
            let Some((&b, rest)) = rest.split_first() else {
                return Err("page image run without its byte".into());
            };
            if out.len() + n > len {
                return Err("page image run past the page's end".into());
            }
            out.resize(out.len() + n, b);
            src = rest;
        }
    }
    if out.len() != len {
        return Err(format!(
            "page image body of {} bytes where {len} were expected",
            out.len()
        ));
    }
    Ok(out)
}

/// Rebuilds a page of `page_size` bytes from an image. Never panics: a malformed image
/// is an error (the caller still validates the result as a page).
pub fn expand(image: &[u8], page_size: usize) -> Result<Vec<u8>, String> {
    if image.len() < 8 {
        return Err("page image shorter than its header".into());
    }
    let word = u32::from_le_bytes(image[0..4].try_into().expect("4 bytes"));
    let start = (word & !RLE_FLAG) as usize;
    let hole = u32::from_le_bytes(image[4..8].try_into().expect("4 bytes")) as usize;
    let Some(body_len) = page_size.checked_sub(hole) else {
        return Err(format!(
            "page image hole of {hole} bytes in a {page_size}-byte page"
        ));
    };
    let decoded;
    let body = if word & RLE_FLAG != 0 {
        decoded = run_length_decode(&image[8..], body_len)?;
        &decoded[..]
    } else {
        &image[8..]
    };
    let fits = start
        .checked_add(hole)
        .is_some_and(|end| end <= page_size && body.len() + hole == page_size);
    if start < HEADER_LEN || !fits {
        return Err(format!(
            "page image hole {start}+{hole} with {} bytes does not make a {page_size}-byte page",
            body.len()
        ));
    }
    let mut page = vec![0u8; page_size];
    page[..start].copy_from_slice(&body[..start]);
    page[start + hole..].copy_from_slice(&body[start..]);
    Ok(page)
}

/// The size of the page an image was taken from, as its header and body say (the body's
/// decoded length plus the hole); 0 if the header is malformed. Never panics.
pub fn image_page_size(image: &[u8]) -> usize {
    let (Some(h), Some(l)) = (image.get(0..4), image.get(4..8)) else {
        return 0;
    };
    let word = u32::from_le_bytes(h.try_into().expect("4 bytes"));
    let hole = u32::from_le_bytes(l.try_into().expect("4 bytes")) as usize;
    let mut src = &image[8..];
    if word & RLE_FLAG == 0 {
        return src.len() + hole;
    }
    let mut raw = hole;
    while let Some((&c, rest)) = src.split_first() {
        let (n, skip) = if c < 128 {
            (c as usize + 1, c as usize + 1)
        } else {
            ((c - 128) as usize + MIN_RUN, 1)
        };
        raw += n;
        src = rest.get(skip..).unwrap_or(&[]);
    }
    raw
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::PageId;
    use crate::page::NodeMut;

    #[test]
    fn image_round_trips_and_omits_the_hole() {
        let mut b = vec![0u8; 4096];
        let mut n = NodeMut::format(&mut b, PageId(5), 0);
        n.insert_leaf(0, b"key", b"value");
        let img = compress(&b);
        assert!(
            img.len() < 200,
            "image of a nearly empty page is {} bytes",
            img.len()
        );
        assert_eq!(expand(&img, 4096).unwrap(), b);
        assert_eq!(image_page_size(&img), 4096);
        assert!(expand(&img, 8192).is_err());
        assert!(expand(&img[..7], 4096).is_err());
    }

    /// A leaf of TPC-B-like history rows (small integers, space padding) and its parent.
    fn history_pages(page_size: usize) -> (Vec<u8>, Vec<u8>) {
        let mut leaf = vec![0u8; page_size];
        let mut n = NodeMut::format(&mut leaf, PageId(5), 0);
        let mut i = 0u64;
        while n.fits(8 + 50 + 4 + 2) {
            let mut row = [b' '; 50];
            row[..4].copy_from_slice(&(i as u32 * 7919 % 100_000).to_le_bytes());
            row[4..8].copy_from_slice(&(i as u32 % 10).to_le_bytes());
            row[12..20].copy_from_slice(&((i as i64 * 104_729) % 999_999 - 500_000).to_le_bytes());
            n.insert_leaf(i as usize, &(1_000_000 + i).to_be_bytes(), &row);
            i += 1;
        }
        let mut parent = vec![0u8; page_size];
        let mut p = NodeMut::format(&mut parent, PageId(6), 1);
        let mut c = 0u64;
        while c < 200 && p.fits(8 + 10) {
            let key = (1_000_000 + 60 * c).to_be_bytes();
            p.insert_internal(c as usize, &key, PageId(900 + c));
            c += 1;
        }
        (leaf, parent)
    }

    #[test]
    fn runs_shrink_row_padding_and_page_numbers_and_round_trip() {
        let (leaf, parent) = history_pages(8192);
        for (page, at_most) in [(&leaf, 0.5), (&parent, 0.75)] {
            let img = compress(page);
            let raw = 8 + page.len() - Node::new(page).hole().1 + Node::new(page).hole().0;
            assert!(
                (img.len() as f64) < raw as f64 * at_most,
                "image {} bytes of a {raw}-byte body",
                img.len()
            );
            assert_eq!(expand(&img, 8192).unwrap(), *page);
            assert_eq!(image_page_size(&img), 8192);
            for cut in 0..img.len() {
                assert!(expand(&img[..cut], 8192).is_err(), "cut at {cut}");
            }
        }
    }

    /// The hole-only form every image had before run lengths.
    fn hole_form(page: &[u8]) -> Vec<u8> {
        let (start, end) = Node::new(page).hole();
        let mut old = Vec::new();
        old.extend_from_slice(&(start as u32).to_le_bytes());
        old.extend_from_slice(&((end - start) as u32).to_le_bytes());
        old.extend_from_slice(&page[..start]);
        old.extend_from_slice(&page[end..]);
        old
    }

    #[test]
    fn an_image_is_never_longer_than_its_hole_form_which_still_decodes() {
        let mut noisy = vec![0u8; 1024];
        let mut n = NodeMut::format(&mut noisy, PageId(5), 0);
        let noise: Vec<u8> = (0..600u32).map(|i| (i * 151 % 251) as u8).collect();
        n.insert_leaf(0, b"k", &noise);
        let (leaf, _) = history_pages(1024);
        for page in [noisy, leaf] {
            let (img, old) = (compress(&page), hole_form(&page));
            assert!(img.len() <= old.len(), "{} > {}", img.len(), old.len());
            assert_eq!(expand(&img, 1024).unwrap(), page);
            assert_eq!(expand(&old, 1024).unwrap(), page);
            assert_eq!(image_page_size(&old), 1024);
        }
        // A body of no runs at all is kept raw (the encoder gives up).
        let mut out = vec![0u8; 8];
        let alternating: Vec<u8> = (0..300u32).map(|i| (i % 2) as u8).collect();
        assert!(!run_length_encode(
            &alternating,
            &[],
            alternating.len(),
            &mut out
        ));
    }
}
