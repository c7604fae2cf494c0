//! The fake runner's script: what a small "fix the failing test" run looks like.

use runner_contract::event::{
    CommandFinished, CommandStarted, FileChangeKind, FileChanged, FileRead, Message, MessageRole,
    TaskFinished, TaskStarted, TestResult,
};
use runner_contract::{DiffStat, EventBody, FileStat};

/// The patch the fake runner reports for every session.
pub const FAKE_PATCH: &str = "\
diff --git a/src/date.js b/src/date.js
--- a/src/date.js
+++ b/src/date.js
@@ -1,3 +1,3 @@
 export function formatDate(date) {
-  return `${date.getFullYear()}-${date.getMonth()}-${date.getDate()}`;
+  return `${date.getFullYear()}-${date.getMonth() + 1}-${date.getDate()}`;
 }
";

/// The stat of [`FAKE_PATCH`].
pub fn fake_diff_stat() -> DiffStat {
    DiffStat::from_files(vec![FileStat {
        path: "src/date.js".into(),
        old_path: None,
        insertions: 1,
        deletions: 1,
        binary: false,
        too_large: false,
    }])
}

const TEST: &str = "npm test";

/// The events of a first run, `task.finished` last (the runner adds `approval.requested`).
pub fn first_run(model: Option<&str>) -> Vec<EventBody> {
    vec![
        EventBody::TaskStarted(TaskStarted {
            model: Some(model.unwrap_or("fake").to_owned()),
            tools: ["Read", "Edit", "Write", "Glob", "Grep", "Bash"]
                .map(String::from)
                .to_vec(),
            ..TaskStarted::default()
        }),
        say("I'll run the tests first to see what fails."),
        read("package.json", "Read", "toolu_fake_01"),
        read("test/date.test.js", "Read", "toolu_fake_02"),
        started(TEST, "toolu_fake_03"),
        finished(
            TEST,
            1,
            "FAIL test/date.test.js\n  formatDate › pads the month\n1 failing",
            "toolu_fake_03",
        ),
        test(TEST, false, 1, "1 failing", "toolu_fake_03"),
        changed("src/date.js", "toolu_fake_04"),
        started(TEST, "toolu_fake_05"),
        finished(
            TEST,
            0,
            "PASS test/date.test.js\n1 passing",
            "toolu_fake_05",
        ),
        test(TEST, true, 0, "1 passing", "toolu_fake_05"),
        done("The month was off by one; formatDate now adds 1 to getMonth(). The tests pass."),
    ]
}

/// The events of a resumed run, `task.finished` last.
pub fn resumed_run(prompt: Option<&str>) -> Vec<EventBody> {
    vec![
        EventBody::TaskStarted(TaskStarted {
            model: Some("fake".into()),
            resumed: true,
            ..TaskStarted::default()
        }),
        say(&format!(
            "Resuming: {}",
            prompt.unwrap_or("carry on where I stopped.")
        )),
        started(TEST, "toolu_fake_11"),
        finished(
            TEST,
            0,
            "PASS test/date.test.js\n1 passing",
            "toolu_fake_11",
        ),
        test(TEST, true, 0, "1 passing", "toolu_fake_11"),
        done("Finished after resuming. The tests pass."),
    ]
}

fn say(text: &str) -> EventBody {
    EventBody::Message(Message {
        text: text.into(),
        role: MessageRole::Assistant,
        ..Message::default()
    })
}

fn read(path: &str, tool: &str, id: &str) -> EventBody {
    EventBody::FileRead(FileRead {
        path: path.into(),
        tool: tool.into(),
        tool_use_id: Some(id.into()),
    })
}

fn changed(path: &str, id: &str) -> EventBody {
    EventBody::FileChanged(FileChanged {
        path: path.into(),
        tool: "Edit".into(),
        change: Some(FileChangeKind::Modified),
        tool_use_id: Some(id.into()),
    })
}

fn started(command: &str, id: &str) -> EventBody {
    EventBody::CommandStarted(CommandStarted {
        command: command.into(),
        tool_use_id: Some(id.into()),
    })
}

fn finished(command: &str, exit: i32, output: &str, id: &str) -> EventBody {
    EventBody::CommandFinished(CommandFinished {
        command: command.into(),
        exit_code: Some(exit),
        is_error: exit != 0,
        output: output.into(),
        tool_use_id: Some(id.into()),
    })
}

fn test(command: &str, passed: bool, exit: i32, summary: &str, id: &str) -> EventBody {
    EventBody::TestResult(TestResult {
        command: command.into(),
        passed,
        exit_code: Some(exit),
        sandboxed: false,
        summary: Some(summary.into()),
        tool_use_id: Some(id.into()),
        could_not_run: None,
    })
}

fn done(result: &str) -> EventBody {
    EventBody::TaskFinished(TaskFinished {
        result: Some(result.into()),
        cost_usd: Some(0.0),
        duration_ms: Some(0),
        num_turns: Some(3),
        ..TaskFinished::default()
    })
}
