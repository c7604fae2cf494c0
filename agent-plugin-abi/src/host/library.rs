//! One loaded plugin library: its checked table and the safe calls over it. All the
//! host's unsafe code is here.

// Opening a library runs its initialisers, and its table is raw function pointers.
// Each unsafe block says why it holds.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::wire::{ErrorWire, Reply};
use crate::{ABI_VERSION, Answer, Bytes, ENTRY_SYMBOL, EntryFn, ParserHandle, PluginTable};

/// The longest answer read (a parser's events for one line are far smaller); a longer
/// one is garbage.
const MAX_ANSWER: usize = 64 << 20;

/// A loaded plugin, never unloaded.
#[derive(Debug)]
pub(crate) struct Library {
    path: PathBuf,
    table: PluginTable,
}

/// Why a call gave no value.
#[derive(Debug)]
pub(crate) enum CallError {
    /// The plugin answered an error (its own, or a panic it caught).
    Answered(ErrorWire),
    /// The answer was not what the ABI says: what was wrong.
    Garbage(String),
}

impl Library {
    /// Opens `path` and checks its table: the entry symbol, then the version and size,
    /// before anything else. The library stays loaded for good.
    pub(crate) fn open(path: &Path) -> Result<&'static Self, String> {
        let absolute = std::path::absolute(path)
            .map_err(|e| format!("cannot read the path {}: {e}", path.display()))?;
        // Only a library no one else could have put there (placement.rs).
        super::placement::check(&absolute)?;
        // An absolute path, so the dynamic loader opens this file and searches nowhere.
        // SAFETY: opening runs the library's initialisers; a plugin is code the person
        // chose to run (see the crate docs), and nothing else can be checked before.
        let library = unsafe { libloading::Library::new(&absolute) }.map_err(|e| {
            format!(
                "cannot load {} as a plugin ({e}): it must be a shared library built for this \
                 machine (a `cdylib` crate that calls agent_plugin_abi::export_agent!)",
                absolute.display()
            )
        })?;
        // Never unloaded: agents, parsers and the table's pointers live as long as the process.
        let library: &'static libloading::Library = Box::leak(Box::new(library));
        // SAFETY: the type is the ABI's entry signature; a library exporting the name with
        // another type breaks the ABI, which nothing can check.
        let entry = unsafe { library.get::<EntryFn>(ENTRY_SYMBOL.as_bytes()) }.map_err(|_| {
            format!(
                "{} is not a codehands agent plugin: it exports no `{ENTRY_SYMBOL}` symbol; \
                 build it as a `cdylib` crate that calls agent_plugin_abi::export_agent!",
                absolute.display()
            )
        })?;
        // SAFETY: the entry takes nothing and returns a pointer to a static table.
        let raw = unsafe { entry() };
        // SAFETY: a non-null answer points at a static table whose first field is the
        // header, the part every version shares; only it is read before the checks.
        let header = unsafe { raw.as_ref() }.copied().ok_or_else(|| {
            format!(
                "{}: `{ENTRY_SYMBOL}` returned no table: rebuild it with agent_plugin_abi::export_agent!",
                absolute.display()
            )
        })?;
        if header.abi_version != ABI_VERSION {
            let newer = if header.abi_version > ABI_VERSION {
                ", or use a codehands that speaks it"
            } else {
                ""
            };
            return Err(format!(
                "{} speaks plugin ABI version {}, and this codehands speaks version {ABI_VERSION}: \
                 rebuild the plugin against agent-plugin-abi {} (ABI {ABI_VERSION}){newer}",
                absolute.display(),
                header.abi_version,
                env!("CARGO_PKG_VERSION"),
            ));
        }
        if header.table_size as usize != size_of::<PluginTable>() {
            return Err(format!(
                "{}: its table is {} bytes where ABI version {ABI_VERSION} has {}: rebuild it \
                 against agent-plugin-abi {}",
                absolute.display(),
                header.table_size,
                size_of::<PluginTable>(),
                env!("CARGO_PKG_VERSION"),
            ));
        }
        // SAFETY: version and size are those of this ABI, so the static the pointer names
        // is a whole `PluginTable`.
        let table = unsafe { *raw.cast::<PluginTable>() };
        Ok(Box::leak(Box::new(Self {
            path: absolute,
            table,
        })))
    }

    /// The library's file, as loaded.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// `describe`.
    pub(crate) fn describe<T: DeserializeOwned>(&self) -> Result<T, CallError> {
        // SAFETY: a table call without arguments.
        self.read(unsafe { (self.table.describe)() })
    }

    /// `invocation` of agent `index`.
    pub(crate) fn invocation<Q: Serialize, T: DeserializeOwned>(
        &self,
        index: u32,
        request: &Q,
    ) -> Result<T, CallError> {
        let request = serde_json::to_string(request)
            .map_err(|e| CallError::Garbage(format!("cannot write the request: {e}")))?;
        // SAFETY: the request is lent for the length of the call, as the ABI says.
        self.read(unsafe { (self.table.invocation)(index, Bytes::of(&request)) })
    }

    /// A new parser of agent `index`, or `None` when the plugin could not make one.
    pub(crate) fn parser_new(&'static self, index: u32) -> Option<Parser> {
        // SAFETY: a table call with a plain index.
        let handle = unsafe { (self.table.parser_new)(index) };
        (!handle.is_null()).then_some(Parser {
            library: self,
            handle,
        })
    }

    /// Reads an answer and gives its buffer back.
    fn read<T: DeserializeOwned>(&self, answer: Answer) -> Result<T, CallError> {
        if answer.ptr.is_null() {
            return Err(CallError::Garbage(
                "it answered nothing (a null buffer)".to_owned(),
            ));
        }
        if answer.len > MAX_ANSWER {
            // Not given back: a length this wrong says the buffer is not what the ABI says.
            return Err(CallError::Garbage(format!(
                "it answered {} bytes, over the limit of {MAX_ANSWER}",
                answer.len
            )));
        }
        // SAFETY: the ABI says a non-null answer is `len` bytes the plugin allocated, ours
        // to read until we give it back just below.
        let bytes = unsafe { std::slice::from_raw_parts(answer.ptr, answer.len) }.to_vec();
        // SAFETY: given back once, and not read after.
        unsafe { (self.table.answer_free)(answer) };
        decode(&bytes)
    }
}

/// Decodes the bytes of one answer: a value, the plugin's error, or garbage.
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CallError> {
    match serde_json::from_slice::<Reply<T>>(bytes) {
        Ok(Reply::Ok(value)) => Ok(value),
        Ok(Reply::Error(error)) => Err(CallError::Answered(error)),
        Err(e) => Err(CallError::Garbage(format!(
            "its answer is not the JSON of plugin ABI version {ABI_VERSION} ({e}): {}",
            shown(bytes)
        ))),
    }
}

/// A parser inside the plugin, freed on drop.
#[derive(Debug)]
pub(crate) struct Parser {
    library: &'static Library,
    handle: *mut ParserHandle,
}

// SAFETY: the ABI has every plugin parser be `Send` (`AgentParser: Send`), and the handle
// is used only through `&mut self`, so by one thread at a time.
unsafe impl Send for Parser {}

impl Parser {
    /// `parse_line`.
    pub(crate) fn parse_line<T: DeserializeOwned>(&mut self, line: &str) -> Result<T, CallError> {
        // SAFETY: a live handle from `parser_new`, used by this thread only, and the line
        // lent for the call.
        let answer = unsafe { (self.library.table.parse_line)(self.handle, Bytes::of(line)) };
        self.library.read(answer)
    }

    /// `parser_finish`.
    pub(crate) fn finish<T: DeserializeOwned>(
        &mut self,
        exit_code: Option<i32>,
    ) -> Result<T, CallError> {
        let exit_code = match exit_code {
            Some(code) => code.to_string(),
            None => "null".to_owned(),
        };
        // SAFETY: as in `parse_line`.
        let answer =
            unsafe { (self.library.table.parser_finish)(self.handle, Bytes::of(&exit_code)) };
        self.library.read(answer)
    }
}

impl Drop for Parser {
    fn drop(&mut self) {
        // SAFETY: a live handle from `parser_new`, freed once here and never used after.
        unsafe { (self.library.table.parser_free)(self.handle) };
    }
}

/// The start of a garbage answer, for the error.
fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(120)]);
    let more = if bytes.len() > 120 { "…" } else { "" };
    format!("{text:?}{more}")
}
