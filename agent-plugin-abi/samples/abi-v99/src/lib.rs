//! A sample codehands plugin from another ABI version: its entry symbol returns a table
//! whose header says version 99, and nothing after the header. A host must refuse it
//! from the header alone.

// The entry symbol must keep its name: `no_mangle` is the ABI.
#![allow(unsafe_code)]

/// The two fields every version's table starts with.
#[repr(C)]
pub struct Header {
    abi_version: u32,
    table_size: u32,
}

static HEADER: Header = Header {
    abi_version: 99,
    table_size: size_of::<Header>() as u32,
};

/// The codehands plugin entry, of version 99.
#[unsafe(no_mangle)]
pub extern "C" fn codehands_agent_plugin() -> *const Header {
    &raw const HEADER
}
