//! Events to other tools' formats: ChampSim binary traces ([`champsim`]).

pub mod champsim;
