//! Not built yet: see its issue.
