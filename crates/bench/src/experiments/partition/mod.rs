//! Log partitioning (the Tandem paper): horizontal (γ, [`gamma`]), vertical (Tables 2–4
//! and Lmax, [`vertical`]; the same runs in rounds and Fig. 6, [`vertical_sweep`]), and
//! what the partitioned engine costs with one log manager ([`overhead`]).

pub mod gamma;
pub mod overhead;
pub mod vertical;
pub mod vertical_sweep;
