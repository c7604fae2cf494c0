//! The plugin's side of the ABI: the table that [`crate::export_agent!`] hands out, each
//! call guarded by `catch_unwind` so a panic becomes an error answer.

// The ABI is raw pointers: lent bytes to read, answers and parsers to hand out and take
// back. Each unsafe block says why it holds.
#![allow(unsafe_code)]

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, OnceLock};

use runner_contract::{Agent, AgentParser, AgentRequest, Error};
use serde::Serialize;

use crate::wire::{
    AgentInfo, ErrorKindWire, ErrorWire, InvocationWire, Reply, RequestWire, VersionProbeWire,
};
use crate::{ABI_VERSION, Answer, Bytes, ParserHandle, PluginTable, TableHeader};

/// Makes the plugin's agents; set by the entry symbol.
type Build = fn() -> Vec<Arc<dyn Agent>>;

static BUILD: OnceLock<Build> = OnceLock::new();
static AGENTS: OnceLock<Result<Vec<Arc<dyn Agent>>, ErrorWire>> = OnceLock::new();

static TABLE: PluginTable = PluginTable {
    header: TableHeader {
        abi_version: ABI_VERSION,
        table_size: size_of::<PluginTable>() as u32,
    },
    describe,
    invocation,
    parser_new,
    parse_line,
    parser_finish,
    parser_free,
    answer_free,
};

/// The table of this plugin, whose agents `build` makes (the entry symbol's body).
pub fn table(build: Build) -> *const TableHeader {
    // The first entry call wins; the symbol is the only caller and always passes the same.
    let _ = BUILD.set(build);
    // A pointer to the whole table (the header is its first field), so the host may read on.
    (&raw const TABLE).cast()
}

/// The agents, made once; a panic while making them is kept as the answer to every call.
fn agents() -> Result<&'static [Arc<dyn Agent>], ErrorWire> {
    AGENTS
        .get_or_init(|| {
            let build = BUILD.get().ok_or_else(|| {
                internal("the table was not asked for through the entry symbol".to_owned())
            })?;
            catch_unwind(build).map_err(|payload| panicked("making its agents", &*payload))
        })
        .as_ref()
        .map(Vec::as_slice)
        .map_err(Clone::clone)
}

fn agent_at(index: u32) -> Result<&'static Arc<dyn Agent>, ErrorWire> {
    let agents = agents()?;
    agents.get(index as usize).ok_or_else(|| {
        internal(format!(
            "the host asked for agent {index}, and this plugin has {}",
            agents.len()
        ))
    })
}

unsafe extern "C" fn describe() -> Answer {
    guarded("describe", || {
        agents()?
            .iter()
            .map(|a| info(&**a))
            .collect::<Result<Vec<_>, _>>()
    })
}

fn info(agent: &dyn Agent) -> Result<AgentInfo, ErrorWire> {
    let provider_env = agent.provider_env();
    let needs = agent.box_needs();
    let box_needs = (needs != runner_contract::BoxNeeds::from_provider_env(&provider_env))
        .then(|| crate::wire::BoxNeedsWire::try_from(&needs))
        .transpose()
        .map_err(internal)?;
    Ok(AgentInfo {
        name: agent.name(),
        capabilities: agent.capabilities(),
        provider_env,
        secret_envs: agent.secret_envs(),
        description: agent.description(),
        box_needs,
        version_probe: agent
            .version_probe()
            .map(VersionProbeWire::try_from)
            .transpose()
            .map_err(internal)?,
    })
}

unsafe extern "C" fn invocation(agent: u32, request: Bytes) -> Answer {
    guarded("invocation", || {
        let agent = agent_at(agent)?;
        // SAFETY: the ABI has the host lend `request` for the length of this call.
        let text = unsafe { lent_text(request) }?;
        let request: RequestWire = serde_json::from_str(text).map_err(|e| {
            internal(format!(
                "the request is not the JSON of plugin ABI version {ABI_VERSION}: {e}"
            ))
        })?;
        let invocation = agent
            .invocation(&AgentRequest::from(request))
            .map_err(|e: Error| ErrorWire {
                kind: ErrorKindWire::of(e.kind()),
                message: e.message().to_owned(),
            })?;
        InvocationWire::try_from(invocation).map_err(internal)
    })
}

unsafe extern "C" fn parser_new(agent: u32) -> *mut ParserHandle {
    let made = catch_unwind(|| agent_at(agent).ok().map(|agent| agent.parser()));
    match made {
        // Boxed twice: the handle is a thin pointer to the (fat) trait object.
        Ok(Some(parser)) => Box::into_raw(Box::new(parser)).cast(),
        Ok(None) | Err(_) => std::ptr::null_mut(),
    }
}

unsafe extern "C" fn parse_line(parser: *mut ParserHandle, line: Bytes) -> Answer {
    guarded("parse_line", || {
        // SAFETY: the ABI has the host pass a live handle from `parser_new`, one thread at
        // a time, and lend `line` for the length of this call.
        let (parser, line) = unsafe { (parser_at(parser)?, lent_text(line)?) };
        Ok(parser.parse_line(line))
    })
}

unsafe extern "C" fn parser_finish(parser: *mut ParserHandle, exit_code: Bytes) -> Answer {
    guarded("parser_finish", || {
        // SAFETY: as in `parse_line`.
        let (parser, exit_code) = unsafe { (parser_at(parser)?, lent_text(exit_code)?) };
        let exit_code: Option<i32> = serde_json::from_str(exit_code)
            .map_err(|e| internal(format!("the exit code is not JSON null or a number: {e}")))?;
        Ok(parser.finish(exit_code))
    })
}

unsafe extern "C" fn parser_free(parser: *mut ParserHandle) {
    if parser.is_null() {
        return;
    }
    // SAFETY: the handle came from `parser_new` (a leaked `Box<Box<dyn AgentParser>>`),
    // and the ABI has the host free each handle once and not use it after.
    let parser = unsafe { Box::from_raw(parser.cast::<Box<dyn AgentParser>>()) };
    // A panicking `Drop` stays on this side too.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(parser)));
}

unsafe extern "C" fn answer_free(answer: Answer) {
    if answer.ptr.is_null() {
        return;
    }
    // SAFETY: every answer is a leaked `Box<[u8]>` of `len` bytes (`into_answer`), and the
    // ABI has the host give each back once.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(answer.ptr, answer.len)) });
}

/// Runs one call with panics caught, as a JSON answer.
fn guarded<T: Serialize>(what: &str, call: impl FnOnce() -> Result<T, ErrorWire>) -> Answer {
    let json = catch_unwind(AssertUnwindSafe(|| {
        let reply = match call() {
            Ok(value) => Reply::Ok(value),
            Err(error) => Reply::Error(error),
        };
        serde_json::to_string(&reply)
            .unwrap_or_else(|e| error_json(internal(format!("cannot write the answer: {e}"))))
    }));
    into_answer(json.unwrap_or_else(|payload| error_json(panicked(what, &*payload))))
}

fn error_json(error: ErrorWire) -> String {
    serde_json::to_string(&Reply::<()>::Error(error)).unwrap_or_else(|_| {
        r#"{"error":{"kind":"internal","message":"cannot write the error"}}"#.to_owned()
    })
}

fn into_answer(json: String) -> Answer {
    let bytes: Box<[u8]> = json.into_bytes().into_boxed_slice();
    let len = bytes.len();
    Answer {
        ptr: Box::into_raw(bytes).cast(),
        len,
    }
}

/// The text the host lent.
///
/// # Safety
/// `bytes` must point at `len` readable bytes that stay put for `'a` (the ABI: the call).
unsafe fn lent_text<'a>(bytes: Bytes) -> Result<&'a str, ErrorWire> {
    if bytes.ptr.is_null() {
        return Err(internal("the host lent a null pointer".to_owned()));
    }
    // SAFETY: the caller's contract, and the pointer is not null.
    let slice = unsafe { std::slice::from_raw_parts(bytes.ptr, bytes.len) };
    std::str::from_utf8(slice)
        .map_err(|e| internal(format!("the host lent text that is not UTF-8: {e}")))
}

/// The parser behind a handle.
///
/// # Safety
/// `parser` must be null or a live handle from `parser_new` that no one else uses during `'a`.
unsafe fn parser_at<'a>(parser: *mut ParserHandle) -> Result<&'a mut dyn AgentParser, ErrorWire> {
    // SAFETY: the caller's contract: a handle is a `Box<Box<dyn AgentParser>>` leaked by
    // `parser_new`, used by one thread at a time.
    let parser = unsafe { parser.cast::<Box<dyn AgentParser>>().as_mut() };
    parser
        .map(|boxed| &mut **boxed)
        .ok_or_else(|| internal("the host passed a null parser".to_owned()))
}

fn internal(message: String) -> ErrorWire {
    ErrorWire {
        kind: ErrorKindWire::Internal,
        message,
    }
}

fn panicked(what: &str, payload: &(dyn Any + Send)) -> ErrorWire {
    let said = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned());
    ErrorWire {
        kind: ErrorKindWire::Panicked,
        message: format!("it panicked in {what}: {said}"),
    }
}

#[cfg(test)]
mod tests;
