//! The versioned C ABI of codehands agent plugins: a shared library that exports any
//! `runner_contract::Agent`, and (feature `host`) the loader that turns one back into agents.
//!
//! A plugin is a `cdylib` crate that depends on runner-contract and this crate and calls
//! [`export_agent!`] once:
//!
//! ```text
//! agent_plugin_abi::export_agent!(|| my_agent::MyAgent::new("/usr/bin/my-agent"));
//! ```
//!
//! and is built as a shared library (`[lib] crate-type = ["cdylib"]`), then put in
//! `$CODEHANDS_HOME/plugins/` or named with `codehands --plugin PATH`.
//!
//! # The ABI, version 1
//! - One entry symbol, [`ENTRY_SYMBOL`] (`codehands_agent_plugin`), an `extern "C"` function
//!   without arguments that returns a pointer to a static [`PluginTable`]. The table's first
//!   two fields are [`TableHeader`]: the ABI version and the table's size in bytes. A host
//!   reads those two first and refuses any other version, or a size other than its own,
//!   before it touches anything else. The symbol's name carries no version, so a library
//!   of another version is told apart from a library that is no plugin at all.
//! - Everything else crosses as UTF-8 JSON ([`wire`]): the agents' names, capabilities,
//!   provider variables and version probes, each run's request and invocation, and the
//!   events a parser returns (the contract's `EventBody` form, `{"type", "payload"}`). Each
//!   answer is `{"ok": …}` or `{"error": {"kind", "message"}}`, in a buffer the plugin
//!   allocated and the host gives back through the table's `answer_free`.
//! - Parsers are opaque handles: `parser_new`, `parse_line`, `parser_finish`, `parser_free`.
//! - Every call catches panics on the plugin's side ([`std::panic::catch_unwind`]): a panic
//!   becomes an error answer, never an unwind across the boundary. The host treats a
//!   garbage answer (no buffer, bad UTF-8 or JSON, the wrong shape) as an error: a call at
//!   load time fails the load naming the file, a parser's turns into a `task.failed` event.
//! - A loaded library is never unloaded: the agents, their parsers and the table's
//!   function pointers live as long as the process.
//!
//! A plugin runs inside the host's process with all its rights: the ABI guards against
//! mistakes (another version, a panic, a wrong answer), not against a hostile library.
//! Load only libraries you would run as programs.
//!
//! The host reads the JSON strictly (an unknown field is refused), so any change to the
//! table, to a JSON shape or to the meaning of a call is a new [`ABI_VERSION`].

pub mod wire;

#[doc(hidden)]
pub mod plugin;

#[cfg(feature = "host")]
pub mod host;

/// runner-contract, as [`export_agent!`] names it.
#[doc(hidden)]
pub use runner_contract;
/// The same, under the name it had when the contract lived in runner-core.
#[doc(hidden)]
pub use runner_contract as runner_core;

/// The version of the ABI this crate speaks.
pub const ABI_VERSION: u32 = 1;

/// The name of the one symbol a plugin exports (without the trailing NUL).
pub const ENTRY_SYMBOL: &str = "codehands_agent_plugin";

/// The signature of [`ENTRY_SYMBOL`]: a pointer to the plugin's static table.
pub type EntryFn = unsafe extern "C" fn() -> *const TableHeader;

/// The first fields of every version's table: read and checked before anything else.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableHeader {
    /// The ABI version the plugin was built for ([`ABI_VERSION`]).
    pub abi_version: u32,
    /// The size of the whole table in bytes, as the plugin built it.
    pub table_size: u32,
}

/// Bytes the caller lends for the length of one call (UTF-8 text or JSON).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Bytes {
    /// The first byte; never null (a dangling, aligned pointer when `len` is 0).
    pub ptr: *const u8,
    /// How many bytes.
    pub len: usize,
}

impl Bytes {
    /// Lends `text` for one call.
    pub fn of(text: &str) -> Self {
        Self {
            ptr: text.as_ptr(),
            len: text.len(),
        }
    }
}

/// A JSON answer in a buffer the plugin allocated; the host returns it through
/// [`PluginTable::answer_free`] once read. A null `ptr` is no answer (an error).
#[repr(C)]
#[derive(Debug)]
pub struct Answer {
    /// The first byte, or null.
    pub ptr: *mut u8,
    /// How many bytes.
    pub len: usize,
}

/// An opaque parser made by the plugin; only the plugin looks inside.
#[repr(C)]
pub struct ParserHandle {
    _private: [u8; 0],
}

/// The table of ABI version 1.
///
/// `agent` arguments are indexes into the list `describe` answers. Strings lent to a call
/// ([`Bytes`]) are valid only during it. Every function may be called from any thread; a
/// parser handle is used by one thread at a time.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PluginTable {
    /// The version and size, checked first.
    pub header: TableHeader,
    /// The exported agents: a JSON array of [`wire::AgentInfo`].
    pub describe: unsafe extern "C" fn() -> Answer,
    /// One run's invocation: takes a [`wire::RequestWire`], answers a [`wire::InvocationWire`].
    pub invocation: unsafe extern "C" fn(agent: u32, request: Bytes) -> Answer,
    /// A fresh parser for one run; null when the plugin could not make one.
    pub parser_new: unsafe extern "C" fn(agent: u32) -> *mut ParserHandle,
    /// The events of one output line (the line as text): a JSON array of `EventBody`.
    pub parse_line: unsafe extern "C" fn(parser: *mut ParserHandle, line: Bytes) -> Answer,
    /// The events owed at the end: takes the exit code as JSON (`null` or a number),
    /// answers a JSON array of `EventBody`.
    pub parser_finish: unsafe extern "C" fn(parser: *mut ParserHandle, exit_code: Bytes) -> Answer,
    /// Drops a parser; the handle is not used again.
    pub parser_free: unsafe extern "C" fn(parser: *mut ParserHandle),
    /// Gives an answer's buffer back to the plugin's allocator.
    pub answer_free: unsafe extern "C" fn(answer: Answer),
}

/// Exports agents from a `cdylib` crate: defines the entry symbol and the table.
///
/// Give one constructor per agent (a closure without arguments, or a function); they run
/// once, the first time the host asks, and a panic in one becomes an error at load time.
///
/// ```
/// use agent_plugin_abi::runner_contract::text_lines::TextLinesParser;
/// use agent_plugin_abi::runner_contract::{
///     Agent, AgentCapabilities, AgentName, AgentParser, AgentRequest, Invocation, Result,
///     StdinClose,
/// };
///
/// /// `cat` as an agent: it says the prompt back.
/// struct Parrot;
///
/// impl Agent for Parrot {
///     fn name(&self) -> AgentName {
///         AgentName::parse("parrot").unwrap()
///     }
///     fn capabilities(&self) -> AgentCapabilities {
///         AgentCapabilities::default()
///     }
///     fn invocation(&self, request: &AgentRequest) -> Result<Invocation> {
///         Ok(Invocation {
///             program: "cat".into(),
///             args: Vec::new(),
///             env: Vec::new(),
///             stdin: vec![request.prompt.clone()],
///             close_stdin: StdinClose::AfterWrite,
///         })
///     }
///     fn parser(&self) -> Box<dyn AgentParser> {
///         Box::new(TextLinesParser::default())
///     }
/// }
///
/// agent_plugin_abi::export_agent!(|| Parrot);
/// ```
#[macro_export]
macro_rules! export_agent {
    ($($make:expr),+ $(,)?) => {
        /// The codehands plugin entry: the table of ABI version 1.
        // The symbol must keep its name for the host to find it: `no_mangle` is what
        // the ABI is, and it counts as unsafe code.
        #[allow(unsafe_code)]
        #[unsafe(no_mangle)]
        pub extern "C" fn codehands_agent_plugin() -> *const $crate::TableHeader {
            fn agents() -> ::std::vec::Vec<::std::sync::Arc<dyn $crate::runner_contract::Agent>> {
                ::std::vec![$(
                    ::std::sync::Arc::new(($make)())
                        as ::std::sync::Arc<dyn $crate::runner_contract::Agent>
                ),+]
            }
            $crate::plugin::table(agents)
        }
    };
}
