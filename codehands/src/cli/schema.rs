//! `codehands schema`: the contract's JSON Schemas.

use std::process::ExitCode;

use clap::Args;
use runner_contract::{Error, Result};

/// Arguments of `codehands schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Print only this schema (a file name of `schemas/`, e.g. `event.schema.json`, or its stem `event`).
    name: Option<String>,
}

/// Prints one schema, or all of them as a JSON object keyed by file name.
pub fn run(args: SchemaArgs) -> Result<ExitCode> {
    let all = runner_contract::schema::all();
    match args.name {
        Some(wanted) => {
            let file = if wanted.ends_with(".schema.json") {
                wanted.clone()
            } else {
                format!("{wanted}.schema.json")
            };
            let (_, schema) = all.iter().find(|(name, _)| *name == file).ok_or_else(|| {
                let names: Vec<_> = all
                    .iter()
                    .map(|(n, _)| n.trim_end_matches(".schema.json"))
                    .collect();
                Error::invalid_input(format!(
                    "no schema {wanted:?}: pick one of {}",
                    names.join(", ")
                ))
            })?;
            print!("{}", runner_contract::schema::render(schema));
        }
        None => {
            let map: serde_json::Map<String, serde_json::Value> = all
                .iter()
                .map(|(name, s)| ((*name).to_owned(), s.as_value().clone()))
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&map).expect("schemas are JSON")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
