//! A profile as a `runner_contract::Agent`.

use std::ffi::OsString;

use runner_contract::{
    Agent, AgentCapabilities, AgentName, AgentParser, AgentRequest, Error, Invocation, Result,
    StdinClose, VersionProbe,
};

use super::{ParserKind, Profile, PromptVia, check};

/// An agent described by a profile file.
#[derive(Debug, Clone)]
pub struct ProfileAgent {
    profile: Profile,
    /// The ACP client that runs it, for `protocol = "acp"`.
    #[cfg(feature = "acp")]
    acp: Option<agent_acp::AcpAgent>,
}

impl ProfileAgent {
    /// The agent of a checked profile; refuses a parser this build does not have.
    pub fn new(profile: Profile) -> Result<Self> {
        check::parser_in_build(profile.parser)?;
        #[cfg(feature = "acp")]
        let acp = (profile.parser == ParserKind::Acp).then(|| {
            agent_acp::AcpAgent::new(profile.name.clone(), profile.program.clone())
                .with_provider_env(provider_vars(&profile))
        });
        Ok(Self {
            profile,
            #[cfg(feature = "acp")]
            acp,
        })
    }

    /// The profile behind it.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The model variable of a run, when the profile names one and a model is given.
    fn model_env(&self, request: &AgentRequest) -> Option<(String, String)> {
        let var = self.profile.provider.model_env.as_ref()?;
        Some((var.clone(), request.model.clone()?))
    }

    /// The files the profile's own arguments name: each whole argument of the file (never a
    /// placeholder's value: a prompt that is a path binds nothing) that is an absolute path
    /// to an existing file, the script an interpreter runs (`python3 /home/me/agent.py`).
    fn script_files(&self) -> Vec<std::path::PathBuf> {
        self.profile
            .args
            .iter()
            .map(std::path::PathBuf::from)
            .filter(|arg| arg.is_absolute() && arg.is_file())
            .collect()
    }

    /// The argument list with each whole-element placeholder replaced; `{model}` without a
    /// model drops the element and the flag right before it.
    fn args(&self, request: &AgentRequest) -> Vec<OsString> {
        let template = &self.profile.args;
        let mut out: Vec<OsString> = Vec::with_capacity(template.len());
        for (i, arg) in template.iter().enumerate() {
            let drops_model = |j: usize| template.get(j).is_some_and(|a| a == "{model}");
            if request.model.is_none() && arg.starts_with('-') && drops_model(i + 1) {
                continue;
            }
            match arg.as_str() {
                "{prompt}" => out.push(request.prompt.clone().into()),
                "{worktree}" => out.push(request.worktree.clone().into_os_string()),
                "{model}" => match &request.model {
                    Some(model) => out.push(model.into()),
                    None => continue,
                },
                _ => out.push(arg.into()),
            }
        }
        out
    }
}

impl Agent for ProfileAgent {
    fn name(&self) -> AgentName {
        self.profile.name.clone()
    }

    fn capabilities(&self) -> AgentCapabilities {
        #[cfg(feature = "acp")]
        if let Some(acp) = &self.acp {
            return acp.capabilities();
        }
        self.profile.capabilities
    }

    fn protocol(&self) -> Option<&'static str> {
        #[cfg(feature = "acp")]
        if let Some(acp) = &self.acp {
            return acp.protocol();
        }
        None
    }

    fn provider_env(&self) -> Vec<String> {
        provider_vars(&self.profile)
    }

    /// `api-key-env`: its value is a secret whatever the variable is called.
    fn secret_envs(&self) -> Vec<String> {
        self.profile.provider.api_key_env.iter().cloned().collect()
    }

    fn description(&self) -> Option<String> {
        self.profile.description.clone()
    }

    /// In a box: its base URL when it names one, else the hosts of `[network] allow`; the
    /// script files its arguments name, read-only (the program and its interpreter the box
    /// finds itself).
    fn box_needs(&self) -> runner_contract::BoxNeeds {
        runner_contract::BoxNeeds {
            read_only: self.script_files(),
            base_url_envs: self.profile.provider.base_url_env.iter().cloned().collect(),
            hosts: self.profile.network.allow.clone(),
            ..Default::default()
        }
    }

    fn version_probe(&self) -> Option<VersionProbe> {
        let args = self.profile.version_args.as_ref()?;
        Some(VersionProbe {
            program: self.profile.program.clone(),
            args: args.iter().map(OsString::from).collect(),
            tested: None,
        })
    }

    fn invocation(&self, request: &AgentRequest) -> Result<Invocation> {
        #[cfg(feature = "acp")]
        if let Some(acp) = &self.acp {
            let mut invocation = acp.invocation(request)?;
            invocation.args = self.args(request);
            invocation.env.extend(self.model_env(request));
            return Ok(invocation);
        }
        request.check()?;
        if request.resume.is_some() {
            return Err(Error::new(
                runner_contract::ErrorKind::Unsupported,
                format!(
                    "the {} agent (a profile) cannot resume a session: start a new one",
                    self.profile.name
                ),
            ));
        }
        let mut env = request.provider_env.clone();
        env.extend(self.model_env(request));
        // One stdin message per line of the prompt: the program reads the same text, and
        // no message holds a line break (the runner writes each followed by one).
        let stdin = match self.profile.prompt {
            PromptVia::Stdin => request.prompt.split('\n').map(str::to_owned).collect(),
            PromptVia::Argument => Vec::new(),
        };
        Ok(Invocation {
            program: self.profile.program.clone(),
            args: self.args(request),
            env,
            stdin,
            close_stdin: StdinClose::AfterWrite,
        })
    }

    fn parser(&self) -> Box<dyn AgentParser> {
        #[cfg(feature = "acp")]
        if let Some(acp) = &self.acp {
            return acp.parser();
        }
        match self.profile.parser {
            #[cfg(feature = "claude")]
            ParserKind::ClaudeStreamJson => agent_claude::stream_json_parser(),
            #[cfg(feature = "codex")]
            ParserKind::CodexJsonl => agent_codex::jsonl_parser(),
            ParserKind::JsonLines => match &self.profile.json_lines {
                Some(map) => Box::new(runner_contract::json_lines::JsonLinesParser::new(
                    map.clone(),
                )),
                // Never reached: the check refused a json-lines parser without its table.
                None => Box::new(runner_contract::text_lines::TextLinesParser::default()),
            },
            // Text, and (never reached: `new` refused them) parsers not in this build.
            _ => Box::new(runner_contract::text_lines::TextLinesParser::default()),
        }
    }

    fn parser_for(&self, request: &AgentRequest) -> Box<dyn AgentParser> {
        #[cfg(feature = "acp")]
        if let Some(acp) = &self.acp {
            return acp.parser_for(request);
        }
        self.parser()
    }

    fn input_line(&self, input: &runner_contract::AgentInput) -> Result<String> {
        #[cfg(feature = "acp")]
        if let Some(acp) = &self.acp {
            return acp.input_line(input);
        }
        let _ = input;
        Err(Error::new(
            runner_contract::ErrorKind::Unsupported,
            format!(
                "the {} agent takes no input while it runs",
                self.profile.name
            ),
        ))
    }
}

/// The names of the caller's variables a profile's agent may receive: `model-env` too, so
/// the caller's own model variable reaches the agent when no `--model` sets it.
fn provider_vars(profile: &Profile) -> Vec<String> {
    let p = &profile.provider;
    [
        &p.base_url_env,
        &p.api_key_env,
        &p.config_dir_env,
        &p.model_env,
    ]
    .into_iter()
    .flatten()
    .cloned()
    .chain(p.pass.iter().cloned())
    .collect()
}
