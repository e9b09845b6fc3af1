//! (numbers test: to come)
