//! Cycle search: Tarjan's strongly connected components, then in each component the
//! shortest cycle by breadth-first search, tried with ever more kinds of edge so that the
//! cycle names the weakest anomaly the component holds: write-write edges only (G0),
//! then with write-read (G1c), then with item anti-dependencies (G2-item), then with
//! predicate ones (a phantom: every cycle left needs one).

use super::graph::{Edge, Graph, Kind};
use super::report::{Anomaly, Class};
use std::collections::VecDeque;

/// The strongly connected components of `g` with more than one node (Tarjan's
/// algorithm, iterative: a long chain of dependencies must not overflow the stack).
pub fn components(g: &Graph) -> Vec<Vec<usize>> {
    let n = g.nodes.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut out = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        // Frames: (node, next edge to look at).
        let mut frames = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut e)) = frames.last_mut() {
            if let Some(edge) = g.adj[v].get(*e) {
                *e += 1;
                let w = edge.to;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    frames.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut scc = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    scc.push(w);
                    if w == v {
                        break;
                    }
                }
                if scc.len() > 1 {
                    scc.sort_unstable();
                    out.push(scc);
                }
            }
        }
    }
    out
}

/// Breadth-first searches from at most this many nodes of a component: the shortest
/// cycle through the first few is short enough to read, and a huge component (a broken
/// engine) must not make the search quadratic in the run.
const MAX_STARTS: usize = 256;

/// The shortest cycle inside `scc` using only edges whose kind `allowed` accepts, as
/// the edges taken (each with its source node).
fn shortest_cycle(
    g: &Graph,
    scc: &[usize],
    allowed: impl Fn(Kind) -> bool,
) -> Option<Vec<(usize, Edge)>> {
    let mut inside = vec![false; g.nodes.len()];
    for &v in scc {
        inside[v] = true;
    }
    let mut best: Option<Vec<(usize, Edge)>> = None;
    for &s in scc.iter().take(MAX_STARTS) {
        // parent[v]: the node and edge index BFS reached v by.
        let mut parent: Vec<Option<(usize, usize)>> = vec![None; g.nodes.len()];
        let mut dist = vec![usize::MAX; g.nodes.len()];
        dist[s] = 0;
        let mut queue = VecDeque::from([s]);
        let mut closing = None;
        'bfs: while let Some(v) = queue.pop_front() {
            if best.as_ref().is_some_and(|b| dist[v] + 1 >= b.len()) {
                break;
            }
            for (i, e) in g.adj[v].iter().enumerate() {
                if !inside[e.to] || !allowed(e.kind) {
                    continue;
                }
                if e.to == s {
                    closing = Some((v, i));
                    break 'bfs;
                }
                if dist[e.to] == usize::MAX {
                    dist[e.to] = dist[v] + 1;
                    parent[e.to] = Some((v, i));
                    queue.push_back(e.to);
                }
            }
        }
        let Some((mut v, i)) = closing else { continue };
        let mut cycle = vec![(v, g.adj[v][i].clone())];
        while v != s {
            let (p, i) = parent[v].expect("a node BFS reached has a parent");
            cycle.push((p, g.adj[p][i].clone()));
            v = p;
        }
        cycle.reverse();
        if best.as_ref().is_none_or(|b| cycle.len() < b.len()) {
            best = Some(cycle);
        }
        if best.as_ref().is_some_and(|b| b.len() == 2) {
            break;
        }
    }
    best
}

/// One anomaly per component with a cycle: its weakest class and its shortest cycle of
/// that class.
pub fn anomalies(g: &Graph) -> Vec<Anomaly> {
    type Level = (Class, fn(Kind) -> bool);
    let levels: [Level; 4] = [
        (Class::G0, |k| k == Kind::Ww),
        (Class::G1c, |k| matches!(k, Kind::Ww | Kind::Wr)),
        (Class::G2Item, |k| k != Kind::RwPredicate),
        (Class::Phantom, |_| true),
    ];
    let mut out = Vec::new();
    for scc in components(g) {
        for (class, allowed) in levels {
            let Some(cycle) = shortest_cycle(g, &scc, allowed) else {
                continue;
            };
            let names: Vec<String> = cycle
                .iter()
                .map(|(v, e)| format!("{} -{}-> ", g.nodes[*v], e.kind.name()))
                .collect();
            let first = g.nodes[cycle[0].0];
            let mut a = Anomaly::new(
                class,
                cycle.iter().map(|(v, _)| g.nodes[*v]).collect(),
                format!(
                    "cycle {}{first} (in a component of {} transactions)",
                    names.concat(),
                    scc.len()
                ),
            );
            a.detail = cycle
                .iter()
                .map(|(v, e)| {
                    format!(
                        "{} -{}-> {}: {}",
                        g.nodes[*v],
                        e.kind.name(),
                        g.nodes[e.to],
                        e.why
                    )
                })
                .collect();
            out.push(a);
            break;
        }
    }
    out
}
