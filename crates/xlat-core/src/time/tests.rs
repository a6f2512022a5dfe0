//! The overlap model by hand: each case's cycles worked out from the definition in
//! `docs/time-model.md` (cpi 1, so positions are cycles of base time).

use super::{Event, Overlap};
use crate::config::{TimeConfig, TimeVariant};

fn model(rob: u32, walkers: u32, store_buffer: u32, dep: f64, hide: f64) -> Overlap {
    let t = TimeConfig { rob, walkers, mshrs: 4, store_buffer, write_buffer: 1, dep, hide, ..TimeConfig::default() };
    Overlap::new(&t, &TimeVariant { dep, hide, ..t.main(1.0) })
}

fn load(pos: f64, xlat: u64, walk: bool, data: u64) -> Event {
    Event { pos, xlat, walk, data, kind: 0 }
}

/// Stall cycles: the total minus the base (1000 instructions at CPI 1).
fn stalls(m: &Overlap) -> f64 {
    m.total(1000) - 1000.0
}

#[test]
fn two_independent_misses_inside_the_window_cost_one_latency() {
    let mut m = model(100, 2, 8, 0.0, 0.0);
    m.event(load(10.0, 0, false, 200));
    m.event(load(10.0, 0, false, 200));
    assert_eq!(stalls(&m), 200.0);
    // Issued 30 instructions later, the second completes 30 cycles after the first, and 30
    // cycles after it would have retired without misses too: hidden under the first.
    let mut m = model(100, 2, 8, 0.0, 0.0);
    m.event(load(10.0, 0, false, 200));
    m.event(load(40.0, 0, false, 200));
    assert_eq!(stalls(&m), 200.0);
    // A longer miss issued later sets the penalty: 300 after its own issue.
    let mut m = model(100, 2, 8, 0.0, 0.0);
    m.event(load(10.0, 0, false, 200));
    m.event(load(40.0, 0, false, 300));
    assert_eq!(stalls(&m), 300.0);
}

#[test]
fn misses_a_window_apart_cost_one_latency_each() {
    let mut m = model(100, 2, 8, 0.0, 0.0);
    m.event(load(0.0, 0, false, 200));
    m.event(load(100.0, 0, false, 200));
    assert_eq!(stalls(&m), 400.0);
}

#[test]
fn a_dependent_chain_costs_every_latency() {
    // Each load's address comes from the one before: they complete at 200, 400 and 600; the
    // third would have retired at 20 without misses.
    let mut m = model(100, 2, 8, 1.0, 0.0);
    m.event(load(0.0, 0, false, 200));
    m.event(load(10.0, 0, false, 200));
    m.event(load(20.0, 0, false, 200));
    assert_eq!(stalls(&m), 600.0 - 20.0);
    // At the same position, exactly every latency.
    let mut m = model(100, 2, 8, 1.0, 0.0);
    for _ in 0..3 {
        m.event(load(0.0, 0, false, 200));
    }
    assert_eq!(stalls(&m), 600.0);
    // Half dependent: the second completes halfway between overlapping (10 + 200) and
    // following (200 + 200).
    let mut m = model(100, 2, 8, 0.5, 0.0);
    m.event(load(0.0, 0, false, 200));
    m.event(load(10.0, 0, false, 200));
    assert_eq!(stalls(&m), 0.5 * 210.0 + 0.5 * 400.0 - 10.0);
}

#[test]
fn a_walk_overlaps_a_data_miss() {
    let mut m = model(100, 2, 8, 0.0, 0.0);
    m.event(load(0.0, 0, false, 200));
    // A walk of 40 cycles, then its own data miss of 200: issued at 5, done at 245, 240 after
    // its issue; the first miss's 200 hide under it.
    m.event(load(5.0, 40, true, 200));
    assert_eq!(stalls(&m), 240.0);
    // The additive model would charge 200 + 40 + 200.
}

#[test]
fn walks_wait_for_a_free_walker() {
    let mut m = model(100, 1, 8, 0.0, 0.0);
    m.event(load(0.0, 50, true, 0));
    m.event(load(0.0, 50, true, 0));
    m.event(load(0.0, 50, true, 0));
    assert_eq!(stalls(&m), 150.0);
    let mut r = std::collections::BTreeMap::new();
    m.report(1000, &mut r);
    assert_eq!(r["time.overlap.walker_wait_cycles"], 50.0 + 100.0);
    let mut m = model(100, 2, 8, 0.0, 0.0);
    m.event(load(0.0, 50, true, 0));
    m.event(load(0.0, 50, true, 0));
    m.event(load(0.0, 50, true, 0));
    assert_eq!(stalls(&m), 100.0);
    // An STLB hit needs no walker.
    let mut m = model(100, 1, 8, 0.0, 0.0);
    m.event(load(0.0, 50, true, 0));
    m.event(load(0.0, 7, false, 0));
    assert_eq!(stalls(&m), 50.0);
}

#[test]
fn a_full_store_buffer_stalls() {
    let store = |pos| Event { pos, xlat: 0, walk: false, data: 100, kind: 1 };
    let mut m = model(100, 2, 2, 0.0, 0.0);
    m.event(store(0.0));
    m.event(store(0.0));
    assert_eq!(stalls(&m), 0.0, "two stores fit the buffer");
    m.event(store(0.0));
    assert_eq!(stalls(&m), 100.0, "the third waits for the first entry");
    // 100 instructions later the entries are free again.
    m.event(store(300.0));
    assert_eq!(stalls(&m), 100.0);
    // A store's translation is on the critical path like a load's.
    let mut m = model(100, 2, 2, 0.0, 0.0);
    m.event(Event { pos: 0.0, xlat: 30, walk: true, data: 100, kind: 1 });
    assert_eq!(stalls(&m), 30.0);
}

#[test]
fn a_full_write_buffer_stalls() {
    let mut m = model(100, 2, 8, 0.0, 0.0); // write_buffer 1
    m.writeback(0.0, 300);
    assert_eq!(stalls(&m), 0.0);
    m.writeback(100.0, 300);
    assert_eq!(stalls(&m), 200.0, "the second waits until 300");
}

#[test]
fn fetches_add_in_series() {
    let mut m = model(100, 2, 8, 0.0, 0.0);
    m.event(load(0.0, 0, false, 200));
    m.event(Event { pos: 1.0, xlat: 0, walk: false, data: 100, kind: 2 });
    m.event(load(2.0, 0, false, 200));
    assert_eq!(stalls(&m), 200.0 + 100.0 + 200.0);
}

#[test]
fn the_window_hides_what_it_is_told_to() {
    let mut m = model(100, 2, 8, 0.0, 80.0);
    m.event(load(0.0, 0, false, 200));
    m.event(load(500.0, 7, false, 0));
    assert_eq!(stalls(&m), 120.0, "the STLB hit is hidden, the miss costs 200 - 80");
}

#[test]
fn accesses_without_latency_only_move_the_position() {
    let mut m = model(100, 2, 8, 0.0, 0.0);
    for p in 0..1000 {
        m.event(load(p as f64, 0, false, 0));
    }
    assert_eq!(stalls(&m), 0.0);
    let mut r = std::collections::BTreeMap::new();
    m.report(1000, &mut r);
    assert_eq!(r["time.overlap.events"], 0.0);
    assert_eq!(r["time.overlap.total_cycles"], 1000.0);
}

#[test]
fn data_misses_beyond_the_miss_registers_queue() {
    // Four registers: the fifth and sixth of six simultaneous misses wait for the first two.
    let mut m = model(100, 2, 8, 0.0, 0.0);
    for _ in 0..6 {
        m.event(load(0.0, 0, false, 200));
    }
    assert_eq!(stalls(&m), 400.0);
    let mut r = std::collections::BTreeMap::new();
    m.report(1000, &mut r);
    assert_eq!(r["time.overlap.mshr_wait_cycles"], 400.0);
    // A walk holds a walker, not a miss register; its data access then takes one.
    let mut m = model(100, 2, 8, 0.0, 0.0);
    for _ in 0..4 {
        m.event(load(0.0, 0, false, 200));
    }
    m.event(load(0.0, 50, true, 200));
    assert_eq!(stalls(&m), 250.0 + 0.0f64.max(200.0 - 50.0));
}

#[test]
fn a_walk_scale_multiplies_walks_only() {
    let t = TimeConfig { walk_scale: 3.0, ..TimeConfig::default() };
    let mut m = Overlap::new(&t, &t.main(1.0));
    m.event(load(0.0, 40, true, 0));
    m.event(load(500.0, 7, false, 0));
    assert_eq!(stalls(&m), 120.0 + 7.0);
}

#[test]
fn a_walk_extra_adds_to_every_walk() {
    let t = TimeConfig { walk_scale: 2.0, walk_extra: 100.0, ..TimeConfig::default() };
    let mut m = Overlap::new(&t, &t.main(1.0));
    m.event(load(0.0, 40, true, 0));
    m.event(load(500.0, 7, false, 0));
    assert_eq!(stalls(&m), 80.0 + 100.0 + 7.0);
}
