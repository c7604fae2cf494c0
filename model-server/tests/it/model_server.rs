//! The scripted model server over real HTTP on 127.0.0.1.

use model_server::{Block, HttpError, ModelServer, Script, Turn};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One HTTP/1.1 request with `Connection: close`; returns the status and the whole response.
async fn send(base_url: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    let addr = base_url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nx-api-key: sk-test\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, response)
}

fn conversation(tool_results: usize) -> String {
    let mut messages =
        vec![json!({ "role": "user", "content": [{ "type": "text", "text": "hi" }] })];
    for i in 0..tool_results {
        messages.push(json!({ "role": "user", "content": [{ "type": "tool_result", "tool_use_id": format!("t{i}"), "content": "ok" }] }));
    }
    json!({ "model": "m", "stream": true, "messages": messages }).to_string()
}

#[tokio::test]
async fn answers_from_the_script_and_keeps_every_request() {
    let server = ModelServer::start(Script::new([
        HttpError::status(429)
            .header("retry-after", "1")
            .times(1)
            .into(),
        Turn::blocks([Block::tool_use("t0", "Read", json!({ "file_path": "/a" }))]),
        Turn::text("done"),
    ]))
    .await
    .unwrap();
    let url = server.base_url();

    let (status, limited) = send(&url, "POST", "/v1/messages?beta=true", &conversation(0)).await;
    assert_eq!(status, 429);
    assert!(limited.to_ascii_lowercase().contains("retry-after: 1"));
    assert!(limited.contains("rate_limit_error"));

    let (status, tool) = send(&url, "POST", "/v1/messages?beta=true", &conversation(0)).await;
    assert_eq!(status, 200);
    assert!(tool.contains("text/event-stream"));
    assert!(tool.contains("event: message_start") && tool.contains("input_json_delta"));
    assert!(tool.contains(r#""stop_reason":"tool_use""#));

    let (_, text) = send(&url, "POST", "/v1/messages", &conversation(1)).await;
    assert!(text.contains("text_delta") && text.contains(r#""stop_reason":"end_turn""#));

    let (status, _) = send(&url, "GET", "/v1/models", "").await;
    assert_eq!(status, 404, "paths it does not speak are refused");

    let requests = server.requests();
    let seen: Vec<(&str, u16, Option<usize>)> = requests
        .iter()
        .map(|r| (r.path.as_str(), r.status, r.turn))
        .collect();
    assert_eq!(
        seen,
        [
            ("/v1/messages?beta=true", 429, Some(0)),
            ("/v1/messages?beta=true", 200, Some(1)),
            ("/v1/messages", 200, Some(2)),
            ("/v1/models", 404, None),
        ]
    );
    assert_eq!(requests[0].header("X-API-KEY"), Some("sk-test"));
    assert_eq!(server.message_requests().len(), 3);
    assert!(
        server.message_requests()[2]
            .to_string()
            .contains("tool_result")
    );
}

fn chat(tool_results: usize, stream: bool) -> String {
    let mut messages = vec![json!({ "role": "user", "content": "hi" })];
    for i in 0..tool_results {
        messages.push(json!({ "role": "assistant", "content": null, "tool_calls": [{ "id": format!("c{i}"), "type": "function", "function": { "name": "bash", "arguments": "{}" } }] }));
        messages.push(json!({ "role": "tool", "tool_call_id": format!("c{i}"), "content": "ok" }));
    }
    json!({ "model": "m", "stream": stream, "messages": messages }).to_string()
}

#[tokio::test]
async fn speaks_chat_completions_whole_and_streamed() {
    let server = ModelServer::start(Script::new([
        HttpError::status(500).times(1).into(),
        Turn::blocks([
            Block::text("Looking."),
            Block::tool_use("c0", "bash", json!({ "command": "ls" })),
        ]),
        Turn::text("done"),
    ]))
    .await
    .unwrap();
    let url = server.base_url();

    let (status, failed) = send(&url, "POST", "/v1/chat/completions", &chat(0, false)).await;
    assert_eq!(status, 500);
    assert!(failed.contains("server_error"), "{failed}");

    let (status, whole) = send(&url, "POST", "/v1/chat/completions", &chat(0, false)).await;
    assert_eq!(status, 200);
    assert!(whole.contains("application/json"));
    assert!(whole.contains(r#""object":"chat.completion""#));
    assert!(whole.contains(r#""finish_reason":"tool_calls""#));
    assert!(whole.contains(r#""arguments":"{\"command\":\"ls\"}""#));

    let (status, streamed) = send(&url, "POST", "/v1/chat/completions", &chat(1, true)).await;
    assert_eq!(status, 200);
    assert!(streamed.contains("text/event-stream"));
    assert!(streamed.contains(r#""object":"chat.completion.chunk""#));
    assert!(streamed.contains(r#""finish_reason":"stop""#));
    assert!(streamed.trim_end().ends_with("data: [DONE]"));

    let turns: Vec<(u16, Option<usize>)> = server
        .requests()
        .iter()
        .map(|r| (r.status, r.turn))
        .collect();
    assert_eq!(turns, [(500, Some(0)), (200, Some(1)), (200, Some(2))]);
    assert!(server.requests()[2].body.contains(r#""role":"tool""#));
}

#[tokio::test]
async fn a_delayed_reply_is_recorded_at_once_and_holds_up_no_other_request() {
    let server = ModelServer::start(Script::new([
        Turn::blocks([Block::tool_use("t0", "Read", json!({ "file_path": "/a" }))])
            .delayed(std::time::Duration::from_secs(3)),
        Turn::text("done"),
    ]))
    .await
    .unwrap();
    let url = server.base_url();
    let slow = tokio::spawn({
        let url = url.clone();
        async move { send(&url, "POST", "/v1/messages", &conversation(0)).await }
    });
    while server.requests().is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(server.requests()[0].turn, Some(0), "recorded as it arrives");
    assert!(!slow.is_finished(), "still waiting out its delay");

    let (status, fast) = send(&url, "POST", "/v1/messages", &conversation(1)).await;
    assert_eq!(status, 200);
    assert!(fast.contains(r#""stop_reason":"end_turn""#));
    assert!(
        !slow.is_finished(),
        "the other request was answered meanwhile"
    );

    let (status, slow) = slow.await.unwrap();
    assert_eq!(status, 200);
    assert!(slow.contains(r#""stop_reason":"tool_use""#));
    let turns: Vec<Option<usize>> = server.requests().iter().map(|r| r.turn).collect();
    assert_eq!(turns, [Some(0), Some(1)]);
}

#[tokio::test]
async fn a_second_prompt_is_answered_from_its_follow_up() {
    let server = ModelServer::start(
        Script::new([Turn::text("first answer")])
            .follow_up("[again]", Script::new([Turn::text("second answer")])),
    )
    .await
    .unwrap();
    let url = server.base_url();
    let (_, first) = send(&url, "POST", "/v1/messages", &conversation(0)).await;
    assert!(first.contains(r#""text":"first ""#), "{first}");
    let body = json!({ "model": "m", "stream": true, "messages": [
        { "role": "user", "content": "hi" },
        { "role": "assistant", "content": [{ "type": "text", "text": "first answer" }] },
        { "role": "user", "content": [{ "type": "text", "text": "once more [again]" }] },
    ]})
    .to_string();
    let (_, second) = send(&url, "POST", "/v1/messages", &body).await;
    assert!(second.contains(r#""text":"second""#), "{second}");
    let seen: Vec<(Option<usize>, Option<String>)> = server
        .requests()
        .into_iter()
        .map(|r| (r.turn, r.script))
        .collect();
    assert_eq!(seen, [(Some(0), None), (Some(0), Some("[again]".into()))]);
}
