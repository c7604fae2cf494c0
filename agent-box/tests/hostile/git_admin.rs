//! The repository's admin folder: what git reads as configuration is read-only in the box.
