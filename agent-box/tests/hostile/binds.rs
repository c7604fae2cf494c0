//! The box binds the agent's program narrowly: nothing else of an install root under the home.
