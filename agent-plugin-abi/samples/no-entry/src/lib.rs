//! A shared library that is no codehands plugin: it exports a function, but not the
//! entry symbol, as a library put in `plugins/` by mistake would.

/// Adds two numbers (exported under a mangled name; the point is what is absent).
pub extern "C" fn add(a: u32, b: u32) -> u32 {
    a.wrapping_add(b)
}
