//! The builder methods [`crate::foreground::Foreground`] and [`crate::tool::Tool`] share:
//! both wrap a `std::process::Command` in a field `command` and hand its arguments,
//! environment and folder through unchanged, so they are written once here.

/// `arg`, `args`, `env`, `envs`, `env_clear` and `current_dir` for a type with a field
/// `command: std::process::Command`.
macro_rules! command_builders {
    () => {
        /// One more argument.
        pub fn arg(&mut self, arg: impl AsRef<std::ffi::OsStr>) -> &mut Self {
            self.command.arg(arg);
            self
        }

        /// More arguments.
        pub fn args<I, S>(&mut self, args: I) -> &mut Self
        where
            I: IntoIterator<Item = S>,
            S: AsRef<std::ffi::OsStr>,
        {
            self.command.args(args);
            self
        }

        /// One variable set (on top of the environment it has).
        pub fn env(
            &mut self,
            key: impl AsRef<std::ffi::OsStr>,
            value: impl AsRef<std::ffi::OsStr>,
        ) -> &mut Self {
            self.command.env(key, value);
            self
        }

        /// Variables set (on top of the environment it has).
        pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Self
        where
            I: IntoIterator<Item = (K, V)>,
            K: AsRef<std::ffi::OsStr>,
            V: AsRef<std::ffi::OsStr>,
        {
            self.command.envs(vars);
            self
        }

        /// Nothing of this process's environment: only what `env` and `envs` set (a bare
        /// program name is then looked up on their PATH, or not at all).
        pub fn env_clear(&mut self) -> &mut Self {
            self.command.env_clear();
            self
        }

        /// The folder it runs in.
        pub fn current_dir(&mut self, dir: impl AsRef<std::path::Path>) -> &mut Self {
            self.command.current_dir(dir);
            self
        }
    };
}
