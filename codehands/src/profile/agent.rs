//! A profile as a `runner_core::Agent`.

use std::ffi::OsString;

use runner_core::{
    Agent, AgentCapabilities, AgentName, AgentParser, AgentRequest, Error, Invocation, Result,
    StdinClose, VersionProbe,
};

use super::{ParserKind, Profile, PromptVia, check};

/// An agent described by a profile file.
#[derive(Debug, Clone)]
pub struct ProfileAgent {
    profile: Profile,
}

impl ProfileAgent {
    /// The agent of a checked profile; refuses a parser this build does not have.
    pub fn new(profile: Profile) -> Result<Self> {
        check::parser_in_build(profile.parser)?;
        Ok(Self { profile })
    }

    /// The profile behind it.
    pub fn profile(&self) -> &Profile {
        &self.profile
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
        self.profile.capabilities
    }

    fn provider_env(&self) -> Vec<String> {
        let p = &self.profile.provider;
        [&p.base_url_env, &p.api_key_env, &p.config_dir_env]
            .into_iter()
            .flatten()
            .cloned()
            .chain(p.pass.iter().cloned())
            .collect()
    }

    /// In a box: its base URL when it names one, else the hosts of `[network] allow`.
    fn box_needs(&self) -> runner_core::BoxNeeds {
        runner_core::BoxNeeds {
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
        if request.resume.is_some() {
            return Err(Error::invalid_input(format!(
                "the {} agent (a profile) cannot resume a session: start a new one",
                self.profile.name
            )));
        }
        let mut env = request.provider_env.clone();
        if let (Some(var), Some(model)) = (&self.profile.provider.model_env, &request.model) {
            env.push((var.clone(), model.clone()));
        }
        let stdin = match self.profile.prompt {
            PromptVia::Stdin => vec![request.prompt.clone()],
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
        match self.profile.parser {
            #[cfg(feature = "claude")]
            ParserKind::ClaudeStreamJson => agent_claude::stream_json_parser(),
            #[cfg(feature = "codex")]
            ParserKind::CodexJsonl => agent_codex::jsonl_parser(),
            // Text, and (never reached: `new` refused them) parsers not in this build.
            _ => Box::new(runner_core::text_lines::TextLinesParser::default()),
        }
    }
}
